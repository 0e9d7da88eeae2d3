"""Issue 21 beyond scoring: prompt templates as a dimension, the stability audit, served versions.

Against the fake provider servers (HTTP on 127.0.0.1) and the offline baselines.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sabre_prior import cli
from sabre_prior import contracts as C
from sabre_prior.analysis.robustness import drift, served_versions, template_scores
from sabre_prior.analysis.settings import AnalysisSettings
from sabre_prior.errors import ConfigError
from sabre_prior.inference import prompts
from sabre_prior.audit import stability
from sabre_prior.inference.audit import AuditSettings, select_subset
from sabre_prior.inference.journal import read_journal
from sabre_prior.inference.models.baseline import BaselineBackend
from sabre_prior.inference.models.base import Query
from tests.servers import FakeServer, protocols
from tests.servers.dataset import write_split
from tests.servers.fixtures import KEY_ENV, api_key, model_settings, server  # noqa: F401

ROW = {"id": "q1", "question": "Is there a cat?", "eval_type": "yes_no_exact"}
CHOICE = {"id": "q2", "question": "What is it?", "options": ["a cat", "a dog"], "eval_type": "multiple_choice_exact"}


# -- templates ---------------------------------------------------------------------------------
def test_three_templates_and_their_texts() -> None:
    assert list(prompts.TEMPLATES) == ["screening_v1", "bare_v1", "format_v1"]
    assert prompts.render(ROW, "yes_no_exact", "bare_v1") == "Is there a cat?"
    assert prompts.render(CHOICE, "multiple_choice_exact", "bare_v1") == "What is it?\nA. a cat\nB. a dog"
    assert prompts.render(ROW, "yes_no_exact", "format_v1") == (
        "Question: Is there a cat?\n\nAnswer format: exactly one word, yes or no.\nReply with the answer only."
    )
    assert prompts.render(ROW, "yes_no_exact") == "Question: Is there a cat?\n\nAnswer with only yes or no. Do not explain."
    with pytest.raises(ConfigError, match=r"prompt.templates\[1\]: unknown prompt template 'nope'"):
        prompts.check_templates(["screening_v1", "nope"])


def test_docs_hold_every_templates_text() -> None:
    doc = (Path(__file__).parents[1] / "docs" / "prompts.md").read_text(encoding="utf-8")
    for name in prompts.TEMPLATES:
        assert f"`{name}`" in doc
    for row, eval_type in ((ROW, "yes_no_exact"), (CHOICE, "multiple_choice_exact")):
        for name in prompts.TEMPLATES:
            for line in prompts.render(row, eval_type, name).splitlines():
                assert line in doc, f"{name}: {line!r} not shown in docs/prompts.md"


def test_baselines_keep_the_main_answers_and_respond_to_template_and_repeat() -> None:
    rows = [{"id": f"q{i}", "eval_type": "yes_no_exact", "probe": "base_source"} for i in range(200)]

    def answers(strategy: str, template: str, repeat: int = 0) -> list[str]:
        b = BaselineBackend("b", {"backend": "baseline", "strategy": strategy})
        return [b.answer(Query(r["id"], "context", "", b"", "image/png", r, template, repeat)) for r in rows]

    for strategy in ("random", "prior", "always_yes"):  # the main table's answers are those of the paper's prompt
        assert answers(strategy, "screening_v1") == answers(strategy, "")
    unparseable = "It is hard to say from this picture."
    assert 0 < answers("random", "bare_v1").count(unparseable) < 200 // 4
    assert 0 < answers("prior", "bare_v1").count(unparseable) < 200 // 3
    assert unparseable not in answers("random", "format_v1")
    main, again = answers("random", "screening_v1"), answers("random", "screening_v1", repeat=1)
    changed = sum(a != b for a, b in zip(main, again))
    assert 0 < changed < 200 // 4  # 1 in 5 re-drawn, about half of those land on the other answer
    assert answers("prior", "screening_v1", repeat=2) == answers("prior", "screening_v1")


# -- prompt runs: only new prompts are paid ----------------------------------------------------
@pytest.fixture
def project(tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    for split, n in (("context", 8), ("attribute", 5)):
        write_split(tmp_path / "data" / "parquet" / f"{split}.parquet", split, n)
    params = {
        "dataset": {"source": "demo"},
        "splits": ["context", "attribute"],
        "prompt": {"templates": ["screening_v1", "format_v1"]},
        "audit": {"repeats": 3, "questions": 4},
        "models": {"fake": model_settings(server, prices={"input_per_mtok": 1.0, "output_per_mtok": 5.0})},
    }
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(argv: list[str]) -> None:
    assert cli.main(argv) == 0


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The command fails (non-zero exit); its error text."""
    capsys.readouterr()
    assert cli.main(argv) != 0
    return capsys.readouterr().err


def test_prompt_runs_reuse_the_main_answers_and_pay_only_new_prompts(project: Path, server: FakeServer, capsys) -> None:
    for split in ("context", "attribute"):
        _run(["predict", "--model", "fake", "--split", split, "--no-progress"])
    main_calls = len(server.calls)
    assert main_calls == 13
    capsys.readouterr()
    _run(["estimate"])
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("fake")]
    by = {(r[1], r[-2], r[-1]): r for r in rows}  # (split, template, repeat)
    assert by[("context", "screening_v1", "0")][3:6] == ["8", "8", "0"]  # the main run: all in the journal
    assert by[("context", "format_v1", "0")][3:6] == ["8", "0", "8"]  # a new template: every prompt is new
    assert by[("context", "screening_v1", "1")][3:6] == ["4", "0", "4"]  # audit: whole pairs, 4 questions
    assert by[("attribute", "screening_v1", "2")][3:6] == ["4", "0", "4"]
    assert not any(k[1] == "screening_v1" and k[2] == "0" and by[k][5] != "0" for k in by)

    _run(["prompt-run", "--template", "screening_v1", "--model", "fake", "--outdir", "results/prompts/screening_v1/fake", "--no-progress"])
    assert len(server.calls) == main_calls, "the main template's prompt run is all journal hits"
    _run(["prompt-run", "--template", "format_v1", "--model", "fake", "--outdir", "results/prompts/format_v1/fake", "--no-progress"])
    assert len(server.calls) == main_calls + 13  # only the new template's prompts
    journal = read_journal(project / ".sabre/journal/prompts/format_v1/fake/context.jsonl")
    assert {r["template"] for r in journal.values()} == {"format_v1"}
    main_metrics = json.loads((project / "results/prompts/screening_v1/fake/metrics.json").read_text())
    assert set(main_metrics) == {"context", "attribute", "macro_accuracy"}
    _run(["prompt-run", "--template", "format_v1", "--model", "fake", "--outdir", "results/prompts/format_v1/fake", "--no-progress"])
    assert len(server.calls) == main_calls + 13, "a re-run pays nothing"
    capsys.readouterr()
    assert cli.main(["prompt-run", "--template", "bare_v1", "--model", "fake", "--outdir", "x", "--no-progress"]) != 0
    assert "params.yaml: prompt.templates does not list 'bare_v1'" in capsys.readouterr().err


def test_served_versions_are_recorded_and_drift_is_seen(project: Path, server: FakeServer) -> None:
    _run(["predict", "--model", "fake", "--split", "context", "--no-progress"])
    journal = read_journal(project / ".sabre/journal/fake/context.jsonl")
    served = [r["extra"]["served"] for r in journal.values()]
    assert all(s["model"] == "fake-model-1-2026-01-01" and s["system_fingerprint"] == "fp_fake0001" for s in served)
    assert len({s["response_id"] for s in served}) == len(served)  # one id per response
    usage = json.loads((project / "results/usage/fake/context.json").read_text())
    assert usage["served"] == {"fake-model-1-2026-01-01 / fp_fake0001": 8}
    assert not drift(served_versions(project / "results/usage/fake", ["context"]))

    protocols.SERVED.update(model="fake-model-1-2026-03-01", system_fingerprint="fp_fake0002")
    try:  # a later run (the attribute split) served by another version
        _run(["predict", "--model", "fake", "--split", "attribute", "--no-progress"])
    finally:
        protocols.SERVED.clear()
    versions = served_versions(project / "results/usage/fake", ["context", "attribute"])
    assert versions == {"fake-model-1-2026-01-01 / fp_fake0001": 8, "fake-model-1-2026-03-01 / fp_fake0002": 5}
    assert drift(versions)


def test_audit_repeats_are_new_calls_and_repeat_zero_is_the_main_run(
    project: Path, server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for split in ("context", "attribute"):
        _run(["predict", "--model", "fake", "--split", split, "--no-progress"])
    _run(["evaluate", "--predictions", "results/predictions/fake", "--params", "params.yaml",
          "--output", "results/metrics/fake.json", "--trace-dir", "results/traces/fake", "--usage", "results/usage/fake"])  # fmt: skip
    before = len(server.calls)
    audit_cmd = ["audit", "--model", "fake", "--traces-dir", "results/traces/fake", "--output", "results/audit/fake.json"]
    # the aggregation asks nothing: without the repeats' records it says which command makes them
    assert "repeat 1 of the audit of model 'fake' not found: run `sabre audit-run --model fake --repeat 1`" in _fails(audit_cmd, capsys)
    assert len(server.calls) == before
    # one repeat per job (the pipeline's audit_run@fake-<r>), each with its own record and journal
    for r in (1, 2):
        _run(["audit-run", "--model", "fake", "--repeat", str(r), "--no-progress"])
        assert len(server.calls) == before + r * 8  # 4 questions in each of two splits
        record = json.loads((project / f"results/audit/fake/r{r}.json").read_text())
        assert record["repeat"] == r and len(record["answers"]) == 8
        assert {a["outcome"] for a in record["answers"].values()} <= set(C.OUTCOMES)
    assert "--repeat 3: audit.repeats is 3 in params.yaml, so the repeats to ask are 1..2" in _fails(
        ["audit-run", "--model", "fake", "--repeat", "3", "--no-progress"], capsys
    )
    _run(audit_cmd)
    assert len(server.calls) == before + 2 * 8  # repeats 1 and 2 of 4 questions in each of two splits
    audit = json.loads((project / "results/audit/fake.json").read_text())
    assert audit["enabled"] and audit["repeats"] == 3 and audit["questions"] == 8
    assert all(len(v) == 3 for v in audit["answers"].values())
    assert set(audit["usage"]) == {"r1", "r2"} and audit["usage"]["r1"]["context"]["calls"] == 4
    assert audit["served_in_repeats"] == {"fake-model-1-2026-01-01 / fp_fake0001": 16}
    assert audit["nonanswer"] == {"nonanswer": 0, "questions": 3 * 8, "rate": 0.0}  # every repeat's answers counted
    # every repeat again (no --repeat): all journal hits
    _run(["audit-run", "--model", "fake", "--no-progress"])
    _run(audit_cmd)
    assert len(server.calls) == before + 16, "repeats already in their journals are not paid again"
    assert json.loads((project / "results/audit/fake.json").read_text()) == audit


# -- pure statistics ------------------------------------------------------------------------------
def test_subset_is_stratified_seeded_and_order_free() -> None:
    rows = [{"id": f"p{i}__{p}", "pair_id": f"p{i}", "probe": p} for i in range(10) for p in
            ("base_source", "base_target", "edited_source", "edited_target")]  # fmt: skip
    a = select_subset(rows, "context", AuditSettings(3, 8, 0))
    assert a == select_subset(list(reversed(rows)), "context", AuditSettings(3, 8, 0))
    assert len(a) == 8 and len({i.split("__")[0] for i in a}) == 2  # two whole pairs
    assert a != select_subset(rows, "context", AuditSettings(3, 8, 1))
    counts = [{"id": f"a{i}", "answer": str(i % 3)} for i in range(30)]
    chosen = select_subset(counts, "attribute", AuditSettings(3, 6, 0))
    assert sorted(int(i[1:]) % 3 for i in chosen) == [0, 0, 1, 1, 2, 2]  # two of each expected answer
    assert len(select_subset(counts, "attribute", AuditSettings(3, "all", 0))) == 30


def test_flip_rate_and_accuracy_spread_by_hand() -> None:
    answers = {
        "a": [{"answer": "yes", "correct": True}] * 3,
        "b": [{"answer": "yes", "correct": True}, {"answer": "no", "correct": False}, {"answer": "yes", "correct": True}],
        "c": [{"answer": None, "correct": False}, {"answer": "no", "correct": True}, {"answer": "no", "correct": True}],
        "d": [{"answer": "2", "correct": False}] * 3,
    }
    s = stability(answers, 500, 0, 0.95)
    assert s["flipped"] == 2 and s["flip_rate"]["estimate"] == 0.5
    assert s["flip_rate"]["low"] <= 0.5 <= s["flip_rate"]["high"]
    assert s["accuracy"]["per_repeat"] == [0.5, 0.5, 0.75]
    assert s["accuracy"]["min"] == 0.5 and s["accuracy"]["max"] == 0.75


def test_template_differences_are_paired() -> None:
    def rows(correct: list[bool]) -> list[dict]:
        return [{"id": f"q{i}", "correct": c, "outcome": "correct" if c else "wrong"} for i, c in enumerate(correct)]

    main = [True] * 10 + [False] * 10
    other = [True] * 8 + [False] * 12  # loses two of main's right answers, nothing else changes
    out = template_scores({"t0": {"attribute": rows(main)}, "t1": {"attribute": rows(other)}}, "t0",
                          AnalysisSettings(resamples=500, seed=0))  # fmt: skip
    assert [r["template"] for r in out] == ["t0", "t1"]
    assert out[0]["difference"] == {"estimate": 0.0, "low": 0.0, "high": 0.0}
    diff = out[1]["difference"]
    assert diff["estimate"] == pytest.approx(-0.1)
    # paired: the difference varies only through the two discordant questions, far less than either macro
    assert diff["high"] <= 0.0 and diff["high"] - diff["low"] < out[1]["macro"]["high"] - out[1]["macro"]["low"]


def test_cost_is_split_by_template_and_repeat(project: Path, server: FakeServer) -> None:
    for split in ("context", "attribute"):
        _run(["predict", "--model", "fake", "--split", split, "--no-progress"])
    _run(["evaluate", "--predictions", "results/predictions/fake", "--params", "params.yaml",
          "--output", "results/metrics/fake.json", "--trace-dir", "results/traces/fake", "--usage", "results/usage/fake"])  # fmt: skip
    _run(["prompt-run", "--template", "format_v1", "--model", "fake", "--outdir", "results/prompts/format_v1/fake", "--no-progress"])
    _run(["audit-run", "--model", "fake", "--no-progress"])
    _run(["audit", "--model", "fake", "--traces-dir", "results/traces/fake", "--output", "results/audit/fake.json"])
    _run(["stability", "--prompts-dir", "results/prompts", "--outdir", "results/tables"])
    import csv

    rows = list(csv.DictReader((project / "results/tables/cost.csv").open()))
    calls = {(r["template"], r["repeat"], r["split"]): int(r["calls"]) for r in rows}
    assert calls == {
        ("screening_v1", "0", "context"): 8, ("screening_v1", "0", "attribute"): 5,
        ("format_v1", "0", "context"): 8, ("format_v1", "0", "attribute"): 5,
        ("screening_v1", "1", "context"): 4, ("screening_v1", "1", "attribute"): 4,
        ("screening_v1", "2", "context"): 4, ("screening_v1", "2", "attribute"): 4,
    }  # fmt: skip
    assert sum(calls.values()) == len(server.calls)  # every call made is in the table, once
    assert all(float(r["estimated_cost_usd"]) > 0 for r in rows)
    stability_md = (project / "results/tables/stability.md").read_text()
    assert "| fake-model-1-2026-01-01 / fp_fake0001 (29) |" in stability_md  # 13 main + 16 audit answers, no drift


def test_stability_flags_a_model_whose_audited_answers_are_non_answers(tmp_path: Path) -> None:
    """A non-answer in one repeat and an answer in another reads as a flip: the row says how many there were."""
    import csv

    from sabre_prior.analysis.robustness import write_stability
    from sabre_prior.io_utils import write_json
    from sabre_prior.report.flags import block

    params = {"models": {"steady": {"display_name": "Steady"}, "failing": {"display_name": "Failing"}},
              "splits": ["attribute"], "prompt": {"templates": ["screening_v1"]},
              "analysis": {"report": {"max_nonanswer_rate": 0.05}}}  # fmt: skip
    for model, nonanswer in (("steady", 0), ("failing", 9)):
        write_json(tmp_path / "audit" / f"{model}.json", {
            "enabled": True, "repeats": 3, "questions": 20, "flipped": 9 if nonanswer else 0, "template": "screening_v1",
            "flip_rate": {"estimate": nonanswer / 20, "low": 0.0, "high": 0.7},
            "accuracy": {"mean": 0.5, "sd": 0.0, "min": 0.5, "max": 0.5}, "served_in_repeats": {}, "usage": {},
            "nonanswer": block(nonanswer, 60),
        })  # fmt: skip
        write_json(tmp_path / "usage" / model / "attribute.json", {"calls": 20, "template": "screening_v1"})
    write_stability(params, tmp_path / "audit", tmp_path / "usage", tmp_path / "tables")
    md = (tmp_path / "tables" / "stability.md").read_text()
    rows = {line.split(" | ")[0].strip("| "): line for line in md.splitlines() if line.startswith("| Failing") or line.startswith("| Steady")}
    assert "†" in rows["Failing"] and "†" not in rows["Steady"]
    assert "Failing audit (every repeat) 9 of 60 non-answers (15.0%)" in md and "Steady audit" not in md
    table = {r["model"]: r for r in csv.DictReader((tmp_path / "tables" / "stability.csv").open())}
    assert (table["failing"]["nonanswer"], table["failing"]["answers"], table["failing"]["nonanswer_flag"]) == ("9", "60", "true")
    assert table["steady"]["nonanswer_flag"] == "false"
