"""Failure-aware scores (sabre_prior.analysis.failure) on hand-made traces."""

from __future__ import annotations

from typing import Any

import pytest

from sabre_prior import contracts as C
from sabre_prior.analysis.failure import failure_aware, flag_text, flagged, max_nonanswer_rate, unit_scores
from sabre_prior.analysis.settings import AnalysisSettings

SETTINGS = AnalysisSettings(resamples=400, seed=0, confidence=0.95)


def _q(qid: str, outcome: str, chance: float, pair: str | None = None) -> dict[str, Any]:
    return {"id": qid, "pair_id": pair, "outcome": outcome, "correct": outcome == "correct", "chance": chance}


def _attribute() -> list[dict[str, Any]]:
    # 10 questions: 6 correct, 2 wrong, 1 unparseable, 1 refused; chance 1/4
    outcomes = ["correct"] * 6 + ["wrong"] * 2 + ["unparseable", "refused"]
    return [_q(f"a{i}", o, 0.25) for i, o in enumerate(outcomes)]


def test_bounds_by_hand() -> None:
    fa = failure_aware({"attribute": _attribute()}, SETTINGS)["attribute"]
    assert (fa["questions"], fa["nonanswer"], fa["rate"]) == (10, 2, 0.2)
    assert fa["outcomes"] == {**dict.fromkeys(C.OUTCOMES, 0), "correct": 6, "wrong": 2, "unparseable": 1, "refused": 1}
    assert fa["official"]["estimate"] == pytest.approx(0.6)
    assert fa["excluded"]["estimate"] == pytest.approx(6 / 8)  # the 8 answered questions
    assert fa["chance"]["estimate"] == pytest.approx((6 + 2 * 0.25) / 10)
    for bound in ("official", "excluded", "chance"):
        assert fa[bound]["low"] <= fa[bound]["estimate"] <= fa[bound]["high"]
    assert fa["official"]["high"] > fa["official"]["low"]  # a real interval


def test_a_pair_with_a_non_answer_is_expected_at_chance() -> None:
    rows = [
        _q("p1a", "correct", 0.5, "p1"), _q("p1b", "correct", 0.5, "p1"),
        _q("p1c", "truncated", 0.5, "p1"), _q("p1d", "unparseable", 0.5, "p1"),
        _q("p2a", "correct", 0.5, "p2"), _q("p2b", "wrong", 0.5, "p2"),
        _q("p2c", "failed", 0.5, "p2"), _q("p2d", "correct", 0.5, "p2"),
    ]  # fmt: skip
    scores = unit_scores(rows, "context")
    assert scores.ids == ("p1", "p2")
    assert list(scores.chance) == [0.25, 0.0]  # p1: two guesses at 1/2; p2 has a wrong answer
    assert list(scores.answered) == [False, False]
    fa = failure_aware({"context": rows}, SETTINGS)
    assert fa["context"]["excluded"] is None and fa["macro"]["excluded"] is None  # no fully answered pair
    assert fa["context"]["chance"]["estimate"] == pytest.approx(0.125)


def test_macro_and_flag() -> None:
    clean = [_q(f"l{i}", "correct" if i % 2 else "wrong", 0.25) for i in range(20)]
    fa = failure_aware({"attribute": _attribute(), "language": clean}, SETTINGS)
    assert fa["macro"]["official"]["estimate"] == pytest.approx((0.6 + 0.5) / 2)
    assert fa["macro"]["excluded"]["estimate"] == pytest.approx((0.75 + 0.5) / 2)
    assert (fa["macro"]["nonanswer"], fa["macro"]["questions"]) == (2, 30)
    threshold = max_nonanswer_rate({"analysis": {"report": {"max_nonanswer_rate": 0.1}}})
    assert threshold == 0.1 and max_nonanswer_rate({}) == 0.05
    assert flagged(fa["attribute"], threshold) and not flagged(fa["language"], threshold)
    assert flag_text(fa["attribute"]) == "2 of 10 non-answers (20.0%)"
