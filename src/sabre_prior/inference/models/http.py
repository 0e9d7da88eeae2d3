"""A lean JSON-over-HTTP client for the plain (non-batch) calls of the hosted APIs.

Importing the official SDKs costs about a second of start-up (``openai.types``
alone builds hundreds of pydantic models; measured with ``python -X importtime``,
docs/performance.md), more than the whole budget for the first request.  For one
``POST`` per question the SDKs add nothing the engine does not do itself (the
engine retries, times out, classifies errors and paces), so the OpenAI and
Anthropic backends speak the documented REST protocol here, over ``httpx2``:
the very transport the installed ``openai`` and ``anthropic`` SDKs use
(``openai/_base_client.py``: ``import httpx2``), with the same connection pool,
proxy variables (``trust_env``) and TLS defaults.  The SDKs remain in use for
the provider batch APIs (``models/batch_*.py``); Gemini's plain calls come here too
(``gemini_backend.py``: the body google-genai builds, over this client).

Every answer comes back with its status, its headers (for the rate-limit
headers, :mod:`sabre_prior.inference.ratelimit`) and its body bytes.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from .base import CallError

if TYPE_CHECKING:
    import ssl


@dataclass
class HttpAnswer:
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise CallError(f"malformed response (not JSON: {exc})", retryable=True, kind="malformed") from None


@functools.lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    """The TLS context a default ``httpx2.AsyncClient`` builds for itself (``verify=True`` and
    ``trust_env``: SSL_CERT_FILE / SSL_CERT_DIR, else the system's CA store), built once per process.
    An ``SSLContext`` is meant to be shared by many connections (Python's ssl module docs)."""
    import httpx2

    return httpx2.create_ssl_context(verify=True, trust_env=True)


class JsonHttp:
    """Async ``POST``\\ s of JSON bodies to one base URL, over a few small ``httpx2`` pools.

    httpx's pool scans every connection for each request, so one pool of 64
    connections costs about 1 ms of CPU per call; ``connections_per_pool``
    connections per pool (8: measured at 200 requests per second, docs/performance.md), pools used in turn, keep that flat.
    The pools share one TLS context (:func:`_tls_context`): each client building its own costs ~21 ms,
    eight pools (concurrency 64) ~0.17 s before the first request.
    """

    def __init__(
        self, base_url: str, headers: Mapping[str, str], *, timeout_s: float, concurrency: int, connections_per_pool: int = 8
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers)
        self.timeout_s = timeout_s
        self.pools = max(1, math.ceil(max(1, concurrency) / connections_per_pool))
        self.per_pool = max(1, min(concurrency, connections_per_pool))
        self._clients: list[Any] = []
        self._turn = 0

    def _make(self) -> Any:
        import httpx2

        return httpx2.AsyncClient(
            base_url=self.base_url,
            headers=self.headers,
            verify=_tls_context(),
            timeout=httpx2.Timeout(self.timeout_s),
            limits=httpx2.Limits(max_connections=self.per_pool, max_keepalive_connections=self.per_pool),
            follow_redirects=False,
        )

    def prepare(self) -> None:
        while len(self._clients) < self.pools:
            self._clients.append(self._make())

    async def post(self, path: str, body: bytes, headers: Mapping[str, str] | None = None) -> HttpAnswer:
        import httpx2

        if not self._clients:
            self.prepare()
        self._turn += 1
        client = self._clients[self._turn % len(self._clients)]
        try:
            resp = await client.post(path, content=body, headers=headers)
        except httpx2.TimeoutException as exc:
            raise CallError(f"request timed out ({type(exc).__name__})", retryable=True, kind="timeout") from None
        except httpx2.TransportError as exc:  # connect, read, write, remote protocol errors
            raise CallError(f"connection failed ({type(exc).__name__}: {exc})", retryable=True, kind="connection") from None
        return HttpAnswer(resp.status_code, resp.headers, resp.content)

    async def aclose(self) -> None:
        while self._clients:
            await self._clients.pop().aclose()
