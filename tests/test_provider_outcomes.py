"""Documented provider non-answers through the real SDKs and the engine (fake servers on 127.0.0.1).

Refusals (each protocol's signal, partial text included), blocked prompts and
moderation 400s first in the queue, token-budget empties, quota errors, 529,
rate-limit reset headers and reasoning-token usage: what reaches the
prediction file, what is reported, what is sent again, how long the engine
waits, and whether usage adds up to what the server billed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sabre_prior.errors import BackendError, InferenceIncomplete
from sabre_prior.inference.predict import SplitRun, predict_split
from tests.servers import FakeServer
from tests.servers.fixtures import (  # noqa: F401  (fixtures)
    BACKENDS as API_BACKENDS,
    api_key,
    expected_answers,
    model_settings,
    read_predictions,
    server,
    split_file,
)
from tests.servers.protocols import PARTIAL

BACKENDS = API_BACKENDS


def predict(tmp: Path, settings: dict[str, Any], data: Path, **kw: Any) -> SplitRun:
    return predict_split(
        "m",
        settings,
        "context",
        data,
        tmp / "pred.jsonl",
        progress=False,
        usage_output=tmp / "usage.json",
        run_log_output=tmp / "runlog.json",
        journal_dir=tmp / "journal",
        **kw,
    )


def usage(tmp: Path) -> dict[str, Any]:
    return json.loads((tmp / "usage.json").read_text())


def billed(server: FakeServer) -> tuple[int, int]:
    return sum(c.input_tokens for c in server.calls), sum(c.output_tokens for c in server.calls)


def first_keys(data: Path, n: int = 1) -> tuple[list[str], set[str]]:
    expected = expected_answers(data)
    ids = list(expected)[:n]
    return ids, {expected[i][0] for i in ids}


@pytest.mark.parametrize(
    "backend,fault,variant",
    [
        ("openai", "refusal", ""),  # finish_reason content_filter with partial text
        ("openai", "refusal", "refusal_field"),  # message.refusal
        ("openai", "moderation", ""),  # DashScope data_inspection_failed 400, first in the queue
        ("openai", "moderation", "moonshot"),  # Moonshot content_filter 400
        ("anthropic", "refusal", ""),  # stop_reason refusal with partial text
        ("anthropic", "moderation", ""),
        ("gemini", "refusal", ""),  # finishReason SAFETY with partial text
        ("gemini", "blocked", ""),  # promptFeedback.blockReason, first in the queue
    ],
)
def test_refusals_are_final_reported_and_not_resent(
    tmp_path: Path, server: FakeServer, split_file: Path, backend: str, fault: str, variant: str
) -> None:
    ids, keys = first_keys(split_file, 3)  # the first question of the queue among them
    server.add_fault(fault, first_attempts=100, keys=keys, variant=variant)
    settings = model_settings(server, backend, concurrency=1)
    run = predict(tmp_path, settings, split_file)
    assert sorted(run.refused) == sorted(ids)
    preds = read_predictions(tmp_path / "pred.jsonl")
    expected = expected_answers(split_file)
    assert [p["id"] for p in preds] == [i for i in expected if i not in ids], "every other question answered"
    assert all(p["prediction"] == expected[p["id"]][1] for p in preds)
    assert PARTIAL not in (tmp_path / "pred.jsonl").read_text(), "refusal text reached the prediction file"
    u = usage(tmp_path)
    assert u["refused"] == 3 and sorted(u["refused_ids"]) == sorted(ids) and u["failed"] == 0
    assert (u["billed_input_tokens"], u["billed_output_tokens"]) == billed(server)
    assert sum(1 for c in server.calls if c.key in keys) == 3, "a refusal is not retried"

    n = len(server.calls)
    run = predict(tmp_path, settings, split_file)  # a re-run: nothing is sent again
    assert len(server.calls) == n and sorted(run.refused) == sorted(ids)
    server.rules.clear()
    run = predict(tmp_path, settings, split_file, retry_refusals=True)  # asked for: only the refused are sent
    assert {c.key for c in server.calls[n:]} == keys and run.refused == []
    assert len(read_predictions(tmp_path / "pred.jsonl")) == 16


@pytest.mark.parametrize("backend", BACKENDS)
def test_reset_headers_set_the_wait(tmp_path: Path, server: FakeServer, split_file: Path, backend: str) -> None:
    """429 with only x-ratelimit-reset-* (OpenAI), anthropic-ratelimit-*-reset (RFC 3339) or RetryInfo (Gemini)."""
    _, keys = first_keys(split_file, 2)
    server.add_fault("429_reset", first_attempts=1, keys=keys, retry_after=0.6)
    predict(tmp_path, model_settings(server, backend, backoff_base_s=0.01), split_file)
    for key in keys:
        first, second = [c for c in server.calls if c.key == key][:2]
        assert first.status == 429 and second.ok
        # server clock; an RFC 3339 time has millisecond resolution
        assert second.start - first.end >= 0.5, f"retried after {second.start - first.end:.3f} s, not the 0.6 s given"


@pytest.mark.parametrize("backend", BACKENDS)
def test_quota_stops_the_run_within_concurrency_plus_one(
    tmp_path: Path, server: FakeServer, split_file: Path, backend: str
) -> None:
    server.add_fault("quota", first_attempts=100)
    with pytest.raises(BackendError) as info:
        predict(tmp_path, model_settings(server, backend, concurrency=3), split_file)
    assert len(server.calls) <= 3 + 1, f"{len(server.calls)} calls after a quota error"
    assert "account" in str(info.value) or "auth" in str(info.value)
    message = {"openai": "exceeded your current quota", "anthropic": "credit balance", "gemini": "permission"}[backend]
    assert message in str(info.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_budget_spent_empty_is_retried_once_then_kept(
    tmp_path: Path, server: FakeServer, split_file: Path, backend: str
) -> None:
    ids, keys = first_keys(split_file, 2)
    server.add_fault("empty_length", first_attempts=100, keys=keys)
    run = predict(tmp_path, model_settings(server, backend), split_file)
    assert run.failed == [] and run.refused == []
    assert all(sum(1 for c in server.calls if c.key == k) == 2 for k in keys), "retried exactly once"
    preds = {p["id"]: p["prediction"] for p in read_predictions(tmp_path / "pred.jsonl")}
    assert all(preds[i] == "" for i in ids) and len(preds) == 16
    u = usage(tmp_path)
    assert sorted(u["empty_budget_spent_ids"]) == sorted(ids)
    assert (u["billed_input_tokens"], u["billed_output_tokens"]) == billed(server)


def test_empty_with_normal_stop_is_retried_twice_then_fails(tmp_path: Path, server: FakeServer, split_file: Path) -> None:
    ids, keys = first_keys(split_file, 1)
    server.add_fault("empty", first_attempts=100, keys=keys)
    with pytest.raises(InferenceIncomplete, match=ids[0]):
        predict(tmp_path, model_settings(server), split_file)
    assert sum(1 for c in server.calls if c.key in keys) == 3
    u = usage(tmp_path)  # written although the job failed, every billed attempt in it
    assert (u["billed_input_tokens"], u["billed_output_tokens"]) == billed(server)
    server.rules.clear()
    predict(tmp_path, model_settings(server), split_file)  # the re-run answers it; the earlier spend still counts
    assert (usage(tmp_path)["billed_input_tokens"], usage(tmp_path)["billed_output_tokens"]) == billed(server)


def test_empty_limits_are_settings(tmp_path: Path, server: FakeServer, split_file: Path) -> None:
    _, keys = first_keys(split_file, 1)
    server.add_fault("empty_length", first_attempts=100, keys=keys)
    predict(tmp_path, model_settings(server, empty_budget_retries=0), split_file)
    assert sum(1 for c in server.calls if c.key in keys) == 1


def test_reasoning_tokens_reported_apart_are_billed_as_output(
    tmp_path: Path, server: FakeServer, split_file: Path
) -> None:
    server.reasoning_tokens, server.reasoning_apart = 180, True  # as xAI reports them
    predict(tmp_path, model_settings(server, provider="xai"), split_file)
    u = usage(tmp_path)
    assert u["output_tokens"] == billed(server)[1] and u["output_tokens"] >= 16 * 181


def test_anthropic_529_is_retried(tmp_path: Path, server: FakeServer, split_file: Path) -> None:
    _, keys = first_keys(split_file, 2)
    server.add_fault("overloaded", first_attempts=1, keys=keys)
    run = predict(tmp_path, model_settings(server, "anthropic"), split_file)
    assert run.retries == 2 and len(read_predictions(tmp_path / "pred.jsonl")) == 16
    assert json.loads((tmp_path / "runlog.json").read_text())["errors_by_kind"] == {"overloaded": 2}
