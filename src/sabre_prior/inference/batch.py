"""Provider batch APIs: the same questions at about half the price, kill-safe and resumable.

With ``batch: true`` (or a ``batch:`` mapping) in a hosted model's params entry,
``sabre predict`` sends the questions that are not in the response journal
through the provider's batch API instead of one call per question:

* ``openai`` (and the OpenAI-compatible providers whose docs describe the same
  Files + Batches endpoints, :data:`OPENAI_COMPATIBLE_BATCH`): a JSONL input
  file (``files.create(purpose="batch")``) and ``batches.create`` for
  ``/v1/chat/completions`` (:mod:`sabre_prior.inference.models.batch_openai`);
* ``anthropic``: Message Batches (:mod:`sabre_prior.inference.models.batch_anthropic`);
* ``gemini``: the google-genai batch interface with inlined requests
  (:mod:`sabre_prior.inference.models.batch_gemini`).

Each request's body is the one the synchronous path sends (the backends'
``request``/``request_body``), and the work items carry the same journal keys,
so an answer obtained by batch is reused by a synchronous run and the other
way round.  Requests are sharded so that no batch exceeds the provider's
documented limits (requests per batch, bytes per input file or request).

**Kill-safe.**  Every batch is recorded in a ledger beside the journal,
``.sabre/journal/<model>/<split>.batches.jsonl``, one appended and fsync-ed
line per event: ``submitting`` (the shard's id and question keys, before the
upload), ``submitted`` (the provider's batch id, before any waiting) and
``ended`` (after its results are in the journal).  A later run re-attaches to
every submitted batch that has not ended (it never submits those questions
again), collects finished ones, and submits only the questions in no batch.
A kill between the provider's answer to "create" and the ``submitted`` line
(a few milliseconds) is covered where the provider lets a batch carry our
shard id (OpenAI ``metadata``, Gemini ``display_name``): the next run finds it
by that id instead of submitting again.

**Outcomes.**  Each result line goes through the synchronous path's parser
and the same outcome classes: an answer is journaled; an empty answer, an
expired or cancelled item and a retryable error (429, 5xx, malformed) are
retried in the next batch or synchronously (``retry: batch|sync``) up to
``max_attempts`` batches; a non-retryable error (400...) fails the question.
A failure is never stored as an answer.

Settings (``models.<name>.batch``): ``true``/``false`` or a mapping with
``enabled`` (default true), ``wait`` (default true: poll until every batch has
ended; false: submit, journal and exit with code 4, "batches pending; run
again to collect"), ``poll_s`` (default 30), ``max_requests`` and
``max_bytes`` (lower the provider's limits), ``retry`` (``batch``, default, or
``sync``), ``max_attempts`` (default 3) and ``prices`` (default: half the
model's ``prices``, the three providers' documented batch discount).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from .modelconfig import ModelConfig

from .engine import EngineResult, EngineSettings, Runner, WorkItem, final_record, redact, spend_record
from ..errors import BackendError, SabreError
from .journal import Journal, is_refusal
from .. import registry
from .models.base import Backend, CallError, Completion
from .outcomes import EMPTY, REFUSAL, budget_spent
from .usage import Prices

log = logging.getLogger(__name__)

#: OpenAI-compatible providers with a batch API and their limits (defined in the registry).
OPENAI_COMPATIBLE_BATCH = registry.OPENAI_COMPATIBLE_BATCH

#: Backends with a batch adapter: backend -> "module:Class".
ADAPTERS: dict[str, str] = {s.name: s.batch for s in registry.BACKENDS if s.batch}  # from the backend registry

#: The discount the three providers document for batch calls (50 %).
DEFAULT_BATCH_DISCOUNT = 0.5

#: ``sabre predict`` exit code when batches are still pending (``wait: false``).
PENDING_EXIT_CODE = 4


class BatchesPending(SabreError):
    """Batches were submitted (or are still running) and ``wait`` is false: run again to collect."""

    exit_code = PENDING_EXIT_CODE


# ---------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class BatchSettings:
    enabled: bool = False
    wait: bool = True
    poll_s: float = 30.0
    max_requests: int | None = None
    max_bytes: int | None = None
    retry: str = "batch"
    max_attempts: int = 3
    prices: Prices | None = None

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], model: str = "?") -> "BatchSettings":
        """Read and check ``models.<model>.batch`` (:func:`sabre_prior.registry.batch_values`)."""
        values = registry.batch_values(settings, model)
        if values is None:
            return cls()
        prices = values.pop("prices")
        return cls(**values, prices=Prices(*prices) if prices else None)


check_supported = registry.check_supported  # `sabre predict` checks a model before its first call


def batch_prices(settings: Mapping[str, Any], model: str = "?") -> Prices | None:
    """The batch prices: ``batch.prices``, else half of ``prices`` (None without prices)."""
    raw = settings.get("batch")
    if isinstance(raw, Mapping) and raw.get("prices") is not None:
        return Prices.from_settings({"prices": raw["prices"]}, f"{model}.batch")
    prices = Prices.from_settings(settings, model)
    if prices is None:
        return None
    return Prices(prices.input_per_mtok * DEFAULT_BATCH_DISCOUNT, prices.output_per_mtok * DEFAULT_BATCH_DISCOUNT)


def apply_batch_pricing(
    usage: dict[str, Any],
    config: "ModelConfig",
    records: Mapping[str, Mapping[str, Any]],
    refusals: Mapping[str, Mapping[str, Any]] | None = None,
    spent: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Price what batches were billed at the batch prices (in the usage summary).

    Adds ``batch: {calls, input_tokens, output_tokens, prices, estimated_cost_usd}``
    (billed tokens of the journal lines with ``"mode": "batch"``: answers, refusals and
    the spend of failed questions) and makes ``estimated_cost_usd`` the synchronous part
    at the model's prices plus the batch part.  A summary without batch lines is
    returned unchanged.
    """
    seen: set[str] = set()
    calls = tin = tout = 0
    for rec in [*records.values(), *(refusals or {}).values()]:
        key = str(rec.get("key"))
        if rec.get("mode") != "batch" or key in seen:
            continue
        seen.add(key)
        calls += 1
        tin += int(rec.get("input_tokens") or 0) + int(rec.get("rejected_input_tokens") or 0)
        tout += int(rec.get("output_tokens") or 0) + int(rec.get("rejected_output_tokens") or 0)
    for rec in spent:
        if rec.get("mode") == "batch":
            tin += int(rec.get("rejected_input_tokens") or 0)
            tout += int(rec.get("rejected_output_tokens") or 0)
    if not calls and not tin and not tout:
        return usage
    prices, bprices = config.prices, config.batch_prices
    part: dict[str, Any] = {
        "calls": calls,
        "input_tokens": tin,
        "output_tokens": tout,
        "prices": bprices.as_dict() if bprices else None,
        "estimated_cost_usd": bprices.cost(tin, tout) if bprices else None,
    }
    out = dict(usage)
    out["batch"] = part
    if prices is not None and bprices is not None and usage.get("estimated_cost_usd") is not None:
        sync_in = int(usage.get("billed_input_tokens") or 0) - tin
        sync_out = int(usage.get("billed_output_tokens") or 0) - tout
        out["estimated_cost_usd"] = round(prices.cost(max(0, sync_in), max(0, sync_out)) + part["estimated_cost_usd"], 6)
    return out


# ---------------------------------------------------------------------------
# The provider interface
# ---------------------------------------------------------------------------
@dataclass
class BatchState:
    """A batch as the provider reports it."""

    status: str  # the provider's own status word
    ended: bool  # no further change: results (if any) can be collected
    total: int
    succeeded: int = 0
    errored: int = 0
    message: str = ""  # why a whole batch failed (validation errors)
    failed_whole: bool = False  # the batch failed as a whole (no results)

    @property
    def done(self) -> int:
        return self.succeeded + self.errored


class BatchAdapter(Protocol):
    """One provider's batch API (see sabre_prior.inference.models.batch_*)."""

    provider: str
    max_requests: int
    max_bytes: int

    def request_line(self, key: str, item: WorkItem) -> bytes:
        """The serialized request of one question as it counts towards the batch size."""

    def submit(self, shard_id: str, keys: Sequence[str], lines: Sequence[bytes]) -> tuple[str, dict[str, Any]]:
        """Create one batch; returns its id and facts to journal (e.g. the input file id)."""

    def find(self, shard_id: str) -> str | None:
        """The id of a batch created for ``shard_id`` whose id was never journaled (None: unknown)."""

    def state(self, batch_id: str) -> BatchState: ...

    def results(self, batch_id: str, state: BatchState) -> Iterator[tuple[str, Completion | CallError]]:
        """(request key, its completion or error) for every result line of an ended batch."""

    def cancel(self, batch_id: str) -> None: ...

    def close(self) -> None: ...


def create_adapter(backend: Backend, settings: BatchSettings) -> BatchAdapter:
    import importlib

    name = str(backend.settings.get("backend"))
    if name not in ADAPTERS:
        raise BackendError(f"backend {name!r} has no batch mode")
    module, _, cls = ADAPTERS[name].partition(":")
    adapter: BatchAdapter = getattr(importlib.import_module(module), cls)(backend)
    if settings.max_requests is not None:
        adapter.max_requests = min(adapter.max_requests, settings.max_requests)
    if settings.max_bytes is not None:
        adapter.max_bytes = min(adapter.max_bytes, settings.max_bytes)
    return adapter


def shard(lines: Sequence[tuple[str, bytes]], max_requests: int, max_bytes: int, overhead: int = 0) -> tuple[list[list[tuple[str, bytes]]], list[str]]:
    """Greedy in order: each shard holds at most ``max_requests`` lines and ``max_bytes`` bytes.

    ``overhead`` counts bytes every batch adds around its lines.  Returns the shards
    and the keys of lines too large for any batch.
    """
    shards: list[list[tuple[str, bytes]]] = []
    too_large: list[str] = []
    current: list[tuple[str, bytes]] = []
    size = overhead
    for key, line in lines:
        if overhead + len(line) > max_bytes:
            too_large.append(key)
            continue
        if current and (len(current) >= max_requests or size + len(line) > max_bytes):
            shards.append(current)
            current, size = [], overhead
        current.append((key, line))
        size += len(line)
    if current:
        shards.append(current)
    return shards, too_large


# ---------------------------------------------------------------------------
# The ledger of submitted batches
# ---------------------------------------------------------------------------
def ledger_path(journal_path: str | Path) -> Path:
    """``<split>.batches.jsonl`` beside the journal ``<split>.jsonl``."""
    p = Path(journal_path)
    return p.with_name(p.stem + ".batches.jsonl")


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class LedgerBatch:
    shard: str
    keys: list[str]
    batch_id: str | None = None
    ended: str | None = None  # the final status once collected
    submitted_at: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    cancel_requested: bool = False


class Ledger:
    """Append-only record of the batches of one model and split (see the module docstring)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.batches: dict[str, LedgerBatch] = {}  # shard id -> batch
        self._read()

    def _read(self) -> None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        cut = data.rfind(b"\n") + 1  # a torn last line (a kill mid-write) is ignored
        for lineno, raw in enumerate(data[:cut].split(b"\n"), start=1):
            if not raw.strip():
                continue
            try:
                ev = json.loads(raw)
                self._apply(ev)
            except (ValueError, KeyError, TypeError):
                log.warning("%s:%d: unreadable batch ledger line skipped", self.path, lineno)

    def _apply(self, ev: Mapping[str, Any]) -> None:
        kind, sid = ev["event"], ev["shard"]
        if kind == "submitting":
            self.batches[sid] = LedgerBatch(shard=sid, keys=list(ev["keys"]))
            return
        b = self.batches[sid]
        if kind == "submitted":
            b.batch_id, b.submitted_at = ev["batch_id"], ev.get("time")
            b.info = dict(ev.get("info") or {})
        elif kind == "ended":
            b.ended = str(ev.get("status") or "ended")
        elif kind == "cancel_requested":
            b.cancel_requested = True
        elif kind == "abandoned":
            b.ended = "abandoned"

    def append(self, event: Mapping[str, Any]) -> None:
        ev = {**event, "time": _now()}
        line = (json.dumps(ev, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        self._apply(ev)

    def pending(self) -> list[LedgerBatch]:
        """Submitted batches whose results are not collected yet."""
        return [b for b in self.batches.values() if b.batch_id is not None and b.ended is None]

    def unconfirmed(self) -> list[LedgerBatch]:
        """Shards whose creation was started but whose batch id was never recorded."""
        return [b for b in self.batches.values() if b.batch_id is None and b.ended is None]

    def cancel_requested(self, shard: str) -> bool:
        """Whether ``sabre batches --cancel`` (maybe another process) asked to cancel this batch."""
        b = self.batches.get(shard)
        if b is not None and not b.cancel_requested:
            on_disk = Ledger(self.path).batches.get(shard)
            b.cancel_requested = bool(on_disk and on_disk.cancel_requested)
        return bool(b and b.cancel_requested)

    def attempts(self, key: str) -> int:
        """How many submitted batches held this request."""
        return sum(1 for b in self.batches.values() if b.batch_id is not None and key in b.keys)


# ---------------------------------------------------------------------------
# Progress: one bar per batch
# ---------------------------------------------------------------------------
class _Bars:
    def __init__(self, desc: str, enabled: bool) -> None:
        self.desc = desc
        self.enabled = enabled
        self.bars: dict[str, Any] = {}

    def update(self, batch_id: str, st: BatchState) -> None:
        if not self.enabled:
            return
        bar = self.bars.get(batch_id)
        if bar is None:
            from tqdm import tqdm

            tty = sys.stderr.isatty()
            bar = tqdm(
                total=st.total,
                desc=f"{self.desc} {batch_id[-12:]}",
                unit="req",
                position=len(self.bars),
                mininterval=0.5 if tty else 5.0,
                dynamic_ncols=tty,
                file=sys.stderr,
                leave=True,
            )
            self.bars[batch_id] = bar
        bar.set_postfix(status=st.status, ok=st.succeeded, errored=st.errored, refresh=False)
        if st.done > bar.n:
            bar.update(st.done - bar.n)
        else:
            bar.refresh()

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()
        self.bars.clear()


# ---------------------------------------------------------------------------
# The batch engine
# ---------------------------------------------------------------------------
class BatchEngine(Runner):
    """Answers work items through a provider batch API (same interface as :class:`engine.Engine`).

    Outcomes follow the synchronous engine (:mod:`sabre_prior.inference.engine`, :mod:`sabre_prior.inference.outcomes`):
    an answer is journaled; a refusal (in the response, or a moderation error) is journaled as
    final for its question and never a prediction; an empty answer whose token budget ran out
    is retried ``empty_budget_retries`` times, then kept as the model's (empty) answer; an empty
    answer with a normal stop is retried ``empty_retries`` times, then the question fails; what
    failed questions were billed is journaled as spend.  Retries go into the next batch (or to
    the synchronous engine, ``retry: sync``).
    """

    def __init__(
        self,
        backend: Backend,
        journal: Journal | None,
        settings: EngineSettings,
        *,
        batch: BatchSettings | None = None,
        adapter: BatchAdapter | None = None,
        sleep: Any = time.sleep,
        pacing: Path | None = None,
        **common: Any,
    ) -> None:
        """``common``: :class:`~sabre_prior.inference.engine.Runner`'s keywords (desc, progress, journal_fields, seed);
        ``pacing``: the model's shared pacing state, for the synchronous retries (``retry: sync``)."""
        if journal is None:
            raise BackendError("batch mode needs the response journal")
        super().__init__(backend, journal, settings, **common)
        self.journal: Journal = journal
        self.b = batch or BatchSettings.from_settings(backend.settings, backend.name)
        self._adapter = adapter
        self._sleep = sleep
        self.pacing = pacing
        self.ledger = Ledger(ledger_path(journal.path))
        self.groups: dict[str, list[WorkItem]] = {}
        self.answers: dict[str, str] = {}
        self.records: dict[str, dict[str, Any]] = {}
        self.refusals: dict[str, dict[str, Any]] = {}
        self.spent: list[dict[str, Any]] = []
        self.failures: dict[str, str] = {}  # question id -> reason (final)
        self.retry: dict[str, str] = {}  # key -> last retryable reason
        self._final: set[str] = set()  # keys with a final outcome in this run
        self._rejected: dict[str, list[int]] = {}  # key -> [input, output] tokens of rejected (empty) answers
        self._empty_budget: dict[str, int] = {}
        self._empty_stop: dict[str, int] = {}
        self._submit_errors: dict[str, int] = {}  # key -> batch creations that failed for it
        #: what this run did with the provider, for tests and the log
        self.submitted: list[str] = []
        self.reattached: list[str] = []
        self.collected: list[str] = []

    @property
    def adapter(self) -> BatchAdapter:
        if self._adapter is None:
            self._adapter = create_adapter(self.backend, self.b)
        return self._adapter

    # -- bookkeeping ------------------------------------------------------------------
    def _journaled(self, key: str) -> dict[str, Any] | None:
        """The journal's final record of ``key`` (None when it must still be asked)."""
        rec = self.journal.get(key)
        if rec is not None and self.s.retry_refusals and is_refusal(rec) and key not in self._final:
            return None  # asked to send refused questions again
        return rec

    def _accept(self, items: Iterable[WorkItem]) -> None:
        for item in items:
            self.stats.questions += 1
            group = self.groups.setdefault(item.key, [])
            group.append(item)
            if len(group) == 1:
                self.spent.extend(self.journal.spent(item.key))
            rec = self._journaled(item.key)
            if rec is not None:
                if len(group) == 1:
                    self.stats.cached += 1
                self._assign_one(item, rec)

    def _assign_one(self, item: WorkItem, record: dict[str, Any]) -> None:
        if is_refusal(record):
            self.refusals[item.query.id] = record
            self.stats.refusals += 1
        else:
            self.answers[item.query.id] = record["text"]
            self.records[item.query.id] = record

    def _open(self) -> list[str]:
        """Keys of the questions still without a final outcome."""
        return [k for k in self.groups if self._journaled(k) is None and not self._failed(k)]

    def _failed(self, key: str) -> bool:
        group = self.groups.get(key) or []
        return bool(group) and group[0].query.id in self.failures

    def _fail(self, key: str, reason: str) -> None:
        reason = redact(reason, self._secrets)
        self.retry.pop(key, None)
        group = self.groups.get(key, [])
        for item in group:
            self.failures[item.query.id] = reason
        self.stats.failures += len(group)
        tin, tout = self._rejected.pop(key, [0, 0])
        if (tin or tout) and group:  # what its rejected answers were billed: spend, never a result
            record = spend_record(group[0], self.journal_fields, reason, self._tries(key), (tin, tout), mode="batch")
            self.spent.append(self.journal.append(record))
        log.warning("%s: %s failed: %s", self.desc, ", ".join(i.query.id for i in group), reason)

    def _finalize(self, key: str, completion: Completion, batch: LedgerBatch) -> None:
        """Journal a final response: an answer, an empty answer kept as such, or a refusal."""
        item = self.groups[key][0]
        attempts = self.ledger.attempts(key)
        tin, tout = self._rejected.pop(key, [0, 0])
        record = final_record(
            item, self.journal_fields, completion, attempts=attempts, retries=max(0, attempts - 1),
            rejected=(tin, tout), latency_s=None, secrets=self._secrets, mode="batch", batch_id=batch.batch_id,
        )  # fmt: skip
        record = self.journal.append(record)
        self._final.add(key)
        self.retry.pop(key, None)
        for it in self.groups[key]:
            self._assign_one(it, record)
        self.stats.calls += 1
        if completion.outcome == REFUSAL:
            log.warning("%s: %s refused (%s)", self.desc, item.query.id, record.get("detail"))

    # -- entry point ----------------------------------------------------------------
    def run(self, items: Iterable[WorkItem], total: int | None = None) -> EngineResult:
        t0 = time.perf_counter()
        self._accept(items)
        bars = _Bars(self.desc, self.progress)
        try:
            if self._open():
                self._loop(bars)
        finally:
            bars.close()
            if self._adapter is not None:
                self._adapter.close()
        sync_keys = [k for k in self.retry if k in self.groups]
        if sync_keys and self.b.retry == "sync":
            self._run_sync(sync_keys)
        for key, reason in list(self.retry.items()):
            if key in self.groups and self._journaled(key) is None:
                self._fail(key, f"gave up after {self._tries(key)} batch attempts; last error: {reason}")
        pending = self._relevant()
        if pending:
            ids = ", ".join(str(b.batch_id) for b in pending)
            waiting = sum(len(b.keys) for b in pending)
            raise BatchesPending(
                f"{self.desc}: batches pending; run again to collect ({len(pending)} batches, {waiting} requests: {ids}). "
                f"{len(self.answers)} answers are in the journal; `sabre batches --model {self.backend.name}` shows their status. "
                f"No prediction file was written."
            )
        return EngineResult(
            answers=self.answers,
            records=self.records,
            failures=self.failures,
            stats=self.stats,
            refusals=self.refusals,
            spent=self.spent,
            aborted=None,
            wall_s=time.perf_counter() - t0,
        )

    def _relevant(self) -> list[LedgerBatch]:
        """Pending batches holding a question still without an outcome (others are left alone)."""
        open_keys = set(self._open())
        return [b for b in self.ledger.pending() if any(k in open_keys for k in b.keys)]

    def _tries(self, key: str) -> int:
        return self.ledger.attempts(key) + self._submit_errors.get(key, 0)

    def _loop(self, bars: _Bars) -> None:
        self._confirm_unconfirmed()
        in_batch = {k for b in self.ledger.pending() for k in b.keys}
        self.reattached = [str(b.batch_id) for b in self._relevant()]
        todo = [k for k in self._open() if k not in in_batch]
        while True:
            if todo:
                self._submit(todo)
                todo = []
            for b in self._relevant():
                st = self._state(b)
                st.total = st.total or len(b.keys)  # Gemini reports no counts: the requests we sent
                if st.ended and not st.done and not st.failed_whole:
                    st.succeeded = st.total
                bars.update(str(b.batch_id), st)
                if st.ended:
                    self._collect(b, st)
            if self.retry and self.b.retry == "batch":
                todo = [k for k in self.retry if self._journaled(k) is None and self._tries(k) < self.b.max_attempts]
            waiting = self._relevant()
            if not waiting and not todo:
                return
            if not self.b.wait:
                if todo:  # failed items go out in a new batch now; collected next time
                    self._submit(todo)
                return
            if waiting or self._submit_errors:  # poll; or back off after a refused submission
                self._sleep(self.b.poll_s)

    def _state(self, b: LedgerBatch) -> BatchState:
        try:
            return self.adapter.state(str(b.batch_id))
        except CallError as exc:
            if exc.fatal:
                raise BackendError(f"{self.desc}: batch {b.batch_id}: {redact(str(exc), self._secrets)}") from None
            log.warning(
                "%s: status of batch %s unavailable (%s); asking again later", self.desc, b.batch_id, redact(str(exc), self._secrets)
            )
            return BatchState(status="unknown", ended=False, total=len(b.keys))

    # -- submitting -------------------------------------------------------------------
    def _confirm_unconfirmed(self) -> None:
        for b in self.ledger.unconfirmed():
            found = None
            try:
                found = self.adapter.find(b.shard)
            except CallError as exc:
                log.warning("%s: could not look up shard %s (%s)", self.desc, b.shard, exc)
            if found:
                log.info("%s: found batch %s created for shard %s before a kill", self.desc, found, b.shard)
                self.ledger.append({"event": "submitted", "shard": b.shard, "batch_id": found, "info": {"found": True}})
            else:
                self.ledger.append({"event": "abandoned", "shard": b.shard})

    def _submit(self, keys: Sequence[str]) -> None:
        adapter = self.adapter
        lines = [(k, adapter.request_line(k, self.groups[k][0])) for k in keys]
        per_request = int(getattr(adapter, "max_request_bytes", 0) or 0)
        fitting = [(k, line) for k, line in lines if not per_request or len(line) <= per_request]
        shards, too_large = shard(fitting, adapter.max_requests, adapter.max_bytes, getattr(adapter, "overhead", 0))
        too_large += [k for k, line in lines if per_request and len(line) > per_request]
        for key in too_large:
            size = len(dict(lines)[key])
            limit = min(x for x in (per_request, adapter.max_bytes) if x)
            self._fail(
                key,
                f"bad_request: the request is {size} bytes, over the {adapter.provider} batch limit of "
                f"{limit} bytes; set models.{self.backend.name}.image.max_bytes",
            )
        for part in shards:
            shard_id = uuid.uuid4().hex[:16]
            shard_keys = [k for k, _ in part]
            size = sum(len(line) for _, line in part)
            # journaled before the provider hears of it: a kill after this line never loses track
            self.ledger.append(
                {
                    "event": "submitting",
                    "shard": shard_id,
                    "keys": shard_keys,
                    "ids": [i.query.id for k in shard_keys for i in self.groups[k]],
                    "requests": len(part),
                    "bytes": size,
                }
            )
            try:
                batch_id, info = adapter.submit(shard_id, shard_keys, [line for _, line in part])
            except CallError as exc:
                self.ledger.append({"event": "abandoned", "shard": shard_id})
                message = redact(str(exc), self._secrets)
                if exc.fatal or exc.kind == "bad_request":
                    raise BackendError(f"{self.desc}: the provider refused the batch ({exc.kind}): {message}") from None
                for k in shard_keys:
                    self.retry[k] = f"{exc.kind}: batch not created: {message}"
                    self._submit_errors[k] = self._submit_errors.get(k, 0) + 1
                log.warning("%s: batch of %d requests not created: %s", self.desc, len(part), message)
                continue
            self.ledger.append({"event": "submitted", "shard": shard_id, "batch_id": batch_id, "info": info})
            self.submitted.append(batch_id)
            for k in shard_keys:
                self.retry.pop(k, None)
            log.info("%s: submitted batch %s (%d requests, %d bytes)", self.desc, batch_id, len(part), size)

    # -- collecting -------------------------------------------------------------------
    def _collect(self, b: LedgerBatch, st: BatchState) -> None:
        seen: set[str] = set()
        wanted = set(b.keys)
        ok = bad = 0
        stopped = self.ledger.cancel_requested(b.shard)  # the user cancelled it: do not send its requests again
        if not st.failed_whole:
            for key, outcome in self.adapter.results(str(b.batch_id), st):
                if key not in wanted or key in seen:
                    continue
                seen.add(key)
                if key not in self.groups or self._journaled(key) is not None:
                    continue  # not asked in this run, or answered meanwhile (e.g. by a synchronous run)
                self.stats.attempts += 1
                if isinstance(outcome, Completion):
                    outcome = self._judge(key, outcome)
                if isinstance(outcome, Completion):
                    self._finalize(key, outcome, b)
                    ok += 1
                    continue
                bad += 1
                self.stats.count_error(outcome.kind)
                message = redact(str(outcome), self._secrets)
                if outcome.kind == "refusal":  # a moderation rejection of this question: final, journaled
                    self._finalize(key, Completion(text="", outcome=REFUSAL, detail=message), b)
                elif stopped and outcome.kind in ("cancelled", "expired"):
                    self._fail(key, f"cancelled: batch {b.batch_id} was cancelled (sabre batches --cancel); run again to submit it anew")
                elif outcome.retryable:
                    self.retry[key] = f"{outcome.kind}: {message}"
                else:
                    self._fail(key, f"{outcome.kind}: {message}")
        for key in wanted - seen:
            if key in self.groups and self._journaled(key) is None and not self._failed(key):
                if st.failed_whole:
                    self._fail(key, f"batch {b.batch_id} {st.status}: {st.message or 'no results'}")
                elif stopped:
                    self._fail(key, f"cancelled: batch {b.batch_id} was cancelled (sabre batches --cancel); run again to submit it anew")
                else:
                    self.retry[key] = f"missing: batch {b.batch_id} ended ({st.status}) without a result for it"
        self.ledger.append({"event": "ended", "shard": b.shard, "batch_id": b.batch_id, "status": st.status, "answered": ok, "errored": bad})
        self.collected.append(str(b.batch_id))

    def _judge(self, key: str, completion: Completion) -> Completion | CallError:
        """The synchronous engine's rules for one response (see the class docstring)."""
        if completion.outcome == REFUSAL:
            return completion
        if not isinstance(completion.text, str):
            return CallError("the backend returned no text", retryable=True, kind="malformed")
        if not self.s.retry_empty or completion.text.strip():
            return completion
        completion.outcome = EMPTY
        if budget_spent(completion.finish_reason):
            n = self._empty_budget[key] = self._empty_budget.get(key, 0) + 1
            if n > self.s.empty_budget_retries:  # the model's answer under the budget
                completion.detail = "token budget spent"
                return completion
            err = CallError("empty answer (token budget spent)", retryable=True, kind="empty")
        else:
            n = self._empty_stop[key] = self._empty_stop.get(key, 0) + 1
            err = CallError(f"empty answer (finish reason {completion.finish_reason})", retryable=n <= self.s.empty_retries, kind="empty")
        rejected = self._rejected.setdefault(key, [0, 0])  # billed all the same
        rejected[0] += completion.input_tokens or 0
        rejected[1] += completion.output_tokens or 0
        return err

    def _run_sync(self, keys: Sequence[str]) -> None:
        """``retry: sync``: the failed requests once more through the synchronous engine."""
        from .engine import Engine

        items = [item for k in keys for item in self.groups[k] if self._journaled(k) is None]
        if not items:
            return
        log.info("%s: retrying %d requests synchronously", self.desc, len({i.key for i in items}))
        engine = Engine(
            self.backend,
            self.journal,
            self.s,
            desc=f"{self.desc} (sync retry)",
            progress=self.progress,
            journal_fields=self.journal_fields,
            seed=self.seed,
            pacing=self.pacing,
        )
        result = engine.run(items)
        self.records.update(result.records)
        self.answers.update(result.answers)
        self.refusals.update(result.refusals)
        self.spent.extend(r for r in result.spent if r not in self.spent)
        for k in keys:
            self.retry.pop(k, None)
            if self.journal.get(k) is not None:
                self._final.add(k)
        self.failures.update(result.failures)
        self.stats.calls += result.stats.calls
        self.stats.failures += result.stats.failures
        self.stats.refusals += result.stats.refusals


# ---------------------------------------------------------------------------
# `sabre batches`
# ---------------------------------------------------------------------------
def list_batches(model: str, settings: Mapping[str, Any], splits: Sequence[str], *, journal_dir: str | Path | None = None, cancel: bool = False, query: bool = True) -> list[dict[str, Any]]:
    """The pending batches of ``model`` (each split's ledger), with the provider's status; cancel them on request."""
    from .journal import journal_path
    from .models.base import create_backend

    rows: list[dict[str, Any]] = []
    adapter: BatchAdapter | None = None
    bs = BatchSettings.from_settings({**settings, "batch": settings.get("batch") or True}, model)
    try:
        for split in splits:
            ledger = Ledger(ledger_path(journal_path(model, split, journal_dir=journal_dir)))
            for b in ledger.pending():
                row: dict[str, Any] = {
                    "split": split,
                    "batch_id": b.batch_id,
                    "requests": len(b.keys),
                    "submitted": b.submitted_at,
                    "status": "?",
                    "succeeded": None,
                    "errored": None,
                }
                if query or cancel:
                    if adapter is None:
                        backend = create_backend(model, settings)
                        backend.check_ready()
                        adapter = create_adapter(backend, bs)
                    st = adapter.state(str(b.batch_id))
                    row.update(status=st.status, succeeded=st.succeeded, errored=st.errored)
                    if cancel and not st.ended:
                        adapter.cancel(str(b.batch_id))
                        ledger.append({"event": "cancel_requested", "shard": b.shard, "batch_id": b.batch_id})
                        row["status"] = f"{st.status} -> cancel requested"
                rows.append(row)
    finally:
        if adapter is not None:
            adapter.close()
    return rows


def format_batches(model: str, rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return f"{model}: no pending batches"
    header = ("split", "batch id", "requests", "status", "succeeded", "errored", "submitted")
    body = [
        tuple("" if r.get(k) is None else str(r.get(k)) for k in ("split", "batch_id", "requests", "status", "succeeded", "errored", "submitted"))
        for r in rows
    ]
    widths = [max(len(x[i]) for x in [header, *body]) for i in range(len(header))]
    lines = [f"{model}: {len(rows)} pending batches", "  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in body]
    return "\n".join(lines)
