"""Tests of sabre_prior.report.tables: the paper's main table in md, csv and tex."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from sabre_prior import contracts as C
from sabre_prior.cli import main as cli_main
from sabre_prior.formatting import format_interval, format_percent, percent
from sabre_prior.report.tables import (
    ResultsFileError,
    latex_escape,
    markdown_escape,
    write_main_tables,
)
from tests.identity import write_split_files

# The paper's main table (docs/benchmark.md): correct pairs/items out of 100 per
# split, and the macro average the paper reports (one decimal).
PAPER: dict[str, tuple[str, tuple[int, int, int, int], str]] = {
    "claude": ("Claude 4.6", (10, 40, 17, 58), "31.3"),
    "kimi": ("Kimi-k2.6", (7, 52, 17, 17), "23.3"),
    "qwen": ("Qwen 3.5", (3, 46, 14, 29), "23.0"),
    "gemini": ("Gemini 3.5", (0, 52, 26, 11), "22.3"),
    "gpt": ("GPT-5.4", (1, 28, 20, 23), "18.0"),
    "grok": ("Grok-4.3", (4, 28, 16, 23), "17.8"),
}
SPLITS = ("context", "texture", "attribute", "language")


def fetched(root: Path) -> Path:
    """The Parquet splits the results were computed from: fetched from the demo (their schema metadata)."""
    return write_split_files(root / "data", SPLITS)


def metrics_doc(counts: tuple[int, ...], total: int = 100, splits: tuple[str, ...] = SPLITS) -> dict[str, Any]:
    """A metrics file as the scorer writes it (fractions; macro = float mean)."""
    doc: dict[str, Any] = {}
    for split, correct in zip(splits, counts):
        block: dict[str, Any] = {"accuracy": correct / total, "correct": correct, "total": total, "missing": 0}
        if split in C.PAIRED_SPLITS:
            block["question_accuracy"] = 0.5
            block["probe_accuracy"] = {p: 0.5 for p in C.PROBES[split]}
        doc[split] = block
    doc["macro_accuracy"] = sum(c / total for c in counts) / len(counts)
    return doc


def write_paper_fixture(root: Path, names: bool = True) -> dict[str, Any]:
    mdir = root / "metrics"
    mdir.mkdir(parents=True, exist_ok=True)
    models: dict[str, Any] = {}
    for key, (name, counts, _) in PAPER.items():
        models[key] = {"backend": "baseline", "strategy": "random"}
        if names:
            models[key]["display_name"] = name
        (mdir / f"{key}.json").write_text(json.dumps(metrics_doc(counts)), encoding="utf-8")
    return {"dataset": {"source": "demo"}, "splits": list(SPLITS), "models": models}


def half_up_tenths(numerator: int, denominator: int) -> str:
    """Independent reference: the fraction numerator/denominator in percent, one decimal, half up (integers only)."""
    tenths = (numerator * 1000 * 2 + denominator) // (2 * denominator)
    return f"{tenths // 10}.{tenths % 10}"


def read_csv(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


def md_rows(path: Path) -> list[list[str]]:
    """Cells of the table rows (after header and rule) of a Markdown table."""
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.startswith("|")]
    return [[c.strip() for c in ln.strip("|").split(" | ")] for ln in lines[2:]]


# ---------------------------------------------------------------------------
# Number formatting
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fraction", "expected"),
    [
        (1 / 3, "33.3"),
        (2 / 3, "66.7"),
        (0.4, "40.0"),
        (0.0, "0.0"),
        (-0.0, "0.0"),
        (1.0, "100.0"),
        (1, "100.0"),
        (0.1225, "12.3"),  # 12.25 %: a tie, away from zero (banker's gives 12.2)
        (0.0025, "0.3"),  # 0.25 %: banker's would give 0.2
        (0.0015, "0.2"),
        (0.00125, "0.1"),  # 0.125 %: not a tie at one decimal
        (0.0005, "0.1"),
        (0.0004999, "0.0"),
        (0.3125, "31.3"),  # the paper: Claude's 31.25 -> 31.3
        (0.31249999999999994, "31.3"),  # float noise of a 31.25 mean
        (0.31250000000000006, "31.3"),
        (0.3124, "31.2"),
        (0.1775, "17.8"),
        (0.999, "99.9"),
        (0.9995, "100.0"),
        (-0.1225, "-12.3"),  # away from zero on both sides
    ],
)
def test_format_percent(fraction: float, expected: str) -> None:
    assert format_percent(fraction) == expected


def test_format_percent_differs_from_python_round_on_ties() -> None:
    assert f"{round(12.25, 1):.1f}" == "12.2"  # the behaviour we deliberately avoid
    assert format_percent(0.1225) == "12.3"


def test_format_percent_matches_integer_reference_on_count_ratios() -> None:
    for denominator in (4, 8, 12, 100, 400):
        for numerator in range(denominator + 1):
            assert format_percent(numerator / denominator) == half_up_tenths(numerator, denominator), (
                numerator,
                denominator,
            )


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), True, "0.5", None])
def test_percent_rejects_non_numbers(bad: Any) -> None:
    with pytest.raises(ValueError):
        percent(bad)


def test_format_interval() -> None:
    assert format_interval(0.4, 0.31, 0.5) == "40.0 [31.0, 50.0]"


# ---------------------------------------------------------------------------
# Escaping
# ---------------------------------------------------------------------------
def test_latex_escape_every_special() -> None:
    assert latex_escape("a_b & 100% #1 $x$ {y} ~ ^ \\ [z]") == (
        r"a\_b \& 100\% \#1 \$x\$ \{y\} \textasciitilde{} \textasciicircum{} \textbackslash{} {[}z{]}"
    )
    assert latex_escape("GPT-5.4") == "GPT-5.4"


def test_markdown_escape() -> None:
    assert markdown_escape("a|b *c* _d_") == r"a\|b \*c\* \_d\_"


# ---------------------------------------------------------------------------
# The main table
# ---------------------------------------------------------------------------
def test_csv_reproduces_the_paper_table(tmp_path: Path) -> None:
    params = write_paper_fixture(tmp_path)
    paths = write_main_tables(params, tmp_path / "metrics", tmp_path / "out", data_dir=fetched(tmp_path))
    assert [p.name for p in paths] == ["main_results.md", "main_results.csv", "main_results.tex"]
    text = (tmp_path / "out" / "main_results.csv").read_text(encoding="utf-8")
    assert text.splitlines()[0] == "model,context,texture,attribute,language,macro"
    expected = [["model", "context", "texture", "attribute", "language", "macro"]]
    for key, (_, counts, paper_macro) in PAPER.items():
        macro = half_up_tenths(sum(counts), 100 * len(counts))
        assert macro == paper_macro  # our reference rounding agrees with the paper
        expected.append([key, *(f"{c}.0" for c in counts), macro])
    assert read_csv(tmp_path / "out" / "main_results.csv") == expected
    assert text.endswith("\n") and "\r" not in text


def test_rows_follow_params_order_not_alphabetical(tmp_path: Path) -> None:
    params = write_paper_fixture(tmp_path)
    params["models"] = dict(reversed(list(params["models"].items())))
    write_main_tables(params, tmp_path / "metrics", tmp_path / "out", data_dir=fetched(tmp_path))
    keys = [row[0] for row in read_csv(tmp_path / "out" / "main_results.csv")[1:]]
    assert keys == list(reversed(list(PAPER)))


def test_markdown_bolds_only_a_unique_best_and_names_shared_ones(tmp_path: Path) -> None:
    params = write_paper_fixture(tmp_path)
    write_main_tables(params, tmp_path / "metrics", tmp_path / "out", data_dir=fetched(tmp_path))
    md = tmp_path / "out" / "main_results.md"
    text = md.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == (
        "| Model | Context (n = 100 pairs) | Texture (n = 100 pairs) | Attribute (n = 100 questions) "
        "| Language (n = 100 questions) | Macro avg. |"
    )
    rows = md_rows(md)
    assert [r[0] for r in rows] == [name for name, _, _ in PAPER.values()]
    for j in range(4):
        values = [counts[j] for _, counts, _ in PAPER.values()]
        best = max(values)
        expected_bold = {name for name, counts, _ in PAPER.values() if counts[j] == best} if values.count(best) == 1 else set()
        bold = {r[0] for r in rows if r[j + 1].startswith("**")}
        assert bold == expected_bold, SPLITS[j]
    # Texture: Kimi and Gemini tie at 52: no bold, and the caption says so.
    assert [r[2] for r in rows if r[2].endswith("52.0")] == ["52.0", "52.0"]
    assert "Best shared, so not bold: Texture 52.0 (2 models)." in text
    assert [r[5] for r in rows] == ["**31.3**", "23.3", "23.0", "22.3", "18.0", "17.8"]


def test_tied_zeros_are_never_bold(tmp_path: Path) -> None:
    """The demo's baselines: every model at 0.0 on context, one model ahead elsewhere."""
    mdir = tmp_path / "metrics"
    mdir.mkdir()
    for key, counts in (("a", (0, 33, 0, 17)), ("b", (0, 0, 0, 0)), ("c", (0, 0, 0, 0)), ("d", (0, 0, 0, 0))):
        (mdir / f"{key}.json").write_text(json.dumps(metrics_doc(counts)))
    models = {k: {"backend": "baseline", "strategy": "random"} for k in "abcd"}
    write_main_tables({"splits": list(SPLITS), "models": models}, mdir, tmp_path / "out", data_dir=fetched(tmp_path))
    md = (tmp_path / "out" / "main_results.md").read_text()
    assert "**0.0**" not in md
    rows = md_rows(tmp_path / "out" / "main_results.md")
    assert rows[0][1:] == ["0.0", "**33.0**", "0.0", "**17.0**", "**12.5**"]
    assert "Best shared, so not bold: Context 0.0 (every model); Attribute 0.0 (every model)." in md
    tex = (tmp_path / "out" / "main_results.tex").read_text()
    assert r"\textbf{0.0}" not in tex and r"\textbf{33.0}" in tex


def test_bold_compares_the_rounded_values(tmp_path: Path) -> None:
    mdir = tmp_path / "metrics"
    mdir.mkdir()
    # 0.3125 and 0.31251 both show 31.3: a shared best, so neither is bold.
    for key, macro in (("a", 0.3125), ("b", 0.31251), ("c", 0.2)):
        doc = metrics_doc((10, 20, 30, 40))
        doc["macro_accuracy"] = macro
        (mdir / f"{key}.json").write_text(json.dumps(doc))
    models = {k: {"backend": "baseline", "strategy": "random"} for k in "abc"}
    write_main_tables({"splits": list(SPLITS), "models": models}, mdir, tmp_path / "out", data_dir=fetched(tmp_path))
    rows = md_rows(tmp_path / "out" / "main_results.md")
    assert [r[5] for r in rows] == ["31.3", "31.3", "20.0"]
    assert [r[0] for r in rows] == ["a", "b", "c"]  # display_name falls back to the key
    assert "Macro avg. 31.3 (2 models)" in (tmp_path / "out" / "main_results.md").read_text()


def test_best_flags_rule() -> None:
    from decimal import Decimal as D

    from sabre_prior.report.style import best_flags

    assert best_flags([D("0.0"), D("0.0"), D("0.0")]) == [False, False, False]  # all tied
    assert best_flags([D("10.0"), D("52.0"), D("52.0")]) == [False, False, False]  # best shared
    assert best_flags([D("10.0"), D("52.0"), D("0.0")]) == [False, True, False]  # one model alone
    assert best_flags([D("0.1"), D("0.0")]) == [True, False]
    assert best_flags([D("40.0")]) == [False]  # nothing to compare with
    assert best_flags([None, D("5.0"), None]) == [False, False, False]
    assert best_flags([None, D("5.0"), D("4.9")]) == [False, True, False]


def test_latex_table_is_booktabs_with_escaped_names(tmp_path: Path) -> None:
    params = write_paper_fixture(tmp_path)
    params["models"]["claude"]["display_name"] = "Claude_4.6 & co. 100%"
    write_main_tables(params, tmp_path / "metrics", tmp_path / "out", data_dir=fetched(tmp_path))
    tex = (tmp_path / "out" / "main_results.tex").read_text(encoding="utf-8")
    body = [ln for ln in tex.splitlines() if not ln.startswith("%")]
    assert body[0] == r"\begin{tabular}{lrrrrr}"
    assert body[1] == r"\toprule"
    assert body[2] == (
        r"Model & Context (n = 100 pairs) & Texture (n = 100 pairs) & Attribute (n = 100 questions) & "
        r"Language (n = 100 questions) & Macro avg. \\"
    )
    assert body[3] == r"\midrule"
    assert body[-2:] == [r"\bottomrule", r"\end{tabular}"]
    rows = body[4:-2]
    assert len(rows) == len(PAPER)
    assert rows[0] == (r"Claude\_4.6 \& co. 100\% & \textbf{10.0} & 40.0 & 17.0 & \textbf{58.0} & \textbf{31.3} \\")
    for row in rows:  # five column separators per row: no unescaped & or % leaked
        assert len(re.findall(r"(?<!\\)&", row)) == 5
        assert not re.search(r"(?<!\\)%", row)
    assert "52.0" in rows[1] and "52.0" in rows[3] and r"\textbf{52.0}" not in tex  # a shared best


def test_intervals_in_md_tex_and_ci_csv(tmp_path: Path) -> None:
    params = write_paper_fixture(tmp_path)
    write_main_tables(params, tmp_path / "metrics", tmp_path / "plain", data_dir=fetched(tmp_path))
    idir = tmp_path / "intervals"
    idir.mkdir()
    for key, (_, counts, _) in PAPER.items():
        doc: dict[str, Any] = {"confidence": 0.95, "resamples": 2000, "seed": 7}
        for split, c in zip(SPLITS, counts):
            doc[split] = {"estimate": c / 100, "low": max(0, c - 9) / 100, "high": min(100, c + 10) / 100}
        macro = sum(counts) / 400
        doc["macro"] = {"estimate": macro, "low": macro - 0.05, "high": macro + 0.05}
        (idir / f"{key}.json").write_text(json.dumps(doc))
    paths = write_main_tables(params, tmp_path / "metrics", tmp_path / "ci", idir, data_dir=fetched(tmp_path))
    assert [p.name for p in paths][-1] == "main_results_ci.csv"
    # The main CSV keeps its exact shape and values.
    assert (tmp_path / "ci" / "main_results.csv").read_bytes() == (tmp_path / "plain" / "main_results.csv").read_bytes()
    rows = md_rows(tmp_path / "ci" / "main_results.md")
    assert rows[0][1:] == [
        "**10.0** [1.0, 20.0]",
        "40.0 [31.0, 50.0]",
        "17.0 [8.0, 27.0]",
        "**58.0** [49.0, 68.0]",
        "**31.3** [26.3, 36.3]",
    ]
    assert (
        "95% bootstrap confidence interval (2000 resamples, seed 7)"
        in (tmp_path / "ci" / "main_results.md").read_text()
    )
    tex = (tmp_path / "ci" / "main_results.tex").read_text()
    assert r"Claude 4.6 & \textbf{10.0} [1.0, 20.0] & 40.0 [31.0, 50.0] &" in tex
    ci = read_csv(tmp_path / "ci" / "main_results_ci.csv")
    assert ci[0] == ["model", "split", "estimate", "low", "high", "nonanswer", "questions", "flagged"]
    assert len(ci) == 1 + 5 * len(PAPER)
    # these metrics count no outcomes: the flag columns are empty (nothing to flag, nothing claimed)
    assert ci[1:6] == [
        ["claude", "context", "10.0", "1.0", "20.0", "", "", ""],
        ["claude", "texture", "40.0", "31.0", "50.0", "", "", ""],
        ["claude", "attribute", "17.0", "8.0", "27.0", "", "", ""],
        ["claude", "language", "58.0", "49.0", "68.0", "", "", ""],
        ["claude", "macro", "31.3", "26.3", "36.3", "", "", ""],
    ]
    # A later run without intervals removes the stale CI file.
    write_main_tables(params, tmp_path / "metrics", tmp_path / "ci", data_dir=fetched(tmp_path))
    assert not (tmp_path / "ci" / "main_results_ci.csv").exists()


def _one_model_with_intervals(tmp_path: Path, interval_doc: dict[str, Any]) -> tuple[dict[str, Any], Path]:
    mdir, idir = tmp_path / "metrics", tmp_path / "intervals"
    mdir.mkdir()
    idir.mkdir()
    (mdir / "m.json").write_text(json.dumps(metrics_doc((10, 20, 30, 40))))
    (idir / "m.json").write_text(json.dumps(interval_doc))
    return {"splits": list(SPLITS), "models": {"m": {"backend": "baseline", "strategy": "random"}}}, idir


def test_stale_intervals_are_an_error(tmp_path: Path) -> None:
    doc: dict[str, Any] = {s: {"estimate": v, "low": 0.0, "high": 0.5} for s, v in zip(SPLITS, (0.1, 0.2, 0.3, 0.4))}
    doc["macro"] = {"estimate": 0.3, "low": 0.2, "high": 0.4}  # metrics say 0.25
    doc.update(confidence=0.95, resamples=100, seed=0)
    params, idir = _one_model_with_intervals(tmp_path, doc)
    with pytest.raises(ResultsFileError, match=r"intervals/m\.json: macro\.estimate.*stale"):
        write_main_tables(params, tmp_path / "metrics", tmp_path / "out", idir, data_dir=fetched(tmp_path))


def test_missing_interval_entry_is_an_error(tmp_path: Path) -> None:
    doc: dict[str, Any] = {s: {"estimate": v, "low": 0.0, "high": 0.5} for s, v in zip(SPLITS, (0.1, 0.2, 0.3, 0.4))}
    doc.update(confidence=0.95, resamples=100, seed=0)
    params, idir = _one_model_with_intervals(tmp_path, doc)
    with pytest.raises(ResultsFileError, match=r"m\.json: interval for 'macro' is missing"):
        write_main_tables(params, tmp_path / "metrics", tmp_path / "out", idir, data_dir=fetched(tmp_path))


def test_missing_intervals_file_names_the_file(tmp_path: Path) -> None:
    params = write_paper_fixture(tmp_path)
    (tmp_path / "intervals").mkdir()
    with pytest.raises(ResultsFileError, match=r"intervals/claude\.json: intervals file for model 'claude' not found"):
        write_main_tables(params, tmp_path / "metrics", tmp_path / "out", tmp_path / "intervals", data_dir=fetched(tmp_path))


def test_missing_metrics_file_names_the_file(tmp_path: Path) -> None:
    params = write_paper_fixture(tmp_path)
    (tmp_path / "metrics" / "qwen.json").unlink()
    with pytest.raises(ResultsFileError) as info:
        write_main_tables(params, tmp_path / "metrics", tmp_path / "out", data_dir=fetched(tmp_path))
    assert str(tmp_path / "metrics" / "qwen.json") in str(info.value)
    assert "not found" in str(info.value)
    assert not (tmp_path / "out").exists()  # nothing half-written


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"m\.json: not valid JSON"),
        ("[1, 2]", r"m\.json: top level must be a JSON object"),
        (
            json.dumps({**metrics_doc((1, 2, 3, 4)), "texture": {"accuracy": 12.0}}),
            r"texture\.accuracy must be a fraction",
        ),
        (json.dumps({k: v for k, v in metrics_doc((1, 2, 3, 4)).items() if k != "language"}), r"split 'language'"),
        (
            json.dumps({k: v for k, v in metrics_doc((1, 2, 3, 4)).items() if k != "macro_accuracy"}),
            "macro_accuracy is missing",
        ),
    ],
)
def test_malformed_metrics_are_errors(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "m.json").write_text(content)
    params = {"splits": list(SPLITS), "models": {"m": {"backend": "baseline", "strategy": "random"}}}
    with pytest.raises(ResultsFileError, match=message):
        write_main_tables(params, tmp_path / "metrics", tmp_path / "out", data_dir=fetched(tmp_path))


def test_unconfigured_splits_leave_empty_cells(tmp_path: Path) -> None:
    (tmp_path / "metrics").mkdir()
    doc = metrics_doc((25, 50), splits=("attribute", "language"))
    (tmp_path / "metrics" / "m.json").write_text(json.dumps(doc))
    params = {"splits": ["language", "attribute"], "models": {"m": {"backend": "baseline", "strategy": "random"}}}
    write_main_tables(params, tmp_path / "metrics", tmp_path / "out", data_dir=fetched(tmp_path))
    assert read_csv(tmp_path / "out" / "main_results.csv")[1] == ["m", "", "", "25.0", "50.0", "37.5"]
    # one model: nothing to compare with, so nothing is bold
    assert md_rows(tmp_path / "out" / "main_results.md")[0] == ["m", "–", "–", "25.0", "50.0", "37.5"]


# ---------------------------------------------------------------------------
# CLI and determinism
# ---------------------------------------------------------------------------
def _write_params(tmp_path: Path, params: dict[str, Any]) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    return path


def test_cli_missing_metrics_exits_non_zero_naming_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    params = write_paper_fixture(tmp_path)
    (tmp_path / "metrics" / "grok.json").unlink()
    ppath = _write_params(tmp_path, params)
    code = cli_main(
        [
            "tables",
            "--params",
            str(ppath),
            "--metrics-dir",
            str(tmp_path / "metrics"),
            "--outdir",
            str(tmp_path / "out"),
            "--data",
            str(fetched(tmp_path)),
        ]
    )
    assert code != 0
    assert "grok.json" in capsys.readouterr().err


def test_tables_bytes_identical_across_processes(tmp_path: Path) -> None:
    params = write_paper_fixture(tmp_path)
    ppath = _write_params(tmp_path, params)
    sabre = Path(sys.executable).parent / "sabre"
    for run in ("a", "b"):
        env = {**os.environ, "PYTHONHASHSEED": "1" if run == "a" else "2"}
        subprocess.run(
            [
                str(sabre),
                "tables",
                "--params",
                str(ppath),
                "--metrics-dir",
                str(tmp_path / "metrics"),
                "--outdir",
                str(tmp_path / run),
                "--data",
                str(fetched(tmp_path)),
            ],
            check=True,
            capture_output=True,
            env=env,
        )
    for name in ("main_results.md", "main_results.csv", "main_results.tex"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_refused_questions_are_in_the_footnote(tmp_path: Path) -> None:
    params = write_paper_fixture(tmp_path)
    path = tmp_path / "metrics" / "claude.json"
    doc = json.loads(path.read_text())
    doc["context"]["refused"], doc["language"]["refused"] = 2, 1
    path.write_text(json.dumps(doc))
    write_main_tables(params, tmp_path / "metrics", tmp_path / "out", data_dir=fetched(tmp_path))
    md = (tmp_path / "out" / "main_results.md").read_text(encoding="utf-8")
    assert "refused by the provider (no answer, counted as wrong): Claude 4.6 3 (context 2, language 1)." in md
    assert "Kimi-k2.6 " not in md.split("refused by the provider")[1]
    assert "Claude 4.6 3 (context 2, language 1)" in (tmp_path / "out" / "main_results.tex").read_text()
