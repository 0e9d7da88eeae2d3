"""Failure-aware scores: the official score beside two bounds that say what the non-answers cost.

A question's ``outcome`` (``contracts.OUTCOMES``) is in its trace; *non-answers* are
``unparseable``, ``refused``, ``failed`` and ``truncated`` (``contracts.NON_ANSWERS``).  Per split,
on the split's units (pairs for context/texture, questions otherwise):

* **official** - the contract's score: a non-answer is wrong;
* **excluded** - the score over the units without any non-answer (the model "as if it had
  answered"; None when no unit is left);
* **chance** - every non-answer replaced by a uniform guess (its trace's ``chance``: 1/2 for
  yes/no, 1/options, 1/distinct counts): a unit's score is the product over its questions of 1
  (correct), 0 (wrong) or the chance level (non-answer), i.e. the expected score.

Each comes with a percentile bootstrap interval on the same resampled units as
``results/intervals`` (:func:`~sabre_prior.analysis.stats.split_rng`); the macro's replicate ``b``
is the mean of the splits' replicates ``b``.  ``excluded`` is a ratio (correct answered units /
answered units) recomputed in every replicate; replicates without an answered unit are dropped.

The non-answer rate counts questions.  A split whose rate exceeds
``analysis.report.max_nonanswer_rate`` is *flagged* (:func:`flagged`) in every table and the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import contracts as C
from ..formatting import Interval
from ..report.flags import DEFAULT_MAX_NONANSWER_RATE, flag_text, flagged, max_nonanswer_rate  # noqa: F401 (one home: report.flags)
from .settings import AnalysisSettings
from .stats import percentile_interval, resample_indices, split_rng

BOUNDS = ("official", "excluded", "chance")


@dataclass(frozen=True)
class UnitScores:
    """Per unit (sorted ids): official 0/1, whether every question was answered, expected score at chance."""

    split: str
    ids: tuple[str, ...]
    official: np.ndarray
    answered: np.ndarray
    chance: np.ndarray
    questions: int
    outcomes: dict[str, int]

    @property
    def nonanswer(self) -> int:
        return sum(self.outcomes[o] for o in C.NON_ANSWERS)


def unit_scores(rows: Sequence[Mapping[str, Any]], split: str) -> UnitScores:
    """Group a split's traces into units and score each three ways."""
    units: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        key = str(row["pair_id"]) if split in C.PAIRED_SPLITS else str(row["id"])
        units.setdefault(key, []).append(row)
    ids = tuple(sorted(units))
    outcomes = {o: 0 for o in C.OUTCOMES}
    for row in rows:
        outcomes[str(row["outcome"])] += 1

    def expected(qs: list[Mapping[str, Any]]) -> float:
        value = 1.0
        for q in qs:
            if q["outcome"] in C.NON_ANSWERS:
                value *= float(q["chance"])
            elif not q["correct"]:
                return 0.0
        return value

    return UnitScores(
        split=split,
        ids=ids,
        official=np.array([all(q["correct"] for q in units[i]) for i in ids], dtype=float),
        answered=np.array([all(q["outcome"] not in C.NON_ANSWERS for q in units[i]) for i in ids], dtype=bool),
        chance=np.array([expected(units[i]) for i in ids], dtype=float),
        questions=len(rows),
        outcomes=outcomes,
    )


def _excluded(official: np.ndarray, answered: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Replicates of mean(official | answered); NaN where a replicate has no answered unit."""
    hits = (official * answered)[idx].sum(axis=1)
    n = answered[idx].sum(axis=1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, hits / np.where(n > 0, n, 1.0), np.nan)


def _interval(estimate: float | None, reps: np.ndarray, confidence: float) -> dict[str, float] | None:
    reps = reps[~np.isnan(reps)]
    if estimate is None or not reps.size:
        return None
    low, high = percentile_interval(reps, confidence)
    return Interval(estimate, low, high).as_dict()


def split_replicates(scores: UnitScores, settings: AnalysisSettings) -> dict[str, np.ndarray]:
    idx = resample_indices(len(scores.ids), settings.resamples, split_rng(settings.seed, scores.split))
    return {
        "official": scores.official[idx].mean(axis=1),
        "excluded": _excluded(scores.official, scores.answered, idx),
        "chance": scores.chance[idx].mean(axis=1),
    }


def estimates(scores: UnitScores) -> dict[str, float | None]:
    n_answered = int(scores.answered.sum())
    return {
        "official": float(scores.official.mean()),
        "excluded": float(scores.official[scores.answered].mean()) if n_answered else None,
        "chance": float(scores.chance.mean()),
    }


def failure_aware(traces: Mapping[str, Sequence[Mapping[str, Any]]], settings: AnalysisSettings) -> dict[str, Any]:
    """``{split: {questions, nonanswer, rate, outcomes, units_answered, official, excluded, chance}, macro: {...}}``."""
    out: dict[str, Any] = {}
    reps: dict[str, list[np.ndarray]] = {b: [] for b in BOUNDS}
    ests: dict[str, list[float | None]] = {b: [] for b in BOUNDS}
    for split, rows in traces.items():
        scores = unit_scores(rows, split)
        est, rep = estimates(scores), split_replicates(scores, settings)
        out[split] = {
            "questions": scores.questions,
            "nonanswer": scores.nonanswer,
            "rate": round(scores.nonanswer / scores.questions, 10),
            "outcomes": scores.outcomes,
            "units": len(scores.ids),
            "units_answered": int(scores.answered.sum()),
            **{b: _interval(est[b], rep[b], settings.confidence) for b in BOUNDS},
        }
        for b in BOUNDS:
            reps[b].append(rep[b])
            ests[b].append(est[b])
    macro: dict[str, Any] = {}
    for b in BOUNDS:
        if any(e is None for e in ests[b]):
            macro[b] = None
            continue
        macro_reps = np.mean(np.vstack(reps[b]), axis=0)  # NaN wherever one split's replicate is NaN
        macro[b] = _interval(float(np.mean([e for e in ests[b] if e is not None])), macro_reps, settings.confidence)
    questions = sum(out[s]["questions"] for s in traces)
    nonanswer = sum(out[s]["nonanswer"] for s in traces)
    macro.update({"questions": questions, "nonanswer": nonanswer, "rate": round(nonanswer / questions, 10)})
    out[C.I_MACRO] = macro
    return out
