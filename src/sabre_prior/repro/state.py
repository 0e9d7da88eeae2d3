"""What each job's outputs were made from: recipes and *made records*.

* A job's **recipe** (``.sabre/recipes/<stage>[/<item>].json``, :meth:`Pipeline.recipe`) holds
  everything besides its data its outputs are made from. The Snakefile's planner and DVC's
  ``recipes`` stage (``sabre recipes``) write the same bytes, rewriting a file only when its
  content changes.
* A job's **made record** (``.sabre/made/<job>.json``) is written by the job itself when its
  command succeeds, under either tool or by hand with the rule's arguments
  (:mod:`sabre_prior.repro.jobrun`): the digest of the recipe it ran with and the MD5 of every
  input and output file as it read and left them.

A job is **proven** when its made record names the current recipe and every input and output
still has the recorded content (stat first; a file whose size or mtime moved is hashed again).
That is the same comparison DVC makes against ``dvc.lock`` (the command, the deps, the outs), so
the planner can tell Snakemake exactly what DVC would re-run without asking DVC each time.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..io_utils import TEMP_PREFIX, atomic_writer

if TYPE_CHECKING:  # pragma: no cover
    from .pipeline import Job, Pipeline

STATE_DIR = ".sabre"
MADE_DIR = ".sabre/made"


def made_path(root: Path, job_name: str) -> Path:
    return root / MADE_DIR / f"{job_name}.json"


def file_md5(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(path: Path) -> list[Path]:
    """``path`` itself, or every file below a folder (sorted; temp files and caches left out,
    as .dvcignore leaves them out of DVC's hashes)."""
    if not path.is_dir():
        return [path]
    out = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.startswith(TEMP_PREFIX) or name.endswith(".pyc") or name == ".snakemake_timestamp":
                continue
            out.append(Path(dirpath) / name)
    return out


def fingerprint(root: Path, rel: str, known: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """``{"stat": [[size, mtime_ns], ...], "md5": ...}`` of a file or folder (None if missing).
    ``known`` (an earlier fingerprint) is reused when the stat is unchanged: nothing is read."""
    path = root / rel
    if not path.exists():
        return None
    files = _files(path)
    stat = []
    for f in files:  # (a dependency may lie outside the project: a local mirror's files)
        st = f.stat()
        stat.append([f.relative_to(path).as_posix() if f != path else "", st.st_size, st.st_mtime_ns])
    if known is not None and known.get("stat") == stat:
        return dict(known)
    if path.is_dir():
        listing = "".join(f"{s[0]}\0{file_md5(f)}\n" for s, f in zip(stat, files))
        md5 = hashlib.md5(listing.encode("utf-8", "surrogateescape")).hexdigest()
    else:
        md5 = file_md5(path)
    return {"stat": stat, "md5": md5}


def recipe_digest(root: Path, job: "Job") -> str | None:
    path = root / job.stamp
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def write_made(root: Path, job: "Job", recipe: str | None) -> None:
    """Record that ``job`` made its outputs from ``recipe`` and its inputs as they are now."""
    record = {
        "job": job.name,
        "recipe": recipe,
        "inputs": {rel: fingerprint(root, rel) for rel in job.inputs},
        "outputs": {rel: fingerprint(root, rel) for rel in job.outputs},
    }
    path = made_path(root, job.name)
    with atomic_writer(path) as fh:
        fh.write(json.dumps(record, sort_keys=True, indent=1) + "\n")


def read_made(root: Path, job_name: str) -> dict[str, Any] | None:
    try:
        return json.loads(made_path(root, job_name).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None


@dataclass
class Verdict:
    proven: bool
    why: str = ""


def verify(root: Path, job: "Job", recipe: str | None, record: Mapping[str, Any] | None = None) -> Verdict:
    """Whether the job's outputs are what its recipe and current inputs make (see the module doc)."""
    record = read_made(root, job.name) if record is None else record
    if record is None:
        return Verdict(False, "no record of how its outputs were made")
    if recipe is None or record.get("recipe") != recipe:
        return Verdict(False, "its recipe (command, settings or code) changed")
    for kind, paths in (("inputs", job.inputs), ("outputs", job.outputs)):
        known = record.get(kind) or {}
        if set(known) != set(paths):
            return Verdict(False, f"its {kind} are not the recorded ones")
        for rel in paths:
            old = known.get(rel)
            now = fingerprint(root, rel, old)
            if now is None or old is None or now["md5"] != old["md5"]:
                return Verdict(False, f"{rel} is missing or changed")
    return Verdict(True)


def write_recipes(pipeline: "Pipeline", hub: Mapping[str, Any] | None = None, *, prune: bool = True) -> list[str]:
    """Write every job's recipe whose content changed; with ``prune`` remove the recipes of jobs
    params.yaml no longer has (the folder is then exactly a clean run's). Returns the paths written."""
    from .pipeline import STAMP_DIR

    root = pipeline.root
    written = []
    wanted = set()
    pipeline.closure().new_pass()  # the code as it is now; one closure per command in this pass
    for job in pipeline.jobs():
        path = root / job.stamp
        wanted.add(path)
        content = pipeline.recipe(job, hub)
        try:
            if path.read_text(encoding="utf-8") == content:
                continue
        except FileNotFoundError:
            pass
        with atomic_writer(path) as fh:
            fh.write(content)
        written.append(job.stamp)
    if prune:
        base = root / STAMP_DIR
        for f in _files(base) if base.is_dir() else []:
            if f not in wanted:
                f.unlink()
        for d in sorted((p for p in base.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            if not any(d.iterdir()):
                d.rmdir()
    return written


def remove_temp_files(root: Path, folders: Iterable[str] = ("data", "results", ".sabre")) -> list[Path]:
    """Delete temp files a kill left behind (atomic writes' ``.sabre-tmp.*``)."""
    gone = []
    for folder in folders:
        base = root / folder
        if not base.is_dir():
            continue
        for p in sorted(base.rglob(f"{TEMP_PREFIX}*"), key=lambda q: len(q.parts), reverse=True):
            if p.is_dir():
                import shutil

                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            gone.append(p)
    return gone
