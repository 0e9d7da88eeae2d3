"""Validation rules of a split's rows: each violation names split, row id and field."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from sabre_prior import contracts as C
from sabre_prior.errors import DataError
from sabre_prior.data.validate import (
    MAX_LISTED,
    Problem,
    check_counts,
    check_split,
    validate_split,
)

Row = dict[str, Any]


def _paired(split: str, pairs: int = 2) -> list[Row]:
    rows = []
    for p in range(pairs):
        pair_id = f"{split}_{p + 1:03d}"
        for probe, (_role, answer) in C.PROBES[split].items():
            rows.append(
                {
                    "id": f"{pair_id}__{probe}",
                    "subset": split,
                    "question": "Is there a kettle visible in this kitchen?",
                    "answer": answer,
                    "eval_type": "yes_no_exact",
                    "pair_id": pair_id,
                    "probe": probe,
                }
            )
    return rows


def _attribute(n: int = 3) -> list[Row]:
    return [
        {"id": f"attribute_{i:03d}", "subset": "attribute", "question": "How many legs?", "answer": str(5 + i),
         "eval_type": "count_exact"}
        for i in range(1, n + 1)
    ]


def _language(n: int = 3, as_list: bool = False) -> list[Row]:
    texts = ["coffee", "tea", "Cannot be determined from the image", "juice"]
    options: Any = list(texts) if as_list else dict(zip("ABCD", texts))
    return [
        {"id": f"language_{i:03d}", "subset": "language", "question": "What drink?", "options": copy.deepcopy(options),
         "answer": "C", "answer_text": texts[2], "eval_type": "multiple_choice_exact"}
        for i in range(1, n + 1)
    ]


VALID: dict[str, Callable[[], list[Row]]] = {
    "context": lambda: _paired("context"),
    "texture": lambda: _paired("texture"),
    "attribute": _attribute,
    "language": _language,
}


def _columns(rows: list[Row]) -> list[str]:
    return [*rows[0], C.COL_IMAGE]


def _error(split: str, rows: list[Row], **kw: Any) -> str:
    with pytest.raises(DataError) as info:
        columns = kw.pop("columns") if "columns" in kw else _columns(rows)
        validate_split(split, rows, columns, **kw)
    return str(info.value)


@pytest.mark.parametrize("split", C.SPLITS)
def test_valid_rows_pass(split: str) -> None:
    rows = VALID[split]()
    keys = [f"img{i // 2}" for i in range(len(rows))]
    validate_split(split, rows, _columns(rows), keys)
    assert check_split(split, rows, _columns(rows), keys) == []


def test_language_options_as_a_list_are_accepted() -> None:
    rows = _language(as_list=True)
    assert check_split("language", rows, _columns(rows)) == []


def test_answers_are_compared_after_normalization() -> None:
    rows = _paired("context")
    rows[0]["answer"] = " Yes. "
    assert check_split("context", rows, _columns(rows)) == []


def test_blank_eval_type_is_allowed_with_a_question_type() -> None:
    rows = _attribute()
    rows[0]["eval_type"] = ""
    rows[0]["question_type"] = "count"
    for r in rows[1:]:
        r["question_type"] = "count"
    assert check_split("attribute", rows, _columns(rows)) == []


def _set(i: int, field: str, value: Any) -> Callable[[list[Row]], None]:
    def mutate(rows: list[Row]) -> None:
        rows[i][field] = value

    return mutate


def _delete_row(i: int) -> Callable[[list[Row]], None]:
    def mutate(rows: list[Row]) -> None:
        del rows[i]

    return mutate


# (case, split, mutation, named row/pair id, field, phrase in the message)
CASES = [
    ("duplicate id", "attribute", _set(1, "id", "attribute_001"), "attribute_001", "id", "duplicate question id"),
    ("empty id", "attribute", _set(1, "id", ""), "<row 1>", "id", "empty question id"),
    ("subset", "context", _set(2, "subset", "texture"), "context_001__edited_source", "subset", "expected 'context'"),
    ("unknown eval type", "texture", _set(0, "eval_type", "fuzzy"), "texture_001__base_normal", "eval_type", "unknown eval_type"),
    ("blank eval type", "attribute", _set(2, "eval_type", " "), "attribute_003", "eval_type", "no question_type"),
    ("empty answer", "attribute", _set(0, "answer", ""), "attribute_001", "answer", "empty expected answer"),
    ("null answer", "language", _set(1, "answer", None), "language_002", "answer", "empty expected answer"),
    ("empty question", "attribute", _set(0, "question", "  "), "attribute_001", "question", "empty question"),
    ("id format", "context", _set(4, "id", "context_002__first"), "context_002__first", "id", "'context_002__base_source'"),
    ("wrong expected answer", "context", _set(1, "answer", "yes"), "context_001__base_target", "answer", "must have answer 'no'"),
    ("wrong expected answer texture", "texture", _set(7, "answer", "no"), "texture_002__edited_counterfactual", "answer",
     "must have answer 'yes'"),
    ("unknown probe", "texture", _set(0, "probe", "sideways"), "texture_001__base_normal", "probe", "unknown probe"),
    ("missing probe", "context", _delete_row(3), "context_001", "probe", "missing edited_target"),
    ("three options", "language", _set(0, "options", {"A": "x", "B": "y", "C": "z"}), "language_001", "options",
     "has 3 options, expected 4"),
    ("empty option", "language", _set(0, "options", ["x", "", "z", "w"]), "language_001", "options", "option text is empty"),
    ("answer not a key", "language", _set(2, "answer", "E"), "language_003", "answer", "not an option key"),
    ("options not a container", "language", _set(0, "options", 7), "language_001", "options", "a list, a mapping or text"),
]


@pytest.mark.parametrize(("case", "split", "mutate", "row_id", "field", "phrase"), CASES, ids=[c[0] for c in CASES])
def test_each_rule_names_split_row_and_field(
    case: str, split: str, mutate: Callable[[list[Row]], None], row_id: str, field: str, phrase: str
) -> None:
    rows = VALID[split]()
    columns = _columns(rows)
    mutate(rows)
    msg = _error(split, rows, columns=columns)
    assert msg.startswith(f"{split}: the data violates the contract")
    assert f"'{row_id}'" in msg
    assert f"field '{field}'" in msg
    assert phrase in msg


def test_missing_column_is_named() -> None:
    rows = _paired("texture")
    for r in rows:
        del r["pair_id"]
    msg = _error("texture", rows, columns=[*rows[0], C.COL_IMAGE])
    assert "texture: split, field 'pair_id': required column is missing" in msg


def test_missing_image_column_and_missing_image() -> None:
    rows = _attribute()
    msg = _error("attribute", rows, columns=list(rows[0]), image_keys=["a", None, "c"])
    assert "field 'image': required column is missing" in msg
    assert "row 'attribute_002', field 'image': no image" in msg


def test_all_problems_are_collected_and_the_list_is_capped() -> None:
    rows = _attribute(30)
    for r in rows:
        r["answer"] = ""
    msg = _error("attribute", rows)
    assert "30 problem(s)" in msg
    assert msg.count("empty expected answer") == MAX_LISTED
    assert msg.rstrip().endswith(f"... and {30 - MAX_LISTED} more")


def test_problems_of_different_rules_are_reported_together() -> None:
    rows = _paired("context")
    rows[0]["subset"] = "language"
    rows[5]["answer"] = "yes"
    problems = check_split("context", rows, _columns(rows))
    assert [(p.row_id, p.field) for p in problems] == [
        ("context_001__base_source", "subset"),
        ("context_002__base_target", "answer"),
    ]


def test_official_counts() -> None:
    assert check_counts("context", 200, 400) == []
    problems = check_counts("attribute", 99, 100)
    assert problems == [Problem("attribute", None, "image", "99 distinct images, the official dataset has 100")]
    rows = _paired("context")
    msg = _error("context", rows, image_keys=[f"i{i // 2}" for i in range(8)], official_counts=True)
    assert "4 distinct images, the official dataset has 200" in msg
    assert "8 questions, the official dataset has 400" in msg


def test_empty_split_and_unknown_split() -> None:
    assert "no rows" in _error("language", [], columns=list(C.SPLIT_COLUMNS["language"]))
    assert [p.message for p in check_split("colour", [])] == [
        "unknown split (expected one of context, texture, attribute, language)"
    ]
