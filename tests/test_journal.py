"""The crash-safe response journal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sabre_prior.errors import BackendError
from sabre_prior.inference.journal import Journal, journal_path, read_journal, request_key

IDENTITY = {"backend": "openai", "provider": "openai", "model_id": "m", "generation": {"temperature": 0.0}}


def test_key_depends_on_content_not_on_order() -> None:
    base = request_key(IDENTITY, "screening_v1", "1", "Question: q", "abc")
    reordered = dict(reversed(list(IDENTITY.items())))
    assert request_key(reordered, "screening_v1", "1", "Question: q", "abc") == base
    variants = [
        request_key({**IDENTITY, "model_id": "m2"}, "screening_v1", "1", "Question: q", "abc"),
        request_key({**IDENTITY, "generation": {"temperature": 0.5}}, "screening_v1", "1", "Question: q", "abc"),
        request_key(IDENTITY, "other_v1", "1", "Question: q", "abc"),
        request_key(IDENTITY, "screening_v1", "2", "Question: q", "abc"),
        request_key(IDENTITY, "screening_v1", "1", "Question: q2", "abc"),
        request_key(IDENTITY, "screening_v1", "1", "Question: q", "abd"),
    ]
    assert len({base, *variants}) == 7


def test_path_layout(tmp_path: Path) -> None:
    assert journal_path("gpt", "context", tmp_path) == tmp_path / ".sabre" / "journal" / "gpt" / "context.jsonl"


def test_append_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "j" / "m" / "s.jsonl"
    with Journal(path) as j:
        j.append({"key": "k1", "id": "q1", "text": "Yes."})
        j.append({"key": "k2", "id": "q2", "text": "3"})
        assert j.get("k1")["text"] == "Yes."
    lines = path.read_text().splitlines()
    assert [json.loads(line)["key"] for line in lines] == ["k1", "k2"]
    with Journal(path) as j:
        assert len(j) == 2 and j.get("k2")["text"] == "3" and "k3" not in j


def test_records_need_key_and_text(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.jsonl") as j:
        with pytest.raises(ValueError):
            j.append({"key": "k", "text": None})


def test_torn_last_line_is_ignored_and_cut(tmp_path: Path, caplog) -> None:
    path = tmp_path / "j.jsonl"
    good = json.dumps({"key": "k1", "text": "Yes."}) + "\n"
    torn = '{"key": "k2", "text": "N'
    path.write_text(good + torn)
    assert list(read_journal(path)) == ["k1"]
    with Journal(path) as j:
        assert j.torn_bytes == len(torn) and list(j._records) == ["k1"]
        j.append({"key": "k3", "text": "B"})
    assert "torn last line" in caplog.text
    assert [json.loads(line)["key"] for line in path.read_text().splitlines()] == ["k1", "k3"]


def test_unreadable_middle_line_is_skipped(tmp_path: Path, caplog) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text('{"key": "k1", "text": "a"}\nnot json\n{"no": "key"}\n{"key": "k2", "text": "b"}\n')
    assert sorted(read_journal(path)) == ["k1", "k2"]
    assert "unreadable journal line" in caplog.text


def test_first_record_of_a_key_wins(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text('{"key": "k", "text": "first"}\n{"key": "k", "text": "second"}\n')
    assert read_journal(path)["k"]["text"] == "first"


def test_one_writer_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with Journal(path):
        with pytest.raises(BackendError, match="another sabre process"):
            Journal(path)
    Journal(path).close()


def test_lock_is_released_when_the_holder_is_killed(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    code = (
        "import sys, time\n"
        "from sabre_prior.inference.journal import Journal\n"
        f"j = Journal({str(path)!r})\n"
        "j.append({'key': 'k1', 'text': 'yes'})\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        with pytest.raises(BackendError):
            Journal(path)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 5
    while True:
        try:
            with Journal(path) as j:
                assert j.get("k1")["text"] == "yes", "a record written before SIGKILL survives"
            break
        except BackendError:
            assert time.monotonic() < deadline
            time.sleep(0.05)
