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


def test_raw_body_and_sdk_create_send_the_same_request(server: FakeServer) -> None:
    """The lean HTTP path (body assembled here, image spliced in) and the SDK's chat.completions.create agree."""
    import asyncio

    from sabre_prior.inference.models.base import Query, create_backend
    from tests.servers.dataset import jpeg
    from tests.servers.fixtures import model_settings

    server.keep_bodies = True
    query = Query(id="q", split="s", text='Question: "quoted" ünï\n\nAnswer with only yes or no.', image=jpeg(5),
                  image_mime="image/jpeg")
    answers = []
    for lean in (True, False):
        backend = create_backend("m", model_settings(server, BACKEND, extra_body={"seed": 3}, reasoning_effort="low"))
        backend.via_sdk = not lean
        backend._raw_post = False  # the SDK's own request building

        async def go(b):
            try:
                return await b.acomplete(query)
            finally:
                await b.aclose()

        answers.append(asyncio.run(go(backend)).text)
    fast, sdk = server.calls
    assert fast.body == sdk.body and fast.key == sdk.key and answers[0] == answers[1]
    assert fast.body["seed"] == 3 and fast.body["reasoning_effort"] == "low"
