"""Pytest fixtures and helpers shared by the API-backend tests (import them into a test module)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sabre_prior import registry

from .core import FakeServer, content_key, fake_answer
from .dataset import write_split

KEY_ENV = "SABRE_TEST_API_KEY"
KEY = "sk-test-0123456789abcdef"
#: The API backends of the one registry (every one has a fake protocol in .protocols).
BACKENDS = registry.names("api")


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


@pytest.fixture
def server(api_key: str) -> Iterator[FakeServer]:
    with FakeServer(latency=0.005, expected_key=api_key) as srv:
        yield srv


@pytest.fixture
def split_file(tmp_path: Path) -> Path:
    path = tmp_path / "data" / "context.parquet"
    write_split(path, "context", 16)
    return path


def model_settings(server: FakeServer, backend: str = "openai", **extra: Any) -> dict[str, Any]:
    """A fast model entry pointing at the fake server (small back-off and timeouts)."""
    settings: dict[str, Any] = {
        "backend": backend,
        "model_id": "fake-model-1",
        "api_key_env": KEY_ENV,
        "base_url": server.url(backend),
        "concurrency": 4,
        "timeout_s": 2.0,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
    }
    settings.update(extra)
    return settings


def expected_answers(split_path: Path, split: str = "context") -> dict[str, tuple[str, str]]:
    """Question id -> (content key, the fake server's answer), recomputed from the data."""
    from sabre_prior.inference.predict import build_queries

    out = {}
    for q in build_queries(split_path, split, "screening_v1"):
        out[q.id] = (content_key(q.text, q.image), fake_answer(q.text, q.image))
    return out


def read_predictions(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


YES_NO_TEXT = "Question: Is there a toaster visible in this kitchen?\n\nAnswer with only yes or no. Do not explain."

#: fault -> (CallError kind, retryable) every backend must map it to
FAULT_KINDS = {
    "429": ("rate_limit", True),
    "500": ("server", True),
    "503": ("server", True),
    "stall": ("timeout", True),
    "malformed": ("malformed", True),
    "disconnect": ("connection", True),
    "401": ("auth", False),
    "400": ("bad_request", False),
    "404": ("not_found", False),
}


def one_call(server: FakeServer, backend: str, *, text: str = YES_NO_TEXT, image: bytes | None = None, **settings: Any):
    """One ``acomplete`` through the real SDK: the Completion, or the CallError raised."""
    import asyncio

    from sabre_prior.inference.models.base import CallError, Query, create_backend

    from .dataset import jpeg

    image = image if image is not None else jpeg(7)
    b = create_backend("m", model_settings(server, backend, **settings))
    query = Query(id="q1", split="context", text=text, image=image, image_mime="image/jpeg")

    async def go():
        try:
            return await b.acomplete(query)
        except CallError as exc:
            return exc
        finally:
            await b.aclose()

    return asyncio.run(go())
