"""The settings a command may read: a rule passes exactly the ones it declares.

A Snakemake rule declares the settings of ``params.yaml`` its command reads (``params: settings=
settings("splits", "analysis.seed", ...)`` in ``workflow/rules/*.smk``) and passes them on the
command line (``--settings JSON``). Snakemake records the values in its metadata, so a changed
value re-runs exactly the jobs that declared it (the ``params`` rerun trigger: "Snakemake
determines ... params ... changes", https://snakemake.readthedocs.io/en/stable/executing/cli.html,
``--rerun-triggers``). The command receives a :class:`Settings` holding only the declared values:
reading any other setting raises :class:`UndeclaredSetting`, so a command cannot depend on a
setting its rule does not declare (a stale output the trigger would miss). Run by hand, without
``--settings``, a command reads the whole ``params.yaml`` (:func:`load_settings`) and, reading
only what its rule declares, writes what the rule would.

A declared key is a dotted path (``models.random``, ``prompt.templates.0``: an index into a list),
or the list of its parts (a model's name may hold a dot: ``["models", "claude-4.6"]``); ``!`` before
one excludes it (``!models.random.display_name``: a model's job does not show its name, so renaming
it re-runs only what shows it).
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from .errors import ConfigError


class UndeclaredSetting(Exception):
    """A command read a setting its rule does not declare: a bug in the rule or the command (not a
    ``KeyError``, so that ``.get(key, default)`` cannot hide it)."""


Key = "str | Sequence[str]"


def parts(key: Key) -> tuple[bool, tuple[str, ...]]:
    """(excluded, the path's parts) of a declared key: ``"!a.b"`` or ``["!", "a", "b"]``."""
    if isinstance(key, str):
        return key.startswith("!"), tuple(key.lstrip("!").split("."))
    items = tuple(str(k) for k in key)
    return (True, items[1:]) if items[:1] == ("!",) else (False, items)


def _name(key: Key) -> str:
    excluded, path = parts(key)
    return ("!" if excluded else "") + ".".join(path)


def _covered(path: tuple[str, ...], keys: Sequence[Key]) -> bool:
    """Whether ``path`` lies under a declared key and under no excluded one (the longest match wins)."""
    best, verdict = -1, False
    for key in keys:
        exclude, declared = parts(key)
        if path[: len(declared)] == declared and len(declared) > best:
            best, verdict = len(declared), not exclude
    return verdict


def _get(node: Any, part: str) -> Any:
    if isinstance(node, Mapping):
        return node[part]
    if isinstance(node, (list, tuple)) and part.isdigit():
        return node[int(part)]
    raise KeyError(part)


def select(params: Mapping[str, Any], keys: Sequence[Key]) -> dict[str, Any]:
    """The part of ``params`` the declared ``keys`` name (absent optional settings stay absent)."""
    out: dict[str, Any] = {}
    for key in keys:
        excluded, path = parts(key)
        if excluded:
            continue
        node: Any = params
        try:
            for part in path:
                node = _get(node, part)
        except (KeyError, IndexError):
            continue
        value = _prune(node, path, keys)
        target = out
        for i, part in enumerate(path[:-1]):
            if path[i + 1].isdigit():  # an index into a list: the list keeps only the declared items
                target = target.setdefault(part, [])
                break
            target = target.setdefault(part, {})
        if path[-1].isdigit():
            target.append(value) if isinstance(target, list) else None
        else:
            target[path[-1]] = value
    return out


def _prune(node: Any, path: tuple[str, ...], keys: Sequence[Key]) -> Any:
    if isinstance(node, Mapping):
        return {k: _prune(v, (*path, str(k)), keys) for k, v in node.items() if _covered((*path, str(k)), keys)}
    return node


def encode(params: Mapping[str, Any], keys: Sequence[Key]) -> str:
    """What a rule passes as ``--settings``: the declared keys (dotted where no part holds a dot, else
    as the list of parts) and their values, as compact JSON."""
    named = [_name(k) if not any("." in p for p in parts(k)[1]) else (["!"] if parts(k)[0] else []) + list(parts(k)[1])
             for k in keys]  # fmt: skip
    # key order kept: a model's position in `models` is its colour and its row in every table
    return json.dumps({"keys": named, "values": select(params, keys)}, separators=(",", ":"))


class Settings(dict):
    """A read-only mapping of the declared settings (nested mappings are :class:`Settings` too).

    A key that exists but was not declared raises :class:`UndeclaredSetting`; a declared key that
    ``params.yaml`` leaves out is missing as usual (``KeyError``, so ``.get`` gives its default)."""

    def __init__(self, data: Mapping[str, Any], keys: Sequence[Key] = ("",), path: tuple[str, ...] = ()) -> None:
        super().__init__(
            (k, Settings(v, keys, (*path, str(k))) if isinstance(v, Mapping) else v) for k, v in data.items()
        )
        self.keys_declared = tuple(k if isinstance(k, str) else tuple(k) for k in keys)
        self.path = path

    def _check(self, key: Any) -> None:
        path = (*self.path, str(key))
        if not self._everything() and not _covered(path, self.keys_declared):
            raise UndeclaredSetting(
                f"the setting {'.'.join(path)} is read but not declared by the rule that runs this command "
                f"(it declares: {', '.join(map(_name, self.keys_declared))}): add it to the rule's `settings(...)` in "
                "workflow/rules/"
            )

    def _everything(self) -> bool:
        return self.keys_declared == ("",)

    def __getitem__(self, key: Any) -> Any:
        if not dict.__contains__(self, key):
            self._check(key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        if not dict.__contains__(self, key):
            self._check(key)
            return default
        return dict.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        if not dict.__contains__(self, key):
            self._check(key)
            return False
        return True

    def __deepcopy__(self, memo: dict[int, Any]) -> "Settings":
        import copy

        return Settings({k: copy.deepcopy(v, memo) for k, v in dict.items(self)}, self.keys_declared, self.path)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Settings, (dict(self), self.keys_declared, self.path))

    def _readonly(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("settings are read-only")

    __setitem__ = __delitem__ = update = pop = popitem = setdefault = clear = _readonly  # type: ignore[assignment]


def declared(params: Mapping[str, Any], key: str) -> bool:
    """Whether a command may read ``key`` (a dotted path): always from a whole params.yaml (by hand),
    from a rule's settings only where the rule declares it (for a check by hand the rule needs not)."""
    if not isinstance(params, Settings) or params._everything():
        return True
    return _covered(tuple(key.split(".")), params.keys_declared)


def decode(text: str, source: str = "--settings") -> Settings:
    """The :class:`Settings` a rule passed (:func:`encode`)."""
    try:
        data = json.loads(text)
        keys, values = list(data["keys"]), data["values"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{source}: not the JSON a rule passes ({{\"keys\": [...], \"values\": {{...}}}}): {exc}") from None
    if not isinstance(values, dict) or not all(isinstance(k, (str, list)) for k in keys):
        raise ConfigError(f"{source}: `keys` must be a list of setting names and `values` a mapping")
    return Settings(values, keys)


def load_settings(args: Any) -> Settings:
    """The settings of a command: the ones its rule passed (``--settings``), or else the whole,
    validated ``params.yaml`` (``--params``), as when the command is run by hand."""
    passed = getattr(args, "settings", None)
    if passed:
        return decode(passed)
    from .config import load_params

    return Settings(load_params(args.params))
