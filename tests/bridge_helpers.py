"""What the bridge tests check after every step: the two tools agree, and agree with a clean run."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml
from dvc_helpers import dvc, out, planned_jobs, smk

UP_TO_DATE = "Data and pipelines are up to date."


def dvc_changed(project: Path) -> set[str]:
    """Stages `dvc status --json` reports (fails the test when DVC cannot read its records)."""
    text = dvc(project, "status", "--json").stdout.strip()
    return set(json.loads(text[text.index("{"):])) if "{" in text else set()


def smk_todo(project: Path) -> dict[str, int]:
    """Jobs `snakemake -n all` would run (rule -> count)."""
    return planned_jobs(out(smk(project, "-n", "all")))


def assert_agree(project: Path) -> bool:
    """`snakemake -n all` has nothing to do exactly when `dvc status` is clean; returns which."""
    todo = smk_todo(project)
    changed = dvc_changed(project)
    assert (not todo) == (not changed), f"Snakemake would run {todo} while DVC reports changed {sorted(changed)}"
    return not todo


def tracked_outputs(project: Path) -> list[str]:
    """Every file of every output dvc.yaml declares (as DVC renders it for this params.yaml)."""
    stages = yaml.safe_load(dvc(project, "stage", "list", "--name-only").stdout or "[]")
    lock = yaml.safe_load((project / "dvc.lock").read_text(encoding="utf-8"))["stages"]
    files = []
    for name in stages or []:
        for o in lock.get(name, {}).get("outs", []):
            p = project / o["path"]
            files += [str(f.relative_to(project)) for f in sorted(p.rglob("*")) if f.is_file()] if p.is_dir() else [o["path"]]
    return sorted(f for f in files if not f.startswith(".sabre/"))


def digests(project: Path, files: list[str] | None = None) -> dict[str, str]:
    """SHA-256 of every tracked output (the demo's results, as a fresh clone's run makes them)."""
    files = tracked_outputs(project) if files is None else files
    return {f: hashlib.sha256((project / f).read_bytes()).hexdigest() for f in files if (project / f).is_file()}


def temp_files(project: Path) -> list[str]:
    return [str(p.relative_to(project)) for d in ("data", "results", ".sabre") for p in (project / d).rglob(".sabre-tmp.*")]
