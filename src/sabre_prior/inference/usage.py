"""Usage accounting: tokens, calls, retries and estimated cost.

Two files per model and split:

* ``results/usage/<model>/<split>.json`` (:func:`contracts.usage_path`): what the
  split cost, summed over the journal records behind it: every billed attempt
  (answers, the empty answers retried before them, refusals, and the spend of
  questions that failed), calls, retries, tokens, estimated cost, refused
  questions with their reasons, empty answers kept under the token budget,
  failures, and how every image was sent.  Deterministic: re-running from the
  journal rewrites the same bytes (no wall-clock values), so it can be a
  tracked pipeline output.  Written also when the job fails (Snakemake then
  removes it as an incomplete output; the run log keeps a copy).
* ``results/logs/usage/<model>/<split>.json`` (:func:`run_log_path`): the last
  run only: calls made now, answers taken from the journal (``cached``),
  retries, refusals, failures with reasons, latencies, wall time, and the usage
  summary above.  Not a pipeline output; kept when a job fails.

Prices come from the model's params entry:
``prices: {input_per_mtok: <USD per million input tokens>, output_per_mtok: ...}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from .modelconfig import ModelConfig

from .. import contracts as C
from .. import registry

RUN_LOG_DIR = f"{C.LOGS_DIR}/usage"


def run_log_path(model: str, split: str, root: str | Path = ".") -> Path:
    return Path(root) / RUN_LOG_DIR / model / f"{split}.json"


@dataclass(frozen=True)
class Prices:
    """USD per million tokens."""

    input_per_mtok: float
    output_per_mtok: float

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], model: str = "?") -> "Prices | None":
        values = registry.price_values(settings, model)  # checked there (also when params.yaml is read)
        return cls(*values) if values else None

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return round(input_tokens * self.input_per_mtok / 1e6 + output_tokens * self.output_per_mtok / 1e6, 6)

    def as_dict(self) -> dict[str, float]:
        return {"input_per_mtok": self.input_per_mtok, "output_per_mtok": self.output_per_mtok}


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


@dataclass
class Totals:
    calls: int = 0  # distinct provider calls behind the answers
    attempts: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    rejected_input_tokens: int = 0  # input tokens of attempts rejected (empty answers, failed questions)
    rejected_output_tokens: int = 0  # output tokens of those attempts (billed all the same)
    missing_usage: int = 0  # responses without token counts

    def add(self, record: Mapping[str, Any]) -> None:
        self.calls += 1
        self.attempts += _int(record.get("attempts")) or 1
        self.retries += _int(record.get("retries"))
        if record.get("input_tokens") is None and record.get("output_tokens") is None:
            self.missing_usage += 1
        self.input_tokens += _int(record.get("input_tokens"))
        self.output_tokens += _int(record.get("output_tokens"))
        self.rejected_input_tokens += _int(record.get("rejected_input_tokens"))
        self.rejected_output_tokens += _int(record.get("rejected_output_tokens"))

    def add_spend(self, record: Mapping[str, Any]) -> None:
        """A failed question's journaled spend: billed tokens, no call behind an answer."""
        self.attempts += _int(record.get("attempts"))
        self.rejected_input_tokens += _int(record.get("rejected_input_tokens"))
        self.rejected_output_tokens += _int(record.get("rejected_output_tokens"))


def summarize(
    *,
    model: str,
    split: str,
    config: "ModelConfig",
    template: str,
    template_version: str,
    question_ids: Sequence[str],
    records: Mapping[str, Mapping[str, Any]],
    images: Mapping[str, Mapping[str, Any]],
    failures: Mapping[str, str],
    journaled: bool,
    refusals: Mapping[str, Mapping[str, Any]] | None = None,
    spent: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The deterministic usage summary of one model/split (see module docstring).

    ``records``: question id -> journal record of the call that answered it
    (several ids may share one record when their content is identical);
    ``refusals``: question id -> the refusal record; ``spent``: journaled
    spend lines of failed attempts.
    """
    refusals = refusals or {}
    totals = Totals()
    seen: set[str] = set()
    for qid in question_ids:
        rec = records.get(qid) or refusals.get(qid)
        if rec is None:
            continue
        key = str(rec.get("key", qid))
        if key in seen:
            continue
        seen.add(key)
        totals.add(rec)
    for rec in sorted(spent, key=lambda r: (str(r.get("key")), str(r.get("time")))):
        totals.add_spend(rec)
    prices = config.prices
    sent = [{"id": qid, **images[qid]} for qid in question_ids if qid in images]
    reencoded = sum(1 for s in sent if s.get("reencoded"))
    billed_input = totals.input_tokens + totals.rejected_input_tokens
    billed_output = totals.output_tokens + totals.rejected_output_tokens
    refused = {qid: str(refusals[qid].get("detail") or "refused") for qid in question_ids if qid in refusals}
    budget = sorted(
        qid for qid in question_ids if qid in records and str(records[qid].get("outcome")) == "empty"
    )
    from .outcomes import budget_spent

    # every answer that stopped at the output-token limit (empty or not): `truncated` when not correct
    truncated = sorted(
        qid for qid in question_ids if qid in records and budget_spent(records[qid].get("finish_reason"))
    )
    # vLLM's batch-invariant mode (issue 34): the environment the answers were made under, only where set
    environment = {"VLLM_BATCH_INVARIANT": "1"} if config.settings.get("batch_invariant") else {}
    return {
        **({"environment": environment} if environment else {}),
        "model": model,
        "split": split,
        "backend": config.backend,
        "provider": config.provider,
        "model_id": config.model_id,
        "template": template,
        "template_version": template_version,
        "journaled": journaled,
        "questions": len(question_ids),
        "answered": sum(1 for q in question_ids if q in records),
        "refused": len(refused),
        "refused_ids": refused,
        "empty_budget_spent": len(budget),
        "empty_budget_spent_ids": budget,
        "truncated": len(truncated),
        "truncated_ids": truncated,
        # what the provider said served the answers (issue 21): "<model>[ / <system_fingerprint>]" -> answers
        "served": served_versions(records[q] for q in question_ids if q in records),
        "failed": len(failures),
        "failed_ids": sorted(failures),
        "calls": totals.calls,
        "attempts": totals.attempts,
        "retries": totals.retries,
        "input_tokens": totals.input_tokens,
        "output_tokens": totals.output_tokens,
        "rejected_input_tokens": totals.rejected_input_tokens,
        "rejected_output_tokens": totals.rejected_output_tokens,
        "billed_input_tokens": billed_input,
        "billed_output_tokens": billed_output,
        "calls_without_usage": totals.missing_usage,
        "prices": prices.as_dict() if prices else None,
        "estimated_cost_usd": prices.cost(billed_input, billed_output) if prices else None,
        "images": {
            "original": len(sent) - reencoded,
            "reencoded": reencoded,
            "bytes_sent": sum(_int(s.get("bytes")) for s in sent),
        },
        "sent_images": sent,
    }


def served_label(record: Mapping[str, Any]) -> str | None:
    """``"<served model>"`` or ``"<served model> / <system fingerprint>"`` of one journal record (None: not reported)."""
    served = (record.get("extra") or {}).get("served") if isinstance(record.get("extra"), Mapping) else None
    if not isinstance(served, Mapping) or not served.get("model"):
        return None
    fp = served.get("system_fingerprint")
    return f"{served['model']} / {fp}" if fp else str(served["model"])


def served_versions(records: Any) -> dict[str, int]:
    """Served version label -> answers, over records (each distinct call once)."""
    out: dict[str, int] = {}
    seen: set[str] = set()
    for rec in records:
        key = str(rec.get("key"))
        if key in seen:
            continue
        seen.add(key)
        label = served_label(rec)
        if label is not None:
            out[label] = out.get(label, 0) + 1
    return dict(sorted(out.items()))


def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[idx], 4)


@dataclass
class RunStats:
    """Counters of one run (the progress bar's postfix and the run log)."""

    questions: int = 0
    cached: int = 0
    calls: int = 0  # successful calls made in this run
    attempts: int = 0
    retries: int = 0
    failures: int = 0
    refusals: int = 0
    rate_limited: int = 0
    timeouts: int = 0
    latencies: list[float] = field(default_factory=list)
    errors_by_kind: dict[str, int] = field(default_factory=dict)

    def count_error(self, kind: str) -> None:
        self.errors_by_kind[kind] = self.errors_by_kind.get(kind, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "cached": self.cached,
            "calls": self.calls,
            "attempts": self.attempts,
            "retries": self.retries,
            "failures": self.failures,
            "refusals": self.refusals,
            "errors_by_kind": dict(sorted(self.errors_by_kind.items())),
            "latency_s": {
                "p50": percentile(self.latencies, 0.5),
                "p95": percentile(self.latencies, 0.95),
                "max": round(max(self.latencies), 4) if self.latencies else None,
            },
        }


def run_log(
    stats: RunStats, failures: Mapping[str, str], wall_s: float, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The last run's record (not deterministic: wall time and latencies)."""
    out = stats.as_dict()
    out["wall_s"] = round(wall_s, 3)
    out["failed"] = {qid: failures[qid] for qid in sorted(failures)}
    if extra:
        out.update(extra)
    return out


def format_failures(failures: Mapping[str, str], limit: int = 20) -> str:
    """``id: reason`` lines for an error message (the first ``limit``)."""
    lines = [f"  {qid}: {failures[qid]}" for qid in sorted(failures)[:limit]]
    if len(failures) > limit:
        lines.append(f"  ... and {len(failures) - limit} more")
    return "\n".join(lines)
