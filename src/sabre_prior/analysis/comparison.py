"""Paired comparison of every two models on the same units.

For each split: the difference of accuracies (A - B) with a paired
percentile-bootstrap interval and the exact McNemar p-value on the
discordant units.  For the macro average: the paired bootstrap interval and a
two-sided bootstrap p-value (McNemar needs a single split).  ``p_holm``
adjusts all p-values of the table together (Holm).

Outputs ``results/tables/model_comparison.{md,csv}``; differences are in
percentage points.  A model and split whose non-answer rate exceeds
``analysis.report.max_nonanswer_rate`` is flagged (:mod:`sabre_prior.report.flags`): ``†`` beside
its accuracy with the count in the block's footnote, and ``nonanswer_a``/``questions_a``/``flagged_a``
(and ``_b``) in the CSV.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from .. import contracts as C
from ..errors import DataError
from ..formatting import format_p, format_percent, md_table, write_csv
from ..io_utils import write_text
from ..report import flags
from .settings import AnalysisSettings
from .stats import (
    bootstrap_p_value,
    discordant_counts,
    holm_adjust,
    mcnemar_exact,
    paired_replicates,
    percentile_interval,
    resample_indices,
    split_rng,
)
from .traces import UnitOutcomes

CSV_COLUMNS: tuple[str, ...] = (
    "model_a",
    "model_b",
    "split",
    "n",
    "accuracy_a",
    "accuracy_b",
    "difference",
    "low",
    "high",
    "a_only",
    "b_only",
    "test",
    "p_value",
    "p_holm",
    "nonanswer_a",
    "questions_a",
    "flagged_a",
    "nonanswer_b",
    "questions_b",
    "flagged_b",
)
#: model -> split or ``macro`` -> :func:`sabre_prior.report.flags.block` (from the traces: flags.trace_blocks)
NonAnswers = Mapping[str, Mapping[str, Mapping[str, Any]]]
MCNEMAR = "mcnemar_exact"
BOOTSTRAP = "paired_bootstrap"


@dataclass(frozen=True)
class Comparison:
    """One row of the comparison table (fractions 0-1)."""

    model_a: str
    model_b: str
    split: str
    n: int
    accuracy_a: float
    accuracy_b: float
    difference: float
    low: float
    high: float
    a_only: int | None
    b_only: int | None
    test: str
    p_value: float
    p_holm: float = float("nan")


def _aligned(a: UnitOutcomes, b: UnitOutcomes, names: tuple[str, str]) -> None:
    if a.ids != b.ids:
        only_a = sorted(set(a.ids) - set(b.ids))[:3]
        only_b = sorted(set(b.ids) - set(a.ids))[:3]
        raise DataError(
            f"split {a.split!r}: models {names[0]!r} and {names[1]!r} were scored on different units "
            f"(only in {names[0]}: {only_a or '-'}; only in {names[1]}: {only_b or '-'}); evaluate both on the same data"
        )


def compare_pair(
    name_a: str,
    name_b: str,
    a: Mapping[str, UnitOutcomes],
    b: Mapping[str, UnitOutcomes],
    splits: Sequence[str],
    settings: AnalysisSettings,
) -> list[Comparison]:
    """Rows for one pair of models: every split, then the macro average."""
    rows: list[Comparison] = []
    split_reps = []
    for split in splits:
        oa, ob = a[split], b[split]
        _aligned(oa, ob, (name_a, name_b))
        idx = resample_indices(oa.n, settings.resamples, split_rng(settings.seed, split))
        reps = paired_replicates(oa.correct, ob.correct, idx)
        split_reps.append(reps)
        low, high = percentile_interval(reps, settings.confidence)
        only_a, only_b = discordant_counts(oa.correct, ob.correct)
        rows.append(
            Comparison(name_a, name_b, split, oa.n, oa.accuracy, ob.accuracy, oa.accuracy - ob.accuracy,
                       low, high, only_a, only_b, MCNEMAR, mcnemar_exact(only_a, only_b))
        )  # fmt: skip
    macro_reps = np.mean(np.vstack(split_reps), axis=0)
    low, high = percentile_interval(macro_reps, settings.confidence)
    acc_a = float(np.mean([r.accuracy_a for r in rows]))
    acc_b = float(np.mean([r.accuracy_b for r in rows]))
    rows.append(
        Comparison(name_a, name_b, C.I_MACRO, sum(r.n for r in rows), acc_a, acc_b, acc_a - acc_b,
                   low, high, None, None, BOOTSTRAP, bootstrap_p_value(macro_reps))
    )  # fmt: skip
    return rows


def compare_models(
    outcomes: Mapping[str, Mapping[str, UnitOutcomes]], splits: Sequence[str], settings: AnalysisSettings
) -> list[Comparison]:
    """Every two models (in the given order), with Holm-adjusted p-values over the whole table."""
    rows: list[Comparison] = []
    for name_a, name_b in combinations(list(outcomes), 2):
        rows += compare_pair(name_a, name_b, outcomes[name_a], outcomes[name_b], splits, settings)
    adjusted = holm_adjust([r.p_value for r in rows])
    return [Comparison(**{**r.__dict__, "p_holm": p}) for r, p in zip(rows, adjusted, strict=True)]


#: Percent / percentage points with one decimal, float rounding (the comparison's Markdown).
_pp_text = partial(format_percent, rounding="float")


def _pp(x: float) -> float:
    return round(100.0 * x, 2)


def _flag_cells(nonanswers: NonAnswers | None, model: str, split: str, threshold: float, side: str) -> dict[str, Any]:
    b = ((nonanswers or {}).get(model) or {}).get(split)
    return {} if b is None else {f"{k}_{side}": v for k, v in flags.columns(b, threshold).items()}


def csv_rows(
    rows: Sequence[Comparison], nonanswers: NonAnswers | None = None, threshold: float = flags.DEFAULT_MAX_NONANSWER_RATE
) -> list[dict[str, Any]]:
    """Rows for the CSV: accuracies and differences in percent / percentage points, each model's non-answers."""
    return [
        {
            "model_a": r.model_a, "model_b": r.model_b, "split": r.split, "n": r.n,
            "accuracy_a": _pp(r.accuracy_a), "accuracy_b": _pp(r.accuracy_b), "difference": _pp(r.difference),
            "low": _pp(r.low), "high": _pp(r.high), "a_only": r.a_only, "b_only": r.b_only,
            "test": r.test, "p_value": round(r.p_value, 6), "p_holm": round(r.p_holm, 6),
            **_flag_cells(nonanswers, r.model_a, r.split, threshold, "a"),
            **_flag_cells(nonanswers, r.model_b, r.split, threshold, "b"),
        }
        for r in rows
    ]  # fmt: skip


def markdown(
    rows: Sequence[Comparison],
    names: Mapping[str, str],
    confidence: float,
    resamples: int,
    nonanswers: NonAnswers | None = None,
    threshold: float = flags.DEFAULT_MAX_NONANSWER_RATE,
) -> str:
    """The comparison table as Markdown, one block per pair of models (a flagged accuracy: ``†``,
    counted in the block's footnote)."""

    def nonans(model: str, split: str) -> Mapping[str, Any] | None:
        return ((nonanswers or {}).get(model) or {}).get(split)

    def acc(model: str, r: Comparison, value: float) -> str:
        mark = flags.mark(nonans(model, r.split), threshold)
        return _pp_text(value) + (f" {mark}" if mark else "")

    level = f"{100 * confidence:g}%"
    head = [
        "# Paired model comparison",
        "",
        (
            f"Difference A - B in percentage points with a {level} paired percentile-bootstrap interval "
            f"({resamples} resamples of the same units for both models). p: exact McNemar test on the "
            "discordant units for each split, two-sided paired-bootstrap test for the macro average; "
            "p (Holm): adjusted over every row of this table. A-only / B-only: units only A (only B) got right."
        ),
        "",
    ]
    if not rows:
        return "\n".join(head + ["Fewer than two models are configured: nothing to compare.", ""])
    out = head
    header = ["Split", "n", "A", "B", "A - B", f"{level} CI", "A-only", "B-only", "p", "p (Holm)"]
    pairs: dict[tuple[str, str], list[Comparison]] = {}
    for r in rows:
        pairs.setdefault((r.model_a, r.model_b), []).append(r)
    for (a, b), block in pairs.items():
        out.append(f"## A = {names.get(a, a)}, B = {names.get(b, b)}")
        out.append("")
        body = [
            [r.split, r.n, acc(a, r, r.accuracy_a), acc(b, r, r.accuracy_b), _pp_text(r.difference, signed=True),
             f"[{_pp_text(r.low, signed=True)}, {_pp_text(r.high, signed=True)}]", "-" if r.a_only is None else r.a_only,
             "-" if r.b_only is None else r.b_only, format_p(r.p_value), format_p(r.p_holm)]
            for r in block
        ]  # fmt: skip
        out.append(md_table(header, body))
        note = flags.footnote(
            ((names.get(m, m), r.split, nonans(m, r.split)) for r in block for m in (a, b)),
            threshold,
        )
        if note:
            out += [note, ""]
    return "\n".join(out)


def write_comparison(
    rows: Sequence[Comparison],
    outdir: str | Path,
    names: Mapping[str, str],
    settings: AnalysisSettings,
    nonanswers: NonAnswers | None = None,
    threshold: float = flags.DEFAULT_MAX_NONANSWER_RATE,
) -> list[Path]:
    """Write ``model_comparison.md`` and ``model_comparison.csv`` into ``outdir`` (flags above ``threshold``)."""
    out = Path(outdir)
    md, csv = out / "model_comparison.md", out / "model_comparison.csv"
    write_text(md, markdown(rows, names, settings.confidence, settings.resamples, nonanswers, threshold))
    write_csv(csv, CSV_COLUMNS, csv_rows(rows, nonanswers, threshold))
    return [md, csv]
