"""results/intervals/<model>.json and `sabre intervals`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sabre_prior import contracts as C
from sabre_prior.analysis.intervals import (
    compute_intervals,
    write_model_intervals,
)
from sabre_prior.analysis.settings import AnalysisSettings
from sabre_prior.analysis.traces import model_outcomes
from sabre_prior.cli import main
from sabre_prior.errors import DataError
from sabre_prior.formatting import format_interval

SETTINGS = AnalysisSettings(resamples=500, seed=0, confidence=0.95)


def test_intervals_file_format_and_estimates(project: Path) -> None:
    iv = write_model_intervals("results/traces/mixed", "out.json", C.SPLITS, SETTINGS, "results/metrics/mixed.json")
    data = json.loads(Path("out.json").read_text())
    assert data == iv
    assert set(data) == {*C.SPLITS, C.I_MACRO, C.I_CONFIDENCE, C.I_RESAMPLES, C.I_SEED, "failure_aware"}
    fa = data["failure_aware"]
    for split in C.SPLITS:  # the official bound is the interval above, on the same resamples
        assert fa[split]["official"] == {k: data[split][k] for k in (C.I_ESTIMATE, C.I_LOW, C.I_HIGH)}
    assert (data[C.I_CONFIDENCE], data[C.I_RESAMPLES], data[C.I_SEED]) == (0.95, 500, 0)
    expected = {"context": 0.5, "texture": 0.5, "attribute": 0.5, "language": 0.25}
    for split, est in expected.items():
        e = data[split]
        assert e[C.I_ESTIMATE] == est
        assert 0.0 <= e[C.I_LOW] <= est <= e[C.I_HIGH] <= 1.0
        assert e["n"] == (6 if split in C.PAIRED_SPLITS else 8)
    assert data[C.I_MACRO][C.I_ESTIMATE] == pytest.approx(0.4375)
    m = data[C.I_MACRO]
    assert m[C.I_LOW] < 0.4375 < m[C.I_HIGH]
    # the macro interval is narrower than any split's: averaging independent splits
    assert m[C.I_HIGH] - m[C.I_LOW] < min(data[s][C.I_HIGH] - data[s][C.I_LOW] for s in C.SPLITS)


def test_oracle_interval_is_degenerate(project: Path) -> None:
    iv = compute_intervals(model_outcomes("results/traces/oracle", C.SPLITS), SETTINGS)
    assert all(iv[s] == {"estimate": 1.0, "low": 1.0, "high": 1.0, "n": iv[s]["n"]} for s in C.SPLITS)


def test_output_is_byte_identical_and_seed_dependent(project: Path) -> None:
    write_model_intervals("results/traces/mixed", "a.json", C.SPLITS, SETTINGS)
    write_model_intervals("results/traces/mixed", "b.json", C.SPLITS, SETTINGS)
    write_model_intervals("results/traces/mixed", "c.json", C.SPLITS, AnalysisSettings(resamples=500, seed=1))
    assert Path("a.json").read_bytes() == Path("b.json").read_bytes()
    assert Path("a.json").read_bytes() != Path("c.json").read_bytes()


def test_split_interval_does_not_depend_on_other_splits(project: Path) -> None:
    alone = compute_intervals(model_outcomes("results/traces/mixed", ["language"]), SETTINGS)
    together = compute_intervals(model_outcomes("results/traces/mixed", C.SPLITS), SETTINGS)
    assert alone["language"] == together["language"]


def test_metrics_disagreeing_with_traces_is_an_error(project: Path) -> None:
    path = Path("results/metrics/mixed.json")
    metrics = json.loads(path.read_text())
    metrics["texture"]["accuracy"] = 0.6
    path.write_text(json.dumps(metrics))
    with pytest.raises(DataError, match=r"mixed.json: texture.accuracy is 0.600000 but the traces give 0.500000"):
        write_model_intervals("results/traces/mixed", "out.json", C.SPLITS, SETTINGS, path)
    assert not Path("out.json").exists()


def test_format_interval() -> None:
    """The `sabre intervals` summary: whole percents per split, one decimal for the macro (float rounding)."""
    assert format_interval(0.4, 0.31, 0.5, 0, rounding="float") == "40 [31, 50]"
    assert format_interval(0.4375, 0.3, 0.55, 1, rounding="float") == "43.8 [30.0, 55.0]"


def test_cli_intervals(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["intervals", "--model", "prior", "--resamples", "200"]) == 0
    out = json.loads(C.intervals_path("prior").read_text())
    assert out[C.I_RESAMPLES] == 200 and out["attribute"][C.I_ESTIMATE] == 0.375
    printed = capsys.readouterr().out
    # one rounding for every score: one decimal, half away from zero (report.style), splits and macro alike
    assert printed.startswith("prior: context=0.0 [0.0, 0.0] texture=0.0 [0.0, 0.0] attribute=37.5 [")
    assert " macro=9.4 [" in printed


def test_cli_intervals_unknown_model_and_bad_trace(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["intervals", "--model", "nope"]) == 2
    assert "results/traces/nope/context.jsonl: trace file not found" in capsys.readouterr().err
    C.trace_path("prior", "language").write_text("[]\n")
    assert main(["intervals", "--model", "prior"]) == 2
    assert "language.jsonl:1: expected a JSON object" in capsys.readouterr().err
