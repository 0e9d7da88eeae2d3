"""The behaviour every API backend shows against its fake server (plain calls over the lean HTTP
client; each backend's official SDK sends the same request, :func:`test_lean_http_and_sdk_send_the_same_request`).

One suite, run over every ``api`` backend of the registry (``sabre_prior.registry``): a new
provider's backend is tested here as soon as its registry entry and its fake protocol
(``tests/servers/protocols.py``) exist.  What only one provider sends on the wire is tested
in ``tests/models/test_<backend>_backend.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sabre_prior import registry
from sabre_prior.errors import BackendError, ConfigError
from sabre_prior.inference.predict import predict_split
from sabre_prior.inference.models.base import CallError, Completion, create_backend
from tests.servers import FakeServer, content_key, fake_answer
from tests.servers.dataset import jpeg, write_split
from tests.servers.fixtures import (  # noqa: F401  (fixtures)
    BACKENDS,
    FAULT_KINDS,
    KEY_ENV,
    YES_NO_TEXT,
    api_key,
    expected_answers,
    model_settings,
    one_call,
    server,
)
from tests.servers.protocols import PROTOCOLS


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_every_api_backend_of_the_registry_has_a_fake_protocol() -> None:
    assert BACKENDS == registry.names("api") and len(BACKENDS) >= 3
    assert set(BACKENDS) <= set(PROTOCOLS), "a new API backend needs its fake protocol in tests/servers/protocols.py"


def test_answer_and_usage(server: FakeServer, backend: str) -> None:
    image = jpeg(11)
    result = one_call(server, backend, image=image)
    assert isinstance(result, Completion), result
    assert result.text == fake_answer(YES_NO_TEXT, image)
    (call,) = server.calls
    assert call.protocol == backend and call.model == "fake-model-1"
    assert call.key == content_key(YES_NO_TEXT, image), "the image must arrive as its original bytes"
    assert (result.input_tokens, result.output_tokens) == (call.input_tokens, call.output_tokens)


@pytest.mark.parametrize("fault", sorted(FAULT_KINDS))
def test_fault_mapping(server: FakeServer, backend: str, fault: str) -> None:
    kw: dict[str, Any] = {"retry_after": 7} if fault == "429" else {}
    if fault == "stall":
        kw["stall_s"] = 4.0
    server.add_fault(fault, first_attempts=10, **kw)
    result = one_call(server, backend, timeout_s=0.3)  # the SDK's own timeout is 1.3 s
    kind, retryable = FAULT_KINDS[fault]
    assert isinstance(result, CallError), f"{fault} returned {result!r}"
    assert (result.kind, result.retryable) == (kind, retryable), str(result)
    if fault == "429":
        assert result.retry_after == pytest.approx(7)
    if fault in ("401", "400", "404", "429", "500", "503"):
        assert result.status == int(fault) and "injected fault" in str(result)
    assert len(server.calls) == 1, "the SDK's own retries must be off"


def test_empty_answer(server: FakeServer, backend: str) -> None:
    server.add_fault("empty", first_attempts=10)
    result = one_call(server, backend)
    assert isinstance(result, Completion) and result.text == ""


def test_end_to_end(tmp_path: Path, server: FakeServer, backend: str) -> None:
    """A split with a few faults: every question answered exactly once, usage adds up."""
    data = tmp_path / "context.parquet"
    write_split(data, "context", 12)
    server.add_fault("429", first_attempts=1, fraction=0.25, retry_after=0.01)
    server.add_fault("500", first_attempts=1, fraction=0.5)
    out = tmp_path / "pred.jsonl"
    run = predict_split(
        "m",
        model_settings(server, backend),
        "context",
        data,
        out,
        progress=False,
        usage_output=tmp_path / "usage.json",
        run_log_output=tmp_path / "run.json",
        journal_dir=tmp_path / "journal",
    )
    expected = expected_answers(data)
    preds = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(p["id"], p["prediction"]) for p in preds] == [(q, a) for q, (_, a) in expected.items()]
    assert set(server.answers_per_key().values()) == {1} and len(server.answers_per_key()) == 12
    usage = json.loads((tmp_path / "usage.json").read_text())
    ok = server.ok_calls()
    assert usage["input_tokens"] == sum(c.input_tokens for c in ok)
    assert usage["output_tokens"] == sum(c.output_tokens for c in ok)
    assert usage["retries"] == run.retries == sum(1 for c in server.calls if c.fault)
    assert all(c.api_key is not None for c in server.calls)


def test_missing_key(server: FakeServer, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    b = create_backend("m", model_settings(server, backend))
    with pytest.raises(BackendError, match=KEY_ENV):
        b.check_ready()


def test_unknown_setting(server: FakeServer, backend: str) -> None:
    with pytest.raises(ConfigError, match="tempreature"):
        create_backend("m", model_settings(server, backend, tempreature=0))


#: Settings that reach every part of each protocol's body builder (generation settings, thinking,
#: ``extra_body`` merged in: at the top, and for Gemini into generationConfig in the other key case);
#: a backend not listed is compared with its default settings.
SDK_PARITY_SETTINGS: dict[str, dict[str, Any]] = {
    "openai": {"extra_body": {"seed": 3}, "reasoning_effort": "low"},
    "anthropic": {"thinking_budget": 0, "temperature": 0.5, "extra_body": {"top_k": 3}},
    "gemini": {"thinking_budget": 0, "reasoning_effort": "low", "temperature": 0.5,
               "extra_body": {"safety_settings": [], "generation_config": {"seed": 3}}},
}  # fmt: skip


def test_lean_http_and_sdk_send_the_same_request(server: FakeServer, backend: str) -> None:
    """The lean HTTP path (the body built here, the image spliced in) and the official SDK's own
    request building send the same JSON body, key and path, and read the same answer."""
    import asyncio

    from sabre_prior.inference.models.base import Query

    server.keep_bodies = True
    query = Query(id="q", split="s", text='Question: "quoted" ünï\n\nAnswer with only yes or no.', image=jpeg(5),
                  image_mime="image/jpeg")  # fmt: skip
    answers = []
    for lean in (True, False):
        model = create_backend("m", model_settings(server, backend, **SDK_PARITY_SETTINGS.get(backend, {})))
        model.via_sdk = not lean  # type: ignore[attr-defined]
        if backend == "openai":
            model._raw_post = False  # type: ignore[attr-defined]  # the SDK's chat.completions.create, not a raw post

        async def go(b: Any) -> Completion:
            try:
                return await b.acomplete(query)
            finally:
                await b.aclose()

        answers.append(asyncio.run(go(model)))
    lean_call, sdk_call = server.calls
    assert lean_call.body == sdk_call.body and lean_call.path == sdk_call.path
    assert lean_call.key == sdk_call.key == content_key(query.text, query.image)
    assert lean_call.api_key == sdk_call.api_key and answers[0].text == answers[1].text
    assert (answers[0].input_tokens, answers[0].output_tokens) == (answers[1].input_tokens, answers[1].output_tokens)
    if backend in SDK_PARITY_SETTINGS:
        body = json.dumps(lean_call.body)
        assert '"seed": 3' in body or '"top_k": 3' in body  # extra_body arrived


def test_a_background_sdk_import_ends_before_the_interpreter_finalizes() -> None:
    """A run answered wholly from the journal can exit while the SDK still imports: the
    interpreter must wait for that thread (a daemon thread importing C extensions during
    finalization crashed a journal-only `sabre predict` with SIGSEGV in CI)."""
    import subprocess
    import sys

    script = (
        "import atexit, sys\n"
        "from sabre_prior.inference.models.base import import_in_background\n"
        "assert 'aiohttp' not in sys.modules\n"
        "import_in_background('aiohttp')\n"
        # atexit runs after the interpreter has waited for its non-daemon threads
        "atexit.register(lambda: print('done' if hasattr(sys.modules.get('aiohttp'), 'ClientSession') else 'partial'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done", proc.stdout + proc.stderr
