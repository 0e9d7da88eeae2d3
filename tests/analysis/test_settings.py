"""The `analysis:` section of params.yaml."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from sabre_prior.analysis.settings import AnalysisSettings, analysis_settings
from sabre_prior.config import validate_params
from sabre_prior.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_and_overrides() -> None:
    assert analysis_settings({}) == AnalysisSettings(resamples=2000, seed=0, confidence=0.95, thumbnail_px=224)
    params = {"analysis": {"bootstrap_resamples": 500, "seed": 3, "confidence": 0.9, "report": {"thumbnail_px": 128}}}
    assert analysis_settings(params) == AnalysisSettings(500, 3, 0.9, 128)
    assert analysis_settings(params, resamples=100, seed=None) == AnalysisSettings(100, 3, 0.9, 128)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"resamples": 0}, "bootstrap_resamples must be a positive integer"),
        ({"seed": -1}, "analysis.seed must be a non-negative integer"),
        ({"confidence": 1.0}, "analysis.confidence must lie strictly between 0 and 1"),
        ({"thumbnail_px": 4}, "thumbnail_px must be an integer 16-1024"),
    ],
)
def test_invalid_settings_are_config_errors(override: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        analysis_settings({}, **override)


def test_schema_accepts_the_shipped_section_and_rejects_bad_values() -> None:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    validate_params(params)
    assert analysis_settings(params).resamples == params["analysis"]["bootstrap_resamples"]
    for key, value, where in (
        ("confidence", 95, "analysis.confidence"),
        ("bootstrap_resamples", 10, "analysis.bootstrap_resamples"),
        ("resamples", 2000, "analysis.resamples"),  # an unknown key is named with its path
    ):
        bad = copy.deepcopy(params)
        bad["analysis"][key] = value
        with pytest.raises(ConfigError, match=rf"  - {where}: "):
            validate_params(bad)
