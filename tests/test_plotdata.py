"""Plot data for `dvc plots`: per-split accuracy (percent) of every configured model, then the macro average."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sabre_prior.errors import DataError
from sabre_prior.report.plotdata import write_plot_data

PARAMS = {"splits": ["context", "language"], "models": {"b": {}, "a": {}}}


def _metrics(d: Path, model: str, ctx: float, lang: float) -> None:
    d.mkdir(parents=True, exist_ok=True)
    body = {"context": {"accuracy": ctx}, "language": {"accuracy": lang}, "macro_accuracy": (ctx + lang) / 2}
    (d / f"{model}.json").write_text(json.dumps(body))


def test_rows_follow_params_order_in_percent(tmp_path: Path) -> None:
    _metrics(tmp_path / "m", "a", 0.25, 1 / 3)
    _metrics(tmp_path / "m", "b", 0.0, 1.0)
    out = tmp_path / "plots" / "acc.csv"
    assert write_plot_data(PARAMS, tmp_path / "m", out) == 6
    assert out.read_text().splitlines() == [
        "model,split,accuracy",
        "b,context,0.0",  # one decimal, rounded as every score is shown (report.style)
        "b,language,100.0",
        "b,macro,50.0",
        "a,context,25.0",
        "a,language,33.3",
        "a,macro,29.2",
    ]


def test_missing_metrics_or_field_is_a_clear_error(tmp_path: Path) -> None:
    _metrics(tmp_path / "m", "b", 0.5, 0.5)
    with pytest.raises(DataError, match=r"a\.json: metrics of model 'a' not found"):
        write_plot_data(PARAMS, tmp_path / "m", tmp_path / "o.csv")
    (tmp_path / "m" / "a.json").write_text(json.dumps({"context": {"accuracy": 1.0}, "macro_accuracy": 1.0}))
    with pytest.raises(DataError, match=r"a\.json: field language\.accuracy is missing"):
        write_plot_data(PARAMS, tmp_path / "m", tmp_path / "o.csv")
