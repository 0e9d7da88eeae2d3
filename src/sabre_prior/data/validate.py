"""Validation of one split's rows against the data contract (docs/benchmark.md).

Pure functions: :func:`check_split` returns every :class:`Problem` found; :func:`validate_split`
raises :class:`~sabre_prior.errors.DataError` listing them (the first :data:`MAX_LISTED`),
each naming the split, the row id and the field.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import contracts as C
from ..errors import DataError
from ..options import options_mapping

#: Scoring contracts the official evaluator knows (docs/benchmark.md, "Scoring").
KNOWN_EVAL_TYPES: frozenset[str] = frozenset(
    {
        "yes_no_exact",
        "count_exact",
        "choice_exact",
        "multiple_choice_exact",
        "contains",
        "exact",
        "exact_match",
        "short_answer_exact",
    }
)
MAX_LISTED = 20
_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)


@dataclass(frozen=True)
class Problem:
    split: str
    row_id: str | None  # None: the problem concerns the whole split
    field: str | None
    message: str
    kind: str = "row"  # what row_id names: a row (question id) or a pair (pair id)

    def __str__(self) -> str:
        where = f"{self.kind} {self.row_id!r}" if self.row_id is not None else "split"
        field = f", field {self.field!r}" if self.field else ""
        return f"{self.split}: {where}{field}: {self.message}"


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _norm(value: Any) -> str:
    return " ".join(_NON_WORD.sub(" ", str(value).strip().lower()).split())


def check_columns(split: str, columns: Iterable[str]) -> list[Problem]:
    """Required columns of the split (``contracts.SPLIT_COLUMNS``) that are absent."""
    present = set(columns)
    return [
        Problem(split, None, col, "required column is missing")
        for col in C.SPLIT_COLUMNS[split]
        if col not in present
    ]


def _row_label(row: Mapping[str, Any], index: int) -> str:
    rid = row.get(C.COL_ID)
    return str(rid) if not _blank(rid) else f"<row {index}>"


def check_row(split: str, row: Mapping[str, Any], index: int = 0) -> list[Problem]:
    """Problems of one row taken alone (fields, eval type, id format, options)."""
    rid = _row_label(row, index)
    out: list[Problem] = []

    def bad(field: str, message: str) -> None:
        out.append(Problem(split, rid, field, message))

    if _blank(row.get(C.COL_ID)):
        bad(C.COL_ID, "empty question id")
    subset = row.get(C.COL_SUBSET)
    if C.COL_SUBSET in row and subset != split:
        bad(C.COL_SUBSET, f"is {subset!r}, expected {split!r}")
    if C.COL_QUESTION in row and _blank(row.get(C.COL_QUESTION)):
        bad(C.COL_QUESTION, "empty question")
    if C.COL_ANSWER in row and _blank(row.get(C.COL_ANSWER)):
        bad(C.COL_ANSWER, "empty expected answer")
    if C.COL_EVAL_TYPE in row:
        eval_type = row.get(C.COL_EVAL_TYPE)
        if _blank(eval_type):
            if _blank(row.get(C.COL_QUESTION_TYPE)):
                bad(C.COL_EVAL_TYPE, "blank eval_type and no question_type to infer it from")
        elif str(eval_type).strip() not in KNOWN_EVAL_TYPES:
            bad(C.COL_EVAL_TYPE, f"unknown eval_type {eval_type!r} (known: {', '.join(sorted(KNOWN_EVAL_TYPES))})")
    if split in C.PAIRED_SPLITS:
        out += _check_probe_fields(split, rid, row)
    if split == "language" and C.COL_OPTIONS in row:
        out += _check_options(split, rid, row)
    return out


def _check_probe_fields(split: str, rid: str, row: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    pair_id, probe = row.get(C.COL_PAIR_ID), row.get(C.COL_PROBE)
    if C.COL_PAIR_ID in row and _blank(pair_id):
        out.append(Problem(split, rid, C.COL_PAIR_ID, "empty pair id"))
    if C.COL_PROBE in row and probe not in C.PROBES[split]:
        out.append(Problem(split, rid, C.COL_PROBE, f"unknown probe {probe!r} (expected one of {', '.join(C.PROBES[split])})"))
    if not _blank(pair_id) and not _blank(probe) and row.get(C.COL_ID) != f"{pair_id}__{probe}":
        out.append(Problem(split, rid, C.COL_ID, f"expected '{pair_id}__{probe}' (<pair_id>__<probe>)"))
    return out


def _check_options(split: str, rid: str, row: Mapping[str, Any]) -> list[Problem]:
    try:
        options = options_mapping(row.get(C.COL_OPTIONS))
    except (TypeError, ValueError) as exc:
        return [Problem(split, rid, C.COL_OPTIONS, str(exc))]
    out: list[Problem] = []
    if len(options) != 4:
        out.append(Problem(split, rid, C.COL_OPTIONS, f"has {len(options)} options, expected 4"))
    if any(_blank(text) for text in options.values()):
        out.append(Problem(split, rid, C.COL_OPTIONS, "an option text is empty"))
    answer = row.get(C.COL_ANSWER)
    if not _blank(answer) and options and str(answer).strip().upper() not in options:
        out.append(Problem(split, rid, C.COL_ANSWER, f"{answer!r} is not an option key ({', '.join(options)})"))
    return out


def check_pairs(split: str, rows: Sequence[Mapping[str, Any]]) -> list[Problem]:
    """Each pair holds exactly the four probes of ``contracts.PROBES`` with their expected answers."""
    if split not in C.PAIRED_SPLITS:
        return []
    probes = C.PROBES[split]
    by_pair: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        if not _blank(row.get(C.COL_PAIR_ID)):
            by_pair[str(row[C.COL_PAIR_ID])].append(row)
    out: list[Problem] = []
    for pair_id, members in by_pair.items():
        seen = [m.get(C.COL_PROBE) for m in members]
        missing = [p for p in probes if p not in seen]
        dupes = sorted({str(p) for p in seen if seen.count(p) > 1})
        if missing or dupes or len(members) != len(probes):
            detail = []
            if missing:
                detail.append(f"missing {', '.join(missing)}")
            if dupes:
                detail.append(f"repeated {', '.join(dupes)}")
            out.append(
                Problem(split, pair_id, C.COL_PROBE, f"pair has {len(members)} probes, expected the four "
                        f"{', '.join(probes)} ({'; '.join(detail) or 'unexpected probes'})", kind="pair")
            )
        for m in members:
            probe = m.get(C.COL_PROBE)
            if probe in probes and not _blank(m.get(C.COL_ANSWER)):
                expected = probes[probe][1]
                if _norm(m[C.COL_ANSWER]) != expected:
                    out.append(Problem(split, _row_label(m, 0), C.COL_ANSWER,
                                       f"probe {probe} must have answer {expected!r}, got {m[C.COL_ANSWER]!r}"))
    return out


def check_unique_ids(split: str, rows: Sequence[Mapping[str, Any]]) -> list[Problem]:
    seen: set[str] = set()
    out: list[Problem] = []
    for row in rows:
        rid = row.get(C.COL_ID)
        if _blank(rid):
            continue
        if rid in seen:
            out.append(Problem(split, str(rid), C.COL_ID, "duplicate question id"))
        seen.add(str(rid))
    return out


def check_images(split: str, rows: Sequence[Mapping[str, Any]], image_keys: Sequence[str | None]) -> list[Problem]:
    """Every row has an image (``image_keys[i]`` identifies row i's image file; None = no image)."""
    return [
        Problem(split, _row_label(row, i), C.COL_IMAGE, "no image")
        for i, (row, key) in enumerate(zip(rows, image_keys))
        if key is None
    ]


def check_counts(split: str, n_images: int, n_questions: int, expected: tuple[int, int] | None = None) -> list[Problem]:
    """The official sizes (``contracts.OFFICIAL_COUNTS``): images and questions."""
    exp_images, exp_questions = expected or C.OFFICIAL_COUNTS[split]
    out = []
    if n_images != exp_images:
        out.append(Problem(split, None, C.COL_IMAGE, f"{n_images} distinct images, the official dataset has {exp_images}"))
    if n_questions != exp_questions:
        out.append(Problem(split, None, C.COL_ID, f"{n_questions} questions, the official dataset has {exp_questions}"))
    return out


def check_split(
    split: str,
    rows: Sequence[Mapping[str, Any]],
    columns: Iterable[str] | None = None,
    image_keys: Sequence[str | None] | None = None,
    official_counts: bool = False,
) -> list[Problem]:
    """Every problem of a split. ``columns`` defaults to the keys of the first row (plus image)."""
    if split not in C.SPLITS:
        return [Problem(split, None, None, f"unknown split (expected one of {', '.join(C.SPLITS)})")]
    if columns is None:
        columns = [*(rows[0].keys() if rows else []), C.COL_IMAGE]
    out = check_columns(split, columns)
    if not rows:
        out.append(Problem(split, None, None, "the split has no rows"))
        return out
    for i, row in enumerate(rows):
        out += check_row(split, row, i)
    out += check_unique_ids(split, rows)
    out += check_pairs(split, rows)
    if image_keys is not None:
        out += check_images(split, rows, image_keys)
    if official_counts:
        n_images = len({k for k in image_keys or [] if k is not None})
        out += check_counts(split, n_images, len(rows))
    return out


def format_problems(split: str, problems: Sequence[Problem], source: str | None = None, limit: int = MAX_LISTED) -> str:
    where = f" (source: {source})" if source else ""
    lines = [f"{split}: the data violates the contract{where}: {len(problems)} problem(s)"]
    lines += [f"  - {p}" for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"  ... and {len(problems) - limit} more")
    return "\n".join(lines)


def validate_split(
    split: str,
    rows: Sequence[Mapping[str, Any]],
    columns: Iterable[str] | None = None,
    image_keys: Sequence[str | None] | None = None,
    official_counts: bool = False,
    source: str | None = None,
) -> None:
    """Raise :class:`DataError` listing every problem of the split (none: return)."""
    problems = check_split(split, rows, columns, image_keys, official_counts)
    if problems:
        raise DataError(format_problems(split, problems, source))
