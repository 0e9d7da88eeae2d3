"""The OpenAI backend through the real ``openai`` SDK against the fake server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.models import _contract as contract
from tests.servers import FakeServer
from tests.servers.fixtures import FAULT_KINDS, KEY, api_key, one_call, server  # noqa: F401  (fixtures)

BACKEND = "openai"


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
    one_call(server, BACKEND, reasoning_effort="minimal", extra_body={"seed": 1})
    body = server.calls[0].body
    assert body["model"] == "fake-model-1" and body["n"] == 1
    assert body["temperature"] == 0 and body["max_completion_tokens"] == 64 and "max_tokens" not in body
    assert body["reasoning_effort"] == "minimal" and body["seed"] == 1
    content = body["messages"][0]["content"]
    assert [p["type"] for p in content] == ["image_url", "text"], "image first, then the prompt"
    assert content[0]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert server.calls[0].api_key == KEY


def test_compatible_servers_can_use_max_tokens(server: FakeServer) -> None:
    server.keep_bodies = True
    one_call(server, BACKEND, max_tokens_field="max_tokens", temperature=None, max_output_tokens=16)
    body = server.calls[0].body
    assert body["max_tokens"] == 16 and "max_completion_tokens" not in body and "temperature" not in body
