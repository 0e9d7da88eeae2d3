"""The official scoring contract (docs/benchmark.md, "Scoring"), as small pure functions.

Every ``eval_type`` has one comparison: the prediction and the expected
answer go through the same normalization and extraction, and the row is
correct when the two resulting strings are equal (``contains``: when the
expected text is a non-empty substring of the prediction).

Character classes follow Python's ``re`` on ``str`` (as in the authors'
Python code):

* a *word character* (``\\w``) is any character for which ``str.isalnum()``
  is true, or ``_``: accented letters, CJK, full-width letters and digits,
  superscripts all count; combining marks do not (so an NFD-decomposed
  ``"é"`` splits the word; no Unicode normalization is applied);
* a *digit* (``\\d``) is any Unicode decimal digit (category Nd): ``"５"``
  (full-width) and ``"٣"`` (Arabic-Indic) are digits, ``"²"`` is not.  A
  digit run is kept as written, so ``"５"`` does not equal ``"5"`` (just as
  ``"05"`` does not equal ``"5"``);
* single option letters are ASCII ``a``-``z`` only.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple

from .. import contracts as C
from ..errors import DataError
from ..options import options_mapping

YES_NO = "yes_no_exact"
COUNT = "count_exact"
CHOICE = "choice_exact"
MULTIPLE_CHOICE = "multiple_choice_exact"
CONTAINS = "contains"
EXACT = "exact"
EXACT_MATCH = "exact_match"
SHORT_ANSWER = "short_answer_exact"

#: Every eval_type of the contract (anything else is an error).
EVAL_TYPES: tuple[str, ...] = (YES_NO, COUNT, CHOICE, MULTIPLE_CHOICE, CONTAINS, EXACT, EXACT_MATCH, SHORT_ANSWER)

#: question_type -> eval_type, used when eval_type is blank; others -> exact_match.
QUESTION_TYPE_EVAL: dict[str, str] = {
    "yes_no": YES_NO,
    "count": COUNT,
    "multiple_choice": CHOICE,
    "short_answer": EXACT_MATCH,
}
DEFAULT_EVAL_TYPE = EXACT_MATCH

#: Number words tried, in this (numeric) order, when a count has no digits.
NUMBER_WORDS: tuple[str, ...] = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty",
)  # fmt: skip

_NON_WORD = re.compile(r"\W+")
_WHITESPACE = re.compile(r"\s+")
_YES_NO = re.compile(r"\b(yes|no)\b")
_DIGIT_RUN = re.compile(r"\b\d+\b")
_NUMBER_WORDS = tuple(re.compile(rf"\b{w}\b") for w in NUMBER_WORDS)
_LETTER = re.compile(r"\b[a-z]\b")


class Extracted(NamedTuple):
    """What an extractor made of a normalized text."""

    value: str
    parsed: bool  # False: no valid answer found, value is the fallback text


@dataclass(frozen=True)
class Scored:
    """The outcome of scoring one prediction against its expected answer."""

    normalized_prediction: str
    normalized_answer: str
    parsed: bool
    correct: bool


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def normalize_text(value: Any) -> str:
    """Contract text normalization.

    ``str(value)`` (None and NaN -> ""), trim, lowercase, every run of
    non-word characters -> one space, collapse whitespace, trim.
    """
    text = "" if _is_missing(value) else str(value)
    text = text.strip().lower()
    text = _NON_WORD.sub(" ", text)
    return _WHITESPACE.sub(" ", text).strip()


def extract_yes_no(text: str) -> Extracted:
    """yes_no_exact: the first whole word ``yes`` or ``no``; else the text itself."""
    m = _YES_NO.search(text)
    return Extracted(m.group(1), True) if m else Extracted(text, False)


def extract_count(text: str) -> Extracted:
    """count_exact: the first whole-word digit run (kept as written); else the
    first of zero..twenty, tried in numeric order, found as a whole word; else the text."""
    m = _DIGIT_RUN.search(text)
    if m:
        return Extracted(m.group(), True)
    for number, pattern in enumerate(_NUMBER_WORDS):
        if pattern.search(text):
            return Extracted(str(number), True)
    return Extracted(text, False)


def extract_choice(text: str, options: Mapping[str, str] | None = None) -> Extracted:
    """choice_exact / multiple_choice_exact.

    The first single-letter word, upper-cased, if there are no options or it
    is an option key; else the key of the first option whose normalized text
    equals the whole text; else the upper-cased text.
    """
    opts = options or {}
    m = _LETTER.search(text)
    if m:
        letter = m.group().upper()
        if not opts or letter in opts:
            return Extracted(letter, True)
    for key, option_text in opts.items():
        if normalize_text(option_text) == text:
            return Extracted(key, True)
    return Extracted(text.upper(), False)


def extract_exact(text: str) -> Extracted:
    """exact / exact_match / short_answer_exact / contains: the normalized text.

    These types extract nothing; ``parsed`` means the text is non-empty.
    """
    return Extracted(text, bool(text))


def _extractor(eval_type: str, options: Mapping[str, str]) -> Callable[[str], Extracted]:
    if eval_type == YES_NO:
        return extract_yes_no
    if eval_type == COUNT:
        return extract_count
    if eval_type in (CHOICE, MULTIPLE_CHOICE):
        return lambda text: extract_choice(text, options)
    if eval_type in (CONTAINS, EXACT, EXACT_MATCH, SHORT_ANSWER):
        return extract_exact
    raise DataError(f"field {C.COL_EVAL_TYPE!r}: unknown eval_type {eval_type!r} (known: {', '.join(EVAL_TYPES)})")


def _options(options: Any) -> dict[str, str]:
    try:
        return options_mapping(options)
    except (TypeError, ValueError) as exc:  # ValueError: options text that cannot be parsed
        raise DataError(f"field {C.COL_OPTIONS!r}: {exc}") from None


def score(prediction: Any, answer: Any, eval_type: str, options: Any = None) -> Scored:
    """Score one prediction under ``eval_type``.

    ``options`` (choice types only) is a list (keys A, B, C, D in order) or a
    letter-keyed mapping.  Raises :class:`DataError` for an unknown eval_type
    or an expected answer that normalizes to empty text (fail closed).
    """
    opts = _options(options) if eval_type in (CHOICE, MULTIPLE_CHOICE) else {}
    extract = _extractor(eval_type, opts)
    expected_text = normalize_text(answer)
    if not expected_text:
        raise DataError(f"field {C.COL_ANSWER!r}: expected answer {answer!r} is empty after normalization")
    expected = extract(expected_text)
    predicted = extract(normalize_text(prediction))
    if eval_type == CONTAINS:
        correct = expected.value in predicted.value
    else:
        correct = predicted.value == expected.value
    return Scored(
        normalized_prediction=predicted.value,
        normalized_answer=expected.value,
        parsed=predicted.parsed,
        correct=correct,
    )


def _blank(value: Any) -> bool:
    return _is_missing(value) or not str(value).strip()


def resolve_eval_type(row: Mapping[str, Any]) -> str:
    """The row's eval_type (trimmed, lowercased); when blank, inferred from
    ``question_type`` (unknown or missing -> exact_match).

    Raises :class:`DataError` naming the row id and field for an unknown eval_type.
    """
    raw = row.get(C.COL_EVAL_TYPE)
    if _blank(raw):
        question_type = row.get(C.COL_QUESTION_TYPE)
        key = "" if _blank(question_type) else str(question_type).strip().lower()
        return QUESTION_TYPE_EVAL.get(key, DEFAULT_EVAL_TYPE)
    eval_type = str(raw).strip().lower()
    if eval_type not in EVAL_TYPES:
        split = row.get(C.COL_SUBSET)
        where = f"split {split!r}, " if not _blank(split) else ""
        raise DataError(
            f"{where}row {row.get(C.COL_ID)!r}: field {C.COL_EVAL_TYPE!r}: unknown eval_type {raw!r} "
            f"(known: {', '.join(EVAL_TYPES)})"
        )
    return eval_type
