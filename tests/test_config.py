"""params.yaml validation (the schema is shared with Snakemake)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from sabre_prior.cli import main
from sabre_prior.config import load_params, model_settings, schema_path, validate_params
from sabre_prior.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def params() -> dict:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def test_shipped_params_are_valid(params: dict) -> None:
    validate_params(params)
    assert params["dataset"]["source"] == "demo"
    assert set(params["splits"]) == {"context", "texture", "attribute", "language"}


def test_workflow_schema_is_the_package_schema() -> None:
    linked = ROOT / "workflow" / "schemas" / "params.schema.yaml"
    assert linked.resolve() == schema_path().resolve()


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda p: p["models"]["random"].update(backend="nonsense"), "models.random.backend"),
        (lambda p: p["models"]["random"].pop("strategy"), "models.random"),
        (lambda p: p.update(splits=["context", "colour"]), "splits.1"),
        (lambda p: p["dataset"].pop("source"), "dataset"),
        (lambda p: p.update(models={}), "models"),
        (lambda p: p["models"].update({"gpt": {"backend": "openai", "model_id": "x"}}), "models.gpt"),
        (lambda p: p["models"].update({"bad name!": {"backend": "baseline", "strategy": "random"}}), "models"),
    ],
)
def test_invalid_params_name_the_field(params: dict, mutate, field: str) -> None:
    bad = copy.deepcopy(params)
    mutate(bad)
    with pytest.raises(ConfigError) as info:
        validate_params(bad, "params.yaml")
    assert f"  - {field}:" in str(info.value)


def test_load_params_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_params(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("models: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_params(broken)


def test_model_settings_unknown_model(params: dict) -> None:
    with pytest.raises(ConfigError, match="models.nope is not defined; configured models: "):
        model_settings(params, "nope")
    assert model_settings(params, "random")["strategy"] == "random"


def test_cli_check_config_reports_errors(tmp_path: Path, params: dict, capsys) -> None:
    bad = copy.deepcopy(params)
    bad["models"]["random"]["backend"] = "nonsense"
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(bad))
    assert main(["check-config", "--params", str(path)]) == 2
    err = capsys.readouterr().err
    assert "models.random.backend" in err and "Traceback" not in err
    assert main(["check-config", "--params", str(ROOT / "params.yaml")]) == 0
