"""A fake model server on 127.0.0.1 speaking the OpenAI, Anthropic and Gemini wire protocols.

One asyncio (aiohttp.web) server, run in a background thread with its own event
loop, answers

* ``POST /v1/chat/completions`` (OpenAI chat completions; base_url ``<url>/v1``),
* ``POST /v1/messages`` (Anthropic Messages; base_url ``<url>``),
* ``POST /<version>/models/<model>:generateContent`` (Gemini; base_url ``<url>``).

Each request is keyed by its content (prompt text and image bytes).  Latency
and faults are injectable: a :class:`Rule` makes the first ``first_attempts``
requests of every matching content key fail with a :class:`Fault` (429 with
Retry-After, 500, 503, a stall past the client's timeout, malformed JSON, an
empty answer, 401, 400, 404, a dropped connection).  Every request is logged
as a :class:`Call` so tests can check that each question was answered exactly
once and that usage adds up.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web

from . import protocols as P

FAULT_KINDS = (
    "429",
    "500",
    "503",
    "stall",
    "malformed",
    "empty",
    "401",
    "400",
    "404",
    "disconnect",
    # documented provider behaviours (protocols.py builds each from its API reference)
    "refusal",  # partial text + the protocol's refusal signal (200)
    "blocked",  # Gemini: no candidate, promptFeedback.blockReason (200)
    "moderation",  # 400 moderation rejection (DashScope data_inspection_failed / Moonshot content_filter)
    "empty_length",  # empty text, token-budget finish reason (200)
    "quota",  # account out of quota / billing (OpenAI 429 insufficient_quota, Anthropic 402, Gemini 403)
    "overloaded",  # Anthropic 529 overloaded_error
    "429_reset",  # 429 with only the protocol's reset headers / RetryInfo (no Retry-After)
)


def fake_answer(text: str, image: bytes) -> str:
    """The server's deterministic answer to one question (tests recompute it)."""
    h = int(hashlib.sha256(image + text.encode()).hexdigest(), 16)
    if "yes or no" in text:
        return "Yes." if h % 2 else "No."
    if "the count" in text:
        return str(h % 9)
    if "option letter" in text:
        return "ABCD"[h % 4]
    return "unknown"


def content_key(text: str, image: bytes) -> str:
    return hashlib.sha256(image + b"\0" + text.encode()).hexdigest()[:20]


def _strip_images(obj: Any) -> Any:
    """The request JSON with long strings (base64 images) replaced by their length."""
    if isinstance(obj, dict):
        return {k: _strip_images(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_strip_images(v) for v in obj]
    if isinstance(obj, str) and len(obj) > 512:
        return f"{obj[:32]}...<{len(obj)} chars>"
    return obj


def fake_usage(text: str, answer: str) -> tuple[int, int]:
    """Deterministic token counts reported for one answer."""
    return 85 + len(text) // 4, 1 + len(answer) // 4


@dataclass(frozen=True)
class Fault:
    kind: str
    retry_after: float | None = None  # seconds, for 429/503/429_reset/overloaded
    stall_s: float = 5.0  # for "stall"
    variant: str = ""  # protocol flavour, e.g. "refusal_field" for OpenAI message.refusal

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {self.kind!r}")


@dataclass
class Rule:
    fault: Fault
    first_attempts: int = 1  # fail the first n attempts of each matching key
    fraction: float = 1.0  # deterministic share of keys the rule applies to
    keys: frozenset[str] | None = None
    models: frozenset[str] | None = None  # only requests for these model ids

    def applies(self, key: str, attempt: int, model: str = "") -> bool:
        if attempt > self.first_attempts:
            return False
        if self.keys is not None and key not in self.keys:
            return False
        if self.models is not None and model not in self.models:
            return False
        return int(key[:8], 16) / 0xFFFFFFFF < self.fraction


@dataclass
class Call:
    protocol: str
    path: str
    model: str = ""
    key: str = ""
    attempt: int = 0
    status: int = 0  # 0: no response sent (cancelled, dropped)
    fault: str | None = None
    api_key: str | None = None
    start: float = 0.0
    end: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0  # billed output tokens, reasoning included
    answer: str | None = None
    body: dict[str, Any] | None = None
    reset_at: float | None = None  # a 429 naming when the limit resets: that time (server clock)

    @property
    def ok(self) -> bool:
        """A normal answer was sent."""
        return self.status == 200 and self.fault is None


@dataclass
class FakeServer:
    latency: float = 0.0
    expected_key: str | None = None  # requests with another key get 401
    echo_key_in_errors: bool = False  # worst case: a 401 message quoting the key it got
    keep_bodies: bool = False  # keep each request's JSON (image data replaced by its length)
    decode_images: bool = True  # False (benchmarks): key requests by text and base64 length only
    answer: Callable[[str, bytes], str] = fake_answer
    #: reasoning tokens reported per answer (OpenAI protocol: inside completion_tokens unless
    #: ``reasoning_apart``, as xAI reports them; Gemini: thoughtsTokenCount); billed as output
    reasoning_tokens: int = 0
    reasoning_apart: bool = False
    #: per model id: (reasoning tokens, reported apart), overriding the two settings above
    reasoning_by_model: dict[str, tuple[int, bool]] = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)
    #: requests per second allowed (None: no limit): a token bucket holding one second's worth (at least
    #: one request), refilled continuously.  Both OpenAI and Anthropic document that a per-minute limit
    #: may be enforced over shorter periods (60 RPM as 1 request per second) and Anthropic that its limits
    #: are a continuously replenished token bucket (https://platform.openai.com/docs/guides/rate-limits,
    #: https://docs.anthropic.com/en/api/rate-limits).  Above it: 429 with the protocol's headers
    #: (protocols.rate_limited); every answer carries the headers too (protocols.rate_limit_headers).
    rate_limit: float | None = None
    #: with no ``rate_limit``: the requests-per-minute limit every answer still announces in the
    #: protocol's headers, a high tier that is never reached (OpenAI and Anthropic send their
    #: rate-limit headers with every response, protocols.rate_limit_headers; Gemini sends none).
    #: None: no headers, as an OpenAI-compatible server that sends none
    announce_rpm: float | None = 10000.0
    #: Gemini's 429 of that limit names the limit in its QuotaFailure's ``quotaValue`` (False: left out,
    #: as some real answers do; protocols.gemini_rate_limited)
    rate_limit_quota_value: bool = True
    #: (n, seconds): the n-th request exhausts the key's limit for that long; it and every request
    #: arriving before the reset get a 429 whose documented headers name the reset
    #: (protocols.exhausted; ``exhausted_flavour`` "compatible": an OpenAI-compatible server's, Groq's)
    exhaust: tuple[int, float] | None = None
    exhausted_flavour: str = ""
    #: the window of that exhaustion once opened: (start, reset), server clock (time.monotonic)
    exhausted_window: tuple[float, float] | None = None
    #: hold requests until this many are in flight at once (then all go; once), after the first
    #: answer (a client's probe goes alone); a client that never gets there fails after ``hold_timeout_s``
    hold_for_in_flight: int | None = None
    hold_timeout_s: float = 30.0
    calls: list[Call] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    port: int = 0

    def __post_init__(self) -> None:
        self._bucket = [0.0, 0.0]  # level, time of the last refill (set when the first request comes)
        self._gathered: asyncio.Event | None = None  # hold_for_in_flight reached (made on the server's loop)
        self._attempts: Counter[tuple[str, str]] = Counter()  # (content key, model id) -> attempts
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    # -- configuration --------------------------------------------------------------
    def add_fault(
        self, kind: str, *, first_attempts: int = 1, fraction: float = 1.0, keys=None, models=None, **kw: Any
    ) -> Rule:
        rule = Rule(
            Fault(kind, **kw),
            first_attempts,
            fraction,
            None if keys is None else frozenset(keys),
            None if models is None else frozenset(models),
        )
        self.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()
            self.calls.clear()
            self._attempts.clear()
            self.max_in_flight = self.in_flight
            self._bucket = [0.0, 0.0]
            self.exhausted_window = None

    def url(self, protocol: str = "openai") -> str:
        base = f"http://127.0.0.1:{self.port}"
        return base + "/v1" if protocol == "openai" else base

    # -- results ----------------------------------------------------------------------
    def ok_calls(self) -> list[Call]:
        return [c for c in list(self.calls) if c.ok]

    def answers_per_key(self) -> Counter[str]:
        return Counter(c.key for c in self.ok_calls())

    # -- running ------------------------------------------------------------------------
    def start(self) -> "FakeServer":
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._serve())
            except BaseException as exc:  # pragma: no cover - reported to the caller
                errors.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())  # type: ignore[union-attr]
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-model-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        if errors:
            raise errors[0]
        return self

    async def _serve(self) -> None:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = None

    def __enter__(self) -> "FakeServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the handler ----------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        proto = P.protocol_for(path)
        call = Call(protocol=proto.name if proto else "?", path=path, start=time.monotonic())
        with self._lock:
            self.calls.append(call)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if proto is None:
                call.status = 404
                return web.json_response({"error": {"message": f"no route {path}"}}, status=404)
            call.api_key = proto.api_key(request)
            body = await request.read()
            try:
                payload = json.loads(body)
                model, text, data = proto.parse(path, payload)
                image = P.b64decode(data) if self.decode_images else f"{len(data)}".encode()
            except (ValueError, KeyError, TypeError, IndexError, StopIteration) as exc:
                call.status = 400
                return proto.error(400, f"bad request: {exc}")
            if self.keep_bodies:
                call.body = _strip_images(payload)
            call.model = model
            reset_in = self._exhausted(call)
            if reset_in is not None:  # the key's limit is exhausted: 429 at once until the reset
                call.status, call.fault, call.key = 429, "exhausted", content_key(text, image)
                call.reset_at = call.start + reset_in
                return P.exhausted(proto.name, reset_in, self.exhausted_flavour, model)
            if self.hold_for_in_flight and any(c.end is not None for c in self.calls):
                await self._hold()
            limit = self._take_token() if self.rate_limit else None
            if limit is not None and limit[0] < 0:  # over the limit: 429 at once, as a provider's edge answers
                call.status, call.fault = 429, "rate_limited"
                level, full_in, next_in = -limit[0] - 1, limit[1], limit[2]
                return P.rate_limited(proto.name, self.rate_limit * 60, level, full_in, next_in, model, self.rate_limit_quota_value)  # type: ignore[operator]
            call.key = content_key(text, image)
            with self._lock:
                self._attempts[(call.key, model)] += 1
                call.attempt = self._attempts[(call.key, model)]
            if self.latency:
                await asyncio.sleep(self.latency)
            if self.expected_key is not None and call.api_key != self.expected_key:
                call.status, call.fault = 401, "401"
                quoted = f": {call.api_key}" if self.echo_key_in_errors else ""
                return proto.error(401, f"invalid API key{quoted}")
            fault = next((r.fault for r in self.rules if r.applies(call.key, call.attempt, model)), None)
            if fault is not None:
                call.fault = fault.kind
                return await self._fault(request, proto, fault, call, model, text)
            answer = self.answer(text, image)
            call.input_tokens, call.output_tokens = fake_usage(text, answer)
            call.answer = answer
            reasoning = self._reasoning(model)
            resp = proto.ok(model, answer, call.input_tokens, call.output_tokens, **reasoning)
            call.output_tokens += reasoning.get("reasoning", 0)
            call.status = 200
            if limit is not None:
                resp.headers.update(P.rate_limit_headers(proto.name, self.rate_limit * 60, limit[0], limit[1], False))  # type: ignore[operator]
            elif self.announce_rpm:
                resp.headers.update(P.rate_limit_headers(proto.name, self.announce_rpm, self.announce_rpm - 1, 60 / self.announce_rpm, False))
            return resp
        finally:
            call.end = time.monotonic()
            with self._lock:
                self.in_flight -= 1

    def _exhausted(self, call: Call) -> float | None:
        """Seconds until the exhausted limit resets (None: not exhausted now)."""
        if self.exhaust is None:
            return None
        with self._lock:
            if self.exhausted_window is None and len(self.calls) >= self.exhaust[0]:
                self.exhausted_window = (call.start, call.start + self.exhaust[1])
            window = self.exhausted_window
        if window is None or not window[0] <= call.start < window[1]:
            return None
        return window[1] - call.start

    async def _hold(self) -> None:
        if self._gathered is None:
            self._gathered = asyncio.Event()
        if self.in_flight >= self.hold_for_in_flight:  # type: ignore[operator]
            self._gathered.set()
        if not self._gathered.is_set():
            try:
                await asyncio.wait_for(self._gathered.wait(), self.hold_timeout_s)
            except asyncio.TimeoutError:
                pass

    def _take_token(self) -> tuple[float, float, float]:
        """Take one request from the bucket: (remaining, seconds until full, seconds until the next
        request); remaining is ``-(level + 1)`` when none was left."""
        rate = float(self.rate_limit)  # type: ignore[arg-type]
        cap = max(1.0, rate)
        now = time.monotonic()
        with self._lock:
            level, t = self._bucket
            level = cap if t == 0.0 else min(cap, level + (now - t) * rate)
            ok = level >= 1.0
            if ok:
                level -= 1.0
            self._bucket = [level, now]
        full_in, next_in = (cap - level) / rate, max(0.0, (1.0 - level) / rate)
        return (level if ok else -(level + 1)), full_in, next_in

    def _reasoning(self, model: str = "") -> dict[str, Any]:
        tokens, apart = self.reasoning_by_model.get(model, (self.reasoning_tokens, self.reasoning_apart))
        return {"reasoning": tokens, "apart": apart} if tokens else {}

    async def _fault(
        self, request: web.Request, proto: P.Protocol, fault: Fault, call: Call, model: str, text: str
    ) -> web.StreamResponse:
        kind = fault.kind
        if kind in P.DOCUMENTED_FAULTS:
            apart = bool(self._reasoning(model).get("apart", self.reasoning_apart))
            status, resp, billed = P.documented_fault(
                proto.name, kind, model, text, fault.retry_after, fault.variant, apart
            )
            call.status = status
            call.input_tokens, call.output_tokens = billed
            if kind == "429_reset":
                call.reset_at = time.monotonic() + (0.3 if fault.retry_after is None else fault.retry_after)
            return resp
        if kind in ("429", "500", "503", "401", "400", "404"):
            status = int(kind)
            headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
            call.status = status
            return proto.error(status, f"injected fault {kind}", headers)
        if kind == "stall":
            await asyncio.sleep(fault.stall_s)
            call.status = 200
            return proto.ok(model, "late answer", 1, 1)
        if kind == "malformed":
            call.status = 200
            return web.Response(body=b'{"choices": [{"message": ', content_type="application/json")
        if kind == "empty":
            call.status = 200
            call.input_tokens, call.output_tokens = fake_usage(text, "")
            reasoning = self._reasoning(model)
            resp = proto.ok(model, "", call.input_tokens, call.output_tokens, **reasoning)
            call.output_tokens += reasoning.get("reasoning", 0)
            return resp
        # disconnect: drop the connection without an answer
        assert request.transport is not None
        request.transport.abort()
        raise asyncio.CancelledError
