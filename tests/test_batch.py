"""Provider batch APIs (sabre_prior.inference.batch): the real SDKs against the fake batch servers.

Every test drives the official SDK (openai, anthropic, google-genai) over HTTP to
tests/servers/batches.py and checks what the provider saw: how many batches were
created, which requests each held, how many answers it gave per question.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from sabre_prior import registry
from sabre_prior.inference import batch as B
from sabre_prior.config import load_schema, validate_params
from sabre_prior.errors import ConfigError, InferenceIncomplete
from sabre_prior.inference.predict import estimate_split, format_estimates, predict_split
from sabre_prior.inference.journal import journal_path, read_journal
from tests.servers import FakeServer
from tests.servers.batches import FakeBatchServer
from tests.servers.dataset import write_mirror, write_split
from tests.servers.fixtures import expected_answers, read_predictions

KEY_ENV = "SABRE_BATCH_TEST_KEY"
KEY = "sk-batch-test-9a8b7c"
#: the backends with a provider batch adapter in the one registry
BACKENDS = tuple(spec.name for spec in registry.BACKENDS if spec.batch)
N = 8
PRICES = {"input_per_mtok": 2.0, "output_per_mtok": 8.0}


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("batchdata") / "context.parquet"
    write_split(path, "context", N)
    return path


def settings(url: str, backend: str = "openai", **batch: Any) -> dict[str, Any]:
    return {
        "backend": backend,
        "model_id": "fake-model-1",
        "api_key_env": KEY_ENV,
        "base_url": url,
        "timeout_s": 5.0,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.02,
        "prices": PRICES,
        "batch": {"poll_s": 0.01, **batch},
    }


def predict(tmp: Path, s: dict[str, Any], data: Path, model: str = "m"):
    return predict_split(
        model,
        s,
        "context",
        data,
        tmp / "pred.jsonl",
        progress=False,
        usage_output=tmp / "usage.json",
        run_log_output=tmp / "log.json",
        journal_dir=tmp / "journal",
    )


def check_predictions(tmp: Path, data: Path) -> None:
    expected = expected_answers(data)
    preds = {p["id"]: p["prediction"] for p in read_predictions(tmp / "pred.jsonl")}
    assert preds == {qid: answer for qid, (_, answer) in expected.items()}


def journal(tmp: Path, model: str = "m") -> dict[str, dict[str, Any]]:
    return read_journal(journal_path(model, "context", journal_dir=tmp / "journal"))


def ledger(tmp: Path, model: str = "m") -> B.Ledger:
    return B.Ledger(B.ledger_path(journal_path(model, "context", journal_dir=tmp / "journal")))


# ---------------------------------------------------------------------------
# all questions answered once, at the batch price
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_question_answered_once_through_one_batch(tmp_path: Path, data: Path, backend: str) -> None:
    with FakeBatchServer(expected_key=KEY, steps=3) as srv:
        run = predict(tmp_path, settings(srv.url(backend), backend), data)
    assert run.answered == N and run.calls == N
    assert len(srv.order) == 1 and len(srv.created()[0].requests) == N
    assert set(srv.answered.values()) == {1} and len(srv.answered) == N
    check_predictions(tmp_path, data)
    records = journal(tmp_path)
    assert {r["mode"] for r in records.values()} == {"batch"}
    assert {r["batch_id"].rsplit("/", 1)[-1] for r in records.values()} == {srv.order[0]}  # gemini: batches/<id>
    usage = json.loads((tmp_path / "usage.json").read_text())
    part = usage["batch"]
    assert part["calls"] == N and part["prices"] == {"input_per_mtok": 1.0, "output_per_mtok": 4.0}
    full = (usage["input_tokens"] * 2.0 + usage["output_tokens"] * 8.0) / 1e6
    assert usage["estimated_cost_usd"] == pytest.approx(full / 2, abs=1e-6)
    (event,) = [b for b in ledger(tmp_path).batches.values()]
    assert event.ended in ("completed", "ended", "JOB_STATE_SUCCEEDED")


# ---------------------------------------------------------------------------
# the same journal keys as the synchronous path: no mode pays twice
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_answers_are_reused_by_a_synchronous_run(tmp_path: Path, data: Path, backend: str) -> None:
    with FakeBatchServer(expected_key=KEY) as srv:
        predict(tmp_path, settings(srv.url(backend), backend), data)
    first = (tmp_path / "pred.jsonl").read_bytes()
    with FakeServer(expected_key=KEY) as sync:
        s = settings(sync.url(backend), backend)
        del s["batch"]
        run = predict(tmp_path, s, data)
        assert sync.calls == []  # zero calls: every answer from the batch journal
    assert run.cached == N and run.calls == 0
    assert (tmp_path / "pred.jsonl").read_bytes() == first


def test_synchronous_answers_are_reused_by_a_batch_run(tmp_path: Path, data: Path) -> None:
    with FakeServer(expected_key=KEY) as sync:
        s = settings(sync.url("openai"))
        del s["batch"]
        predict(tmp_path, s, data)
    with FakeBatchServer(expected_key=KEY) as srv:
        run = predict(tmp_path, settings(srv.url("openai")), data)
    assert srv.order == [] and srv.uploads == []  # nothing submitted
    assert run.cached == N
    check_predictions(tmp_path, data)


def test_batch_request_bodies_equal_the_synchronous_ones(tmp_path: Path, data: Path) -> None:
    """The body of each JSONL line is byte for byte what the synchronous path posts."""
    from sabre_prior.inference.engine import WorkItem
    from sabre_prior.inference.predict import build_queries
    from sabre_prior.inference.models.base import create_backend
    from sabre_prior.inference.models.batch_openai import OpenAIBatch

    backend = create_backend("m", settings("http://127.0.0.1:9/v1"))
    adapter = OpenAIBatch(backend)  # type: ignore[arg-type]
    for q in build_queries(data, "context", "screening_v1")[:2]:
        line = json.loads(adapter.request_line("k", WorkItem(query=q, key="k")))
        body = backend.request_body(q)  # type: ignore[attr-defined]
        assert json.dumps(line["body"], ensure_ascii=False, separators=(",", ":")).encode() == body
        assert line["url"] == "/v1/chat/completions" and line["custom_id"] == "k"
    adapter.close()


# ---------------------------------------------------------------------------
# errored items: retried, and nothing that is not an answer is stored
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_errored_items_are_retried_and_failures_never_stored(tmp_path: Path, data: Path, backend: str) -> None:
    expected = expected_answers(data)
    keys = [k for k, _ in expected.values()]
    qid_of = {k: qid for qid, (k, _) in expected.items()}
    with FakeBatchServer(expected_key=KEY) as srv:
        srv.faults = {keys[0]: ["500"], keys[1]: ["empty"], keys[2]: ["400"], keys[3]: ["refusal"], keys[4]: ["500", "500"]}
        with pytest.raises(InferenceIncomplete) as info:
            predict(tmp_path, settings(srv.url(backend), backend), data)
    # first batch: all 8; second: the three retryable ones; third: the twice-failed one
    assert [len(b.requests) for b in srv.created()] == [N, 3, 1]
    message = str(info.value)
    assert "1 of 8 questions failed" in message and qid_of[keys[2]] in message  # the 400 only
    records = {r["id"]: r for r in journal(tmp_path).values()}
    assert qid_of[keys[2]] not in records  # a failure is never stored
    refusal = records[qid_of[keys[3]]]  # a refusal is final, journaled as such, with no text
    assert refusal["outcome"] == "refusal" and refusal["text"] == "" and refusal["mode"] == "batch"
    answers = {k: r for k, r in records.items() if r["outcome"] == "answer"}
    assert len(answers) == N - 2 and all(r["text"] == expected[r["id"]][1] for r in answers.values())
    empty_retried = records[qid_of[keys[1]]]  # its rejected empty answer was billed: counted on the final record
    assert empty_retried["rejected_output_tokens"] > 0 and empty_retried["attempts"] == 2
    usage = json.loads((tmp_path / "usage.json").read_text())
    assert usage["failed_ids"] == [qid_of[keys[2]]] and list(usage["refused_ids"]) == [qid_of[keys[3]]]
    assert not (tmp_path / "pred.jsonl").exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_empty_answer_with_the_budget_spent_is_retried_once_then_kept(tmp_path: Path, data: Path, backend: str) -> None:
    expected = expected_answers(data)
    key, _ = expected["context_000__base_target"]
    with FakeBatchServer(expected_key=KEY) as srv:
        srv.faults = {key: ["budget", "budget", None]}
        run = predict(tmp_path, settings(srv.url(backend), backend), data)
    assert [len(b.requests) for b in srv.created()] == [N, 1]  # one retry (empty_budget_retries: 1)
    assert run.answered == N
    rec = next(r for r in journal(tmp_path).values() if r["id"] == "context_000__base_target")
    assert rec["outcome"] == "empty" and rec["text"] == "" and rec["rejected_output_tokens"] == 64
    preds = {p["id"]: p["prediction"] for p in read_predictions(tmp_path / "pred.jsonl")}
    assert preds["context_000__base_target"] == ""


def test_a_refusal_is_final_and_not_a_prediction(tmp_path: Path, data: Path) -> None:
    expected = expected_answers(data)
    refused_key, _ = expected["context_000__base_source"]
    with FakeBatchServer(expected_key=KEY) as srv:
        srv.faults = {refused_key: ["refusal"]}
        run = predict(tmp_path, settings(srv.url("anthropic"), "anthropic"), data)
        assert run.refused == ["context_000__base_source"] and len(srv.order) == 1  # never re-sent
        again = predict(tmp_path, settings(srv.url("anthropic"), "anthropic"), data)
        assert len(srv.order) == 1 and again.refused == run.refused
    preds = {p["id"] for p in read_predictions(tmp_path / "pred.jsonl")}
    assert preds == set(expected) - {"context_000__base_source"}


def test_retry_sync_sends_failed_items_synchronously(tmp_path: Path, data: Path) -> None:
    keys = [k for k, _ in expected_answers(data).values()]
    with FakeBatchServer(expected_key=KEY) as srv:
        srv.faults = {keys[0]: ["500"], keys[5]: ["expired"]}
        run = predict(tmp_path, settings(srv.url("openai"), retry="sync"), data)
    assert len(srv.order) == 1 and srv.sync_calls == 2
    assert run.answered == N
    check_predictions(tmp_path, data)
    modes = sorted(r.get("mode", "sync") for r in journal(tmp_path).values())
    assert modes == ["batch"] * (N - 2) + ["sync"] * 2


def test_an_expired_batch_gives_its_answers_and_resubmits_the_rest(tmp_path: Path, data: Path) -> None:
    with FakeBatchServer(expected_key=KEY) as srv:
        srv.expire_batches = 1
        run = predict(tmp_path, settings(srv.url("openai")), data)
    assert [len(b.requests) for b in srv.created()] == [N, N // 2]
    assert run.answered == N and set(srv.answered.values()) == {1}
    assert [b.ended for b in ledger(tmp_path).batches.values()] == ["expired", "completed"]
    check_predictions(tmp_path, data)


def test_a_batch_failing_validation_fails_its_questions_with_the_reason(tmp_path: Path, data: Path) -> None:
    with FakeBatchServer(expected_key=KEY) as srv:
        srv.invalid = True
        with pytest.raises(InferenceIncomplete, match="injected validation error"):
            predict(tmp_path, settings(srv.url("openai")), data)
    assert len(srv.order) == 1  # not resubmitted: the same input would fail again
    assert journal(tmp_path) == {}
    assert [b.ended for b in ledger(tmp_path).batches.values()] == ["failed"]


def test_a_failed_gemini_job_shows_the_providers_message(tmp_path: Path, data: Path) -> None:
    with FakeBatchServer(expected_key=KEY) as srv:
        srv.gemini_failure = "injected: the request's model does not support batch mode"
        with pytest.raises(InferenceIncomplete, match="JOB_STATE_FAILED: injected: the request's model does not support batch mode"):
            predict(tmp_path, settings(srv.url("gemini"), "gemini", max_attempts=1), data)
    assert journal(tmp_path) == {}


def test_a_refused_batch_creation_is_retried_then_given_up(tmp_path: Path, data: Path) -> None:
    with FakeBatchServer(expected_key=KEY) as srv:
        srv.create_failures = 1
        run = predict(tmp_path / "a", settings(srv.url("openai")), data)
        assert run.answered == N and len(srv.order) == 1 and len(srv.uploads) == 2
        srv.create_failures = 100
        with pytest.raises(InferenceIncomplete, match="gave up after 2 batch attempts"):
            predict(tmp_path / "b", settings(srv.url("openai"), max_attempts=2), data)
        assert len(srv.order) == 1 and srv.create_failures == 98


# ---------------------------------------------------------------------------
# sharding by byte size
# ---------------------------------------------------------------------------
def test_shard_is_greedy_and_exact() -> None:
    lines = [(f"k{i}", b"x" * n) for i, n in enumerate([40, 30, 30, 50, 100, 10, 10])]
    shards, too_large = B.shard(lines, max_requests=3, max_bytes=100, overhead=0)
    assert [[k for k, _ in s] for s in shards] == [["k0", "k1", "k2"], ["k3"], ["k4"], ["k5", "k6"]]
    assert too_large == []
    shards, too_large = B.shard(lines, max_requests=10, max_bytes=99, overhead=0)
    assert too_large == ["k4"]
    assert all(sum(len(x) for _, x in s) <= 99 for s in shards)


@pytest.mark.parametrize("backend", ("openai", "anthropic"))
def test_sharding_by_byte_size_is_exact_on_the_wire(tmp_path: Path, data: Path, backend: str) -> None:
    """Each batch is as full as the byte limit allows, and its size on the wire is the counted size."""
    with FakeBatchServer(expected_key=KEY) as probe:  # one request's size, to set a limit of ~2.5 requests
        predict(tmp_path / "probe", settings(probe.url(backend), backend), data)
    events = [json.loads(x) for x in B.ledger_path(journal_path("m", "context", journal_dir=tmp_path / "probe" / "journal")).read_text().splitlines()]
    per_request = events[0]["bytes"] / N
    limit = int(per_request * 2.5)
    with FakeBatchServer(expected_key=KEY) as srv:
        run = predict(tmp_path / "run", settings(srv.url(backend), backend, max_bytes=limit), data)
    assert run.answered == N
    submitted = [json.loads(x) for x in B.ledger_path(journal_path("m", "context", journal_dir=tmp_path / "run" / "journal")).read_text().splitlines()]
    shards = [e for e in submitted if e["event"] == "submitting"]
    sizes = [e["bytes"] for e in shards]
    wire = srv.uploads if backend == "openai" else [n - len('{"requests":[]}') + len(e["keys"]) - 1 for n, e in zip(srv.create_bodies, shards)]
    assert wire == sizes  # the bytes counted are the bytes sent
    overhead = 0 if backend == "openai" else len('{"requests":[]}')
    assert all(s + overhead <= limit for s in sizes)
    assert sum(len(e["keys"]) for e in shards) == N and len(shards) >= N // 2
    # greedy: with room for 2.5 requests every batch holds exactly two (a third would not fit)
    assert [len(e["keys"]) for e in shards] == [2] * (N // 2)
    assert len(srv.created()) == len(shards)


def test_a_request_over_the_limit_fails_with_a_clear_reason(tmp_path: Path, data: Path) -> None:
    with FakeBatchServer(expected_key=KEY) as srv:
        with pytest.raises(InferenceIncomplete, match="over the openai batch limit of 2048 bytes"):
            predict(tmp_path, settings(srv.url("openai"), max_bytes=2048), data)
    assert srv.order == []


def test_the_per_request_limit_is_respected(tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sabre_prior.inference.models.batch_anthropic import AnthropicBatch

    monkeypatch.setattr(AnthropicBatch, "max_request_bytes", 2048)  # stands in for the documented 32 MB
    with FakeBatchServer(expected_key=KEY) as srv:
        with pytest.raises(InferenceIncomplete, match="over the anthropic batch limit of 2048 bytes"):
            predict(tmp_path, settings(srv.url("anthropic"), "anthropic"), data)
    assert srv.order == []


# ---------------------------------------------------------------------------
# kill-safe and resumable
# ---------------------------------------------------------------------------
def _write_params(project: Path, url: str, **batch: Any) -> Path:
    params = {
        "dataset": {"source": "demo"},
        "splits": ["context"],
        "models": {"fake": {**settings(url), "batch": {"poll_s": 0.05, **batch}}},
    }
    path = project / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


def _cli(project: Path, data: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "sabre_prior.cli", *args, "--params", str(project / "params.yaml")] if args and args[0] == "batches" else [
        sys.executable, "-m", "sabre_prior.cli", "predict", "--model", "fake", "--split", "context", "--data", str(data),
        "--output", str(project / "pred.jsonl"), "--usage", str(project / "usage.json"), "--no-progress",
        "--params", str(project / "params.yaml"),
    ]  # fmt: skip


def _env() -> dict[str, str]:
    return {**os.environ, KEY_ENV: KEY}


@pytest.mark.slow
def test_sigkill_while_waiting_then_the_same_command_reattaches(tmp_path: Path, data: Path) -> None:
    with FakeBatchServer(expected_key=KEY) as srv:
        srv.hold = True  # the batch stays in progress until released
        _write_params(tmp_path, srv.url("openai"))
        proc = subprocess.Popen(_cli(tmp_path, data), cwd=tmp_path, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        ledger_file = B.ledger_path(journal_path("fake", "context", root=tmp_path))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and b'"submitted"' not in (ledger_file.read_bytes() if ledger_file.exists() else b""):
            time.sleep(0.05)
        polls_before = srv.created()[0].polls
        while srv.created()[0].polls < polls_before + 2 and time.monotonic() < deadline:  # it is waiting
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert len(srv.order) == 1 and srv.uploads and len(srv.uploads) == 1
        first = srv.order[0]
        srv.hold = False
        done = subprocess.run(_cli(tmp_path, data), cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert srv.order == [first] and len(srv.uploads) == 1  # zero new submissions
        assert set(srv.answered.values()) == {1} and len(srv.answered) == N
    preds = {p["id"]: p["prediction"] for p in read_predictions(tmp_path / "pred.jsonl")}
    assert preds == {qid: a for qid, (_, a) in expected_answers(data).items()}


@pytest.mark.slow
def test_wait_false_submits_exits_4_and_the_next_run_collects(tmp_path: Path, data: Path) -> None:
    with FakeBatchServer(expected_key=KEY) as srv:
        srv.hold = True
        _write_params(tmp_path, srv.url("openai"), wait=False)
        first = subprocess.run(_cli(tmp_path, data), cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
        assert first.returncode == B.PENDING_EXIT_CODE, first.stderr
        assert "batches pending; run again to collect" in first.stderr
        assert not (tmp_path / "pred.jsonl").exists()
        listed = subprocess.run(_cli(tmp_path, data, "batches", "--model", "fake"), cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0, listed.stderr
        assert srv.order[0] in listed.stdout and "in_progress" in listed.stdout
        again = subprocess.run(_cli(tmp_path, data), cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
        assert again.returncode == B.PENDING_EXIT_CODE and len(srv.order) == 1  # still running: nothing resubmitted
        srv.hold = False
        done = subprocess.run(_cli(tmp_path, data), cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert len(srv.order) == 1 and set(srv.answered.values()) == {1}
        listed = subprocess.run(_cli(tmp_path, data, "batches", "--model", "fake"), cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60)
        assert "no pending batches" in listed.stdout


@pytest.mark.slow
def test_sabre_batches_cancel_then_collect(tmp_path: Path, data: Path) -> None:
    with FakeBatchServer(expected_key=KEY) as srv:
        srv.hold = True
        _write_params(tmp_path, srv.url("openai"), wait=False)
        subprocess.run(_cli(tmp_path, data), cwd=tmp_path, env=_env(), capture_output=True, timeout=120)
        out = subprocess.run(_cli(tmp_path, data, "batches", "--model", "fake", "--cancel"), cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert srv.cancels == srv.order and "cancel requested" in out.stdout
        srv.hold = False
        # the cancelled batch is collected (its requests never ran): they fail, nothing is re-sent
        again = subprocess.run(_cli(tmp_path, data), cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
        assert again.returncode == 3 and "sabre batches --cancel" in again.stderr
        assert len(srv.order) == 1
    ended = [b.ended for b in B.Ledger(B.ledger_path(journal_path("fake", "context", root=tmp_path))).batches.values()]
    assert ended == ["cancelled"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_list_and_cancel_pending_batches(tmp_path: Path, data: Path, backend: str) -> None:
    with FakeBatchServer(expected_key=KEY) as srv:
        srv.hold = True
        s = settings(srv.url(backend), backend, wait=False)
        with pytest.raises(B.BatchesPending, match="batches pending; run again to collect"):
            predict(tmp_path, s, data)
        rows = B.list_batches("m", s, ["context"], journal_dir=tmp_path / "journal")
        assert [r["batch_id"].rsplit("/", 1)[-1] for r in rows] == srv.order
        assert rows[0]["requests"] == N and rows[0]["status"] in ("in_progress", "JOB_STATE_RUNNING")
        assert "1 pending batches" in B.format_batches("m", rows)
        rows = B.list_batches("m", s, ["context"], journal_dir=tmp_path / "journal", cancel=True)
        assert srv.cancels == srv.order and rows[0]["status"].endswith("cancel requested")
        srv.hold = False
        with pytest.raises(InferenceIncomplete, match="was cancelled"):  # collected; the cancelled ones stop
            predict(tmp_path, s, data)
        assert len(srv.order) == 1
        assert [b.ended for b in ledger(tmp_path).batches.values()] == [{"openai": "cancelled", "anthropic": "ended", "gemini": "JOB_STATE_CANCELLED"}[backend]]
        assert journal(tmp_path) == {}  # a cancelled request is never an answer
        with pytest.raises(B.BatchesPending):  # run again: submitted anew
            predict(tmp_path, s, data)
        assert len(srv.order) == 2 and len(srv.created()[1].requests) == N
        assert len(B.list_batches("m", s, ["context"], journal_dir=tmp_path / "journal", query=False)) == 1


def test_a_batch_created_but_not_journaled_is_found_not_resubmitted(tmp_path: Path, data: Path) -> None:
    """A kill between the provider's "created" and the ledger line: found by its shard id."""
    with FakeBatchServer(expected_key=KEY) as srv:
        s = settings(srv.url("openai"))
        eng_cls = B.BatchEngine
        original = eng_cls._submit

        def crash_after_create(self: B.BatchEngine, keys: Any) -> None:
            real_append = self.ledger.append

            def append(event: Any) -> None:
                if event["event"] == "submitted":
                    raise KeyboardInterrupt  # killed before the line is written
                real_append(event)

            self.ledger.append = append  # type: ignore[method-assign]
            original(self, keys)

        eng_cls._submit = crash_after_create  # type: ignore[method-assign]
        try:
            with pytest.raises(KeyboardInterrupt):
                predict(tmp_path, s, data)
        finally:
            eng_cls._submit = original  # type: ignore[method-assign]
        assert len(srv.order) == 1
        run = predict(tmp_path, s, data)
        assert len(srv.order) == 1 and run.answered == N


# ---------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------
def _params(**model: Any) -> dict[str, Any]:
    return {"dataset": {"source": "demo"}, "splits": ["context"], "models": {"x": model}}


def test_batch_is_refused_where_no_batch_api_is_documented() -> None:
    grok = {"backend": "openai", "provider": "xai", "model_id": "grok", "api_key_env": "XAI_API_KEY", "batch": True}
    with pytest.raises(ConfigError, match=r"models.x.batch: provider 'xai' does not document"):
        validate_params(_params(**grok))
    validate_params(_params(**{**grok, "batch": False}))
    validate_params(_params(**{**grok, "provider": "moonshot"}))
    with pytest.raises(ConfigError, match="backend 'baseline' has no provider batch API"):
        validate_params(_params(backend="baseline", strategy="random", batch=True))
    with pytest.raises(ConfigError, match="unknown settings pol_s"):
        validate_params(_params(**{**grok, "provider": "openai", "batch": {"pol_s": 5}}))


def test_schema_lists_the_same_batch_providers_as_the_code() -> None:
    rules = load_schema()["$defs"]["model"]["allOf"]
    enums = [r["then"]["properties"]["provider"]["enum"] for r in rules if "provider" in r.get("then", {}).get("properties", {})]
    assert enums == [sorted(B.OPENAI_COMPATIBLE_BATCH)]


def test_estimate_shows_both_prices(tmp_path: Path, data: Path) -> None:
    s = settings("http://127.0.0.1:9/v1")
    est = estimate_split("m", s, "context", data, journal_dir=tmp_path)
    assert est.batch_cost_expected == pytest.approx(est.cost_expected / 2, abs=1e-6)  # type: ignore[operator]
    text = format_estimates([est])
    assert "batch USD (exp/max)" in text and "runs in batch mode" in text
    assert f"{est.batch_cost_expected:.4f}/{est.batch_cost_max:.4f} b" in text


# ---------------------------------------------------------------------------
# Snakemake: a pending batch fails the job; the next run collects, never re-submits
# ---------------------------------------------------------------------------
@pytest.mark.slow
def test_snakemake_collects_on_the_next_run_without_resubmitting(tmp_path: Path) -> None:
    from tests.project import BIN, copy_project, env

    project = copy_project(tmp_path / "project")
    data = write_mirror(project, {"context": N})["context"]  # the pipeline's fetch reads these questions
    target = "results/predictions/fake/context.jsonl"
    with FakeBatchServer(expected_key=KEY) as srv:
        srv.hold = True
        params = yaml.safe_load((project / "params.yaml").read_text())
        params["splits"] = ["context"]
        params["models"] = {"fake": {**settings(srv.url("openai")), "batch": {"poll_s": 0.05, "wait": False}}}
        (project / "params.yaml").write_text(yaml.safe_dump(params))
        run_env = {**env(), KEY_ENV: KEY}
        cmd = [str(BIN / "snakemake"), "--cores", "1", target]
        log = project / "results/logs/predict/fake/context.log"
        for _ in range(2):  # submitted, then still running: the job fails, nothing downstream runs
            first = subprocess.run(cmd, cwd=project, env=run_env, capture_output=True, text=True, timeout=300)
            assert first.returncode != 0
            assert "batches pending; run again to collect" in log.read_text()
            assert not (project / target).exists() and len(srv.order) == 1
        srv.hold = False
        done = subprocess.run(cmd, cwd=project, env=run_env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(srv.order) == 1 and len(srv.uploads) == 1  # one batch in all three runs
        assert set(srv.answered.values()) == {1} and len(srv.answered) == N
        again = subprocess.run(cmd, cwd=project, env=run_env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0 and len(srv.order) == 1
    preds = {p["id"]: p["prediction"] for p in read_predictions(project / target)}
    assert preds == {qid: a for qid, (_, a) in expected_answers(data).items()}


# ---------------------------------------------------------------------------
# the commands and the example of docs/api_models.md, "Batch mode"
# ---------------------------------------------------------------------------
def _batch_docs() -> str:
    text = (Path(__file__).resolve().parents[1] / "docs" / "api_models.md").read_text()
    return text[text.index("## Batch mode") : text.index("## Tests and benchmark")]


def test_docs_batch_example_is_a_valid_model_entry() -> None:
    block = _batch_docs().split("```yaml\n", 1)[1].split("```", 1)[0]
    models = yaml.safe_load(block)["models"]
    validate_params({"dataset": {"source": "demo"}, "splits": ["context"], "models": models})
    assert B.BatchSettings.from_settings(models["gpt-5.4"], "gpt-5.4").enabled


@pytest.mark.slow
def test_docs_batch_commands_run(tmp_path: Path, data: Path) -> None:
    commands = [line for line in _batch_docs().split("```bash\n", 1)[1].split("```", 1)[0].splitlines() if line.strip()]
    assert commands == ["sabre batches --model gpt-5.4", "sabre batches --model gpt-5.4 --cancel"]
    with FakeBatchServer(expected_key=KEY) as srv:
        srv.hold = True
        model = {**settings(srv.url("openai")), "batch": {"poll_s": 0.01, "wait": False}}
        params = {"dataset": {"source": "demo"}, "splits": ["context"], "models": {"gpt-5.4": model}}
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
        with pytest.raises(B.BatchesPending):
            predict_split(
                "gpt-5.4", model, "context", data, tmp_path / "p.jsonl", progress=False, usage_output=tmp_path / "u.json",
                run_log_output=tmp_path / "l.json", journal_dir=tmp_path / ".sabre" / "journal",
            )  # fmt: skip
        from tests.project import BIN

        for command in commands:
            exe, *args = command.split()
            out = subprocess.run([str(BIN / exe), *args], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            assert srv.order[0] in out.stdout
        assert srv.cancels == srv.order
