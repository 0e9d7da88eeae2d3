"""The OpenAI backend through the real ``openai`` SDK against the fake server: what only this
provider sends on the wire (the behaviour every API backend shares is in test_api_backends.py)."""

from __future__ import annotations

from tests.servers import FakeServer
from tests.servers.fixtures import KEY, api_key, one_call, server  # noqa: F401  (fixtures)

BACKEND = "openai"


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
