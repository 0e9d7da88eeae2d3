"""Loading and validating ``params.yaml`` (the single configuration)."""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import yaml

from .errors import ConfigError

SCHEMA_RESOURCE = "params.schema.yaml"


def schema_path() -> Path:
    """Path of the JSON schema (also linked from ``workflow/schemas/``)."""
    return Path(str(resources.files("sabre_prior") / "resources" / SCHEMA_RESOURCE))


def load_schema() -> dict[str, Any]:
    with open(schema_path(), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _format_path(path: Any) -> str:
    parts = [str(p) for p in path]
    return ".".join(parts) if parts else "<top level>"


def validate_params(params: Mapping[str, Any], source: str = "params.yaml") -> None:
    """Validate against the schema; raise :class:`ConfigError` naming every bad field."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema())
    errors = sorted(validator.iter_errors(params), key=lambda e: list(e.absolute_path))
    from .batch import check_params  # `batch: true` only where a provider batch API is documented

    check_params(params, source)  # before the schema's errors: a clearer message for `batch`
    if errors:
        lines = [f"{source}: invalid configuration:"]
        for err in errors:
            lines.append(f"  - {_format_path(err.absolute_path)}: {err.message}")
        raise ConfigError("\n".join(lines))


def load_params(path: str | Path = "params.yaml") -> dict[str, Any]:
    """Read and validate ``params.yaml``."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: configuration file not found (run from the project root or pass --params)")
    try:
        with open(p, encoding="utf-8") as fh:
            params = yaml.safe_load(fh)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {exc}") from exc
    if not isinstance(params, dict):
        raise ConfigError(f"{p}: top level must be a mapping")
    validate_params(params, str(p))
    return params


def model_settings(params: Mapping[str, Any], model: str, source: str = "params.yaml") -> dict[str, Any]:
    models = params.get("models") or {}
    if model not in models:
        known = ", ".join(sorted(models)) or "(none)"
        raise ConfigError(f"{source}: models.{model} is not defined; configured models: {known}")
    return copy.deepcopy(dict(models[model]))


def display_name(params: Mapping[str, Any], model: str) -> str:
    return str((params.get("models") or {}).get(model, {}).get("display_name") or model)
