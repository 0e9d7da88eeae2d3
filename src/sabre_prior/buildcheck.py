"""The settings of params.yaml that can be checked before anything runs, beyond the schema.

Called when the DAG is built (the Snakefile, after :func:`sabre_prior.config.validate_params`)
and by ``sabre check-config``, so that a bad template name, backend setting, model id or local
path stops the run before Snakemake plans it or deletes any output.  Kept out of
:mod:`sabre_prior.config` (which every command imports) because it reads the backends' own checks.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Mapping, NoReturn

from .errors import ConfigError, SabreError


def validate_for_run(params: Mapping[str, Any], source: str = "params.yaml") -> None:
    """The schema (:func:`~sabre_prior.config.validate_params`), then :func:`check_settings` (which
    also looks at the file system: a local source's folder, a local model's directory)."""
    from .config import validate_params

    validate_params(params, source)
    check_settings(params, source)


#: A Hugging Face repo id (``org/name`` or ``name``), as the hub accepts them.
_HUB_ID = re.compile(r"^(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*$")


def _looks_like_path(value: str) -> bool:
    return value.startswith((".", "/", "~")) or value.count("/") > 1 or "\\" in value


def model_id_problem(backend: str, model_id: Any) -> str | None:
    """What is wrong with the form of a model's ``model_id`` (None: nothing), without any network."""
    from . import registry

    if not isinstance(model_id, str) or not model_id.strip():
        return "must be a non-empty text"
    if model_id != model_id.strip() or any(ch.isspace() for ch in model_id):
        return f"{model_id!r} contains white space"
    if registry.kind_of(backend) == "local":
        if _looks_like_path(model_id):
            if not Path(model_id).expanduser().is_dir():
                return f"{model_id!r} looks like a local model directory, but there is no such directory"
        elif not _HUB_ID.match(model_id):
            return f"{model_id!r} is neither a Hugging Face model id (org/name) nor an existing local directory"
    return None


def check_settings(params: Mapping[str, Any], source: str = "params.yaml") -> None:
    """Every setting that can be checked without running a job (called with the schema check, so at
    DAG-build time too, before Snakemake plans or deletes anything): the prompt templates, each
    backend's settings as its code reads them, the form of model ids and the local dataset path.

    Raises one :class:`ConfigError` listing every problem, each naming its field.
    """
    from . import registry
    from .inference.engine import EngineSettings
    from .inference.prompts import ImagePolicy, template_version

    problems: list[str] = []

    def check(call: Any, *args: Any, **kwargs: Any) -> None:
        try:
            call(*args, **kwargs)
        except ConfigError as exc:
            problems.append(str(exc))

    prompt = params.get("prompt") or {}
    if "templates" in prompt:
        from .inference.prompts import check_templates

        check(lambda: check_templates(prompt["templates"], "params.yaml"))
    data = params.get("dataset") or {}
    src = str(data.get("source") or "")
    if src and src != "demo" and _looks_like_path(src) and not Path(src).expanduser().is_dir():
        problems.append(f"dataset.source: local dataset directory {src!r} not found (a hub repo id, an existing directory or demo)")
    for name, settings in (params.get("models") or {}).items():
        if not isinstance(settings, Mapping):
            continue
        backend = str(settings.get("backend"))
        kind = registry.kind_of(backend)
        if "prompt_template" in settings:
            check(lambda: _template(template_version, settings["prompt_template"], f"models.{name}.prompt_template"))
        if "model_id" in settings:
            why = model_id_problem(backend, settings.get("model_id"))
            if why:
                problems.append(f"models.{name}.model_id: {why}")
        check(ImagePolicy.from_settings, settings, name)
        check(registry.price_values, settings, name)
        if kind in ("api", "local"):
            check(EngineSettings.from_settings, settings, name, kind=kind)
        if kind == "local":
            from .inference.models.local_common import LocalSettings

            check(LocalSettings.from_settings, name, settings)
    if problems:
        raise ConfigError("\n".join([f"{source}: invalid configuration:", *(f"  - {p}" for p in problems)]))


def _template(version: Any, template: Any, field: str) -> None:
    try:
        version(str(template))
    except ConfigError as exc:
        raise ConfigError(f"{field}: {exc}") from None


# ---------------------------------------------------------------------------
# For the Snakefile: a configuration error stops the run with its message alone
# ---------------------------------------------------------------------------
def _exit_with(exc: SabreError) -> NoReturn:
    """Stop a Snakemake run on a configuration error: the message, no stack (SystemExit is not an
    error Snakemake reports with a traceback)."""
    import sys

    print(f"error: {exc}", file=sys.stderr)
    raise SystemExit(exc.exit_code)


def exit_on_error(func: Callable[..., Any], *args: Any) -> Any:
    """``func(*args)`` for the Snakefile: a :class:`SabreError` stops the run with its message alone."""
    try:
        return func(*args)
    except SabreError as exc:
        _exit_with(exc)


def snakefile_read(path: str = "params.yaml") -> dict[str, Any]:
    """The Snakefile's first step: ``path`` read as :func:`~sabre_prior.config.read_params_file` reads it (duplicate keys
    and YAML errors named by line), before Snakemake's own reading says less."""
    from .config import read_params_file

    try:
        return read_params_file(path)
    except ConfigError as exc:
        _exit_with(exc)


def snakefile_validate(config: Mapping[str, Any], raw: Mapping[str, Any], path: str = "params.yaml") -> bool:
    """Every check of :func:`validate_for_run` on Snakemake's ``config``;
    returns whether ``config`` is exactly ``path``'s content (no ``--config``/``--configfile``).
    Where the command line changed it, a message names both (the key may come from either)."""
    same = dict(config) == dict(raw)
    try:
        validate_for_run(config, path if same else f"{path} with the command line's --config/--configfile")
    except ConfigError as exc:
        _exit_with(exc)
    return same
