"""The Anthropic backend through the real ``anthropic`` SDK against the fake server: what only this
provider sends on the wire (the behaviour every API backend shares is in test_api_backends.py)."""

from __future__ import annotations

from tests.servers import FakeServer
from tests.servers.fixtures import KEY, api_key, one_call, server  # noqa: F401  (fixtures)

BACKEND = "anthropic"


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
