"""Reading traces and turning them into unit outcomes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sabre_prior import contracts as C
from sabre_prior.analysis.traces import model_outcomes, read_trace, unit_outcomes
from sabre_prior.errors import DataError


def test_unit_outcomes_of_the_synthetic_models(project: Path) -> None:
    mixed = model_outcomes(C.TRACES_DIR + "/mixed", C.SPLITS)
    assert mixed["context"].ids == tuple(f"context_{i:03d}" for i in range(1, 7))
    assert mixed["context"].correct.tolist() == [True, True, True, False, False, False]
    assert mixed["attribute"].n == 8 and mixed["attribute"].accuracy == 0.5
    assert mixed["language"].accuracy == 0.25
    prior = model_outcomes(C.TRACES_DIR + "/prior", C.SPLITS)
    assert prior["texture"].accuracy == 0.0
    assert prior["attribute"].correct.sum() == 3  # items 1, 4, 7: canonical count = gold


def test_units_are_sorted_whatever_the_trace_order(project: Path) -> None:
    rows = read_trace(C.trace_path("mixed", "context"), "context")
    a = unit_outcomes(rows, "context")
    b = unit_outcomes(list(reversed(rows)), "context")
    assert a.ids == b.ids and a.correct.tolist() == b.correct.tolist()


def test_pair_lacking_a_probe_is_an_error(project: Path) -> None:
    rows = read_trace(C.trace_path("oracle", "context"), "context")
    rows = [r for r in rows if r["id"] != "context_002__edited_target"]
    with pytest.raises(DataError, match=r"pair 'context_002': lacks probe\(s\) edited_target"):
        unit_outcomes(rows, "context", "x.jsonl")


def test_duplicate_question_is_an_error(project: Path) -> None:
    rows = read_trace(C.trace_path("oracle", "attribute"), "attribute")
    with pytest.raises(DataError, match="appears twice"):
        unit_outcomes(rows + rows[:1], "attribute")


def _rewrite(path: Path, lineno: int, change) -> None:
    lines = path.read_text().splitlines()
    obj = json.loads(lines[lineno - 1])
    lines[lineno - 1] = change(obj)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda o: json.dumps({k: v for k, v in o.items() if k != "parsed"}),
            r":3: trace keys do not match the contract \(lacks parsed\)",
        ),
        (lambda o: json.dumps({**o, "extra": 1}), r":3: trace keys .*unknown extra"),
        (lambda o: json.dumps({**o, "correct": "yes"}), r":3: field 'correct' must be true or false"),
        (lambda o: json.dumps({**o, "split": "texture"}), r":3: field 'split' is 'texture', expected 'context'"),
        (lambda o: "{not json", r":3: invalid JSON"),
    ],
)
def test_malformed_trace_names_file_and_line(project: Path, change, message: str) -> None:
    path = C.trace_path("oracle", "context")
    _rewrite(path, 3, change)
    with pytest.raises(DataError, match=message) as info:
        read_trace(path, "context")
    assert str(path) in str(info.value)


def test_missing_trace_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="trace file not found"):
        read_trace(tmp_path / "nope.jsonl")
