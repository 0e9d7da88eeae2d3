"""Exact reproduction: a fresh clone rebuilds every artifact byte for byte against the committed dvc.lock,
and a colleague gets identical results through a DVC remote without recomputing anything.

These tests compare against the dvc.lock of this working tree: it must have been generated from this
code (any change to a stage's code or params invalidates it). Regenerate it with
`dvc repro && sabre dvc-sync check` in the project root (README, "Exact reproduction").
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from dvc_helpers import clone, dvc, dvc_ran, dvc_restored, git, make_repo, out, planned_jobs, smk
from project import ROOT

pytestmark = pytest.mark.slow

UP_TO_DATE = "Data and pipelines are up to date."
REGENERATE = "dvc.lock is stale or missing: regenerate it in the project root with `dvc repro` (after the last code change)"


def _stages(lock_text: str) -> dict:
    return (yaml.safe_load(lock_text) or {}).get("stages") or {}


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A git repo of this tree with the committed dvc.lock and a shared local-folder remote configured."""
    assert (ROOT / "dvc.lock").is_file(), REGENERATE
    base = tmp_path_factory.mktemp("reproduce")
    repo = make_repo(base / "origin")
    remote = base / "remote"
    remote.mkdir()
    dvc(repo, "remote", "add", "-d", "shared", str(remote))
    git(repo, "add", ".dvc/config")
    git(repo, "commit", "-q", "-m", "share results through a local-folder remote")
    return repo, remote


def _differing(committed: dict, rebuilt: dict) -> list[str]:
    return sorted(n for n in committed.keys() | rebuilt.keys() if committed.get(n) != rebuilt.get(n))


def test_snakemake_rebuild_in_a_fresh_clone_matches_the_committed_lock(demo_repo_run: Path) -> None:
    # the session's `snakemake --cores 2 all` (tests/conftest.py) in a git repo of one commit of this tree,
    # the same files a clone holds; its onsuccess handler records every output in dvc.lock (dvc commit)
    assert (ROOT / "dvc.lock").is_file(), REGENERATE
    work = demo_repo_run
    assert UP_TO_DATE in dvc(work, "status").stdout
    committed = _stages(git(work, "show", "HEAD:dvc.lock").stdout)
    rebuilt = _stages((work / "dvc.lock").read_text())
    differing = _differing(committed, rebuilt)
    assert not differing, f"{REGENERATE}\nstages whose lock entry differs after a Snakemake rebuild: {differing}"


def test_dvc_rebuild_matches_and_a_colleague_pulls_identical_results(origin: tuple[Path, Path], tmp_path: Path) -> None:
    repo, remote = origin
    mine = clone(repo, tmp_path / "mine")
    proc = dvc(mine, "repro")
    committed = _stages(git(mine, "show", "HEAD:dvc.lock").stdout)
    rebuilt = _stages((mine / "dvc.lock").read_text())
    # everything was rebuilt from scratch (a stage whose outputs equal bytes already cached is restored)
    assert len(dvc_ran(out(proc))) + len(dvc_restored(out(proc))) == len(committed)
    differing = _differing(committed, rebuilt)
    assert not differing, f"{REGENERATE}\nstages whose lock entry differs after a rebuild: {differing}"

    dvc(mine, "push")
    assert any(p.is_file() for p in remote.rglob("*"))

    theirs = clone(repo, tmp_path / "theirs")
    dvc(theirs, "pull")
    assert UP_TO_DATE in dvc(theirs, "status").stdout
    assert planned_jobs(out(smk(theirs, "-n", "all"))) == {}  # nothing recomputed, no model called
    assert dvc_ran(out(dvc(theirs, "repro"))) == []
    tracked = [o["path"] for s in _stages((theirs / "dvc.lock").read_text()).values() for o in s.get("outs", [])]
    assert len(tracked) >= len(committed)
    for o in tracked:
        for path in [theirs / o, *(theirs / o).rglob("*")] if (theirs / o).is_dir() else [theirs / o]:
            if path.is_file() and path.name != ".snakemake_timestamp":
                rel = path.relative_to(theirs)
                assert path.read_bytes() == (mine / rel).read_bytes(), f"{rel} differs after dvc pull"
    for table in ("main_results.md", "main_results.csv", "main_results.tex"):
        assert (theirs / "results/tables" / table).read_bytes() == (mine / "results/tables" / table).read_bytes()
