"""A lean JSON-over-HTTP client for the plain (non-batch) calls of the hosted APIs.

Importing the official SDKs costs about a second of start-up (``openai.types``
alone builds hundreds of pydantic models; measured with ``python -X importtime``,
docs/performance.md), more than the whole budget for the first request.  For one
``POST`` per question the SDKs add nothing the engine does not do itself (the
engine retries, times out, classifies errors and paces), so the OpenAI, Anthropic
and Gemini backends speak the documented REST protocol here.

The transport is ``aiohttp``'s client (https://docs.aiohttp.org/en/stable/client_reference.html):
one ``ClientSession`` with a ``TCPConnector`` of ``concurrency`` connections.  It spends about
1 ms less CPU per call than ``httpx2`` (the SDKs' transport, used here before: its pool, ``anyio``
and ``h11`` layers were half of ``sabre predict``'s CPU per call on a busy machine,
docs/performance.md), and it is what a bare client of the same calls uses
(``benchmarks/bare_client.py``).  As the SDKs do, it goes through the proxy the environment names
(``HTTP(S)_PROXY``, ``NO_PROXY``: :func:`_proxy_for`, read once, where aiohttp's ``trust_env`` would
look it up and read ``~/.netrc`` in a thread for every request: a third of the CPU per call) and
verifies TLS with the context a default ``httpx2`` client builds (:func:`_tls_context`: the same
CA store as the SDKs).  The SDKs
remain in use for the provider batch APIs (``models/batch_*.py``).

Every answer comes back with its status, its headers (for the rate-limit
headers, :mod:`sabre_prior.inference.ratelimit`; a case-insensitive mapping) and its body bytes.
"""

from __future__ import annotations

import asyncio
import functools
import json
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


def _proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (None: none, or ``NO_PROXY`` covers its host), as
    the standard library reads ``<scheme>_proxy`` and ``no_proxy``
    (https://docs.python.org/3/library/urllib.request.html#urllib.request.getproxies, ``proxy_bypass``)."""
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy is None or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


class JsonHttp:
    """Async ``POST``\\ s of JSON bodies to one base URL, over one ``aiohttp`` session.

    :meth:`prepare` (the engine runs it in a worker thread before the first call) imports aiohttp
    and builds the TLS context of an ``https`` URL (~21 ms); the session itself is made on the
    engine's event loop, at the first :meth:`post` (aiohttp binds it to the running loop).
    """

    def __init__(self, base_url: str, headers: Mapping[str, str], *, timeout_s: float, concurrency: int) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers)
        self.timeout_s = timeout_s
        self.concurrency = max(1, concurrency)
        self._tls: ssl.SSLContext | None = None
        self._session: Any = None

    def prepare(self) -> None:
        import aiohttp  # noqa: F401  (the import, off the event loop)

        if self._tls is None and self.base_url.startswith("https:"):
            self._tls = _tls_context()

    def _open(self) -> Any:
        import aiohttp

        self.prepare()
        # https://docs.aiohttp.org/en/stable/client_reference.html#aiohttp.TCPConnector (limit: connections
        # at once; ssl: the context to verify with) and #aiohttp.ClientSession (proxy: the session's proxy;
        # timeout: ClientTimeout(total=...) per request)
        connector = aiohttp.TCPConnector(limit=self.concurrency, ssl=self._tls if self._tls is not None else True)
        return aiohttp.ClientSession(
            headers=self.headers,
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            proxy=_proxy_for(self.base_url),
        )

    async def post(self, path: str, body: bytes, headers: Mapping[str, str] | None = None) -> HttpAnswer:
        import aiohttp

        if self._session is None:
            self._session = self._open()
        try:
            async with self._session.post(self.base_url + path, data=body, headers=headers, allow_redirects=False) as resp:
                data = await resp.read()
        except asyncio.TimeoutError:  # the session's total timeout (aiohttp's ServerTimeoutError is one too)
            raise CallError(f"no answer within {self.timeout_s:g} s", retryable=True, kind="timeout") from None
        except aiohttp.ClientError as exc:  # connect, read, payload, server disconnected
            raise CallError(f"connection failed ({type(exc).__name__}: {exc})", retryable=True, kind="connection") from None
        return HttpAnswer(resp.status, resp.headers, data)

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
