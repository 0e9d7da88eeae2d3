"""Loading and validating ``params.yaml`` (the single configuration)."""

from __future__ import annotations

import copy
import difflib
import functools
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from .errors import ConfigError

SCHEMA_RESOURCE = "params.schema.yaml"


def schema_path() -> Path:
    """Path of the JSON schema (also linked from ``workflow/schemas/``)."""
    return Path(str(resources.files("sabre_prior") / "resources" / SCHEMA_RESOURCE))


@functools.lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: read at every DAG build
    with open(schema_path(), encoding="utf-8") as fh:
        schema = yaml.load(fh, Loader=loader)  # noqa: S506 - a safe loader
    from . import registry  # the backend names and each backend's keys come from the registry

    model = schema["$defs"]["model"]
    model["properties"]["backend"]["enum"] = list(registry.names())
    model["allOf"] = [*registry.schema_rules(), *model.get("allOf", [])]
    return schema


def load_schema() -> dict[str, Any]:
    return copy.deepcopy(_schema())


def _format_path(path: Any) -> str:
    parts = [str(p) for p in path]
    return ".".join(parts) if parts else "<top level>"


def closest(key: str, valid: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest valid key, or nothing when none is close."""
    match = difflib.get_close_matches(key, sorted(valid), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _unknown_keys(err: Any) -> list[tuple[str, list[str]]]:
    """(unknown key, valid keys) for an error about keys, else []."""
    if err.validator == "additionalProperties" and err.validator_value is False and isinstance(err.instance, dict):
        valid = list(err.schema.get("properties") or {})
        return [(k, valid) for k in err.instance if k not in valid]
    if "propertyNames" in err.absolute_schema_path and err.validator == "enum":
        return [(str(err.instance), list(err.validator_value))]
    return []


def validate_params(params: Mapping[str, Any], source: str = "params.yaml") -> None:
    """Validate against the schema; raise :class:`ConfigError` naming every bad field.

    An unknown key (at any level: the top, ``dataset``, ``analysis``, a model entry for its
    backend) is an error with the closest valid key suggested: a misspelt setting must not
    be silently ignored.
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema())
    errors = sorted(validator.iter_errors(params), key=lambda e: list(e.absolute_path))
    from . import registry  # `batch: true` only where a provider batch API is documented

    registry.check_params(params, source)  # before the schema's errors: a clearer message for `batch`
    lines: dict[str, str] = {}  # ordered by path, one line per field
    for err in errors:
        where = list(err.absolute_path)
        unknown = _unknown_keys(err)
        if not unknown:
            lines.setdefault(f"{_format_path(where)}: {err.message}", f"{_format_path(where)}: {err.message}")
        for key, valid in unknown:
            field = _format_path([*where, key])
            per_backend = "propertyNames" in err.absolute_schema_path
            if field in lines and not per_backend:
                continue  # the per-backend message says more
            backend = params_at(params, where).get("backend") if per_backend else None
            scope = f" for backend {backend!r}" if backend else ""
            lines[field] = f"{field}: unknown key{scope}{closest(key, valid)}; valid keys here: {', '.join(sorted(valid))}"
    if lines:
        raise ConfigError("\n".join([f"{source}: invalid configuration:", *(f"  - {v}" for v in lines.values())]))


def params_at(params: Mapping[str, Any], path: Iterable[Any]) -> Mapping[str, Any]:
    node: Any = params
    for part in path:
        node = node[part]
    return node if isinstance(node, Mapping) else {}


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


DEFAULT_TEMPLATES = ("screening_v1",)


def prompt_templates(params: Mapping[str, Any]) -> list[str]:
    """``prompt.templates`` (default ``[screening_v1]``); the first is the main table's."""
    listed = (params.get("prompt") or {}).get("templates")
    return [str(t) for t in listed] if listed else list(DEFAULT_TEMPLATES)
