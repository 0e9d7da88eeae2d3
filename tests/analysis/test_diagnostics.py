"""World-prior diagnostics on hand-made answers: `sabre diagnose`."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from PIL import Image

from sabre_prior import contracts as C
from sabre_prior.analysis.diagnostics import (
    PAIR_CLASSES,
    attribute_stats,
    classify_pair,
    language_stats,
    model_diagnostics,
    pair_classes,
    parsing_stats,
    probe_stats,
)
from sabre_prior.analysis.traces import read_model_traces
from sabre_prior.cli import main
from sabre_prior.data.parquet import read_rows
from sabre_prior.report import flags


def _answers(split: str, *words: str | None) -> dict[str, str | None]:
    return dict(zip(C.PROBES[split], words, strict=True))


@pytest.mark.parametrize(
    ("split", "words", "cls"),
    [
        ("context", ("yes", "no", "no", "yes"), "all_correct"),
        ("context", ("yes", "no", "yes", "no"), "prior_following"),
        ("texture", ("yes", "no", "yes", "no"), "prior_following"),
        ("context", ("yes", "yes", "yes", "yes"), "always_yes"),
        ("texture", ("no", "no", "no", "no"), "always_no"),
        ("context", ("yes", "yes", "yes", "no"), "other"),  # wrong on base: not prior-following
        ("context", ("no", "yes", "no", "yes"), "other"),
        ("context", ("yes", "no", "yes", None), "other"),  # an unparsable answer
        ("texture", ("no", "yes", "no", "yes"), "other"),
    ],
)
def test_classify_pair_hand_made(split: str, words: tuple, cls: str) -> None:
    assert classify_pair(split, _answers(split, *words)) == cls


def _trace(pair: str, probe: str, pred: str | None, expected: str, parsed: bool = True, missing: bool = False) -> dict:
    return {"id": f"{pair}__{probe}", "split": "context", "pair_id": pair, "probe": probe, "eval_type": "yes_no_exact",
            "prediction": pred, "normalized_prediction": pred or "", "answer": expected, "normalized_answer": expected,
            "parsed": parsed, "missing": missing, "correct": (not missing) and pred == expected}  # fmt: skip


def test_pair_classes_and_probe_stats_from_traces() -> None:
    exp = {p: e for p, (_, e) in C.PROBES["context"].items()}
    rows = []
    for pair, words in (("p1", ["yes", "no", "no", "yes"]), ("p2", ["yes", "no", "yes", "no"]), ("p3", ["yes"] * 4)):
        rows += [_trace(pair, p, w, exp[p]) for p, w in zip(exp, words, strict=True)]
    rows += [_trace("p4", p, "maybe", exp[p], parsed=False) for p in exp]
    assert pair_classes(rows, "context") == {
        "p1": "all_correct",
        "p2": "prior_following",
        "p3": "always_yes",
        "p4": "other",
    }
    stats = probe_stats(rows, "context")
    # base_source: yes on p1-p3, "maybe" on p4 -> accuracy 3/4, yes-rate 3/4
    assert stats["base_source"] == {"n": 4, "accuracy": 0.75, "yes_rate": 0.75}
    # edited_source (expected no): no (p1), yes (p2), yes (p3), maybe -> accuracy 1/4, yes-rate 2/4
    assert stats["edited_source"] == {"n": 4, "accuracy": 0.25, "yes_rate": 0.5}


def test_parsing_stats_keep_parse_failures_apart() -> None:
    rows = [_trace("p", "base_source", "yes", "yes"), _trace("p", "base_target", "yes", "no"),
            _trace("p", "edited_source", "perhaps", "no", parsed=False),
            _trace("p", "edited_target", None, "yes", parsed=False, missing=True)]  # fmt: skip
    assert parsing_stats(rows) == {
        "questions": 4, "missing": 1, "parse_failures": 1, "empty_answers": 0, "wrong_parsed": 1, "correct": 1,
    }  # fmt: skip


def test_parsing_stats_count_empty_answers_kept_after_a_spent_budget() -> None:
    # an empty prediction is stored only for a spent token budget (engine); it is a parse failure too
    rows = [_trace("p", "base_source", "", "yes", parsed=False), _trace("p", "base_target", "  ", "no", parsed=False),
            _trace("p", "edited_source", "no", "no"), _trace("p", "edited_target", None, "yes", parsed=False, missing=True)]  # fmt: skip
    stats = parsing_stats(rows)
    assert stats["empty_answers"] == 2
    assert stats["parse_failures"] == 2
    assert stats["missing"] == 1


def _count_trace(i: int, pred: str | None, gold: str, parsed: bool = True) -> dict:
    return {"id": f"a{i}", "normalized_prediction": pred or "", "normalized_answer": gold, "parsed": parsed,
            "missing": False, "correct": pred == gold}  # fmt: skip


def test_attribute_stats_hand_computed() -> None:
    rows = [_count_trace(1, "4", "3"), _count_trace(2, "3", "3"), _count_trace(3, "8", "5"),
            _count_trace(4, "many", "5", parsed=False), _count_trace(5, "2", "3")]  # fmt: skip
    canonical = {"a1": 4, "a2": "4", "a3": 6, "a4": 4}  # a5: unknown
    s = attribute_stats(rows, canonical)
    assert s["exact"] == 1 / 5
    assert s["within_one"] == 3 / 5  # a1 (+1), a2 (0), a5 (-1)
    assert s["n_numeric"] == 4
    assert s["mae"] == pytest.approx((1 + 0 + 3 + 1) / 4)
    assert s["signed_error"] == pytest.approx((1 + 0 + 3 - 1) / 4)
    assert (s["n_canonical_known"], s["canonical_share"]) == (4, 1 / 4)  # only a1 answered 4 = canonical


def test_language_stats_hand_computed() -> None:
    def t(i: int, pred: str, parsed: bool = True) -> dict:
        return {"id": f"l{i}", "normalized_prediction": pred, "parsed": parsed, "missing": False}

    rows = [t(1, "A"), t(2, "C"), t(3, "A"), t(4, "I THINK B", parsed=False), t(5, "B")]
    s = language_stats(
        rows, {"l1": "A", "l2": "A", "l3": "a", "l4": "A"}, {"l1": "C", "l2": "C", "l3": "C", "l4": "C", "l5": "C"}
    )
    assert (s["n_suggested_known"], s["suggested_share"]) == (4, 2 / 4)
    assert (s["n_unknown_known"], s["unknown_share"]) == (5, 1 / 5)
    empty = language_stats(rows, {}, {})
    assert empty["suggested_share"] is None and empty["n_unknown_known"] == 0


def test_model_diagnostics_of_synthetic_models(project: Path) -> None:
    data = {s: read_rows(C.parquet_path(s)) for s in ("attribute", "language")}
    prior = model_diagnostics(read_model_traces("results/traces/prior", C.SPLITS), data)
    assert prior["context"]["pair_class_counts"] == {
        "all_correct": 0,
        "prior_following": 6,
        "always_yes": 0,
        "always_no": 0,
        "other": 0,
    }
    assert prior["attribute"]["attribute"]["canonical_share"] == 1.0
    assert prior["attribute"]["attribute"]["mae"] == pytest.approx(9 / 8)
    assert prior["attribute"]["attribute"]["signed_error"] == pytest.approx(3 / 8)
    assert prior["language"]["language"]["suggested_share"] == 1.0
    mixed = model_diagnostics(read_model_traces("results/traces/mixed", C.SPLITS), data)
    assert mixed["texture"]["pair_class_counts"] == {
        "all_correct": 3,
        "prior_following": 0,
        "always_yes": 0,
        "always_no": 1,
        "other": 2,
    }
    assert mixed["context"]["parsing"] == {
        "questions": 24,
        "missing": 4,
        "parse_failures": 4,
        "empty_answers": 0,
        "wrong_parsed": 2,
        "correct": 14,
    }
    assert mixed["attribute"]["parsing"]["parse_failures"] == 1
    assert mixed["language"]["language"]["suggested_share"] == 6 / 8
    yes = model_diagnostics(read_model_traces("results/traces/always_yes", C.SPLITS), data)
    assert yes["context"]["yes_rate"] == 1.0 and yes["context"]["no_rate"] == 0.0
    assert yes["language"]["parsing"]["parse_failures"] == 8  # "I think B"
    assert yes["attribute"]["attribute"]["within_one"] == 1.0


def test_cli_diagnose_writes_tables_json_and_figure(project: Path) -> None:
    assert main(["diagnose"]) == 0
    diag = json.loads(Path("results/analysis/diagnostics.json").read_text())
    assert diag["pair_classes"] == list(PAIR_CLASSES)
    assert diag["model_order"] == ["oracle", "prior", "always_yes", "mixed"] and set(diag["models"]) == set(
        diag["model_order"]
    )
    with open("results/tables/diagnostics_pair_outcomes.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["model"], r["split"]): r["prior_following"] for r in rows}[("prior", "context")] == "6"
    with open("results/tables/diagnostics_parsing.csv", newline="") as fh:
        parsing = {(r["model"], r["split"]): r for r in csv.DictReader(fh)}
    assert parsing[("always_yes", "language")]["parse_failures"] == "8"
    md = Path("results/tables/diagnostics.md").read_text()
    for heading in (
        "## Pair outcomes",
        "## Accuracy and yes-rate per probe",
        "## Attribute",
        "## Language",
        "## Parse failures",
    ):
        assert heading in md
    png, pdf = Path("results/figures/pair_outcomes.png"), Path("results/figures/pair_outcomes.pdf")
    with Image.open(png) as img:
        assert img.width > 800 and img.height > 400
    assert pdf.read_bytes().startswith(b"%PDF")
    snapshot = {p: p.read_bytes() for p in (png, pdf, Path("results/analysis/diagnostics.json"))}
    assert main(["diagnose"]) == 0
    assert all(p.read_bytes() == b for p, b in snapshot.items()), "diagnostics outputs are not deterministic"


def test_pair_outcomes_figure_names_its_data_n_and_model_colours(project: Path) -> None:
    """The figure's subtitle is the data source the Parquet splits record; each panel says its n; each
    model's label has the colour the model has in the accuracy figures (params order)."""
    from matplotlib.colors import to_hex
    from matplotlib.patches import Rectangle

    from sabre_prior.analysis.diagnostics import pair_outcomes_figure
    from sabre_prior.data.parquet import data_identity
    from sabre_prior.report.plotting import plt
    from sabre_prior.report.style import model_style
    from synthetic_project import SOURCE

    models = ["oracle", "prior", "always_yes", "mixed"]
    splits = list(C.SPLITS)
    data = {s: read_rows(Path("data/parquet") / f"{s}.parquet") for s in ("attribute", "language")}
    diag = {m: model_diagnostics(read_model_traces(Path("results/traces") / m, splits), data) for m in models}
    identity = data_identity(Path("data/parquet"), splits)
    assert identity.label == f"local copy {SOURCE}"
    fig = pair_outcomes_figure(diag, {m: m.title() for m in models}, identity.label)
    try:
        assert fig._suptitle.get_text().endswith(f"data: local copy {SOURCE}")
        for ax, split in zip(fig.axes, C.PAIRED_SPLITS, strict=True):
            assert ax.get_title(loc="left") == f"{split.capitalize()} (n = 6 pairs)"
            swatches = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_clip_on() is False]
            by_row = sorted(swatches, key=lambda p: -p.get_y())  # top row first: the first model
            assert [to_hex(p.get_facecolor()).upper() for p in by_row] == [model_style(i).color.upper() for i in range(4)]
            # a model whose split has too many non-answers carries the tables' flag (issue 33)
            marked = [flags.flagged(diag[m][split]["nonanswer"], flags.DEFAULT_MAX_NONANSWER_RATE) for m in models]
            assert any(marked) and not all(marked)
            assert [t.get_text() for t in ax.get_yticklabels()][::-1] == [m.title() + (" †" if f else "") for m, f in zip(models, marked)]
        assert "†: more than 5% of the split's questions are non-answers" in fig.legends[0].get_title().get_text()
    finally:
        plt.close(fig)
