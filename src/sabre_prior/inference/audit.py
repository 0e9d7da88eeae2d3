"""``sabre audit``: the API stability audit (issue 21; docs/stability.md).

``audit: {repeats: k, questions: n | all, seed: s}`` in params.yaml (off while ``repeats`` is 1).
A fixed, seeded, stratified subset of every split (:func:`audited_ids`: whole pairs of the paired
splits, so every probe is equally represented; questions spread over the expected answers of the
others) is asked again ``k - 1`` times.  Repeat 0 *is* the main run (its traces): nothing is paid
twice.  Repeat ``r`` has journal keys of its own (``request_key(..., repeat=r)``) and its own
journal (``.sabre/journal/audit/r<r>/<model>/<split>.jsonl``), so that raising ``repeats`` pays only
for the new repeats, and its usage summaries are kept in ``results/audit/<model>/usage/r<r>/``.

``results/audit/<model>.json`` holds per repeat and question the normalized answer and whether
it is correct, and the statistics (:func:`stability`): the flip rate (share of audited questions
whose normalized answer is not the same in every repeat; a missing answer counts as an answer of
its own) with a percentile bootstrap interval over the questions, and the accuracy on the subset
per repeat, its mean, standard deviation and range.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import contracts as C
from ..errors import ConfigError

DEFAULT_QUESTIONS = 20


@dataclass(frozen=True)
class AuditSettings:
    repeats: int = 1
    questions: int | str = DEFAULT_QUESTIONS  # per split, or "all"
    seed: int = 0

    @property
    def enabled(self) -> bool:
        return self.repeats > 1


def audit_settings(params: Mapping[str, Any]) -> AuditSettings:
    section = params.get("audit") or {}
    questions = section.get("questions", DEFAULT_QUESTIONS)
    if questions != "all" and (isinstance(questions, bool) or not isinstance(questions, int) or questions < 1):
        raise ConfigError(f"audit.questions must be a positive integer or 'all', got {questions!r}")
    return AuditSettings(int(section.get("repeats", 1)), questions, int(section.get("seed", 0)))


def audit_journal_dir(repeat: int, root: str | Path = ".") -> Path:
    return Path(root) / C.JOURNAL_DIR / "audit" / f"r{repeat}"


def _rank(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}\x00{key}".encode()).hexdigest()


def select_subset(rows: Sequence[Mapping[str, Any]], split: str, settings: AuditSettings) -> set[str]:
    """The audited question ids of one split (pure; independent of row order)."""
    if settings.questions == "all":
        return {str(r[C.COL_ID]) for r in rows}
    n = int(settings.questions)
    if split in C.PAIRED_SPLITS:  # whole pairs: every probe equally represented
        pairs = sorted({str(r[C.COL_PAIR_ID]) for r in rows}, key=lambda p: _rank(settings.seed, p))
        keep = set(pairs[: max(1, -(-n // len(C.PROBES[split])))])
        return {str(r[C.COL_ID]) for r in rows if str(r[C.COL_PAIR_ID]) in keep}
    strata: dict[str, list[str]] = {}
    for r in rows:  # stratified by the expected answer, round robin over the strata
        strata.setdefault(str(r.get(C.COL_ANSWER)), []).append(str(r[C.COL_ID]))
    queues = [sorted(ids, key=lambda i: _rank(settings.seed, i)) for _, ids in sorted(strata.items())]
    chosen: list[str] = []
    while len(chosen) < min(n, len(rows)):
        for q in queues:
            if q and len(chosen) < n:
                chosen.append(q.pop(0))
    return set(chosen)


def audited_ids(data_path: Path, split: str, settings: AuditSettings) -> set[str]:
    from ..data.parquet import read_rows

    return select_subset(read_rows(data_path), split, settings)


# ---------------------------------------------------------------------------
# Statistics (pure)
# ---------------------------------------------------------------------------
def stability(answers: Mapping[str, Sequence[Mapping[str, Any]]], resamples: int, seed: int, confidence: float) -> dict[str, Any]:
    """``answers``: question key -> one ``{"answer", "correct"}`` per repeat (repeat 0 first)."""
    import numpy as np

    from ..analysis.stats import percentile_interval, resample_indices, split_rng
    from ..formatting import Interval

    keys = sorted(answers)
    if not keys:
        return {"questions": 0, "flip_rate": None, "accuracy": None}
    repeats = len(answers[keys[0]])
    flips = np.array([len({str(a["answer"]) for a in answers[k]}) > 1 for k in keys], dtype=float)
    idx = resample_indices(len(keys), resamples, split_rng(seed, "audit"))
    low, high = percentile_interval(flips[idx].mean(axis=1), confidence)
    per_repeat = [float(np.mean([bool(answers[k][r]["correct"]) for k in keys])) for r in range(repeats)]
    return {
        "questions": len(keys),
        "repeats": repeats,
        "flipped": int(flips.sum()),
        "flip_rate": Interval(float(flips.mean()), low, high).as_dict(),
        "accuracy": {
            "per_repeat": [round(a, 10) for a in per_repeat],
            "mean": round(float(np.mean(per_repeat)), 10),
            "sd": round(float(np.std(per_repeat, ddof=1)) if repeats > 1 else 0.0, 10),
            "min": round(min(per_repeat), 10),
            "max": round(max(per_repeat), 10),
        },
    }


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------
def run_audit(
    model: str,
    settings: Mapping[str, Any],
    params: Mapping[str, Any],
    data_dir: Path,
    traces_dir: Path,
    *,
    journal_root: Path = Path("."),
    progress: bool = False,
) -> dict[str, Any]:
    """Ask the audited subset again for repeats 1..k-1 and compare with repeat 0 (the main traces)."""
    from ..analysis.settings import analysis_settings
    from ..analysis.traces import read_trace
    from ..config import prompt_templates
    from ..data.parquet import read_rows
    from ..io_utils import read_json_file
    from ..scoring.evaluate import read_predictions, trace_rows, usage_ids
    from .predict import predict_split

    audit = audit_settings(params)
    splits = list(params["splits"])
    usage_by_repeat: dict[str, dict[str, Any]] = {}
    template = prompt_templates(params)[0]
    answers: dict[str, list[dict[str, Any]]] = {}
    subsets: dict[str, list[str]] = {}
    served: dict[str, int] = {}
    for split in splits:
        data = data_dir / f"{split}.parquet"
        rows = read_rows(data)
        ids = select_subset(rows, split, audit) if audit.enabled else set()
        subsets[split] = sorted(ids)
        main = {t["id"]: t for t in read_trace(traces_dir / f"{split}.jsonl", split)}
        for qid in subsets[split]:
            t = main[qid]
            answers[f"{split}/{qid}"] = [{"answer": None if t["missing"] else t["normalized_prediction"], "correct": t["correct"]}]
        sub_rows = [r for r in rows if str(r[C.COL_ID]) in ids]
        for r in range(1, audit.repeats):
            with tempfile.TemporaryDirectory() as tmp:
                pred_path, usage = Path(tmp) / f"{split}.jsonl", Path(tmp) / f"{split}.usage.json"
                predict_split(
                    model, settings, split, data, pred_path, template=template, progress=progress,
                    usage_output=usage,
                    run_log_output=Path(C.LOGS_DIR) / "usage" / "audit" / f"r{r}" / model / f"{split}.json",
                    journal_dir=audit_journal_dir(r, journal_root), repeat=r, only_ids=ids,
                )  # fmt: skip
                preds = read_predictions(pred_path, ids)
                traces = trace_rows(
                    sub_rows, preds, split, data,
                    refused=usage_ids(usage, "refused_ids"), truncated=usage_ids(usage, "truncated_ids"),
                )  # fmt: skip
                summary = read_json_file(usage, missing="usage summary not found")
            usage_by_repeat.setdefault(f"r{r}", {})[split] = {
                k: summary.get(k) for k in ("calls", "billed_input_tokens", "billed_output_tokens", "estimated_cost_usd")
            }
            for t in traces:
                answers[f"{split}/{t['id']}"].append(
                    {"answer": None if t["missing"] else t["normalized_prediction"], "correct": t["correct"]}
                )
            for version, n in (summary.get("served") or {}).items():
                served[version] = served.get(version, 0) + int(n)
    a = analysis_settings(params)
    result = {
        "model": model,
        "enabled": audit.enabled,
        "repeats": audit.repeats,
        "questions_per_split": audit.questions,
        "seed": audit.seed,
        "template": template,
        "subset": subsets,
        **stability(answers, a.resamples, a.seed, a.confidence),
        "served_in_repeats": dict(sorted(served.items())),
        "usage": usage_by_repeat,
        "answers": {k: [x["answer"] for x in v] for k, v in sorted(answers.items())},
    }
    return result
