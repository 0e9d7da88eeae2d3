"""The run manifest (``results/manifest.json``): what produced the results.

It records, deterministically (the same inputs give the same bytes, so DVC can
track it like any artifact and a rebuild in a fresh clone matches ``dvc.lock``):

* no code ids and no hash of ``params.yaml``: a code edit or a comment in params.yaml that leaves
  every output alone leaves the manifest alone too. The code is an input of every job, so when
  ``snakemake -n all`` has nothing to do the results were made by the code in the working tree:
  ``sabre manifest --find-commits`` lists the commits holding exactly that code (and dvc.lock
  records its hash); the commit checked out during the run is in the manifest's log.
* ``packages``: versions of Python and of the packages the configured models use.
* ``dataset``: the source (and its kind and hub revision) the Parquet splits record that they were read
  from (their schema metadata, written by the fetch step; never ``params.yaml``).
* ``data``: per Parquet split, its SHA-256, row count and columns (and for a hub source the commit read
  and the digest of the split's files there).
* ``models``: per model, its backend, model id and (API models) the decoding
  actually requested (temperature, token limit, reasoning / thinking settings; local models:
  the decoding protocol both local backends apply, see ``models.local_common.Decoding``).
"""

from __future__ import annotations

import argparse

import hashlib
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from . import contracts as C
from . import registry
from .cliargs import add_data_dir, add_params
from .io_utils import write_json

if TYPE_CHECKING:  # pragma: no cover
    from .data.parquet import DataIdentity

SCHEMA_VERSION = 1
#: Code whose identity the manifest records (relative to the project root).
CODE_PATHS: tuple[str, ...] = ("src/sabre_prior", "Snakefile", "workflow")
#: Packages every run uses (the pipeline's core dependencies).
CORE_PACKAGES: tuple[str, ...] = ("sabre-prior", "datasets", "pyarrow", "pandas", "numpy", "pillow", "matplotlib", "dvc", "snakemake")
#: Extra packages per model backend (from the backend registry).
BACKEND_PACKAGES: dict[str, tuple[str, ...]] = {s.name: s.packages for s in registry.BACKENDS if s.packages}
_IGNORED_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})


# ---------------------------------------------------------------------------
# git object ids, computed from content (no git needed, nothing written)
# ---------------------------------------------------------------------------
def git_blob_id(data: bytes) -> str:
    """The id ``git hash-object`` gives these bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _tracked_files(root: Path, rel: str) -> list[str] | None:
    """Files git would track under ``rel`` (tracked or not ignored), or None without git."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", rel],
            cwd=root,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return sorted({p for p in out.decode("utf-8", "surrogateescape").split("\0") if p and (root / p).is_file()})


def _walk_files(root: Path, rel: str) -> list[str]:
    base = root / rel
    if base.is_file():
        return [rel]
    files = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if d not in _IGNORED_DIRS and not d.endswith(".egg-info")]
        for name in filenames:
            if not name.endswith((".pyc", ".pyo")):
                files.append((Path(dirpath) / name).relative_to(root).as_posix())
    return sorted(files)


def _mode(path: Path) -> bytes:
    if path.is_symlink():
        return b"120000"
    return b"100755" if os.access(path, os.X_OK) else b"100644"


def _content(path: Path) -> bytes:
    return os.readlink(path).encode() if path.is_symlink() else path.read_bytes()


def git_tree_id(root: Path, files: Sequence[str], prefix: str) -> str:
    """The git tree id of ``prefix`` holding ``files`` (paths relative to ``root``)."""
    entries: dict[str, Any] = {}
    for rel in files:
        parts = Path(rel).relative_to(prefix).parts
        node = entries
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = root / rel

    def tree(node: Mapping[str, Any]) -> bytes:
        def sort_key(name: str) -> bytes:
            return name.encode() + (b"/" if isinstance(node[name], dict) else b"")

        body = b""
        for name in sorted(node, key=sort_key):
            value = node[name]
            if isinstance(value, dict):
                mode, oid = b"40000", tree(value)
            else:
                mode, oid = _mode(value), bytes.fromhex(git_blob_id(_content(value)))
            body += mode + b" " + name.encode() + b"\0" + oid
        return hashlib.sha1(b"tree %d\0" % len(body) + body).digest()

    return tree(entries).hex()


def code_ids(root: Path | str = ".", paths: Iterable[str] = CODE_PATHS) -> dict[str, str]:
    """``{path: git object id}`` of each code path, from the working tree's content."""
    root = Path(root)
    ids: dict[str, str] = {}
    for rel in paths:
        target = root / rel
        if target.is_file():
            ids[rel] = git_blob_id(_content(target))
        elif target.is_dir():
            files = _tracked_files(root, rel)
            if files is None:
                files = _walk_files(root, rel)
            ids[rel] = git_tree_id(root, files, rel)
    return ids


def find_commits(root: Path | str, ids: Mapping[str, str], limit: int = 200) -> list[str]:
    """Commits (newest first, among the last ``limit``) whose code has exactly these ids."""
    root = Path(root)
    try:
        revs = subprocess.run(
            ["git", "rev-list", f"--max-count={limit}", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return []
    found = []
    for rev in revs:
        ok = True
        for rel, oid in ids.items():
            got = subprocess.run(["git", "rev-parse", "-q", "--verify", f"{rev}:{rel}"], cwd=root, capture_output=True, text=True)
            if got.returncode != 0 or got.stdout.strip() != oid:
                ok = False
                break
        if ok:
            found.append(rev)
    return found


# ---------------------------------------------------------------------------
# the other sections
# ---------------------------------------------------------------------------
def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def parquet_fingerprint(path: Path) -> dict[str, Any]:
    """SHA-256, row count and column names of a Parquet split (a missing or broken file is an error
    naming it and the fix: :func:`sabre_prior.data.parquet.open_split`)."""
    from .data.parquet import open_split, split_identity

    meta = open_split(path, check_columns=False).metadata  # the schema metadata only
    entry = {"sha256": sha256_file(path), "rows": meta.num_rows, "columns": list(meta.schema.to_arrow_schema().names)}
    identity = split_identity(path, path.stem)
    if identity.revision:  # the hub commit the split was read from (sabre fetch)
        entry["hub_revision"] = identity.revision
    if identity.hub_files:  # digest of the split's files at that commit
        entry["hub_files"] = identity.hub_files
    return entry


def package_versions(names: Iterable[str]) -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in sorted(set(names)):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def requested_decoding(name: str, settings: Mapping[str, Any]) -> dict[str, Any] | None:
    """What an API model is actually asked for (temperature, token limit, thinking...), as sent.

    Local models (transformers, vllm): the decoding protocol both local backends apply.
    None for other backends.  A provider that cannot decode as the paper did
    (temperature 0, no thinking) shows here what it was sent instead.
    """
    from .inference.models.base import ApiBackend, backend_class
    from .inference.models.local_common import LOCAL_BACKENDS

    backend = str(settings.get("backend"))
    if backend in LOCAL_BACKENDS:
        from .inference.models.local_common import decoding_for

        return decoding_for(name, settings)
    cls = backend_class(backend)
    if not issubclass(cls, ApiBackend):
        return None
    return cls(name, settings).generation_settings()


def model_entries(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Backend, model id and requested decoding of every configured model (baselines: ``baseline/<strategy>``)."""
    entries = {}
    for name, settings in sorted((params.get("models") or {}).items()):
        backend = str(settings.get("backend"))
        model_id = settings.get("model_id")
        if model_id is None and backend == "baseline":
            model_id = f"baseline/{settings.get('strategy')}"
        entries[name] = {"backend": backend, "model_id": model_id}
        decoding = requested_decoding(name, settings)
        if decoding is not None:
            entries[name]["decoding"] = decoding
    return entries


def _data_identity(data_dir: Path, splits: Sequence[str]) -> "DataIdentity":
    from .data.parquet import data_identity

    return data_identity(data_dir, splits)


def _dataset_entry(identity: DataIdentity) -> dict[str, Any]:
    return {"source": identity.source, "kind": identity.kind, "revision": identity.revision}


def served_by_model(params: Mapping[str, Any], usage_dir: Path) -> dict[str, dict[str, int]]:
    """Per model, the versions the provider said served its main-run answers (from the usage summaries)."""
    from .analysis.robustness import served_versions

    splits = list(params.get("splits") or C.SPLITS)
    return {m: served_versions(usage_dir / m, splits) for m in sorted(params.get("models") or {})}


def build_manifest(
    params: Mapping[str, Any], params_path: Path, data_dir: Path, root: Path, usage_dir: Path | None = None
) -> dict[str, Any]:
    """The manifest as a dict (see the module docstring)."""
    backends = {str(s.get("backend")) for s in (params.get("models") or {}).values()}
    packages = list(CORE_PACKAGES) + [p for b in sorted(backends) for p in BACKEND_PACKAGES.get(b, ())]
    splits = list(params.get("splits") or C.SPLITS)
    data = {split: parquet_fingerprint(data_dir / f"{split}.parquet") for split in splits}
    models = model_entries(params)
    if usage_dir is not None:  # issue 21: "served": {"<model>[ / <fingerprint>]": answers} ({} for offline models)
        for name, served in served_by_model(params, usage_dir).items():
            models[name]["served"] = served
    return {
        "schema_version": SCHEMA_VERSION,
        "packages": package_versions(packages),
        # what the Parquet files say they were read from (the fetch step's record), not params.yaml
        "dataset": _dataset_entry(_data_identity(data_dir, splits)),
        "data": data,
        "models": models,
    }


def write_manifest(
    params: Mapping[str, Any],
    params_path: Path,
    data_dir: Path,
    output: Path,
    root: Path = Path("."),
    usage_dir: Path | None = None,
) -> dict[str, Any]:
    manifest = build_manifest(params, params_path, data_dir, root, usage_dir)
    write_json(output, manifest)
    return manifest


# ---------------------------------------------------------------------------
# manifest
# ---------------------------------------------------------------------------
def _git_head(root: Path) -> str:
    import subprocess

    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _manifest(args: argparse.Namespace) -> int:
    from .settings import load_settings

    root = Path(".")
    if args.find_commits:
        commits = find_commits(root, code_ids(root))
        print(
            "\n".join(commits)
            if commits
            else "no commit among the last 200 holds exactly this working tree's code (src/sabre_prior, Snakefile, "
            "workflow): commit it first"
        )
        return 0 if commits else 1
    params = load_settings(args)
    usage = Path(args.usage_dir) if args.usage_dir else None
    manifest = write_manifest(params, Path(args.params), Path(args.data), Path(args.output), root, usage)
    # the commit goes to the log, not into the tracked manifest (a commit that changes no output
    # changes no byte of it): `sabre manifest --find-commits` names the commits holding the code
    print(f"git HEAD: {_git_head(root)}")
    print(f"manifest: {len(manifest['data'])} splits, {len(manifest['models'])} models -> {args.output}")
    return 0


def _p_manifest(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("manifest", help="write the run manifest (package versions, models and their decoding, data hashes)")
    p.add_argument("--output", default="results/manifest.json", help="the run manifest JSON to write")
    add_data_dir(p)
    p.add_argument(
        "--usage-dir",
        help="usage summaries (<model>/<split>.json): list the model versions the providers said served each model",
    )
    p.add_argument(
        "--find-commits",
        action="store_true",
        help="write nothing; list the git commits holding exactly the code of the working tree (src/sabre_prior, "
        "Snakefile, workflow), which made the results when `snakemake -n all` has nothing to do",
    )
    add_params(p)
    p.set_defaults(func=_manifest)


#: Subcommand registrars (sabre_prior.commandmap).
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_manifest]
