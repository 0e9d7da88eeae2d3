"""The Snakemake <-> DVC bridge: its pure parts (the real runs are in test_dvc.py and test_reproduce.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sabre_prior.dvcsync import (
    SnakemakeRecords,
    StageState,
    _change_kinds,
    _record_matches,
    stages_to_commit,
    toposort,
)


def _stage(name: str, deps: tuple[str, ...], outs: tuple[str, ...], locked: bool = True, changes: frozenset = frozenset()) -> StageState:
    return StageState(name=name, cmd=("x",), deps=deps, outs=outs, locked=locked, changes=changes)


def test_status_entries_become_change_kinds() -> None:
    entries = [{"changed deps": {"params.yaml": {"models.a": "modified"}}}, {"changed outs": {"o": "deleted"}}, "changed command", "always changed"]
    assert _change_kinds(entries) == {"deps", "outs", "command", "always"}
    assert _change_kinds([]) == frozenset()


def test_needs_run_only_for_recorded_stages_with_input_changes() -> None:
    assert _stage("a", (), ("o",), changes=frozenset({"params"})).needs_run
    assert not _stage("a", (), ("o",), changes=frozenset({"outs"})).needs_run  # an edited output: Snakemake decides
    assert not _stage("a", (), ("o",), locked=False, changes=frozenset({"deps"})).needs_run  # never recorded
    assert _stage("a", (), ("o",)).up_to_date


def test_toposort_puts_producers_first_including_directory_overlaps() -> None:
    tables = _stage("tables", ("results/metrics",), ("results/tables/t.md",))
    evaluate = _stage("evaluate@m", ("results/predictions/m", "data/parquet"), ("results/metrics/m.json",))
    predict = _stage("predict@m-c", ("data/parquet/c.parquet",), ("results/predictions/m/c.jsonl",))
    fetch = _stage("fetch@c", ("data/demo",), ("data/parquet/c.parquet",))
    order = [s.name for s in toposort([tables, evaluate, predict, fetch])]
    assert order.index("fetch@c") < order.index("predict@m-c") < order.index("evaluate@m") < order.index("tables")


def test_commit_choice_follows_what_snakemake_vouches_for(tmp_path: Path) -> None:
    for rel in ("a.txt", "b.txt", "d/x", "e.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    fresh = _stage("fresh", (), ("a.txt",), locked=False)
    edited = _stage("edited", (), ("b.txt",), changes=frozenset({"outs"}))
    code_changed = _stage("code", (), ("d",), changes=frozenset({"deps"}))
    outside = _stage("outside", (), ("e.txt",), changes=frozenset({"outs"}))
    stages = [fresh, edited, code_changed, outside]
    outputs = {"a.txt", "b.txt", "d/x"}  # e.txt is not part of this run's DAG
    names = lambda chosen: sorted(s.name for s in chosen)  # noqa: E731
    # success: everything in the DAG, except a change Snakemake did not act on
    assert names(stages_to_commit(stages, tmp_path, outputs, ran=set(), success=True)) == ["edited", "fresh"]
    assert names(stages_to_commit(stages, tmp_path, outputs, ran={"d/x"}, success=True)) == ["code", "edited", "fresh"]
    # failure: only what ran to completion
    assert names(stages_to_commit(stages, tmp_path, outputs, ran={"a.txt"}, success=False)) == ["fresh"]


def test_record_paths_are_snakemakes(tmp_path: Path) -> None:
    from snakemake.persistence.file import FilePersistence

    key = "results/traces/" + "m" * 300 + "/context.jsonl"  # longer than a file name: split into folders
    records = SnakemakeRecords(tmp_path / ".snakemake")
    theirs = FilePersistence._record_path(type("P", (), {"_fetch_max_len": lambda self, s: os.pathconf(tmp_path, "PC_NAME_MAX")})(), str(tmp_path / ".snakemake" / "metadata"), key)
    assert str(records._path(records.metadata, key)) == theirs
    records.write(key, {"endtime": 12.5, "code": "x"})
    assert records.read(key) == {"endtime": 12.5, "code": "x"}
    assert records.delete(key) and records.read(key) is None


@pytest.mark.parametrize(
    ("record", "mtime", "valid"),
    [
        ({"endtime": 100.0, "code": "sabre tables"}, 100.0, True),
        ({"endtime": 100.0, "code": "sabre tables"}, 250.0, False),  # rewritten since (dvc checkout/repro)
        ({"endtime": None, "code": "sabre tables"}, 100.0, False),
        ({"endtime": 100.0, "code": "sabre-dvc-sync: DVC sees a change"}, 100.0, False),  # our re-run mark
        (None, 100.0, False),
    ],
)
def test_record_validity(record: dict | None, mtime: float, valid: bool) -> None:
    assert _record_matches(record, mtime) is valid
