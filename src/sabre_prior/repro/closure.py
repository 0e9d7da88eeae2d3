"""What a command's code is: the static import closure of its modules, as git blob ids.

A job's recipe (:mod:`sabre_prior.repro.state`) names the code it runs by the blob id (``git
hash-object``) of every module its command can import, found by reading the package's source
with :mod:`ast`: ``import``/``from ... import`` statements anywhere in a module (lazy imports
inside functions included), relative imports resolved, ``from pkg import name`` counted as a
module import when ``pkg/name.py`` exists. Package data files (``resources/``) count for a
module that names them in a string. Modules only reached through a ``"module:Class"`` string
(the backend registry) are added by the caller for the backends a job uses.

So editing a module that no command imports changes no recipe, and nothing re-runs; an edit
that changes a module's bytes re-runs exactly the jobs whose commands can import it.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Iterable

PACKAGE = "sabre_prior"
#: The bridge (the declaration, recipes, made records, locks): it decides which jobs run and
#: records them; no output's bytes depend on it (a change of a command is in the recipe itself).
RUNNER = tuple(f"{PACKAGE}.repro.{m}" for m in ("dagsync", "runlock", "jobrun", "state", "pipeline", "closure"))


#: The CLI's own handlers (``check-config``) are no stage's command: only its top level counts.
SHALLOW = (f"{PACKAGE}.cli",)


def blob_id(data: bytes) -> str:
    """The id git gives a file with these bytes (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Closure:
    """Import closures over one source tree (``<src>/sabre_prior``), parsed once per file version.

    With a ``cache`` file (the pipeline's ``.sabre/cache/closure.json``), what each module version
    imports is remembered across processes, keyed by the module's name and its bytes' blob id (and
    dropped as a whole when the package's resource files or this module's own code change): parsing
    the package's ~90 modules is a fifth of the CPU of a `snakemake -n` of the demo, which every
    Snakemake run and every `sabre recipes` would pay again. A missing, unreadable or unwritable
    cache only means parsing again.
    """

    def __init__(self, src: Path, cache: Path | None = None) -> None:
        self.src = Path(src)
        self.pkg = self.src / PACKAGE
        self._imports: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        self._code: dict[tuple[str, ...], dict[str, str]] = {}  # one closure per command, not per job
        self._resources = sorted(p.name for p in (self.pkg / "resources").glob("*") if p.is_file())
        self._cache_path = cache
        self._cache_version = digest([blob_id(Path(__file__).read_bytes()), self._resources])
        self._parsed: dict[str, list[list[str]]] = self._load_cache()
        self._dirty = False

    def _load_cache(self) -> dict[str, list[list[str]]]:
        if self._cache_path is None:
            return {}
        try:
            data = json.loads(self._cache_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("version") != self._cache_version:
            return {}
        parsed = data.get("parsed")
        return parsed if isinstance(parsed, dict) else {}

    def save(self) -> None:
        """Write the parse cache if this process parsed anything new (atomically; errors ignored)."""
        if self._cache_path is None or not self._dirty:
            return
        from ..io_utils import write_json

        try:
            write_json(self._cache_path, {"version": self._cache_version, "parsed": self._parsed})
        except Exception:  # noqa: BLE001 - a cache: a read-only project parses every time
            return
        self._dirty = False

    def new_pass(self) -> None:
        """Forget the closures computed so far (files may have changed since)."""
        self._code.clear()

    # -- modules ---------------------------------------------------------------
    def file_of(self, module: str) -> Path | None:
        rel = Path(*module.split("."))
        for cand in (self.src / rel.with_suffix(".py"), self.src / rel / "__init__.py"):
            if cand.is_file():
                return cand
        return None

    def _is_package(self, module: str) -> bool:
        f = self.file_of(module)
        return f is not None and f.name == "__init__.py"

    def _parse(self, module: str) -> tuple[frozenset[str], frozenset[str]]:
        """(modules of the package ``module`` imports, resource files it names). For :data:`SHALLOW`
        modules only the top level counts (their handlers' lazy imports are other commands')."""
        if module in self._imports:
            return self._imports[module]
        path = self.file_of(module)
        mods: set[str] = set()
        res: set[str] = set()
        if path is not None:
            # the blob id code_ids records too (cached by size and mtime): the bytes are read once
            key = f"{module}:{path.name}:{_blob_of(str(path), *_stat(path))}"
            hit = self._parsed.get(key)
            if hit is not None:
                mods, res = set(hit[0]), set(hit[1])
            else:
                mods, res = self._scan(module, path, path.read_bytes())
                self._parsed[key] = [sorted(mods), sorted(res)]
                self._dirty = True
        found = frozenset(m for m in mods if m.startswith(PACKAGE) and self.file_of(m) is not None)
        out = self._imports[module] = (found, frozenset(res))
        return out

    def _scan(self, module: str, path: Path, data: bytes) -> tuple[set[str], set[str]]:
        """The import targets and resource names of one module's source."""
        mods: set[str] = set()
        res: set[str] = set()
        tree = ast.parse(data, filename=str(path))
        base = module if self._is_package(module) else module.rpartition(".")[0]
        nodes = tree.body if module in SHALLOW else ast.walk(tree)
        for node in nodes:
            if isinstance(node, ast.Import):
                mods.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = base.split(".")
                    anchor = ".".join(parts[: len(parts) - node.level + 1])
                    target = f"{anchor}.{node.module}" if node.module else anchor
                else:
                    target = node.module or ""
                mods.add(target)
                mods.update(f"{target}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in self._resources:
                res.add(node.value)
        return mods, res

    def modules(self, start: Iterable[str]) -> tuple[list[str], list[str]]:
        """Every module reachable from ``start`` (parents included: importing a.b runs a/__init__), and
        the resource files they name."""
        seen: set[str] = set()
        resources: set[str] = set()
        todo = list(start)
        while todo:
            mod = todo.pop()
            if mod in seen or mod in RUNNER or self.file_of(mod) is None:
                continue
            seen.add(mod)
            parts = mod.split(".")
            todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
            found, res = self._parse(mod)
            todo.extend(found)
            resources |= res
        return sorted(seen), sorted(resources)

    def code_ids(self, start: Iterable[str]) -> dict[str, str]:
        """``{project path: blob id}`` of the closure of ``start`` (modules and resource files);
        computed once per distinct ``start`` until :meth:`new_pass`."""
        key = tuple(start)
        if key in self._code:
            return dict(self._code[key])
        mods, res = self.modules(key)
        out: dict[str, str] = {}
        root = self.src.parent
        for mod in mods:
            path = self.file_of(mod)
            assert path is not None
            out[path.relative_to(root).as_posix()] = _blob_of(str(path), *_stat(path))
        for name in res:
            path = self.pkg / "resources" / name
            out[path.relative_to(root).as_posix()] = _blob_of(str(path), *_stat(path))
        self._code[key] = dict(sorted(out.items()))
        self.save()
        return dict(self._code[key])


def _stat(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


@lru_cache(maxsize=4096)
def _blob_of(path: str, size: int, mtime_ns: int) -> str:
    return blob_id(Path(path).read_bytes())


def digest(obj: object) -> str:
    """A short, stable digest of a JSON-able value."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]
