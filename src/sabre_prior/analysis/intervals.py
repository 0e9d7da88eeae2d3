"""``results/intervals/<model>.json``: bootstrap intervals of every split and the macro.

Format (fractions 0-1; keys from :mod:`sabre_prior.contracts`)::

    {"<split>": {"estimate": f, "low": f, "high": f, "n": units}, ...,
     "macro": {"estimate": f, "low": f, "high": f},
     "confidence": 0.95, "resamples": 2000, "seed": 0,
     "failure_aware": {...}}   # official / excluded / chance bounds (sabre_prior.analysis.failure)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import contracts as C
from ..errors import DataError
from ..formatting import Interval
from ..io_utils import read_json_file, write_json
from .settings import AnalysisSettings
from .stats import (
    macro_interval,
    percentile_interval,
    replicate_means,
    resample_indices,
    split_rng,
)
from .traces import UnitOutcomes, unit_outcomes

#: The failure-aware block of an intervals file (:mod:`sabre_prior.analysis.failure`).
FAILURE_AWARE = "failure_aware"

#: Estimates from traces and from the metrics file must agree to this tolerance.
METRICS_TOLERANCE = 1e-9


def split_replicates(outcomes: UnitOutcomes, settings: AnalysisSettings) -> np.ndarray:
    """Bootstrap replicates of one split's accuracy (seeded by seed and split name)."""
    idx = resample_indices(outcomes.n, settings.resamples, split_rng(settings.seed, outcomes.split))
    return replicate_means(outcomes.correct, idx)


def compute_intervals(outcomes: Mapping[str, UnitOutcomes], settings: AnalysisSettings) -> dict[str, Any]:
    """Intervals of each split (in the given order) and of their macro average."""
    if not outcomes:
        raise DataError("no splits to compute intervals for")
    result: dict[str, Any] = {}
    values, replicates = [], []
    for split, out in outcomes.items():
        reps = split_replicates(out, settings)
        low, high = percentile_interval(reps, settings.confidence)
        result[split] = {**Interval(out.accuracy, low, high).as_dict(), "n": out.n}
        values.append(out.correct)
        replicates.append(reps)
    result[C.I_MACRO] = macro_interval(values, replicates, settings.confidence).as_dict()
    result[C.I_CONFIDENCE] = settings.confidence
    result[C.I_RESAMPLES] = settings.resamples
    result[C.I_SEED] = settings.seed
    return result


def check_against_metrics(
    intervals: Mapping[str, Any], metrics: Mapping[str, Any], splits: Sequence[str], source: str
) -> None:
    """The traces must reproduce the metrics file's accuracies (same run, same contract)."""
    for split in splits:
        if split not in metrics:
            raise DataError(f"{source}: has no split {split!r} (evaluate all configured splits)")
        reported = float(metrics[split][C.M_ACCURACY])
        ours = float(intervals[split][C.I_ESTIMATE])
        if abs(reported - ours) > METRICS_TOLERANCE:
            raise DataError(
                f"{source}: {split}.{C.M_ACCURACY} is {reported:.6f} but the traces give {ours:.6f}; "
                "metrics and traces come from different runs (re-run the evaluate step)"
            )


def write_model_intervals(
    trace_dir: str | Path,
    output: str | Path,
    splits: Sequence[str],
    settings: AnalysisSettings,
    metrics_file: str | Path | None = None,
) -> dict[str, Any]:
    """Read a model's traces, compute its intervals, cross-check the metrics file, write JSON."""
    from .failure import failure_aware
    from .traces import read_model_traces

    traces = read_model_traces(trace_dir, splits)
    outcomes = {s: unit_outcomes(rows, s, str(Path(trace_dir) / f"{s}.jsonl")) for s, rows in traces.items()}
    intervals = compute_intervals(outcomes, settings)
    intervals[FAILURE_AWARE] = failure_aware(traces, settings)
    if metrics_file is not None:
        metrics = read_json_file(metrics_file, missing="metrics file not found")
        check_against_metrics(intervals, metrics, splits, str(metrics_file))
    write_json(output, intervals)
    return intervals


def read_intervals(path: str | Path) -> dict[str, Any]:
    """Read an intervals file, naming it on error."""
    p = Path(path)
    data = read_json_file(p, missing="intervals file not found (run `sabre intervals` / the intervals rule)")
    if not isinstance(data, dict) or C.I_MACRO not in data:
        raise DataError(f"{p}: not an intervals file (no {C.I_MACRO!r} key)")
    return data

