"""The forked row reader of ``sabre predict`` (sabre_prior.data.reader): same rows, same errors, no child left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sabre_prior.data.parquet import iter_rows
from sabre_prior.data.reader import ForkedRows, LocalRows, open_rows
from sabre_prior.errors import DataError
from tests.servers.dataset import write_split

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the forked reader needs os.fork")


def _gone(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True  # reaped: no zombie left
    return False


def test_the_child_sends_the_rows_and_count_of_the_in_process_reader(tmp_path: Path) -> None:
    path = tmp_path / "context.parquet"
    write_split(path, "context", 24)
    rows = ForkedRows(path, batch_size=5)
    pid = rows._pid
    assert pid is not None and rows.count() == 24
    assert list(rows) == list(iter_rows(path, with_images=True, batch_size=5))
    assert _gone(pid)


def test_a_missing_file_is_the_in_process_readers_error(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.parquet"
    with pytest.raises(DataError) as local:
        list(LocalRows(path))
    rows = ForkedRows(path)
    assert rows.count() is None
    with pytest.raises(DataError) as forked:
        list(rows)
    assert str(forked.value) == str(local.value) and "split file not found" in str(forked.value)


def test_a_row_without_image_bytes_fails_where_it_stands(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    table = pa.table(
        {"id": ["a", "b", "c"], "image": pa.array([{"bytes": b"\xff\xd8\xff1", "path": "a"}, {"bytes": b"\xff\xd8\xff2", "path": "b"},
                                                  {"bytes": None, "path": "c"}], type=image)}
    )  # fmt: skip
    pq.write_table(table, path)
    seen = []
    with pytest.raises(DataError, match="row 'c': field 'image' has no embedded bytes"):
        for row in ForkedRows(path, batch_size=1):
            seen.append(row["id"])
    assert seen == ["a", "b"]


def test_closing_early_ends_the_child(tmp_path: Path) -> None:
    path = tmp_path / "context.parquet"
    write_split(path, "context", 40)
    rows = ForkedRows(path, batch_size=1)
    pid = rows._pid
    assert pid is not None
    first = next(iter(rows))
    assert first["id"].startswith("context_")
    rows.close()
    assert _gone(pid)
    rows.close()  # twice is harmless


def test_a_child_whose_parent_dies_leaves_by_itself(tmp_path: Path) -> None:
    """SIGKILL the process holding the rows after its first row: its reader child is gone soon after."""
    path = tmp_path / "context.parquet"
    write_split(path, "context", 400, image_size=(320, 240))  # far more than the pipe holds
    script = textwrap.dedent(
        f"""
        import sys, time
        from sabre_prior.data.reader import ForkedRows
        rows = ForkedRows({str(path)!r}, batch_size=1)
        it = iter(rows)
        next(it)
        print(rows._pid, flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    child = int(proc.stdout.readline())  # type: ignore[union-attr]
    os.kill(child, 0)  # alive, blocked on the full pipe
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{child}/stat") as fh:  # an orphan is reaped by init; a zombie counts as gone
                if fh.read().split(") ", 1)[1].startswith("Z"):
                    break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the reader child {child} outlived its parent by 10 s")


def test_in_process_where_threads_run(tmp_path: Path) -> None:
    path = tmp_path / "context.parquet"
    write_split(path, "context", 8)
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        rows = open_rows(path)
        assert isinstance(rows, LocalRows) and rows.count() == 8 and len(list(rows)) == 8
    finally:
        stop.set()
        t.join()


def test_sabre_predict_never_imports_pyarrow_itself(tmp_path: Path, demo_parquet_dir: Path) -> None:
    """The rows come from the child: the predicting process answers the split without pyarrow."""
    (tmp_path / "params.yaml").write_text(
        "dataset: {source: demo}\nsplits: [context]\nmodels:\n  always: {backend: baseline, strategy: always_yes}\n"
    )
    script = textwrap.dedent(
        f"""
        import sys
        from sabre_prior.cli import main
        code = main(["predict", "--model", "always", "--split", "context", "--data", {str(demo_parquet_dir / "context.parquet")!r},
                     "--no-progress"])
        print("pyarrow imported:", "pyarrow" in sys.modules, "code:", code)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "pyarrow imported: False code: 0" in proc.stdout
    expected = [row["id"] for row in iter_rows(demo_parquet_dir / "context.parquet", with_images=False)]
    lines = (tmp_path / "results" / "predictions" / "always" / "context.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == expected


def test_in_process_where_no_process_can_be_forked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "context.parquet"
    write_split(path, "context", 8)
    before = len(os.listdir("/proc/self/fd"))

    tried = []

    def no_fork() -> int:
        tried.append(1)
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    monkeypatch.setattr(threading, "active_count", lambda: 1)  # as in `sabre predict` (an xdist worker has more)
    rows = open_rows(path)
    assert tried and isinstance(rows, LocalRows)
    assert [r["id"] for r in rows] == [r["id"] for r in iter_rows(path)]
    assert len(os.listdir("/proc/self/fd")) == before  # the pipe was closed

