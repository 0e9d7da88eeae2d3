"""Atomic, deterministic writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sabre_prior.io_utils import atomic_writer, dumps_stable, write_json, write_jsonl


def test_atomic_writer_leaves_old_file_on_error(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_writer(target) as fh:
            fh.write("partial")
            raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_written_files_get_normal_permissions(tmp_path: Path) -> None:
    mask = os.umask(0o022)
    os.umask(mask)
    write_json(tmp_path / "a.json", {"b": 1})
    mode = stat.S_IMODE((tmp_path / "a.json").stat().st_mode)
    assert mode == 0o666 & ~mask


def test_stable_json_and_jsonl(tmp_path: Path) -> None:
    assert dumps_stable({"b": 1, "a": [1, 2]}) == dumps_stable({"a": [1, 2], "b": 1})
    assert dumps_stable({"x": "é"}).endswith("\n") and "é" in dumps_stable({"x": "é"})
    n = write_jsonl(tmp_path / "p.jsonl", [{"id": "q1", "prediction": None}, {"id": "q2", "prediction": "B"}])
    assert n == 2
    assert (tmp_path / "p.jsonl").read_text() == '{"id": "q1", "prediction": null}\n{"id": "q2", "prediction": "B"}\n'
    with pytest.raises(ValueError):
        dumps_stable({"x": float("nan")})


def test_read_json_file_names_the_file(tmp_path: Path) -> None:
    from sabre_prior.errors import DataError
    from sabre_prior.io_utils import read_json_file

    good = tmp_path / "good.json"
    good.write_text('{"a": 1}')
    assert read_json_file(good, missing="m") == {"a": 1}
    with pytest.raises(DataError, match=r"nope\.json: metrics file not found$"):
        read_json_file(tmp_path / "nope.json", missing="metrics file not found")
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    with pytest.raises(DataError, match=r"bad\.json: not valid JSON: "):
        read_json_file(bad, missing="m")
