"""The static HTML report: `sabre report`, and the page in a real headless Chromium."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from PIL import Image
from synthetic_project import MODELS, SOURCE, make_project

from sabre_prior import contracts as C
from sabre_prior.analysis.report import _script_json, aligned_results, thumbnail_uri
from sabre_prior.cli import main
from sabre_prior.errors import DataError
from sabre_prior.report.style import caption, model_style

HOSTILE = '</script><img src=x onerror="window.__pwned=1"> No'
FIGURES = ("split_accuracy", "probe_accuracy", "pair_outcomes")
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


def chatty(row: dict) -> str | None:
    """Answers with markup (must be shown as text), otherwise like the oracle."""
    if row["eval_type"] == "yes_no_exact" and row["probe"].startswith("edited"):
        return HOSTILE
    return MODELS["oracle"](row)


def build_report(root: Path, extra: dict | None = None) -> Path:
    """Run every analysis step of the pipeline on a synthetic project; return the page."""
    make_project(root, {**MODELS, **(extra or {})}, paper_names={"oracle": "Claude 4.6"})
    cwd = os.getcwd()
    os.chdir(root)
    try:
        models = list({**MODELS, **(extra or {})})
        for m in models:
            assert main(["intervals", "--model", m]) == 0
        assert main(["compare"]) == 0
        assert main(["diagnose"]) == 0
        assert main(["paper-compare"]) == 0
        assert main(["tables", "--intervals-dir", "results/intervals"]) == 0
        assert main(["figures", "--intervals-dir", "results/intervals"]) == 0
        # a planted backend-parity verdict (issue 34): oracle and chatty are "one checkpoint" that must not be pooled
        parity = Path("results/tables/backend_parity.csv")
        parity.write_text("model_a,model_b,backend_a,backend_b,split,difference,do_not_pool\n"
                          "oracle,chatty,baseline,baseline,macro,12.5,true\n")  # fmt: skip
        assert main([
            "report", "--comparison", "results/tables/model_comparison.csv", "--paper", "results/tables/paper_comparison.csv",
            "--parity", str(parity), *(f"--figure=results/figures/{stem}.png" for stem in FIGURES),
        ]) == 0  # fmt: skip
    finally:
        os.chdir(cwd)
    return root / "results" / "report" / "index.html"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_report(tmp_path_factory.mktemp("report") / "proj", {"chatty": chatty})


def _data(page: Path) -> dict:
    m = re.search(r'<script id="sabre-data" type="application/json">(.*?)</script>', page.read_text(), re.DOTALL)
    assert m, "no data block"
    return json.loads(m.group(1))


# ---------------------------------------------------------------- unit tests
def test_thumbnail_fits_the_box_and_is_jpeg() -> None:
    img = Image.new("RGB", (1400, 939), (200, 30, 30))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    uri = thumbnail_uri(buf.getvalue(), 224)
    assert uri.startswith("data:image/jpeg;base64,")
    with Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))) as thumb:
        assert thumb.format == "JPEG" and thumb.size == (224, 150)
    assert thumbnail_uri(buf.getvalue(), 224) == uri  # deterministic
    with pytest.raises(DataError, match="could not be decoded"):
        thumbnail_uri(b"not an image", 64)


def test_script_json_cannot_close_the_script_element() -> None:
    text = _script_json({"x": "</script><!-- & -->"})
    assert "</" not in text and "<!--" not in text
    assert json.loads(text) == {"x": "</script><!-- & -->"}


def test_trace_and_data_must_agree() -> None:
    questions = [{"id": "a"}, {"id": "b"}]
    row = {
        "prediction": "1",
        "normalized_prediction": "1",
        "answer": "1",
        "normalized_answer": "1",
        "parsed": True,
        "missing": False,
        "correct": True,
        "outcome": "correct",
    }
    assert aligned_results(questions, [{**row, "id": "b"}, {**row, "id": "a"}], "t")[0] == [
        "1",
        "1",
        "1",
        "1",
        True,
        False,
        True,
        "correct",
    ]
    with pytest.raises(DataError, match=r"t: trace and data disagree \(not in trace: \['b'\]; not in data: \['c'\]\)"):
        aligned_results(questions, [{**row, "id": "a"}, {**row, "id": "c"}], "t")


@pytest.mark.slow
def test_report_content_size_and_determinism(report: Path, tmp_path: Path) -> None:
    data = _data(report)
    assert [m["key"] for m in data["models"]] == [*MODELS, "chatty"]
    assert data["splits"] == list(C.SPLITS) and data["paired"] == list(C.PAIRED_SPLITS)
    # 6 pairs x 2 images x 2 paired splits + 8 + 8 items, each distinct image once
    assert len(data["images"]) == 40
    assert all(len(q) == 24 for q in (data["questions"]["context"], data["questions"]["texture"]))
    assert data["results"]["mixed"]["context"][16][5] is True  # context_005: no prediction (missing)
    assert data["intervals"]["mixed"]["macro"]["estimate"] == 0.4375
    assert data["pair_class"]["prior"]["context"]["context_001"] == "prior_following"
    assert [r["metric"] for r in data["paper"]] == [*C.SPLITS, "macro"]
    assert report.stat().st_size < 800_000  # three figures (PNG) and 40 thumbnails
    again = build_report(tmp_path / "again", {"chatty": chatty})
    assert again.read_bytes() == report.read_bytes()


def test_report_needs_diagnostics_of_every_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_project(tmp_path / "p")
    monkeypatch.chdir(root)
    for m in MODELS:
        assert main(["intervals", "--model", m]) == 0
    assert main(["report"]) == 2
    assert "diagnostics.json: diagnostics not found" in capsys.readouterr().err


# ---------------------------------------------------------------- the browser
def _artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = os.environ.get("SABRE_TEST_ARTIFACTS")
    if env:
        Path(env).mkdir(parents=True, exist_ok=True)
        return Path(env)
    return tmp_path_factory.mktemp("screenshots")


@pytest.mark.slow
def test_report_in_headless_chromium(report: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium; scripts/install.sh --test does it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    shots = _artifacts(tmp_path_factory)
    errors: list[str] = []
    dialogs: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-dev-shm-usage",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(15_000)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(report.as_uri())
            page.wait_for_selector("body[data-ready=true]")

            # overview: the main table with intervals, the figure
            rows = page.locator("#main-table tbody tr")
            assert rows.count() == 5
            # the cells of main_results.md: one rounding (one decimal) and one bold rule
            md = [[c.strip() for c in ln.strip("|").split(" | ")] for ln in
                  (report.parents[2] / "results/tables/main_results.md").read_text().splitlines()[2:7]]  # fmt: skip
            shown = [rows.nth(i).inner_text().split("\t") for i in range(5)]
            # (the flags aside: this fixture's metrics count no outcomes, so main_results.md has none)
            assert [[c.replace("†", "") for c in r[1:]] for r in shown] == [[c.replace("**", "").replace("†", "") for c in r[1:]] for r in md]
            assert shown[0][1:] == ["100.0 [100.0, 100.0]"] * 5
            mixed = shown[3]
            # the mixed model leaves questions without a prediction (failed): flagged beside the value,
            # counted in the note under the table (report.flags, as main_results.md's footnote)
            assert mixed[0] == "Mixed" and mixed[1].startswith("50.0† [") and mixed[5].replace("†", "").startswith("43.8 [")
            # a value flagged by report.flags (from the intervals' counts) carries the flag, the others none
            flagged_cells = rows.evaluate_all("rs => rs.map(r => [...r.children].slice(1).map(td => td.dataset.flagged === 'true'))")
            keys = rows.evaluate_all("rs => rs.map(r => r.dataset.model)")
            nonanswers = _data(report)["nonanswers"]
            assert flagged_cells == [[nonanswers[k][c]["flagged"] for c in [*C.SPLITS, "macro"]] for k in keys]
            assert flagged_cells == [["†" in c for c in r[1:]] for r in shown] and any(map(any, flagged_cells))
            assert "Mixed context " in page.inner_text("#main-note") and " non-answers (" in page.inner_text("#main-note")
            assert page.locator("#flags").is_visible() and "Mixed / context" in page.locator("#flags").inner_text()
            # issue 34: a flagged macro is listed with its count; a model not to pool carries ‡ and its reason
            flags_box = page.locator("#flags").inner_text()
            assert ("Mixed / macro: " in flags_box) == nonanswers["mixed"]["macro"]["flagged"]
            assert "Oracle ‡: do not pool with Chatty (baseline)" in flags_box and "Chatty ‡: do not pool with Oracle" in flags_box
            served = rows.evaluate_all("rs => rs.map(r => !!r.querySelector('[data-serving=true]'))")
            assert served == [k in ("oracle", "chatty") for k in keys]
            # every table with a row of the flagged model and split: the row flagged, the count beside the name
            for table in ("#parse-table", "#pairs-table"):
                assert page.locator(f"{table} tbody tr.flagged").count() >= 1
                assert "non-answers" in page.locator(f"{table} tbody tr.flagged .flag").first.inner_text()
            assert page.locator("#comparison-table tbody tr.flagged").count() >= 1
            assert page.locator("#failure-table tbody tr.flagged").count() >= 1
            bold = rows.evaluate_all("rs => rs.map(r => [...r.children].slice(1).map(td => td.classList.contains('best')))")
            assert bold == [[c.startswith("**") for c in r[1:]] for r in md]
            # every bold cell is a unique best (oracle and chatty share 100.0 on some columns: not bold)
            assert not any(b for r in bold for b in r) or all(sum(col) == 1 for col in zip(*bold) if any(col))
            heads = page.locator("#main-table thead th").all_inner_texts()
            assert heads[1].replace("\n", " ") == "Context n = 6 pairs" and heads[3].replace("\n", " ") == "Attribute n = 8 questions"
            # one colour per model: the swatch has the model's colour in the figures (params order)
            colours = rows.evaluate_all("rs => rs.map(r => r.querySelector('.swatch').dataset.color)")
            assert colours == [model_style(i).color for i in range(5)]
            # the data named is what the Parquet files record (params.yaml says demo)
            intro = page.inner_text("#overview-intro")
            assert intro.startswith(f"Data: local copy {SOURCE}; SHA-256 of the Parquet splits read: context ")
            assert "embedded demo" not in intro
            # figures: every one shown, captioned by what it shows (not its file name)
            captions = page.locator("#figures figcaption").all_inner_texts()
            assert [c.strip() for c in captions] == [caption(stem) for stem in FIGURES]
            assert not set(captions) & set(FIGURES)
            assert page.eval_on_selector("#figures img", "i => i.naturalWidth") > 500
            assert page.locator("#paper-table tbody tr").count() == 5
            assert page.locator("#comparison-table tbody tr").count() == 10 * 5
            page.screenshot(path=str(shots / "report_overview.png"), full_page=True)

            # questions: filters for failures, probe and parse failures
            page.click("#tabs a[data-view=questions]")
            page.select_option("#q-model", "mixed")
            page.select_option("#q-split", "context")
            assert page.locator("#q-rows tr").count() == 24
            assert page.inner_text("#q-count") == "24 of 24 questions"
            page.select_option("#filter-verdict", "wrong")
            wrong = page.locator("#q-rows tr")
            assert wrong.count() == 10  # 24 questions, 14 correct
            assert set(wrong.evaluate_all("rs => rs.map(r => r.dataset.correct)")) == {"false"}
            page.select_option("#filter-verdict", "all")
            page.check("#filter-parse")
            parse = page.locator("#q-rows tr")
            assert parse.count() == 4  # pair 4 answered "maybe"
            assert parse.evaluate_all("rs => rs.map(r => r.dataset.id.slice(0, 11))") == ["context_004"] * 4
            assert "parse failure" in parse.nth(0).inner_text()
            page.uncheck("#filter-parse")
            # every question's outcome (issue 21): the "maybe" answers are unparseable, context_005 has no line
            page.select_option("#filter-outcome", "unparseable")
            unparseable = page.locator("#q-rows tr")
            assert unparseable.evaluate_all("rs => rs.map(r => r.dataset.id.slice(0, 11))") == ["context_004"] * 4
            page.select_option("#filter-outcome", "failed")
            failed = page.locator("#q-rows tr")
            assert failed.count() >= 1 and set(failed.evaluate_all("rs => rs.map(r => r.dataset.outcome)")) == {"failed"}
            assert "context_005" in failed.nth(0).inner_text() and "failed" in failed.nth(0).inner_text()
            page.select_option("#filter-outcome", "all")
            page.select_option("#filter-probe", "edited_target")
            probe = page.locator("#q-rows tr")
            assert probe.count() == 6
            assert set(probe.evaluate_all("rs => rs.map(r => r.dataset.probe)")) == {"edited_target"}
            page.select_option("#filter-verdict", "wrong")
            assert page.locator("#q-rows tr").count() == 3  # pairs 4 (maybe), 5 (missing), 6 (no)
            assert page.eval_on_selector("#q-rows tr img", "i => i.complete && i.naturalWidth") > 0
            page.screenshot(path=str(shots / "report_questions.png"), full_page=True)
            page.select_option("#filter-verdict", "all")
            page.select_option("#filter-probe", "all")
            page.fill("#filter-text", "context_002")
            assert page.locator("#q-rows tr").count() == 4
            page.fill("#filter-text", "")

            # a response with markup is shown as text and runs nothing
            page.select_option("#q-model", "chatty")
            assert HOSTILE in page.inner_text("#q-rows")
            assert page.evaluate("window.__pwned") is None and not dialogs

            # pair view: base and edited images side by side, four probes
            page.click("#tabs a[data-view=pairs]")
            page.select_option("#p-model", "prior")
            page.select_option("#p-split", "texture")
            cards = page.locator("#pair-list .pair")
            assert cards.count() == 6
            assert set(cards.evaluate_all("cs => cs.map(c => c.dataset.class)")) == {"prior_following"}
            first = cards.nth(0)
            assert first.locator("tbody tr").count() == 4
            imgs = first.locator("figure img")
            assert imgs.count() == 2
            assert all(imgs.nth(i).evaluate("i => i.complete && i.naturalWidth") > 0 for i in range(2))
            base, edited = imgs.nth(0).bounding_box(), imgs.nth(1).bounding_box()
            assert base and edited and abs(base["y"] - edited["y"]) < 1 and edited["x"] > base["x"] + base["width"]
            assert [c.strip() for c in first.locator("figcaption").all_inner_texts()] == ["Base image", "Edited image"]
            page.select_option("#p-class", "all_correct")
            assert cards.count() == 0 and "No pair matches" in page.inner_text("#pair-list")
            page.select_option("#p-class", "all")
            page.select_option("#p-model", "mixed")
            page.check("#p-failed")
            assert cards.count() == 3
            assert page.inner_text("#p-count") == "3 of 6 pairs"
            page.screenshot(path=str(shots / "report_pairs.png"), full_page=True)
        finally:
            browser.close()
    assert not errors, errors
    for name in ("overview", "questions", "pairs"):
        path = shots / f"report_{name}.png"
        assert path.stat().st_size > 10_000
        print(f"screenshot: {path}")
