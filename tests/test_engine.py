"""The inference engine against a real HTTP server on 127.0.0.1, through the real OpenAI SDK.

Every fault type the issue lists is injected; the checks are on what the
server saw (one successful answer per question, concurrency bound, Retry-After
waited) and on what the pipeline wrote (complete predictions, usage sums).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Sequence

import pytest

from sabre_prior.inference.engine import Engine, EngineSettings, WorkItem
from sabre_prior.errors import BackendError, InferenceIncomplete
from sabre_prior.inference.predict import SplitRun, predict_split
from sabre_prior.inference.journal import Journal, read_journal
from sabre_prior.inference.models.base import Backend, CallError, Completion, Query
from tests.servers import FakeServer
from tests.servers.fixtures import (  # noqa: F401  (fixtures)
    api_key,
    expected_answers,
    model_settings,
    read_predictions,
    server,
    split_file,
)


def predict(tmp: Path, settings: dict[str, Any], data: Path, model: str = "m") -> SplitRun:
    return predict_split(
        model,
        settings,
        "context",
        data,
        tmp / "pred" / f"{model}.jsonl",
        progress=False,
        usage_output=tmp / "usage" / f"{model}.json",
        run_log_output=tmp / "runlog" / f"{model}.json",
        journal_dir=tmp / "journal",
    )


def check_complete(tmp: Path, data: Path, server: FakeServer, model: str = "m") -> None:
    """Predictions complete and right; exactly one successful server answer per question."""
    expected = expected_answers(data)
    preds = read_predictions(tmp / "pred" / f"{model}.jsonl")
    assert [p["id"] for p in preds] == list(expected)
    assert {p["id"]: p["prediction"] for p in preds} == {qid: ans for qid, (_, ans) in expected.items()}
    per_key = server.answers_per_key()
    assert sorted(per_key) == sorted(k for k, _ in expected.values())
    assert set(per_key.values()) == {1}, "a question was answered (and paid for) more than once"


#: a stated limit far above what the tests send (rate_limits.requests_per_minute, docs/api_models.md)
KNOWN_LIMIT = {"requests_per_minute": 60000}


def test_all_answered_once_within_concurrency(tmp_path: Path, server: FakeServer, split_file: Path) -> None:
    server.latency = 0.05
    run = predict(tmp_path, model_settings(server, concurrency=3), split_file)
    check_complete(tmp_path, split_file, server)
    assert run.calls == 16 and run.cached == 0 and run.retries == 0
    assert server.max_in_flight == 3
    assert len(read_journal(tmp_path / "journal" / "m" / "context.jsonl")) == 16


@pytest.mark.parametrize(
    "fault,kw",
    [
        ("429", {"retry_after": 0.05}),
        ("500", {}),
        ("503", {}),
        ("stall", {"stall_s": 3.0}),
        ("malformed", {}),
        ("empty", {}),
        ("disconnect", {}),
    ],
)
def test_retryable_faults_are_retried_and_counted(
    tmp_path: Path, server: FakeServer, split_file: Path, fault: str, kw: dict[str, Any]
) -> None:
    server.add_fault(fault, first_attempts=2, fraction=0.5, **kw)
    # the limit known (as a provider's rate-limit headers or this setting make it): this test is about
    # retries; pacing to a limit nothing states is tests/test_pacing.py's
    run = predict(tmp_path, model_settings(server, timeout_s=0.4, rate_limits=KNOWN_LIMIT), split_file)
    check_complete(tmp_path, split_file, server)
    faulted = {c.key for c in server.calls if c.fault == fault}
    assert 0 < len(faulted) < 16
    assert run.retries == 2 * len(faulted)
    usage = json.loads((tmp_path / "usage" / "m.json").read_text())
    assert usage["retries"] == 2 * len(faulted)
    assert usage["attempts"] == 16 + 2 * len(faulted)
    ok = server.ok_calls()
    assert usage["input_tokens"] == sum(c.input_tokens for c in ok)
    assert usage["output_tokens"] == sum(c.output_tokens for c in ok)
    if fault == "empty":  # empty answers were paid for: kept apart, in the cost
        assert usage["rejected_output_tokens"] == sum(c.output_tokens for c in server.calls if c.fault == "empty")
    log = json.loads((tmp_path / "runlog" / "m.json").read_text())
    assert sum(log["errors_by_kind"].values()) == 2 * len(faulted)
    if fault == "stall":  # the lean HTTP client's total timeout ends the attempt (the engine sets no timer of its own)
        assert log["errors_by_kind"] == {"timeout": 2 * len(faulted)}


def test_retry_after_is_honoured(tmp_path: Path, server: FakeServer, split_file: Path) -> None:
    server.add_fault("429", first_attempts=1, fraction=0.3, retry_after=0.4)
    predict(tmp_path, model_settings(server, rate_limits=KNOWN_LIMIT), split_file)
    by_key: dict[str, list] = {}
    for c in server.calls:
        by_key.setdefault(c.key, []).append(c)
    limited = [calls for calls in by_key.values() if calls[0].fault == "429"]
    assert limited
    for first, second in limited:
        assert second.start - first.end >= 0.39, "retried before Retry-After had passed"


def test_persistent_failure_is_not_an_answer_and_rerun_retries_only_it(
    tmp_path: Path, server: FakeServer, split_file: Path
) -> None:
    expected = expected_answers(split_file)
    bad_ids = ["context_001__base_target", "context_002__edited_source"]
    bad_keys = {expected[i][0] for i in bad_ids}
    server.add_fault("503", first_attempts=100, keys=bad_keys)
    settings = model_settings(server, max_attempts=3)
    with pytest.raises(InferenceIncomplete) as info:
        predict(tmp_path, settings, split_file)
    assert info.value.exit_code == 3
    for qid in bad_ids:
        assert qid in str(info.value)
    assert "gave up after 3 attempts" in str(info.value)
    assert not (tmp_path / "pred" / "m.jsonl").exists(), "no prediction file when questions failed"
    log = json.loads((tmp_path / "runlog" / "m.json").read_text())
    assert sorted(log["failed"]) == sorted(bad_ids)
    assert all("503" in reason for reason in log["failed"].values())
    assert sum(1 for c in server.calls if c.key in bad_keys) == 2 * 3
    journal = read_journal(tmp_path / "journal" / "m" / "context.jsonl")
    assert len(journal) == 14 and not bad_keys & set(journal)

    server.rules.clear()
    before = len(server.calls)
    run = predict(tmp_path, settings, split_file)
    assert run.cached == 14 and run.calls == 2
    assert {c.key for c in server.calls[before:]} == bad_keys
    check_complete(tmp_path, split_file, server)


def test_rerun_after_deleting_predictions_makes_no_call(tmp_path: Path, server: FakeServer, split_file: Path) -> None:
    settings = model_settings(server)
    predict(tmp_path, settings, split_file)
    usage_first = (tmp_path / "usage" / "m.json").read_bytes()
    (tmp_path / "pred" / "m.jsonl").unlink()
    n = len(server.calls)
    run = predict(tmp_path, {**settings, "concurrency": 7, "timeout_s": 9.0}, split_file)  # operational edits
    assert len(server.calls) == n and run.cached == 16 and run.calls == 0
    check_complete(tmp_path, split_file, server)
    assert (tmp_path / "usage" / "m.json").read_bytes() == usage_first, "usage summary must be deterministic"


def test_changed_generation_setting_makes_new_calls(tmp_path: Path, server: FakeServer, split_file: Path) -> None:
    predict(tmp_path, model_settings(server), split_file)
    n = len(server.calls)
    run = predict(tmp_path, model_settings(server, max_output_tokens=32), split_file)
    assert run.calls == 16 and len(server.calls) == n + 16


@pytest.mark.parametrize("fault", ["401", "404"])
def test_fatal_errors_stop_early_with_the_providers_message(
    tmp_path: Path, server: FakeServer, split_file: Path, fault: str
) -> None:
    server.add_fault(fault, first_attempts=100)
    with pytest.raises(BackendError) as info:
        predict(tmp_path, model_settings(server, concurrency=2), split_file)
    assert f"HTTP {fault}" in str(info.value) and "injected fault" in str(info.value)
    assert len(server.calls) <= 2, "a fatal error must stop the run, not be retried or repeated"
    assert not (tmp_path / "pred" / "m.jsonl").exists()


def test_wrong_key_is_a_fatal_401(tmp_path: Path, server: FakeServer, split_file: Path, monkeypatch) -> None:
    monkeypatch.setenv("SABRE_TEST_API_KEY", "sk-wrong")
    with pytest.raises(BackendError, match="HTTP 401.*invalid API key"):
        predict(tmp_path, model_settings(server, concurrency=1), split_file)
    assert len(server.calls) == 1


def test_bad_request_after_successes_fails_only_that_question(
    tmp_path: Path, server: FakeServer, split_file: Path
) -> None:
    expected = expected_answers(split_file)
    last = list(expected)[-1]
    server.add_fault("400", first_attempts=100, keys={expected[last][0]})
    with pytest.raises(InferenceIncomplete, match=last):
        predict(tmp_path, model_settings(server, concurrency=1), split_file)
    assert sum(1 for c in server.calls if c.fault == "400") == 1, "a 400 is not retried"
    assert len(read_journal(tmp_path / "journal" / "m" / "context.jsonl")) == 15


def test_bad_request_before_any_success_stops_the_run(tmp_path: Path, server: FakeServer, split_file: Path) -> None:
    server.add_fault("400", first_attempts=100)
    with pytest.raises(BackendError, match="bad_request"):
        predict(tmp_path, model_settings(server, concurrency=2), split_file)
    assert len(server.calls) <= 2


def test_missing_key_fails_before_any_call(tmp_path: Path, server: FakeServer, split_file: Path, monkeypatch) -> None:
    monkeypatch.delenv("SABRE_TEST_API_KEY")
    with pytest.raises(BackendError, match="SABRE_TEST_API_KEY"):
        predict(tmp_path, model_settings(server), split_file)
    assert server.calls == []
    assert not (tmp_path / "journal").exists()


def test_requests_per_minute_limit(tmp_path: Path, server: FakeServer, split_file: Path) -> None:
    # 600/min = 10/s after a burst of one second's worth (10): the last 6 of 16 go 0.1 s apart
    predict(tmp_path, model_settings(server, concurrency=16, rate_limits={"requests_per_minute": 600}), split_file)
    starts = sorted(c.start for c in server.calls)
    assert starts[-1] - starts[-6] >= 0.35  # 0.5 s nominal; unlimited it is a few ms
    check_complete(tmp_path, split_file, server)


def test_identical_requests_are_sent_once(tmp_path: Path, server: FakeServer) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.servers.dataset import rows_for

    rows = rows_for("attribute", 3)
    dup = dict(rows[0], id="attribute_dup")
    path = tmp_path / "attribute.parquet"
    pq.write_table(pa.Table.from_pylist([*rows, dup]), path)
    run = predict_split(
        "m", model_settings(server), "attribute", path, tmp_path / "p.jsonl", progress=False,
        usage_output=tmp_path / "u.json", run_log_output=tmp_path / "r.json", journal_dir=tmp_path / "j",
    )
    preds = read_predictions(tmp_path / "p.jsonl")
    assert len(server.calls) == 3 and run.answered == 4
    assert preds[0]["prediction"] == preds[3]["prediction"]
    assert json.loads((tmp_path / "u.json").read_text())["calls"] == 3


# -- the batch path (local backends) ---------------------------------------------------------


class CountingBatchBackend(Backend):
    """A stand-in local backend: answers in batches, fails the first batch once."""

    kind = "local"

    def __init__(self, name: str, settings: dict[str, Any]) -> None:
        super().__init__(name, settings)
        self.batches: list[list[str]] = []
        self.fail_first = bool(settings.get("fail_first"))

    def complete_batch(self, queries: Sequence[Query]) -> list[Completion]:
        self.batches.append([q.id for q in queries])
        if self.fail_first and len(self.batches) == 1:
            raise CallError("CUDA out of memory (simulated)", retryable=True, kind="server")
        return [Completion(text=f"answer {q.id}", input_tokens=10, output_tokens=2) for q in queries]


def _items(n: int) -> list[WorkItem]:
    return [
        WorkItem(Query(id=f"q{i}", split="s", text=f"t{i}", image=b"", image_mime="image/jpeg"), key=f"k{i}")
        for i in range(n)
    ]


def test_batch_backends_go_through_the_journal(tmp_path: Path) -> None:
    settings = EngineSettings(batch_size=4, backoff_base_s=0.001, retry_empty=False)
    backend = CountingBatchBackend("local", {"backend": "x", "fail_first": True})
    with Journal(tmp_path / "j.jsonl") as journal:
        result = Engine(backend, journal, settings, progress=False).run(_items(10))
    assert result.answers == {f"q{i}": f"answer q{i}" for i in range(10)}
    assert [len(b) for b in backend.batches] == [4, 4, 4, 2]
    assert result.stats.retries == 4
    backend2 = CountingBatchBackend("local", {"backend": "x"})
    with Journal(tmp_path / "j.jsonl") as journal:
        result2 = Engine(backend2, journal, settings, progress=False).run(_items(12))
    assert backend2.batches == [["q10", "q11"]] and result2.stats.cached == 10


# the rate limiter and pacing: tests/test_pacing.py


def test_high_concurrency_over_several_sdk_clients(tmp_path: Path, server: FakeServer) -> None:
    from tests.servers.dataset import write_split

    data = tmp_path / "context40.parquet"
    write_split(data, "context", 40)
    server.rate_limit = 1e5  # OpenAI's rate-limit headers (a limit far above): the window opens at the first answer
    # after the first answer the server holds every request until 20 are in flight at once: the check is
    # on what the client sends, not on how fast a loaded machine sends it (no timing)
    server.hold_for_in_flight = 20
    run = predict(tmp_path, model_settings(server, concurrency=20, timeout_s=60.0), data)  # three pools of <= 8 connections
    assert run.calls == 40 and server.max_in_flight == 20
    assert set(server.answers_per_key().values()) == {1} and len(server.answers_per_key()) == 40


def test_journal_only_rerun_needs_no_key(tmp_path: Path, server: FakeServer, split_file: Path, monkeypatch) -> None:
    settings = model_settings(server)
    predict(tmp_path, settings, split_file)
    n = len(server.calls)
    (tmp_path / "pred" / "m.jsonl").unlink()
    monkeypatch.delenv("SABRE_TEST_API_KEY")
    run = predict(tmp_path, settings, split_file)  # every answer is in the journal: no key needed
    assert run.cached == 16 and len(server.calls) == n
    check_complete(tmp_path, split_file, server)
    journal = tmp_path / "journal" / "m" / "context.jsonl"
    journal.write_text("".join(journal.read_text().splitlines(keepends=True)[:-1]))  # one answer short
    with pytest.raises(BackendError, match="SABRE_TEST_API_KEY"):
        predict(tmp_path, settings, split_file)
    assert len(server.calls) == n


def test_without_image_is_the_item_with_empty_image_bytes() -> None:
    """The copy equals dataclasses.replace's (every other field kept), leaves the original whole, and
    stays frozen."""
    import dataclasses

    from sabre_prior.inference.engine import without_image

    q = Query(id="q1", split="context", text="How many?", image=b"\xff\xd8\xffjpeg", image_mime="image/jpeg",
              row={"id": "q1"}, template="screening_v1", repeat=2)  # fmt: skip
    item = WorkItem(query=q, key="k" * 64, image={"bytes": 7}, est_tokens=12)
    out = without_image(item)
    assert out == dataclasses.replace(item, query=dataclasses.replace(q, image=b""))
    assert type(out) is WorkItem and type(out.query) is Query and item.query.image == b"\xff\xd8\xffjpeg"
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.query.image = b"x"  # type: ignore[misc]
    assert without_image(out) is out
