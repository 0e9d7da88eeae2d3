"""The Anthropic backend through the real ``anthropic`` SDK against the fake server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.models import _contract as contract
from tests.servers import FakeServer
from tests.servers.fixtures import FAULT_KINDS, KEY, api_key, one_call, server  # noqa: F401  (fixtures)

BACKEND = "anthropic"


def test_answer_and_usage(server: FakeServer) -> None:
    contract.check_answer_and_usage(server, BACKEND)


@pytest.mark.parametrize("fault", sorted(FAULT_KINDS))
def test_fault_mapping(server: FakeServer, fault: str) -> None:
    contract.check_fault(server, BACKEND, fault)


def test_empty_answer(server: FakeServer) -> None:
    contract.check_empty_answer_is_returned_as_empty(server, BACKEND)


def test_end_to_end(tmp_path: Path, server: FakeServer) -> None:
    contract.check_end_to_end(tmp_path, server, BACKEND)


def test_missing_key(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    contract.check_missing_key(server, BACKEND, monkeypatch)


def test_unknown_setting(server: FakeServer) -> None:
    contract.check_unknown_setting(server, BACKEND)


def test_wire_request(server: FakeServer) -> None:
    server.keep_bodies = True
    one_call(server, BACKEND, thinking_budget=0)
    call = server.calls[0]
    body = call.body
    assert call.api_key == KEY
    assert body["model"] == "fake-model-1" and body["max_tokens"] == 64
    assert body["thinking"] == {"type": "disabled"}
    assert "temperature" not in body, "the installed Messages API takes no temperature unless one is set"
    content = body["messages"][0]["content"]
    assert [p["type"] for p in content] == ["image", "text"], "image first, then the prompt"
    assert content[0]["source"]["media_type"] == "image/jpeg"


def test_explicit_temperature_and_thinking_budget(server: FakeServer) -> None:
    server.keep_bodies = True
    one_call(server, BACKEND, temperature=0, thinking_budget=2048, max_output_tokens=4096, reasoning_effort="low")
    body = server.calls[0].body
    assert body["temperature"] == 0
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["output_config"] == {"effort": "low"}
