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


def test_lean_http_and_sdk_send_the_same_request(server: FakeServer) -> None:
    """The lean HTTP path and the SDK's messages.create send the same JSON body and headers."""
    import asyncio

    from sabre_prior.inference.models.base import Query, create_backend
    from tests.servers.dataset import jpeg

    from tests.servers.fixtures import model_settings

    server.keep_bodies = True
    query = Query(id="q", split="s", text='Question: "quoted" ünï\n\nAnswer with only yes or no.', image=jpeg(5),
                  image_mime="image/jpeg")
    answers = []
    for lean in (True, False):
        backend = create_backend("m", model_settings(server, "anthropic", thinking_budget=0, temperature=0.5,
                                                      extra_body={"top_k": 3}))
        backend.via_sdk = not lean

        async def go(b):
            try:
                return await b.acomplete(query)
            finally:
                await b.aclose()

        answers.append(asyncio.run(go(backend)).text)
    lean_call, sdk_call = server.calls
    assert lean_call.body == sdk_call.body and lean_call.key == sdk_call.key and answers[0] == answers[1]
    assert lean_call.body["top_k"] == 3 and lean_call.body["thinking"] == {"type": "disabled"}
    assert lean_call.api_key == sdk_call.api_key == KEY
