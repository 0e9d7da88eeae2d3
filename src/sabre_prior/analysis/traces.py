"""Per-question traces (``results/traces/<model>/<split>.jsonl``) and unit outcomes.

The *unit* of a split is what its primary metric counts: a pair (all four
probes correct) for context and texture, a question for attribute and
language.  Bootstrap intervals and paired comparisons resample units.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import contracts as C
from ..errors import DataError
from ..scoring.pairs import pair_correct

Trace = dict[str, Any]


@dataclass(frozen=True)
class UnitOutcomes:
    """Unit ids (sorted) and whether each unit is correct under the primary metric."""

    split: str
    ids: tuple[str, ...]
    correct: np.ndarray  # bool, aligned with ids

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def accuracy(self) -> float:
        return float(self.correct.mean()) if self.n else float("nan")


def read_trace(path: str | Path, split: str | None = None) -> list[Trace]:
    """Read one trace file; every line must be an object with exactly the contract's keys."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: trace file not found (run `sabre evaluate` / the evaluate rule first)")
    rows: list[Trace] = []
    expected = set(C.TRACE_KEYS)
    with open(p, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{p}:{lineno}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise DataError(f"{where}: expected a JSON object, got {type(obj).__name__}")
            keys = set(obj)
            if keys != expected:
                lacking, extra = sorted(expected - keys), sorted(keys - expected)
                detail = "; ".join(
                    part
                    for part in (
                        f"lacks {', '.join(lacking)}" if lacking else "",
                        f"unknown {', '.join(extra)}" if extra else "",
                    )
                    if part
                )
                raise DataError(f"{where}: trace keys do not match the contract ({detail})")
            for flag in ("parsed", "missing", "correct"):
                if not isinstance(obj[flag], bool):
                    raise DataError(f"{where}: field {flag!r} must be true or false, got {obj[flag]!r}")
            if not isinstance(obj["id"], str) or not obj["id"]:
                raise DataError(f"{where}: field 'id' must be a non-empty string")
            if split is not None and obj["split"] != split:
                raise DataError(f"{where}: field 'split' is {obj['split']!r}, expected {split!r}")
            rows.append(obj)
    if not rows:
        raise DataError(f"{p}: trace file is empty")
    return rows


def read_model_traces(trace_dir: str | Path, splits: Sequence[str]) -> dict[str, list[Trace]]:
    """``{split: rows}`` from ``<trace_dir>/<split>.jsonl`` for every split."""
    return {split: read_trace(Path(trace_dir) / f"{split}.jsonl", split) for split in splits}


def unit_outcomes(rows: Sequence[Mapping[str, Any]], split: str, source: str = "trace") -> UnitOutcomes:
    """Unit-level outcomes of one split, sorted by unit id.

    Paired splits: a pair is correct only when all four of its probes are, and
    every pair must have exactly the four probes of the contract (both by
    :func:`sabre_prior.scoring.pairs.pair_correct`, the scoring's own rule).
    """
    if split in C.PAIRED_SPLITS:
        pairs = pair_correct(rows, split, source)
        ids = tuple(sorted(pairs))
        correct = np.array([pairs[i] for i in ids], dtype=bool)
    else:
        by_id: dict[str, bool] = {}
        for row in rows:
            qid = row["id"]
            if qid in by_id:
                raise DataError(f"{source}: split {split!r}: question {qid!r} appears twice")
            by_id[qid] = bool(row["correct"])
        ids = tuple(sorted(by_id))
        correct = np.array([by_id[i] for i in ids], dtype=bool)
    if not ids:
        raise DataError(f"{source}: split {split!r} has no units")
    return UnitOutcomes(split, ids, correct)


def model_outcomes(trace_dir: str | Path, splits: Sequence[str]) -> dict[str, UnitOutcomes]:
    """Unit outcomes of every split of one model."""
    traces = read_model_traces(trace_dir, splits)
    return {s: unit_outcomes(rows, s, str(Path(trace_dir) / f"{s}.jsonl")) for s, rows in traces.items()}
