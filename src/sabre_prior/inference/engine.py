"""The inference engine: concurrent, rate-limited, retrying, journaled.

Backend-agnostic.  It takes :class:`WorkItem` objects (a query and its content
key), answers every item already in the response journal from there, and sends
the rest through the backend:

* async backends (``Backend.acomplete``, the hosted APIs): a pool of
  ``concurrency`` workers on one event loop, gated by a :class:`RateLimiter`
  (requests and tokens per minute, adaptive back-off on 429), a timeout per
  attempt, and retries with exponential back-off and jitter on 429, 5xx,
  timeouts, connection errors, malformed responses and empty answers,
  honouring every documented wait signal (:mod:`sabre_prior.inference.outcomes`).
  Non-retryable errors fail the question at once; an authentication or
  account error (no quota, billing, permission), an unknown model, or a bad
  request before any call succeeded stops the run early with the provider's
  message;
* batch backends (``Backend.complete_batch``, local models): chunks of
  ``batch_size``, retried on a retryable :class:`CallError`.

Outcomes (:mod:`sabre_prior.inference.outcomes`): an *answer* is journaled and returned;
a *refusal* (content filter, safety stop, refusal field or stop reason, blocked
prompt, moderation 400) is journaled as final for that question, returned in
:attr:`EngineResult.refusals` and never re-sent (unless ``retry_refusals``); it
never stops the rest of the run.  An *empty* answer whose finish reason says
the token budget ran out is retried at most ``empty_budget_retries`` times,
then stored as the (empty) answer; an empty answer with a normal stop is
retried at most ``empty_retries`` times, then the question fails.  A failure
is never an answer: it is returned with its reason in
:attr:`EngineResult.failures`, and what its attempts were billed is journaled
(never as a result).  Identical requests (same key) are sent once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence, Sized

from ..errors import ConfigError
from .journal import Journal, is_refusal
from .models.base import Backend, CallError, Completion, Query
from .outcomes import EMPTY, FAILURE, REFUSAL, budget_spent
from .ratelimit import FileStore, MemoryStore, RateLimiter
from .usage import RunStats

log = logging.getLogger(__name__)

#: The async path reads and prepares this many questions between two chances for the workers to send.
PRODUCER_CHUNK = 8
#: Questions read ahead per worker: the queue is bounded so that memory stays flat in N (images are not all held).
QUEUE_PER_WORKER = 2
#: The progress bar is told the answers counted at most this often (seconds).
PROGRESS_S = 0.1


@dataclass(frozen=True)
class EngineSettings:
    """Operational settings of one run (from the model's params entry)."""

    concurrency: int = 8
    max_attempts: int = 6
    timeout_s: float = 60.0
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    retry_after_max_s: float = 300.0
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    batch_size: int = 16
    retry_empty: bool = True
    #: retries of an empty answer whose finish reason says the token budget ran out
    empty_budget_retries: int = 1
    #: retries of an empty answer with a normal stop
    empty_retries: int = 2
    #: send again the questions the journal holds as refused
    retry_refusals: bool = False

    @classmethod
    def from_settings(
        cls, settings: Mapping[str, Any], model: str = "?", *, kind: str = "api", retry_refusals: bool = False
    ) -> "EngineSettings":
        """Read ``concurrency``, ``max_attempts``, ``timeout_s``, ``backoff_*``, ``rate_limits``, ``batch_size``,
        ``empty_budget_retries``, ``empty_retries``, ``retry_refusals``."""

        def number(key: str, default: float, *, integer: bool = False, minimum: float = 0.0) -> Any:
            v = settings.get(key, default)
            ok = isinstance(v, int) if integer else isinstance(v, (int, float))
            if isinstance(v, bool) or not ok or v < minimum:
                raise ConfigError(f"models.{model}.{key} must be a {'whole ' if integer else ''}number >= {minimum}, got {v!r}")
            return int(v) if integer else float(v)

        limits = settings.get("rate_limits") or {}
        if not isinstance(limits, Mapping):
            raise ConfigError(f"models.{model}.rate_limits must be a mapping")
        unknown = sorted(set(limits) - {"requests_per_minute", "tokens_per_minute"})
        if unknown:
            raise ConfigError(f"models.{model}.rate_limits: unknown keys {', '.join(unknown)}")
        rl: dict[str, float | None] = {}
        for key in ("requests_per_minute", "tokens_per_minute"):
            v = limits.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0):
                raise ConfigError(f"models.{model}.rate_limits.{key} must be a positive number, got {v!r}")
            rl[key] = None if v is None else float(v)
        return cls(
            concurrency=number("concurrency", 8 if kind == "api" else 1, integer=True, minimum=1),
            max_attempts=number("max_attempts", 6, integer=True, minimum=1),
            timeout_s=number("timeout_s", 60.0, minimum=0.001),
            backoff_base_s=number("backoff_base_s", 1.0),
            backoff_max_s=number("backoff_max_s", 60.0),
            requests_per_minute=rl["requests_per_minute"],
            tokens_per_minute=rl["tokens_per_minute"],
            batch_size=number("batch_size", 16, integer=True, minimum=1),
            retry_empty=kind == "api",
            empty_budget_retries=number("empty_budget_retries", 1, integer=True),
            empty_retries=number("empty_retries", 2, integer=True),
            retry_refusals=retry_refusals or _flag(settings, "retry_refusals", model),
        )


def _flag(settings: Mapping[str, Any], key: str, model: str) -> bool:
    v = settings.get(key, False)
    if not isinstance(v, bool):
        raise ConfigError(f"models.{model}.{key} must be true or false, got {v!r}")
    return v


@dataclass(frozen=True)
class WorkItem:
    """One question ready to send, with its journal key and how its image is sent."""

    query: Query
    key: str
    image: Mapping[str, Any] = field(default_factory=dict)
    est_tokens: int = 0


@dataclass
class EngineResult:
    answers: dict[str, str]  # question id -> answer text
    records: dict[str, dict[str, Any]]  # question id -> journal record behind the answer
    failures: dict[str, str]  # question id -> reason
    stats: RunStats
    refusals: dict[str, dict[str, Any]] = field(default_factory=dict)  # question id -> refusal record
    spent: list[dict[str, Any]] = field(default_factory=list)  # journaled spend of failed questions
    aborted: str | None = None  # set when a fatal error stopped the run
    wall_s: float = 0.0


def without_image(item: WorkItem) -> WorkItem:
    """The item with its image bytes dropped (what is kept once its call is over)."""
    if not item.query.image:
        return item
    # copies with one field changed, without dataclasses.replace's pass through __init__ (measured:
    # 8.5 us an item there, twice per question)
    query = object.__new__(type(item.query))
    query.__dict__.update(item.query.__dict__, image=b"")
    out = object.__new__(type(item))
    out.__dict__.update(item.__dict__, query=query)
    return out


def redact(text: str, secrets: Sequence[str]) -> str:
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    return text


class _Progress:
    """A tqdm bar with retries and failures in the postfix (or nothing).

    The bar is made by :meth:`start` (the engine calls it once the first request is sent) or at the
    first update: importing tqdm and making the bar (its monitor thread, the terminal's width) took
    30-50 ms of the start-up, which the first request does not need (docs/performance.md)."""

    def __init__(self, total: int, initial: int, desc: str, enabled: bool, stats: RunStats) -> None:
        self.stats = stats
        self.bar = None
        self._args = (total, initial, desc) if enabled else None
        self._unshown = 0  # answers not yet passed to the bar
        self._next = 0.0  # when the bar is told next (time.monotonic)

    def start(self) -> None:
        if self._args is None or self.bar is not None:
            return
        from tqdm import tqdm

        total, initial, desc = self._args
        tty = sys.stderr.isatty()
        self.bar = tqdm(
            total=total,
            initial=initial,
            desc=desc,
            unit="q",
            mininterval=0.2 if tty else 2.0,
            dynamic_ncols=tty,
            file=sys.stderr,
        )
        self.postfix()

    def postfix(self) -> None:
        if self.bar is not None:
            s = self.stats
            self.bar.set_postfix(cached=s.cached, retries=s.retries, refused=s.refusals, failed=s.failures, refresh=False)

    def update(self, n: int, *, changed: bool = False) -> None:
        """Count ``n`` more; the bar is told at most every :data:`PROGRESS_S` (and at once of a retry,
        refusal or failure): the bar redraws every 0.2 s at most on a terminal, 2 s in a log, and a
        tqdm update per answer was a tenth of the engine's CPU per call (docs/performance.md)."""
        if self._args is None:
            return
        if self.bar is None:
            self.start()
        elif changed:
            self.postfix()
        self._unshown += n
        now = time.monotonic()
        if changed or now >= self._next:
            self._next = now + PROGRESS_S
            self.bar.update(self._unshown)  # type: ignore[union-attr]
            self._unshown = 0

    def close(self) -> None:
        self.start()  # a run with nothing to update still shows its (empty) bar
        if self.bar is not None:
            if self._unshown:
                self.bar.update(self._unshown)
                self._unshown = 0
            self.postfix()
            self.bar.close()


def final_record(
    item: WorkItem,
    journal_fields: Mapping[str, Any],
    completion: Completion,
    *,
    attempts: int,
    retries: int,
    rejected: tuple[int, int],
    latency_s: float | None,
    secrets: Sequence[str],
    **more: Any,
) -> dict[str, Any]:
    """The journal record of a final response (an answer, an empty answer kept as such, or a
    refusal), for the synchronous engine and the provider batches (``more``: batch fields)."""
    record: dict[str, Any] = {
        "key": item.key,
        "id": item.query.id,
        "split": item.query.split,
        **journal_fields,
        "text": completion.text if completion.outcome != REFUSAL else "",
        "outcome": completion.outcome,
        "input_tokens": completion.input_tokens,
        "output_tokens": completion.output_tokens,
        "finish_reason": completion.finish_reason,
        "attempts": attempts,
        "retries": retries,
        "rejected_input_tokens": rejected[0],
        "rejected_output_tokens": rejected[1],
        "latency_s": latency_s,
        "image": dict(item.image),
        **more,
    }
    if completion.detail:
        record["detail"] = redact(completion.detail, secrets)
    if completion.extra:
        record["extra"] = completion.extra
    return record


def spend_record(
    item: WorkItem, journal_fields: Mapping[str, Any], reason: str, attempts: int, rejected: tuple[int, int], **more: Any
) -> dict[str, Any]:
    """The journal record of what a failed question's attempts were billed (never read back as a result)."""
    return {
        "key": item.key,
        "id": item.query.id,
        "split": item.query.split,
        **journal_fields,
        "text": "",
        "outcome": FAILURE,
        "detail": reason,
        "attempts": attempts,
        "rejected_input_tokens": rejected[0],
        "rejected_output_tokens": rejected[1],
        **more,
    }


def _watch(workers: Sequence[asyncio.Task[None]]) -> asyncio.Future[asyncio.Task[None] | None]:
    """A future set to the first worker that raised, or to None once every worker has ended: one
    callback per worker for the whole run (waiting on every worker at each full queue cost a
    callback added and removed per worker per question)."""
    stopped: asyncio.Future[asyncio.Task[None] | None] = asyncio.get_running_loop().create_future()
    left = len(workers)

    def ended(task: asyncio.Task[None]) -> None:
        nonlocal left
        left -= 1
        if stopped.done():
            return
        if not task.cancelled() and task.exception() is not None:
            stopped.set_result(task)
        elif left == 0:
            stopped.set_result(None)

    for w in workers:
        w.add_done_callback(ended)
    return stopped


class Runner:
    """What both engines are given (:class:`Engine` and ``batch.BatchEngine``): one model's backend,
    its journal and engine settings, and how its run is shown and journaled."""

    def __init__(
        self,
        backend: Backend,
        journal: Journal | None,
        settings: EngineSettings,
        *,
        desc: str = "",
        progress: bool = True,
        journal_fields: Mapping[str, Any] | None = None,
        seed: int | None = None,
    ) -> None:
        self.backend = backend
        self.journal = journal
        self.s = settings
        self.desc = desc
        self.progress = progress
        self.journal_fields = dict(journal_fields or {})
        self.seed = seed
        self._secrets = backend.secrets()
        self.stats = RunStats()


class Engine(Runner):
    """Runs the work items of one model and split (the calls one at a time, concurrently)."""

    def __init__(
        self, backend: Backend, journal: Journal | None, settings: EngineSettings, *, pacing: "Path | None" = None,
        **common: Any,
    ) -> None:  # fmt: skip
        """``common``: :class:`Runner`'s keywords (desc, progress, journal_fields, seed)."""
        super().__init__(backend, journal, settings, **common)
        #: the model's shared pacing state file (sabre_prior.inference.ratelimit); None: this run's alone
        self.pacing = pacing
        self._rng = random.Random(self.seed)
        self._answers: dict[str, str] = {}
        self._records: dict[str, dict[str, Any]] = {}
        self._failures: dict[str, str] = {}
        self._refusals: dict[str, dict[str, Any]] = {}
        self._spent: list[dict[str, Any]] = []
        self._abort: str | None = None
        self._successes = 0
        self._groups: dict[str, list[WorkItem]] = {}
        self._key_record: dict[str, dict[str, Any]] = {}
        self._key_failure: dict[str, str] = {}
        self._progress: _Progress | None = None
        self._ready: asyncio.Future[None] | None = None  # Backend.prepare, started by the first call

    # -- entry point --------------------------------------------------------------------
    def run(self, items: Iterable[WorkItem], total: int | None = None) -> EngineResult:
        """Answer every item: from the journal, else through the backend.

        ``items`` may be a generator: the async path starts sending the first
        questions while later ones are still being read and prepared.
        """
        t0 = time.perf_counter()
        if total is None and isinstance(items, Sized):
            total = len(items)
        self._progress = _Progress(total or 0, 0, self.desc, self.progress, self.stats)
        if not self.backend.is_async:
            self._progress.start()
        try:
            if self.backend.is_async:
                asyncio.run(self._run_async(iter(items)))
            else:
                pending = [g for g in (self._accept(item) for item in items) if g is not None]
                if pending:
                    self._run_batches(pending)
                else:
                    self.backend.close()
        finally:
            self._progress.close()
        return EngineResult(
            answers=self._answers,
            records=self._records,
            failures=self._failures,
            stats=self.stats,
            aborted=self._abort,
            wall_s=time.perf_counter() - t0,
            refusals=self._refusals,
            spent=self._spent,
        )

    # -- shared bookkeeping -------------------------------------------------------------
    def _accept(self, item: WorkItem) -> list[WorkItem] | None:
        """Register one item; returns a new group to call, or None (journal hit, duplicate)."""
        self.stats.questions += 1
        group = self._groups.get(item.key)
        if group is not None:  # same content as an earlier question: one call serves both
            group.append(item)
            if item.key in self._key_record:
                self._assign([item], self._key_record[item.key])
                self._progress_update(1)
            elif item.key in self._key_failure:
                self._failures[item.query.id] = self._key_failure[item.key]
                self.stats.failures += 1
                self._progress_update(1, changed=True)
            return None
        group = [item]
        self._groups[item.key] = group
        rec = self.journal.get(item.key) if self.journal is not None else None
        if self.journal is not None:
            self._spent.extend(self.journal.spent(item.key))
        if rec is not None and self.s.retry_refusals and is_refusal(rec):
            rec = None  # asked to send refused questions again
        if rec is not None:
            self._key_record[item.key] = rec
            self._assign(group, rec)
            self.stats.cached += 1
            self._progress_update(1, changed=True)
            return None
        return group

    def _progress_update(self, n: int, *, changed: bool = False) -> None:
        if self._progress is not None:
            self._progress.update(n, changed=changed)

    def _assign(self, group: Sequence[WorkItem], record: dict[str, Any]) -> None:
        if is_refusal(record):
            for item in group:
                self._refusals[item.query.id] = record
            self.stats.refusals += len(group)
            return
        for item in group:
            self._answers[item.query.id] = record["text"]
            self._records[item.query.id] = record

    def _succeed(
        self,
        group: Sequence[WorkItem],
        completion: Completion,
        *,
        latency: float,
        attempts: int,
        rejected: int,
        rejected_input: int = 0,
    ) -> None:
        """Journal a final response (an answer, an empty answer kept as such, or a refusal)."""
        item = group[0]
        record = final_record(
            item, self.journal_fields, completion, attempts=attempts, retries=attempts - 1,
            rejected=(rejected_input, rejected), latency_s=round(latency, 4), secrets=self._secrets,
        )  # fmt: skip
        if self.journal is not None:
            record = self.journal.append(record)
        self._key_record[item.key] = record
        self._assign(group, record)
        self._release_images(group)
        if completion.outcome == REFUSAL:
            log.warning("%s: %s refused (%s)", self.desc, ", ".join(i.query.id for i in group), record.get("detail"))
        else:
            self._successes += 1
        self.stats.calls += 1
        self.stats.latencies.append(latency)
        self._progress_update(len(group), changed=completion.outcome == REFUSAL)

    def _release_images(self, group: Sequence[WorkItem]) -> None:
        """Drop the image bytes of a finished group (duplicates arriving later need only its outcome)."""
        if isinstance(group, list):
            group[:] = [without_image(i) for i in group]

    def _record_spend(self, group: Sequence[WorkItem], attempts: int, tokens_in: int, tokens_out: int, reason: str) -> None:
        """Journal what a failed question's attempts were billed (never read back as a result)."""
        if not (tokens_in or tokens_out):
            return
        record = spend_record(group[0], self.journal_fields, reason, attempts, (tokens_in, tokens_out))
        if self.journal is not None:
            record = self.journal.append(record)
        self._spent.append(record)

    def _fail(self, group: Sequence[WorkItem], reason: str) -> None:
        reason = redact(reason, self._secrets)
        self._key_failure[group[0].key] = reason
        self._release_images(group)
        for item in group:
            self._failures[item.query.id] = reason
        self.stats.failures += len(group)
        log.warning("%s: %s failed: %s", self.desc, ", ".join(i.query.id for i in group), reason)
        self._progress_update(len(group), changed=True)

    def _delay(self, attempt: int, err: CallError) -> float:
        if err.retry_after is not None:
            ra = min(err.retry_after, self.s.retry_after_max_s)
            return ra + self._rng.random() * min(1.0, 0.1 * ra + 0.01)
        base = min(self.s.backoff_max_s, self.s.backoff_base_s * 2 ** (attempt - 1))
        return base * (0.5 + 0.5 * self._rng.random())

    def _stops_run(self, err: CallError) -> bool:
        return err.fatal or (err.kind == "bad_request" and self._successes == 0)

    # -- async path -----------------------------------------------------------------------
    async def _run_async(self, items: Iterator[WorkItem]) -> None:
        store = FileStore(self.pacing) if self.pacing is not None else MemoryStore()
        limiter = RateLimiter(self.s.concurrency, self.s.requests_per_minute, self.s.tokens_per_minute, store=store)
        queue: asyncio.Queue[list[WorkItem] | None] = asyncio.Queue(maxsize=QUEUE_PER_WORKER * self.s.concurrency)
        workers = [asyncio.create_task(self._worker(queue, limiter)) for _ in range(self.s.concurrency)]
        stopped = _watch(workers)
        try:
            for n, item in enumerate(items, start=1):
                group = self._accept(item)
                if group is not None:
                    await self._put(queue, group, stopped)  # bounded: only a few questions (and images) wait
                    if self._ready is None:  # the first call: set up the backend and send it before reading on
                        self._ready = asyncio.ensure_future(asyncio.to_thread(self.backend.prepare))
                        await asyncio.wait({self._ready})
                        for _ in range(3):
                            await asyncio.sleep(0)  # the worker takes the question and sends it
                        if self._progress is not None:
                            self._progress.start()  # the bar after the first request, not before it
                if n % PRODUCER_CHUNK == 0:
                    await asyncio.sleep(0)  # let the workers send what is ready
            for _ in workers:
                await self._put(queue, None, stopped)
            await asyncio.gather(*workers)
        finally:
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            if self._ready is not None:
                await asyncio.gather(self._ready, return_exceptions=True)
            await self.backend.aclose()
            limiter.close()

    @staticmethod
    async def _put(queue: asyncio.Queue[Any], value: Any, stopped: asyncio.Future[asyncio.Task[None] | None]) -> None:
        """Put into the bounded queue; a worker that died (its error is raised here) never leaves it full
        forever (``stopped``: :func:`_watch`'s future of the workers)."""
        try:
            queue.put_nowait(value)
            return
        except asyncio.QueueFull:
            pass
        put = asyncio.ensure_future(queue.put(value))
        await asyncio.wait((put, stopped), return_when=asyncio.FIRST_COMPLETED)
        if put.done():
            return
        put.cancel()
        failed = stopped.result()
        if failed is not None:
            raise failed.exception()  # type: ignore[misc]

    async def _worker(self, queue: asyncio.Queue[list[WorkItem] | None], limiter: RateLimiter) -> None:
        while True:
            group = await queue.get()
            if group is None:
                return
            if self._abort is not None:
                self._fail(group, f"not attempted: {self._abort}")
                continue
            if self._ready is None:  # the first call: the backend's slow set-up, off the event loop
                self._ready = asyncio.ensure_future(asyncio.to_thread(self.backend.prepare))
            await self._ready
            await self._call(group, limiter)

    async def _attempt(self, query: Query) -> Completion:
        try:
            if self.backend.times_out:  # its HTTP client ends the attempt after timeout_s: no second timer
                completion = await self.backend.acomplete(query)
            else:
                async with asyncio.timeout(self.s.timeout_s):  # no task per call, as wait_for makes (Python 3.11)
                    completion = await self.backend.acomplete(query)
        except TimeoutError:
            raise CallError(f"no answer within {self.s.timeout_s:g} s", retryable=True, kind="timeout") from None
        except CallError:
            raise
        except Exception as exc:  # an SDK or parsing error the backend did not classify
            raise CallError(f"{type(exc).__name__}: {exc}", retryable=True, kind="error") from exc
        if not isinstance(completion, Completion) or not isinstance(completion.text, str):
            raise CallError("the backend returned no text", retryable=True, kind="malformed")
        return completion

    async def _call(self, group: list[WorkItem], limiter: RateLimiter) -> None:
        item = group[0]
        rejected = rejected_in = 0  # tokens of attempts rejected (empty answers), still billed
        empty_budget = empty_stop = 0
        attempt = 0
        while True:
            attempt += 1
            if self._abort is not None:
                self._record_spend(group, attempt - 1, rejected_in, rejected, f"not attempted: {self._abort}")
                self._fail(group, f"not attempted: {self._abort}")
                return
            async with limiter.slot(item.est_tokens, retry=attempt > 1) as ticket:
                t0 = time.perf_counter()
                self.stats.attempts += 1
                try:
                    completion = await self._attempt(item.query)
                    err = None
                    if self.s.retry_empty and completion.outcome != REFUSAL and not completion.text.strip():
                        completion.outcome = EMPTY
                        if budget_spent(completion.finish_reason):
                            empty_budget += 1
                            if empty_budget > self.s.empty_budget_retries:  # the model's answer under the budget
                                completion.detail = "token budget spent"
                            else:
                                err = CallError("empty answer (token budget spent)", retryable=True, kind="empty")
                        else:
                            empty_stop += 1
                            err = CallError(
                                f"empty answer (finish reason {completion.finish_reason})", retryable=True, kind="empty"
                            )
                            if empty_stop > self.s.empty_retries:
                                err.retryable = False
                        if err is not None:
                            rejected += completion.output_tokens or 0
                            rejected_in += completion.input_tokens or 0
                except CallError as exc:
                    err = exc
                latency = time.perf_counter() - t0
                if err is None or err.kind == "empty":  # an answer came: the call itself went through
                    used = (completion.input_tokens or 0) + (completion.output_tokens or 0)
                    ticket.done("ok", completion.headers, tokens=used or None)
                elif err.kind in ("rate_limit", "overloaded"):
                    ticket.done("limited", err.headers, err.retry_after)
                else:
                    ticket.done("other", err.headers)
            if err is None:
                limiter.settle(item.est_tokens, used if completion.input_tokens is not None else None)
                self._succeed(
                    group, completion, latency=latency, attempts=attempt, rejected=rejected, rejected_input=rejected_in
                )
                return
            self.stats.count_error(err.kind)
            message = redact(str(err), self._secrets)
            if err.kind == "refusal":  # a moderation rejection of this question: final, journaled
                refused = Completion(text="", finish_reason=None, outcome=REFUSAL, detail=message)
                self._succeed(
                    group, refused, latency=latency, attempts=attempt, rejected=rejected, rejected_input=rejected_in
                )
                return
            if self._stops_run(err):
                if self._abort is None:
                    self._abort = f"{self.desc}: the provider refused the request ({err.kind}): {message}"
                self._record_spend(group, attempt, rejected_in, rejected, f"{err.kind}: {message}")
                self._fail(group, f"{err.kind}: {message}")
                return
            if not err.retryable or attempt >= self.s.max_attempts:
                reason = (
                    f"{err.kind}: {message}"
                    if not err.retryable and err.kind != "empty"
                    else f"gave up after {attempt} attempts; last error ({err.kind}): {message}"
                )
                self._record_spend(group, attempt, rejected_in, rejected, reason)
                self._fail(group, reason)
                return
            self.stats.retries += 1
            if self._progress is not None:
                self._progress.update(0, changed=True)
            delay = self._delay(attempt, err)
            log.debug("%s: %s attempt %d failed (%s); retrying in %.2f s", self.desc, item.query.id, attempt, message, delay)
            await asyncio.sleep(delay)

    # -- batch path -----------------------------------------------------------------------
    def _run_batches(self, pending: list[list[WorkItem]]) -> None:
        size = self.s.batch_size
        # a local backend may ask for questions that pad alike to share a batch (order_key), and be told
        # the next batch while it answers this one (prefetch: its CPU work overlaps the GPU's); issue 34
        order_key = getattr(self.backend, "order_key", None) if getattr(self.backend, "group_by_length", False) else None
        if order_key is not None:
            pending = sorted(pending, key=lambda group: order_key(group[0].query))
        prefetch = getattr(self.backend, "prefetch", None)
        try:
            for start in range(0, len(pending), size):
                chunk = pending[start : start + size]
                if prefetch is not None and start + size < len(pending):
                    prefetch([g[0].query for g in pending[start + size : start + 2 * size]])
                self._batch(chunk)
                if self._abort is not None:
                    for group in pending[start + size :]:
                        self._fail(group, f"not attempted: {self._abort}")
                    return
        finally:
            self.backend.close()

    def _batch(self, chunk: list[list[WorkItem]]) -> None:
        queries = [g[0].query for g in chunk]
        attempt = 0
        while True:
            attempt += 1
            t0 = time.perf_counter()
            self.stats.attempts += len(queries)
            try:
                completions = list(self.backend.complete_batch(queries))
                if len(completions) != len(queries):
                    raise CallError(
                        f"the backend returned {len(completions)} answers for {len(queries)} questions",
                        retryable=False,
                        kind="malformed",
                    )
                err = None
            except CallError as exc:
                err = exc
            latency = (time.perf_counter() - t0) / max(1, len(queries))
            if err is None:
                for group, completion in zip(chunk, completions):
                    if isinstance(completion, CallError):  # this question alone failed (e.g. a prompt vLLM cannot serve)
                        self.stats.count_error(completion.kind)
                        self._fail(group, f"{completion.kind}: {redact(str(completion), self._secrets)}")
                    elif completion.outcome == REFUSAL:
                        self._succeed(group, completion, latency=latency, attempts=attempt, rejected=0)
                    elif self.s.retry_empty and not completion.text.strip():
                        self._fail(group, "empty: empty answer")
                    else:
                        self._succeed(group, completion, latency=latency, attempts=attempt, rejected=0)
                return
            self.stats.count_error(err.kind)
            message = redact(str(err), self._secrets)
            if err.fatal:
                self._abort = f"{self.desc}: {message}"
            if not err.retryable or attempt >= self.s.max_attempts:
                for group in chunk:
                    self._fail(group, f"{err.kind}: {message}")
                return
            self.stats.retries += len(queries)
            time.sleep(self._delay(attempt, err))
