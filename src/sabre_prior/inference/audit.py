"""The API stability audit's settings and subset (issue 21; docs/stability.md).

The run and its statistics are in :mod:`sabre_prior.analysis.stability` (``sabre audit``); what is
here is what ``sabre estimate`` needs to price the repeats.


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

    @property
    def asked(self) -> list[int]:
        """The repeats asked again: 1..k-1 (repeat 0 is the main run; none while the audit is off)."""
        return list(range(1, self.repeats))


def audit_settings(params: Mapping[str, Any]) -> AuditSettings:
    section = params.get("audit") or {}
    subset = audit_subset(params)
    return AuditSettings(int(section.get("repeats", 1)), subset.questions, subset.seed)


def audit_subset(params: Mapping[str, Any]) -> AuditSettings:
    """The audited subset's settings alone (``audit.questions``, ``audit.seed``; not ``repeats``,
    which a job asking one subset does not read): repeats is 2, the subset whether or not it repeats."""
    section = params.get("audit") or {}
    questions = section.get("questions", DEFAULT_QUESTIONS)
    if questions != "all" and (isinstance(questions, bool) or not isinstance(questions, int) or questions < 1):
        raise ConfigError(f"audit.questions must be a positive integer or 'all', got {questions!r}")
    return AuditSettings(2, questions, int(section.get("seed", 0)))


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


