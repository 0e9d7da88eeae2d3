"""Loading and validating ``params.yaml`` (the single configuration)."""

from __future__ import annotations

import copy
import difflib
import functools
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

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


#: The schema's patterns in words (a regular expression is no message for a user); a test checks
#: that every pattern of the schema is here.
PATTERN_WORDS: dict[str, str] = {
    "^[A-Za-z0-9][A-Za-z0-9_.-]*$": "start with an ASCII letter or digit and hold only ASCII letters, digits, "
    "'_', '.' and '-' (it names files and folders)",
    "^[A-Za-z0-9_]+$": "hold only ASCII letters, digits and '_'",
    "^[A-Z_][A-Z0-9_]*$": "be the name of an environment variable: capital ASCII letters, digits and '_', "
    "not starting with a digit (e.g. OPENAI_API_KEY)",
    "^(auto|cpu|cuda|cuda:[0-9]+)$": "be auto, cpu, cuda or cuda:<number>",
    "^[A-Za-z0-9_.]+$": "hold only ASCII letters, digits, '_' and '.'",
    "^[0-9]+(,[0-9]+)*$": 'be GPU numbers separated by commas, e.g. "0" or "2,3"',
}


def _pattern_message(err: Any) -> str | None:
    """A pattern error in words: a name (``propertyNames``) or a value that has not the form it must have."""
    words = PATTERN_WORDS.get(str(err.validator_value)) if err.validator == "pattern" else None
    if words is None:
        return None
    if "propertyNames" in err.absolute_schema_path:
        return f"{err.instance!r} cannot be a name here: a name must {words}"
    return f"{err.instance!r} is not valid here: it must {words}"


def _unknown_keys(err: Any) -> list[tuple[str, list[str]]]:
    """(unknown key, valid keys) for an error about keys, else []."""
    if err.validator == "additionalProperties" and err.validator_value is False and isinstance(err.instance, dict):
        valid = list(err.schema.get("properties") or {})
        return [(k, valid) for k in err.instance if k not in valid]
    if "propertyNames" in err.absolute_schema_path and err.validator == "enum":
        return [(str(err.instance), list(err.validator_value))]
    return []


def _without_backend(params: Mapping[str, Any]) -> set[str]:
    """Models whose ``backend`` is missing or unknown: the per-backend rules say nothing true about them."""
    from . import registry

    models = params.get("models") if isinstance(params, Mapping) else None
    if not isinstance(models, Mapping):
        return set()
    return {
        str(name) for name, m in models.items()
        if isinstance(m, Mapping) and str(m.get("backend")) not in registry.names()
    }  # fmt: skip


def validate_params(params: Mapping[str, Any], source: str = "params.yaml") -> None:
    """Validate against the schema; raise :class:`ConfigError` naming every bad field.

    An unknown key (at any level: the top, ``dataset``, ``analysis``, a model entry for its
    backend) is an error with the closest valid key suggested: a misspelt setting must not
    be silently ignored.
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema())
    errors = sorted(validator.iter_errors(params), key=lambda e: list(e.absolute_path))
    # a model without a (known) backend: only that is reported for it, not the keys of every
    # backend's rule (an `if backend == ...` rule holds vacuously when `backend` is absent)
    no_backend = _without_backend(params)
    errors = [
        e for e in errors
        if not (len(e.absolute_path) >= 2 and e.absolute_path[0] == "models" and str(e.absolute_path[1]) in no_backend
                and "allOf" in e.absolute_schema_path)
    ]  # fmt: skip
    from . import registry  # `batch: true` only where a provider batch API is documented

    registry.check_params(params, source)  # before the schema's errors: a clearer message for `batch`
    lines: dict[str, str] = {}  # ordered by path, one line per field
    for err in errors:
        where = list(err.absolute_path)
        unknown = _unknown_keys(err)
        if not unknown:
            message = _pattern_message(err) or err.message
            lines.setdefault(f"{_format_path(where)}: {message}", f"{_format_path(where)}: {message}")
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


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """A safe loader that refuses a key given twice in one mapping (YAML would keep the last silently)."""

    source = "params.yaml"

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the base class names it
                break
            if first is not None:
                raise ConfigError(
                    f"{self.source}:{line}: key {key!r} is given twice in the same mapping (first at line {first}); "
                    "YAML would keep only the last one: remove or rename one of them"
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _yaml_error(path: Path, exc: yaml.YAMLError) -> ConfigError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    text = f"{context}, {problem}" if context else str(problem)
    hint = ""
    line = ""
    if mark is not None:
        try:
            line = path.read_text(encoding="utf-8").splitlines()[mark.line]
        except (OSError, IndexError, UnicodeDecodeError):
            line = ""
    if "\t" in str(problem) or "\t" in line[: (mark.column + 1) if mark is not None else 0]:
        hint = " (YAML does not allow tabs for indentation: indent with spaces)"
    shown = f"\n    {line.rstrip()}" if line.strip() else ""
    return ConfigError(f"{where}: not valid YAML: {text}{hint}{shown}")


def read_params_file(path: str | Path = "params.yaml") -> dict[str, Any]:
    """The mapping in ``path`` (not yet validated); errors name the file and line.

    A key given twice in one mapping is an error (plain YAML keeps the last one silently); so is
    an invalid or tab-indented file.  The Snakefile calls this before Snakemake reads the file.
    """
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{p}: is a directory; the configuration must be a YAML file")
    if not p.is_file():
        raise ConfigError(f"{p}: configuration file not found (run from the project root or pass --params)")
    loader_cls = type("_Loader", (_UniqueKeyLoader,), {"source": str(p)})
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text ({exc})") from None
    try:
        params = yaml.load(text, Loader=loader_cls)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise _yaml_error(p, exc) from None
    if params is None:
        raise ConfigError(
            f"{p}: the file is empty (or holds only comments); it must hold the pipeline's settings (dataset, "
            "splits, models, ...): start from the repository's params.yaml (git checkout params.yaml) or a preset in configs/"
        )
    if not isinstance(params, dict):
        raise ConfigError(
            f"{p}: the top level must be a mapping of settings (dataset:, splits:, models:, ...), "
            f"not a {type(params).__name__}"
        )
    return params


def load_params(path: str | Path = "params.yaml") -> dict[str, Any]:
    """Read and validate ``params.yaml``."""
    params = read_params_file(path)
    validate_params(params, str(path))
    return params


def load_params_overlapped(path: str | Path = "params.yaml") -> tuple[dict[str, Any], Callable[[], None]]:
    """Read ``params.yaml`` and validate it in a forked child process while the caller goes on.

    Returns the params and ``verdict()``, which waits for the child and raises its
    :class:`ConfigError` (the same message :func:`load_params` gives) when the file is invalid; call
    it before anything the settings decide is done (``sabre predict``: before the first request).
    Importing jsonschema and validating take ~60 ms of CPU; on a second core they overlap the
    imports of pyarrow and the HTTP client instead of delaying the first request. Where ``os.fork`` is
    missing, or where another thread runs (forking then is not safe), this validates in-process first, as :func:`load_params` does.
    """
    import os
    import threading

    params = read_params_file(path)
    if not hasattr(os, "fork") or threading.active_count() > 1:
        validate_params(params, str(path))
        return params, lambda: None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: validate, report, and leave without running the parent's exit handlers
        code = 0
        try:
            os.close(read_end)
            validate_params(params, str(path))
        except ConfigError as exc:
            _write_all(write_end, str(exc).encode("utf-8", "replace"))
            code = 1
        except BaseException as exc:  # noqa: BLE001 - reported by the parent
            _write_all(write_end, f"{path}: validating the configuration failed: {type(exc).__name__}: {exc}".encode())
            code = 2
        finally:
            os._exit(code)
    os.close(write_end)
    result: list[None] = []

    def verdict() -> None:
        if result:
            return
        with os.fdopen(read_end, "rb") as fh:
            message = fh.read().decode("utf-8", "replace")
        _, status = os.waitpid(pid, 0)
        result.append(None)
        if os.waitstatus_to_exitcode(status) != 0:
            raise ConfigError(message or f"{path}: validating the configuration failed (status {status})")

    return params, verdict


def _write_all(fd: int, data: bytes) -> None:
    import os

    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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
