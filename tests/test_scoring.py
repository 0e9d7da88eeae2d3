"""The official scoring contract (docs/benchmark.md), rule by rule."""

from __future__ import annotations

import dataclasses

import pytest

from sabre_prior.errors import DataError
from sabre_prior.scoring.contract import (
    EVAL_TYPES,
    NUMBER_WORDS,
    Scored,
    extract_choice,
    extract_count,
    extract_exact,
    extract_yes_no,
    normalize_text,
    resolve_eval_type,
    score,
)

OPTS_LIST = ["a red ball", "a blue ball", "two balls", "Unknown"]
OPTS_MAP = {"A": "a red ball", "B": "a blue ball", "C": "two balls", "D": "Unknown"}
CHOICE_TYPES = ["choice_exact", "multiple_choice_exact"]


# --------------------------------------------------------------------------
# text normalization
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ""),
        (float("nan"), ""),
        ("", ""),
        ("   \t\n ", ""),
        ("?!...", ""),
        ("  Yes.  ", "yes"),
        ("NO", "no"),
        ("No, it is not visible.", "no it is not visible"),
        ("line one\nline two\r\n", "line one line two"),
        ("a--b__c", "a b__c"),  # underscore is a word character
        ("twenty-one", "twenty one"),
        ("7.5", "7 5"),
        ("(b) unknown", "b unknown"),
        ("ÜNÏCÖDÉ!", "ünïcödé"),
        ("是的。 不是", "是的 不是"),
        ("５本", "５本"),  # full-width digit and CJK are word characters
        ("x²", "x²"),  # superscript two is alphanumeric
        ("a\u00a0b", "a b"),  # no-break space
        ("a\u200bb", "a b"),  # zero-width space is not a word character
        ("café", "café"),  # NFC: one letter
        ("cafe\u0301", "cafe"),  # NFD: the combining accent is not a word character
        (5, "5"),
        (7.5, "7 5"),
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (["B"], "b"),
    ],
)
def test_normalize_text(value: object, expected: str) -> None:
    assert normalize_text(value) == expected


def test_normalize_text_is_idempotent() -> None:
    for raw in ["  Hello,   World!! ", "ÜNÏ-cöDÉ", "a\n\tb", "(c) two balls"]:
        once = normalize_text(raw)
        assert normalize_text(once) == once


# --------------------------------------------------------------------------
# yes_no_exact
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value", "parsed"),
    [
        ("no it is not visible", "no", True),
        ("yes", "yes", True),
        ("nope", "nope", False),
        ("yes no", "yes", True),
        ("no yes", "no", True),
        ("i would say yes", "yes", True),
        ("yesterday no", "no", True),  # whole words only
        ("noyes", "noyes", False),
        ("not sure", "not sure", False),
        ("", "", False),
        ("no one is there", "no", True),
        ("y", "y", False),
        ("true", "true", False),
    ],
)
def test_extract_yes_no(text: str, value: str, parsed: bool) -> None:
    assert extract_yes_no(text) == (value, parsed)


@pytest.mark.parametrize(
    ("prediction", "answer", "correct"),
    [
        ("No, it is not visible.", "no", True),
        ("Yes.", "yes", True),
        ("nope", "no", False),
        ("YES!!!", "yes", True),
        ("Yes, but no.", "no", False),
        ("**No**\n", "no", True),
        ("", "no", False),
        (None, "no", False),
        (True, "yes", False),  # str(True) -> "true", not a yes/no word
        ("Yes", "Yes.", True),  # the expected answer is normalized the same way
    ],
)
def test_score_yes_no(prediction: object, answer: str, correct: bool) -> None:
    assert score(prediction, answer, "yes_no_exact").correct is correct


# --------------------------------------------------------------------------
# count_exact
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value", "parsed"),
    [
        ("5", "5", True),
        ("05", "05", True),  # kept as a string
        ("7 5", "7", True),  # "7.5" after normalization
        ("there are 3 legs", "3", True),
        ("3 or 4", "3", True),
        ("3 or four", "3", True),  # digits win over number words
        ("four or 3", "3", True),
        ("three or two", "2", True),  # number words in numeric order
        ("no one", "1", True),
        ("twenty one", "1", True),
        ("twenty", "20", True),
        ("zero", "0", True),
        ("eleven legs", "11", True),
        ("someone", "someone", False),  # whole words only
        ("none", "none", False),
        ("thirty", "thirty", False),  # no number words above twenty
        ("21", "21", True),
        ("100", "100", True),
        ("3rd leg", "3rd leg", False),  # a digit run must be a whole word
        ("leg3", "leg3", False),
        ("3_legs", "3_legs", False),  # underscore is a word character
        ("５", "５", True),  # full-width digit is a Unicode decimal digit, kept as written
        ("٣", "٣", True),  # Arabic-Indic three
        ("x²", "x²", False),  # superscript two is not a decimal digit
        ("many", "many", False),
        ("", "", False),
    ],
)
def test_extract_count(text: str, value: str, parsed: bool) -> None:
    assert extract_count(text) == (value, parsed)


def test_number_words_in_numeric_order() -> None:
    assert NUMBER_WORDS[0] == "zero" and NUMBER_WORDS[-1] == "twenty" and len(NUMBER_WORDS) == 21
    for n, word in enumerate(NUMBER_WORDS):
        assert extract_count(word) == (str(n), True)


@pytest.mark.parametrize(
    ("prediction", "answer", "normalized", "correct"),
    [
        ("three or two", "2", "2", True),
        ("no one", "1", "1", True),
        ("twenty-one", "1", "1", True),
        ("twenty-one", "21", "1", False),
        ("7.5", "7", "7", True),
        ("05", "5", "05", False),
        ("5", "05", "5", False),
        ("Five.", "5", "5", True),
        ("5", "five", "5", True),  # the expected answer goes through the same extraction
        (5, "5", "5", True),  # non-string predictions via str()
        (5.0, "5", "5", True),  # "5.0" -> "5 0" -> "5"
        ("I count 6 legs, not 4.", "6", "6", True),
        ("６", "6", "６", False),  # full-width digits are not converted
        ("", "4", "", False),
        (None, "4", "", False),
        ("many", "4", "many", False),
    ],
)
def test_score_count(prediction: object, answer: str, normalized: str, correct: bool) -> None:
    result = score(prediction, answer, "count_exact")
    assert result.normalized_prediction == normalized
    assert result.correct is correct


# --------------------------------------------------------------------------
# choice_exact / multiple_choice_exact
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value", "parsed"),
    [
        ("b", "B", True),
        ("b unknown", "B", True),
        ("unknown", "D", True),  # option text match
        ("i think b", "I THINK B", False),  # first letter word is "i": not an option
        ("a", "A", True),  # an article counts as option A
        ("a red ball", "A", True),
        ("two balls", "C", True),  # matched by text (no single-letter word)
        ("the answer is c", "C", True),
        ("option d", "D", True),
        ("e", "E", False),  # not an option key, no text match
        ("blue", "BLUE", False),
        ("é", "É", False),  # option letters are ASCII a-z only
        ("", "", False),
    ],
)
def test_extract_choice_with_options(text: str, value: str, parsed: bool) -> None:
    assert extract_choice(text, OPTS_MAP) == (value, parsed)


@pytest.mark.parametrize(
    ("text", "value", "parsed"),
    [
        ("b", "B", True),
        ("i think b", "I", True),  # without options any letter is accepted
        ("e", "E", True),
        ("unknown", "UNKNOWN", False),
        ("", "", False),
    ],
)
def test_extract_choice_without_options(text: str, value: str, parsed: bool) -> None:
    assert extract_choice(text, None) == (value, parsed)
    assert extract_choice(text, {}) == (value, parsed)


@pytest.mark.parametrize("eval_type", CHOICE_TYPES)
@pytest.mark.parametrize("options", [OPTS_LIST, OPTS_MAP, tuple(OPTS_LIST)], ids=["list", "mapping", "tuple"])
@pytest.mark.parametrize(
    ("prediction", "answer", "normalized", "correct"),
    [
        ("B", "D", "B", False),
        ("D", "D", "D", True),
        ("d", "D", "D", True),
        ("(D)", "D", "D", True),
        ("(b) unknown", "B", "B", True),
        ("(b) unknown", "D", "B", False),
        ("unknown", "D", "D", True),
        ("UNKNOWN!", "D", "D", True),
        ("Unknown", "unknown", "D", True),  # expected given as option text
        ("I think D", "D", "I THINK D", False),
        ("a", "A", "A", True),
        ("A red ball.", "A", "A", True),
        ("Two balls", "C", "C", True),
        ("D. Unknown", "D", "D", True),
        ("", "D", "", False),
        (None, "D", "", False),
        ("cannot be determined", "D", "CANNOT BE DETERMINED", False),
    ],
)
def test_score_choice(
    eval_type: str, options: object, prediction: object, answer: str, normalized: str, correct: bool
) -> None:
    result = score(prediction, answer, eval_type, options)
    assert result.normalized_prediction == normalized
    assert result.correct is correct


def test_choice_mapping_keys_are_normalized_and_order_kept() -> None:
    opts = {"a": "cat", " b ": "dog", "c": "bird", "d": "cannot tell"}
    assert score("Dog", "B", "multiple_choice_exact", opts).normalized_prediction == "B"
    assert score("cannot tell.", "d", "multiple_choice_exact", opts) == Scored("D", "D", True, True)


def test_choice_first_matching_option_text_wins() -> None:
    opts = ["same", "Same!", "other", "x"]
    assert score("same", "A", "choice_exact", opts).normalized_prediction == "A"


def test_choice_fewer_options_limits_keys() -> None:
    # With three options, "d" is not a key: the letter is rejected.
    result = score("d", "C", "choice_exact", ["x", "y", "z"])
    assert result == Scored("D", "C", False, False)


def test_choice_options_ignored_for_other_types() -> None:
    assert score("yes", "yes", "yes_no_exact", OPTS_LIST).correct
    assert score("4", "4", "count_exact", "not-an-options-container").correct


def test_choice_bad_options_container() -> None:
    with pytest.raises(DataError, match="options"):
        score("a", "A", "choice_exact", "ABCD")


# --------------------------------------------------------------------------
# exact types and contains
# --------------------------------------------------------------------------
@pytest.mark.parametrize("eval_type", ["exact", "exact_match", "short_answer_exact"])
@pytest.mark.parametrize(
    ("prediction", "answer", "correct"),
    [
        ("Red ball", "red ball", True),
        ("  RED-ball!! ", "red ball", True),
        ("a red ball", "red ball", False),
        ("ÜNÏCÖDÉ", "ünïcödé", True),
        ("東京", "東京。", True),
        ("", "x", False),
        (None, "x", False),
        (True, "true", True),
    ],
)
def test_score_exact(eval_type: str, prediction: object, answer: str, correct: bool) -> None:
    assert score(prediction, answer, eval_type).correct is correct


@pytest.mark.parametrize(
    ("prediction", "answer", "correct"),
    [
        ("It is a red ball.", "red ball", True),
        ("red balloon", "red ball", True),  # plain substring, not whole words
        ("RED-BALL", "red ball", True),
        ("red", "red ball", False),
        ("", "red", False),
        (None, "red", False),
    ],
)
def test_score_contains(prediction: object, answer: str, correct: bool) -> None:
    assert score(prediction, answer, "contains").correct is correct


@pytest.mark.parametrize(("text", "parsed"), [("red", True), ("", False)])
def test_extract_exact(text: str, parsed: bool) -> None:
    assert extract_exact(text) == (text, parsed)


# --------------------------------------------------------------------------
# score(): result type, fail closed
# --------------------------------------------------------------------------
def test_scored_is_frozen_with_contract_fields() -> None:
    result = score("No.", "no", "yes_no_exact")
    assert result == Scored(normalized_prediction="no", normalized_answer="no", parsed=True, correct=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.correct = False  # type: ignore[misc]


@pytest.mark.parametrize("eval_type", EVAL_TYPES)
@pytest.mark.parametrize("answer", [None, "", "   ", "?!", float("nan")])
def test_empty_expected_answer_is_an_error(eval_type: str, answer: object) -> None:
    with pytest.raises(DataError, match="answer"):
        score("yes", answer, eval_type, OPTS_LIST)


@pytest.mark.parametrize("eval_type", ["", "yes_no", "fuzzy", "Exact Match"])
def test_unknown_eval_type_in_score_is_an_error(eval_type: str) -> None:
    with pytest.raises(DataError, match="unknown eval_type"):
        score("yes", "yes", eval_type)


@pytest.mark.parametrize("eval_type", EVAL_TYPES)
def test_missing_prediction_is_never_correct(eval_type: str) -> None:
    result = score(None, "A", eval_type, OPTS_LIST)
    assert result.correct is False and result.parsed is False and result.normalized_prediction == ""


# --------------------------------------------------------------------------
# resolve_eval_type
# --------------------------------------------------------------------------
@pytest.mark.parametrize("eval_type", EVAL_TYPES)
def test_resolve_known_eval_type(eval_type: str) -> None:
    assert resolve_eval_type({"id": "q", "eval_type": eval_type, "question_type": "count"}) == eval_type


def test_resolve_eval_type_is_trimmed_and_lowercased() -> None:
    assert resolve_eval_type({"id": "q", "eval_type": " Yes_No_Exact "}) == "yes_no_exact"


@pytest.mark.parametrize("blank", [None, "", "  ", float("nan")])
@pytest.mark.parametrize(
    ("question_type", "expected"),
    [
        ("yes_no", "yes_no_exact"),
        ("count", "count_exact"),
        ("multiple_choice", "choice_exact"),
        ("short_answer", "exact_match"),
        ("essay", "exact_match"),
        ("", "exact_match"),
        (None, "exact_match"),
    ],
)
def test_resolve_blank_eval_type_from_question_type(blank: object, question_type: object, expected: str) -> None:
    assert resolve_eval_type({"id": "q", "eval_type": blank, "question_type": question_type}) == expected


def test_resolve_without_either_column() -> None:
    assert resolve_eval_type({"id": "q"}) == "exact_match"


@pytest.mark.parametrize("bad", ["yes_no", "fuzzy_match", "yes-no-exact"])
def test_resolve_unknown_eval_type_fails_closed(bad: str) -> None:
    row = {"id": "attribute_007", "subset": "attribute", "eval_type": bad, "question_type": "count"}
    with pytest.raises(DataError) as info:
        resolve_eval_type(row)
    msg = str(info.value)
    assert "attribute_007" in msg and "eval_type" in msg and repr(bad) in msg and "attribute" in msg
