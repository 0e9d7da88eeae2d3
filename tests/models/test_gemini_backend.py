"""The Gemini backend through the real ``google-genai`` SDK against the fake server: what only this
provider sends on the wire (the behaviour every API backend shares is in test_api_backends.py)."""

from __future__ import annotations


import pytest

from sabre_prior.errors import ConfigError
from sabre_prior.inference.models.base import create_backend
from tests.servers import FakeServer
from tests.servers.fixtures import KEY, api_key, model_settings, one_call, server  # noqa: F401

BACKEND = "gemini"


def camel(d: dict) -> dict:
    """The API accepts proto JSON field names in either case; compare them in camelCase."""
    return {k.split("_")[0] + "".join(w.title() for w in k.split("_")[1:]): v for k, v in d.items()}


def test_wire_request(server: FakeServer) -> None:
    server.keep_bodies = True
    one_call(server, BACKEND, thinking_budget=0)
    call = server.calls[0]
    body = call.body
    assert call.api_key == KEY
    assert call.path.endswith("/models/fake-model-1:generateContent")
    config = body["generationConfig"]
    assert config["temperature"] == 0 and config["maxOutputTokens"] == 64 and config["candidateCount"] == 1
    assert camel(config["thinkingConfig"]) == {"thinkingBudget": 0}
    parts = body["contents"][0]["parts"]
    assert "inlineData" in parts[0] and "text" in parts[1], "image first, then the prompt"
    assert camel(parts[0]["inlineData"])["mimeType"] == "image/jpeg"


def test_reasoning_effort_is_the_thinking_level(server: FakeServer) -> None:
    server.keep_bodies = True
    one_call(server, BACKEND, reasoning_effort="low")
    assert camel(server.calls[0].body["generationConfig"]["thinkingConfig"]) == {"thinkingLevel": "LOW"}
    with pytest.raises(ConfigError, match="reasoning_effort"):
        create_backend("m", model_settings(server, BACKEND, reasoning_effort="extreme"))
