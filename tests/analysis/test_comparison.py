"""Paired comparison of models: `sabre compare`."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from sabre_prior import contracts as C
from sabre_prior.analysis.comparison import CSV_COLUMNS, compare_models
from sabre_prior.analysis.settings import AnalysisSettings
from sabre_prior.analysis.traces import model_outcomes
from sabre_prior.cli import main
from sabre_prior.errors import DataError

SETTINGS = AnalysisSettings(resamples=400, seed=0)


def _outcomes(*models: str) -> dict:
    return {m: model_outcomes(f"results/traces/{m}", C.SPLITS) for m in models}


def test_oracle_versus_prior_hand_values(project: Path) -> None:
    rows = compare_models(_outcomes("oracle", "prior"), C.SPLITS, SETTINGS)
    by_split = {r.split: r for r in rows}
    assert list(by_split) == [*C.SPLITS, "macro"]
    ctx = by_split["context"]
    # oracle right on all 6 pairs, prior on none: 6 discordant units all one way
    assert (ctx.n, ctx.a_only, ctx.b_only) == (6, 6, 0)
    assert ctx.difference == 1.0 and ctx.low == ctx.high == 1.0
    assert ctx.p_value == pytest.approx(2 / 2**6)
    att = by_split["attribute"]  # prior right on items 1, 4, 7
    assert (att.a_only, att.b_only, att.difference) == (5, 0, pytest.approx(5 / 8))
    assert att.p_value == pytest.approx(2 / 2**5)
    macro = by_split["macro"]
    assert macro.test == "paired_bootstrap" and macro.a_only is None
    assert macro.difference == pytest.approx(1 - 0.375 / 4)
    assert 0 < macro.low <= macro.difference <= macro.high
    assert macro.p_value < 0.01


def test_direction_flips_with_model_order(project: Path) -> None:
    ab = compare_models(_outcomes("mixed", "prior"), C.SPLITS, SETTINGS)
    ba = compare_models(_outcomes("prior", "mixed"), C.SPLITS, SETTINGS)
    for x, y in zip(ab, ba, strict=True):
        assert x.difference == pytest.approx(-y.difference)
        assert (x.low, x.high) == (pytest.approx(-y.high), pytest.approx(-y.low))
        assert x.p_value == pytest.approx(y.p_value)


def test_every_pair_of_models_and_holm(project: Path) -> None:
    rows = compare_models(_outcomes("oracle", "prior", "always_yes", "mixed"), C.SPLITS, SETTINGS)
    pairs = {(r.model_a, r.model_b) for r in rows}
    assert len(pairs) == 6 and len(rows) == 6 * 5
    assert all(r.p_holm >= r.p_value for r in rows)
    assert max(r.p_holm for r in rows) <= 1.0


def test_models_on_different_units_are_refused(project: Path) -> None:
    out = _outcomes("oracle", "prior")
    lang = out["prior"]["language"]
    out["prior"]["language"] = type(lang)("language", lang.ids[:-1], lang.correct[:-1])
    with pytest.raises(DataError, match="scored on different units"):
        compare_models(out, C.SPLITS, SETTINGS)


def test_cli_compare_writes_tables(project: Path) -> None:
    assert main(["compare", "--resamples", "300"]) == 0
    with open("results/tables/model_comparison.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames or ()) == CSV_COLUMNS
        rows = list(reader)
    assert len(rows) == 30
    first = rows[0]
    assert (first["model_a"], first["model_b"], first["split"], first["difference"]) == (
        "oracle",
        "prior",
        "context",
        "100.0",
    )
    assert first["p_value"] == "0.03125"
    md = Path("results/tables/model_comparison.md").read_text()
    assert (
        "## A = Oracle, B = Prior" in md
        and "| context | 6 | 100.0 | 0.0 | +100.0 | [+100.0, +100.0] | 6 | 0 | 0.0312 |" in md
    )
    before = Path("results/tables/model_comparison.csv").read_bytes()
    assert main(["compare", "--resamples", "300"]) == 0
    assert Path("results/tables/model_comparison.csv").read_bytes() == before


def test_single_model_gives_an_empty_table(project: Path) -> None:
    assert compare_models(_outcomes("oracle"), C.SPLITS, SETTINGS) == []
