"""What keeps DVC's record in step with Snakemake's runs (docs/orchestration.md).

Snakemake is the one DAG: ``dvc.yaml`` has one stage, ``pipeline``, whose command runs
``snakemake all``. DVC records what that stage made in ``dvc.lock`` when it is the caller; when
Snakemake is started directly, its ``onsuccess`` handler calls :func:`after_run`, which records the
same stage with ``dvc commit`` ("record changes to files or directories tracked by DVC ... by
storing the current versions in the cache and updating dvc.lock",
https://dvc.org/doc/command-reference/commit) once nothing of ``all`` is left to do. Either way
:func:`prune` first removes from the tracked folders what no job of the current pipeline makes (a
removed model's files, a killed job's temporary file), so that every tracked output is what a fresh
run on the same params makes.

DVC writes ``dvc.lock`` in place (``dvc/utils/serialize/_yaml.py``: ``open(path, "w")``), so a kill
while it writes can leave a file it cannot read: "ERROR: ... dvc.lock ... validation failed" on its
next command. :func:`repair_lock` sets such a file aside (the stage is recorded again): the one
repair, run by :func:`after_run` and by ``sabre recover``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

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
#: Set by dvc.yaml's command: DVC is the caller and records the stage itself.
UNDER_DVC = "SABRE_UNDER_DVC"
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


def _nothing_left(root: Path) -> bool:
    """`snakemake --dry-run all` plans no job (the outputs are current for params.yaml)."""
    proc = subprocess.run(
        [_tool("snakemake"), "--dry-run", "--quiet", "rules", "all"], cwd=root, capture_output=True, text=True
    )
    return proc.returncode == 0 and "Nothing to be done" in proc.stdout + proc.stderr


def _tool(name: str) -> str:
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else name


def after_run(expected: Sequence[str], same_as_params: bool, root: Path = Path(".")) -> None:
    """Snakemake's ``onsuccess``: prune, then (when Snakemake, not DVC, is the caller) record the
    stage in dvc.lock if the run used params.yaml as it is and nothing of ``all`` is left."""
    removed = prune(expected, root)
    if removed:
        print(f"removed {len(removed)} file(s) no job of the pipeline makes (e.g. {removed[0]})", file=sys.stderr)
    if os.environ.get(UNDER_DVC) == "1" or not (root / ".dvc").is_dir():
        return
    repair_lock(root)
    if not same_as_params:
        print("dvc.lock not updated: this run's settings are not params.yaml's (--config/--configfile)", file=sys.stderr)
        return
    if not _nothing_left(root):
        print("dvc.lock not updated: jobs of `all` are left (run `snakemake all` to finish and record)", file=sys.stderr)
        return
    proc = subprocess.run([_tool("dvc"), "commit", "--force", "--quiet", STAGE], cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"dvc commit failed (dvc.lock not updated):\n{proc.stdout}{proc.stderr}", file=sys.stderr)
        raise SystemExit(1)
    print("recorded the pipeline's outputs in dvc.lock (dvc commit)", file=sys.stderr)


def _recover(args: object) -> int:
    repaired = repair_lock(Path("."))
    print(
        ("set aside the damaged dvc.lock; " if repaired else "dvc.lock is readable; ")
        + "now run the same command again (`snakemake --cores 8 all` records the results in dvc.lock, "
        "or `dvc repro`)"
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
