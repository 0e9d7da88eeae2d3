"""Pairs of the paired splits (context, texture): grouped, checked and scored once.

The one pair rule of the project: ``sabre evaluate`` checks the data's pairs and computes the
pair metrics with it (:mod:`sabre_prior.scoring.evaluate`), and the analysis turns traces into
unit outcomes and pair classes with it (:mod:`sabre_prior.analysis.traces`,
:mod:`sabre_prior.analysis.diagnostics`).  Light on purpose (no pyarrow): the analysis stages
import it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import contracts as C
from ..errors import DataError


def group_pairs(rows: Sequence[Mapping[str, Any]], split: str, source: Path | str) -> dict[str, dict[str, Mapping[str, Any]]]:
    """``pair_id -> {probe: row}`` of a paired split, in first-seen order, each pair checked.

    The one pair grouping of the project: the data check of ``sabre evaluate``, its pair
    metrics (:func:`sabre_prior.scoring.evaluate.split_metrics`) and the analysis' unit outcomes
    (:func:`sabre_prior.analysis.traces.unit_outcomes`) all use it.  Rows are data rows or
    trace lines (both name the fields ``id``, ``pair_id`` and ``probe``).  Every row needs a
    pair id and one of the contract's probes, and every pair has each probe exactly once.
    """
    probes = C.PROBES[split]
    pairs: dict[str, dict[str, Mapping[str, Any]]] = {}
    for row in rows:
        qid, probe, pair_id = row.get(C.COL_ID), row.get(C.COL_PROBE), row.get(C.COL_PAIR_ID)
        if probe not in probes:
            raise DataError(
                f"{source}: split {split!r}, row {qid!r}: field {C.COL_PROBE!r} is {probe!r}, "
                f"expected one of {', '.join(probes)}"
            )
        if not isinstance(pair_id, str) or not pair_id:
            raise DataError(f"{source}: split {split!r}, row {qid!r}: field {C.COL_PAIR_ID!r} is missing")
        have = pairs.setdefault(pair_id, {})
        if probe in have:
            raise DataError(
                f"{source}: split {split!r}, row {qid!r}: field {C.COL_PROBE!r}: {probe!r} repeated in pair {pair_id!r}"
            )
        have[probe] = row
    for pair_id, have in pairs.items():
        if len(have) != len(probes):
            lacking = ", ".join(p for p in probes if p not in have)
            raise DataError(f"{source}: split {split!r}, pair {pair_id!r}: lacks probe(s) {lacking} (field {C.COL_PROBE!r})")
    return pairs


def pair_correct(traces: Sequence[Mapping[str, Any]], split: str, source: Path | str = "trace") -> dict[str, bool]:
    """``pair_id -> True`` when all of the pair's probes are correct (the paired splits' unit), first-seen order."""
    return {
        pair_id: all(bool(t["correct"]) for t in probes.values())
        for pair_id, probes in group_pairs(traces, split, source).items()
    }
