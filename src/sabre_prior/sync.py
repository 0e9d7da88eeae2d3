"""What keeps DVC's record in step with Snakemake's runs (docs/orchestration.md).

Snakemake is the one DAG: ``dvc.yaml`` has one stage, ``pipeline``, whose command runs Snakemake's
target ``outputs`` (every output of the pipeline), and DVC records them in ``dvc.lock`` after it.
Started directly, ``snakemake all`` makes one more file, ``dvc.lock`` itself: the rule ``dvc_lock``
(Snakefile) has every output, ``params.yaml`` and the code as inputs, so Snakemake runs it exactly
when one of them is newer than the lock (or the lock is missing), and its job records the stage with
``dvc commit`` ("record changes to files or directories tracked by DVC ... by storing the current
versions in the cache and updating dvc.lock", https://dvc.org/doc/command-reference/commit). Before
the first job of a run and after the last (the Snakefile's ``onstart`` and ``onsuccess`` handlers,
which a dry run does not call), :func:`prune` removes from the tracked folders what no job of the
current pipeline makes (a removed model's files, a killed job's temporary file), so that every
tracked output is what a fresh run on the same params makes.

DVC writes ``dvc.lock`` in place (``dvc/utils/serialize/_yaml.py``: ``open(path, "w")``), so a kill
while ``dvc repro`` writes it can leave a file DVC cannot read on its next command (a YAML error
naming a line). :func:`repair_lock` sets such a file aside (``sabre recover``); the next
``snakemake all`` records the stage again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:  # pragma: no cover
    import argparse

#: The folders and files dvc.yaml's stage tracks as `outs` (and prunes); the plot data is its `plots:`
#: entry (tests/test_parity.py checks dvc.yaml names the same).
TRACKED: tuple[str, ...] = (
    "data/parquet",
    "results/predictions",
    "results/usage",
    "results/metrics",
    "results/traces",
    "results/intervals",
    "results/prompts",
    "results/audit",
    "results/analysis",
    "results/tables",
    "results/figures",
    "results/report",
    "results/manifest.json",
)
#: dvc.yaml's `metrics:` (one file per model, `dvc metrics show`'s rows) and `plots:` entries.
METRICS: tuple[str, ...] = ("results/headline",)
PLOTS: tuple[str, ...] = ("results/plots/split_accuracy.csv",)
STAGE = "pipeline"
LOCK = Path("dvc.lock")
DAMAGED = Path(".sabre") / "damaged"


def prune(expected: Iterable[str], root: Path = Path(".")) -> list[str]:
    """Remove the files under what dvc.yaml tracks that are not in ``expected`` (the outputs of the
    pipeline's jobs), and the folders left empty; returns what was removed."""
    keep = {os.path.normpath(p) for p in expected}
    removed: list[str] = []
    for top in (*TRACKED, *METRICS, *(os.path.dirname(p) for p in PLOTS)):
        base = root / top
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base, topdown=False):
            for name in filenames:
                rel = os.path.normpath(os.path.relpath(os.path.join(dirpath, name), root))
                if rel not in keep:
                    os.remove(os.path.join(dirpath, name))
                    removed.append(rel)
            if dirpath != str(base) and not os.listdir(dirpath):
                os.rmdir(dirpath)
    return sorted(removed)


def repair_lock(root: Path = Path(".")) -> bool:
    """Set aside a ``dvc.lock`` that is not valid YAML with a mapping of stages (a kill while DVC
    wrote it); True when one was."""
    lock = root / LOCK
    if not lock.is_file():
        return False
    import yaml

    try:
        data = yaml.safe_load(lock.read_text(encoding="utf-8"))
        ok = isinstance(data, dict) and isinstance(data.get("stages"), dict) and STAGE in data["stages"]
    except (yaml.YAMLError, UnicodeDecodeError):
        ok = False
    if ok:
        return False
    (root / DAMAGED).mkdir(parents=True, exist_ok=True)
    shutil.move(str(lock), str(root / DAMAGED / "dvc.lock"))
    print(f"dvc.lock could not be read (a kill while DVC wrote it): moved to {DAMAGED}/dvc.lock", file=sys.stderr)
    return True


def dvc_project(root: Path = Path(".")) -> bool:
    """A DVC project DVC can record in: ``.dvc/`` in a git work tree (DVC's default, ``core.no_scm`` off)."""
    if not (root / ".dvc").is_dir():
        return False
    proc = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=root, capture_output=True, text=True)
    return proc.returncode == 0 and proc.stdout.strip() == "true"


def warn_unrecorded(root: Path = Path(".")) -> None:
    """Warn when tracked outputs exist that no Snakemake run here made (a clone after `dvc pull`, a
    `dvc checkout`, a copy): their timestamps say nothing about what they were made from, so
    Snakemake would re-run jobs (and, without the response journal, pay for API calls again)."""
    metadata = root / ".snakemake" / "metadata"
    if (root / LOCK).is_file() and (root / "results/predictions").is_dir() and not any(metadata.glob("*")):
        print(
            "warning: these results have no Snakemake records here (pulled with DVC, checked out or copied): "
            "run `snakemake --touch --forceall --cores 1` once, so that Snakemake takes them as made from "
            "params.yaml (docs/orchestration.md, \"A pulled clone\")",
            file=sys.stderr,
        )


def _recover(args: object) -> int:
    repaired = repair_lock(Path("."))
    print(
        ("set aside the damaged dvc.lock; " if repaired else "dvc.lock is readable; ")
        + "now run `snakemake --cores 8 all`: it records the results in dvc.lock again"
    )
    return 0


def _p_recover(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser(
        "recover",
        help="after a kill while DVC wrote dvc.lock (DVC then says it cannot read it): set the file aside",
    )
    p.set_defaults(func=_recover)


#: Subcommand registrars (sabre_prior.commandmap).
REGISTRARS = [_p_recover]
