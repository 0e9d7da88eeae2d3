"""The offline baseline backend and the backend registry."""

from __future__ import annotations

from collections import Counter

import pytest

from sabre_prior.errors import BackendError, ConfigError
from sabre_prior.inference.models.base import Query, backend_class, create_backend
from sabre_prior.inference.models.baseline import BaselineBackend


def _q(qid: str, eval_type: str, **row) -> Query:
    row = {"id": qid, "eval_type": eval_type, **row}
    return Query(id=qid, split="x", text="", image=b"", image_mime="image/jpeg", row=row)


PAIR = [
    _q("c_001__base_source", "yes_no_exact", probe="base_source", answer="yes"),
    _q("c_001__base_target", "yes_no_exact", probe="base_target", answer="no"),
    _q("c_001__edited_source", "yes_no_exact", probe="edited_source", answer="no"),
    _q("c_001__edited_target", "yes_no_exact", probe="edited_target", answer="yes"),
]


def _answers(strategy: str, queries, **settings) -> list[str]:
    backend = create_backend("m", {"backend": "baseline", "strategy": strategy, **settings})
    return [c.text for c in backend.complete_batch(queries)]


def test_prior_follows_the_familiar_object_on_both_images() -> None:
    assert _answers("prior", PAIR) == ["Yes.", "No.", "Yes.", "No."]
    texture = [
        _q("t__base_normal", "yes_no_exact", probe="base_normal"),
        _q("t__edited_counterfactual", "yes_no_exact", probe="edited_counterfactual"),
    ]
    assert _answers("prior", texture) == ["Yes.", "No."]


def test_prior_uses_canonical_count_and_suggested_option() -> None:
    qs = [
        _q("a1", "count_exact", canonical_count=8, answer="6"),
        _q("l1", "multiple_choice_exact", suggested_option="B", options=["x", "y", "z", "unknown"], answer="D"),
    ]
    assert _answers("prior", qs) == ["8", "B"]


def test_prior_without_prior_columns_answers_empty_count(caplog) -> None:
    assert _answers("prior", [_q("a1", "count_exact", answer="6")]) == [""]
    assert "canonical_count" in caplog.text


def test_constant_and_oracle() -> None:
    assert _answers("always_yes", PAIR) == ["Yes."] * 4
    assert _answers("always_no", PAIR) == ["No."] * 4
    assert _answers("oracle", PAIR) == ["yes", "no", "no", "yes"]


def test_random_is_seeded_per_question_not_per_order() -> None:
    qs = [_q(f"q{i}", "yes_no_exact") for i in range(200)]
    a = _answers("random", qs, seed=1)
    b = _answers("random", list(reversed(qs)), seed=1)
    assert a == list(reversed(b))
    assert a != _answers("random", qs, seed=2)
    counts = Counter(a)
    assert set(counts) == {"Yes.", "No."} and 70 < counts["Yes."] < 130


def test_random_answers_are_valid_for_each_type() -> None:
    opts = {"A": "a", "B": "b", "C": "c", "D": "d"}
    count_answers = _answers("random", [_q(f"a{i}", "count_exact") for i in range(50)])
    assert all(a.isdigit() and 0 <= int(a) <= 10 for a in count_answers)
    letters = _answers("random", [_q(f"l{i}", "multiple_choice_exact", options=opts) for i in range(50)])
    assert set(letters) <= set(opts) and len(set(letters)) > 1


def test_unknown_strategy_and_backend() -> None:
    with pytest.raises(ConfigError, match="strategy must be one of"):
        BaselineBackend("m", {"backend": "baseline", "strategy": "psychic"})
    with pytest.raises(BackendError, match="unknown model backend 'telepathy'; known backends: "):
        backend_class("telepathy")
    with pytest.raises(BackendError, match="backend is missing"):
        create_backend("m", {})
