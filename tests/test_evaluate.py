"""``sabre evaluate``: metrics against hand-computed values, traces, bad files, CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sabre_prior import contracts as C
from sabre_prior.cli import main
from sabre_prior.errors import DataError, PredictionFileError
from sabre_prior.scoring.evaluate import default_trace_dir, evaluate_predictions

IMAGE = {"bytes": b"\xff\xd8\xff\xe0fake-jpeg", "path": None}
LANG_OPTIONS = ["a cat", "a dog", "a bird", "Cannot be determined"]
MISSING = object()  # marks a question with no prediction line


# --------------------------------------------------------------------------
# Fixture data: rows and predictions with known outcomes
# --------------------------------------------------------------------------
def _paired_rows(split: str, pair_ids: list[str]) -> list[dict[str, Any]]:
    rows = []
    for pair_id in pair_ids:
        for probe, (_, answer) in C.PROBES[split].items():
            rows.append(
                {
                    "id": f"{pair_id}__{probe}",
                    "image": IMAGE,
                    "subset": split,
                    "question": f"Is there a thing in {pair_id}?",
                    "answer": answer,
                    "eval_type": "yes_no_exact",
                    "pair_id": pair_id,
                    "probe": probe,
                }
            )
    return rows


def _rows(split: str) -> list[dict[str, Any]]:
    if split == "context":
        return _paired_rows(split, ["context_001", "context_002", "context_003"])
    if split == "texture":
        return _paired_rows(split, ["texture_001", "texture_002"])
    if split == "attribute":
        return [
            {"id": f"attribute_{i:03d}", "image": IMAGE, "subset": split, "question": "How many legs?",
             "answer": answer, "eval_type": "count_exact"}
            for i, answer in enumerate(["3", "5", "4", "6", "8"], start=1)
        ]  # fmt: skip
    return [
        {"id": f"language_{i:03d}", "image": IMAGE, "subset": split, "question": "What is in the box?",
         "answer": "D", "eval_type": "multiple_choice_exact", "options": LANG_OPTIONS,
         "answer_text": LANG_OPTIONS[3]}
        for i in range(1, 5)
    ]  # fmt: skip


PREDICTIONS: dict[str, dict[str, Any]] = {
    "context": {
        # pair 1: all four correct
        "context_001__base_source": "Yes.",
        "context_001__base_target": "No",
        "context_001__edited_source": "no, it is not",
        "context_001__edited_target": "YES",
        # pair 2: base_target wrong
        "context_002__base_source": "yes",
        "context_002__base_target": "yes",
        "context_002__edited_source": "No.",
        "context_002__edited_target": "Yes",
        # pair 3: edited_target has no line
        "context_003__base_source": "Yes",
        "context_003__base_target": "no",
        "context_003__edited_source": "no",
        "context_003__edited_target": MISSING,
    },
    "texture": {
        "texture_001__base_normal": "yes",
        "texture_001__base_counterfactual": "No",
        "texture_001__edited_normal": "no",
        "texture_001__edited_counterfactual": "yes",
        # follows the prior: wrong on both edited probes
        "texture_002__base_normal": "yes",
        "texture_002__base_counterfactual": "no",
        "texture_002__edited_normal": "yes",
        "texture_002__edited_counterfactual": "nope",
    },
    "attribute": {
        "attribute_001": "3",
        "attribute_002": "five legs",
        "attribute_003": None,  # null: scored as empty text (wrong), not missing
        "attribute_004": 6,  # not a string: str() -> "6" (correct)
        "attribute_005": MISSING,
    },
    "language": {
        "language_001": "D",
        "language_002": "(d)",
        "language_003": "Cannot be determined.",
        "language_004": "I think D",
    },
}

EXPECTED: dict[str, Any] = {
    "context": {
        "accuracy": 1 / 3,
        "correct": 1,
        "total": 3,
        "missing": 1,
        "question_accuracy": 10 / 12,
        "probe_accuracy": {"base_source": 1.0, "base_target": 2 / 3, "edited_source": 1.0, "edited_target": 2 / 3},
    },
    "texture": {
        "accuracy": 0.5,
        "correct": 1,
        "total": 2,
        "missing": 0,
        "question_accuracy": 6 / 8,
        "probe_accuracy": {
            "base_normal": 1.0,
            "base_counterfactual": 1.0,
            "edited_normal": 0.5,
            "edited_counterfactual": 0.5,
        },
    },
    "attribute": {"accuracy": 0.6, "correct": 3, "total": 5, "missing": 1},
    "language": {"accuracy": 0.75, "correct": 3, "total": 4, "missing": 0},
    "macro_accuracy": (1 / 3 + 0.5 + 0.6 + 0.75) / 4,
}


def _outcomes(n: int, **counts: int) -> dict[str, Any]:
    full = {o: counts.get(o, 0) for o in C.OUTCOMES}
    nonanswer = sum(full[o] for o in C.NON_ANSWERS)
    return {"outcomes": full, "nonanswer": nonanswer, "nonanswer_rate": nonanswer / n}


# by hand: context_002__base_target "yes" is wrong, context_003__edited_target has no line (failed: no
# usage summary says it was refused); texture "nope" has no yes/no word (unparseable), edited_normal
# "yes" is wrong; attribute null -> "" (unparseable), attribute_005 no line; language "I think D": its
# first single-letter word is "i", no option (unparseable)
EXPECTED["context"].update(_outcomes(12, correct=10, wrong=1, failed=1))
EXPECTED["texture"].update(_outcomes(8, correct=6, wrong=1, unparseable=1))
EXPECTED["attribute"].update(_outcomes(5, correct=3, unparseable=1, failed=1))
EXPECTED["language"].update(_outcomes(4, correct=3, unparseable=1))


def write_split(data_dir: Path, split: str, rows: list[dict[str, Any]]) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"{split}.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def pred_lines(split: str) -> list[str]:
    return [
        json.dumps({"id": qid, "prediction": value})
        for qid, value in PREDICTIONS[split].items()
        if value is not MISSING
    ]


def write_preds(pred_dir: Path, split: str, lines: list[str]) -> Path:
    pred_dir.mkdir(parents=True, exist_ok=True)
    path = pred_dir / f"{split}.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def bench(tmp_path: Path) -> tuple[Path, Path]:
    data_dir, pred_dir = tmp_path / "parquet", tmp_path / "preds"
    for split in C.SPLITS:
        write_split(data_dir, split, _rows(split))
        write_preds(pred_dir, split, pred_lines(split))
    return data_dir, pred_dir


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --------------------------------------------------------------------------
# Metrics and traces
# --------------------------------------------------------------------------
def test_metrics_match_hand_computed_values(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    out = tmp_path / "metrics" / "model.json"
    metrics = evaluate_predictions(pred_dir, data_dir, out, trace_dir=tmp_path / "traces")
    assert metrics == EXPECTED
    assert list(metrics["context"]["probe_accuracy"]) == list(C.PROBES["context"])
    on_disk = json.loads(out.read_text(encoding="utf-8"))
    assert on_disk == EXPECTED
    assert out.read_text(encoding="utf-8") == json.dumps(EXPECTED, sort_keys=True, indent=2) + "\n"


def test_traces(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    trace_dir = tmp_path / "traces"
    evaluate_predictions(pred_dir, data_dir, tmp_path / "m.json", trace_dir=trace_dir)
    for split in C.SPLITS:
        traces = read_jsonl(trace_dir / f"{split}.jsonl")
        assert [t["id"] for t in traces] == [r["id"] for r in _rows(split)]  # dataset order
        for t in traces:
            assert tuple(t) == C.TRACE_KEYS
            assert t["split"] == split
    ctx = {t["id"]: t for t in read_jsonl(trace_dir / "context.jsonl")}
    assert ctx["context_001__edited_source"] == {
        "id": "context_001__edited_source", "split": "context", "pair_id": "context_001",
        "probe": "edited_source", "eval_type": "yes_no_exact", "prediction": "no, it is not",
        "normalized_prediction": "no", "answer": "no", "normalized_answer": "no",
        "parsed": True, "missing": False, "correct": True, "outcome": "correct", "chance": 0.5,
    }  # fmt: skip
    gone = ctx["context_003__edited_target"]
    assert gone["outcome"] == "failed"
    assert (gone["prediction"], gone["normalized_prediction"], gone["missing"], gone["correct"]) == (
        None,
        "",
        True,
        False,
    )
    att = {t["id"]: t for t in read_jsonl(trace_dir / "attribute.jsonl")}
    assert att["attribute_001"]["pair_id"] is None and att["attribute_001"]["probe"] is None
    assert att["attribute_002"]["normalized_prediction"] == "5" and att["attribute_002"]["correct"]
    null = att["attribute_003"]
    assert (null["prediction"], null["normalized_prediction"], null["parsed"], null["missing"], null["correct"]) == (
        None, "", False, False, False,
    )  # fmt: skip
    assert att["attribute_004"]["prediction"] == 6 and att["attribute_004"]["correct"]
    assert null["outcome"] == "unparseable" and att["attribute_005"]["outcome"] == "failed"
    assert att["attribute_001"]["chance"] == 1 / 5  # five distinct expected counts in the split
    lang = {t["id"]: t for t in read_jsonl(trace_dir / "language.jsonl")}
    assert lang["language_003"]["normalized_prediction"] == "D" and lang["language_003"]["parsed"]
    assert lang["language_004"]["normalized_prediction"] == "I THINK D" and not lang["language_004"]["parsed"]
    assert lang["language_004"]["outcome"] == "unparseable" and lang["language_004"]["chance"] == 1 / 4
    tex = {t["id"]: t for t in read_jsonl(trace_dir / "texture.jsonl")}
    assert tex["texture_002__edited_counterfactual"]["parsed"] is False


def test_default_trace_dir_is_beside_output(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    out = tmp_path / "res" / "model.json"
    evaluate_predictions(pred_dir, data_dir, out)
    assert default_trace_dir(out) == tmp_path / "res" / "model.traces"
    assert sorted(p.name for p in (tmp_path / "res" / "model.traces").iterdir()) == sorted(
        f"{s}.jsonl" for s in C.SPLITS
    )


def test_subset_of_splits_and_macro(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    metrics = evaluate_predictions(pred_dir, data_dir, tmp_path / "m.json", splits=["attribute", "language"])
    assert set(metrics) == {"attribute", "language", "macro_accuracy"}
    assert metrics["macro_accuracy"] == (0.6 + 0.75) / 2


def test_split_listed_twice_is_an_error(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    with pytest.raises(DataError, match="twice"):
        evaluate_predictions(pred_dir, data_dir, tmp_path / "m.json", splits=["attribute", "attribute"])


def test_all_correct_and_all_missing(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    gold = [json.dumps({"id": r["id"], "prediction": r["answer"]}) for r in _rows("context")]
    write_preds(pred_dir, "context", gold)
    empty = write_preds(pred_dir, "texture", [])
    # an empty file is an unfinished predict step, not a model that answered nothing (issue 33)
    with pytest.raises(PredictionFileError, match=f"{empty}: holds no prediction for any of the split's 8 questions"):
        evaluate_predictions(pred_dir, data_dir, tmp_path / "m.json", splits=["context", "texture"])
    assert not (tmp_path / "m.json").exists()
    # ... unless the provider refused every question: then each is missing and scored as wrong
    usage_dir = tmp_path / "usage"
    usage_dir.mkdir()
    (usage_dir / "context.json").write_text(json.dumps({"refused_ids": {}}))
    ids = [r["id"] for r in _rows("texture")]
    (usage_dir / "texture.json").write_text(json.dumps({"refused_ids": dict.fromkeys(ids, "content_filter")}))
    metrics = evaluate_predictions(
        pred_dir, data_dir, tmp_path / "m.json", splits=["context", "texture"], usage_dir=usage_dir
    )
    assert metrics["context"]["accuracy"] == 1.0 and metrics["context"]["missing"] == 0
    assert metrics["texture"] == {
        "accuracy": 0.0, "correct": 0, "total": 2, "missing": 8, "refused": 8, "question_accuracy": 0.0,
        "probe_accuracy": dict.fromkeys(C.PROBES["texture"], 0.0), **_outcomes(8, refused=8),
    }  # fmt: skip


def test_blank_lines_are_skipped(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    expected = evaluate_predictions(pred_dir, data_dir, tmp_path / "a.json", splits=["attribute"])
    lines = pred_lines("attribute")
    write_preds(pred_dir, "attribute", ["", lines[0], "   ", *lines[1:], "\t"])
    assert evaluate_predictions(pred_dir, data_dir, tmp_path / "b.json", splits=["attribute"]) == expected


def test_unicode_line_separators_inside_predictions(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    lines = [
        json.dumps({"id": "attribute_001", "prediction": "three\u2028legs"}, ensure_ascii=False),
        json.dumps({"id": "attribute_002", "prediction": "5\x85\x0c"}, ensure_ascii=False),
    ]
    path = write_preds(pred_dir, "attribute", lines)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))  # CRLF line ends
    metrics = evaluate_predictions(pred_dir, data_dir, tmp_path / "m.json", splits=["attribute"])
    assert metrics["attribute"] == {"accuracy": 0.4, "correct": 2, "total": 5, "missing": 3, **_outcomes(5, correct=2, failed=3)}


def test_extra_keys_and_odd_prediction_values(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    lines = [
        json.dumps({"id": "attribute_001", "prediction": ["3"], "model": "x"}),  # str(['3']) -> "3"
        json.dumps({"id": "attribute_002", "prediction": ""}),
        json.dumps({"id": "attribute_003", "prediction": 4.0}),  # "4.0" -> "4 0" -> "4"
        json.dumps({"id": "attribute_004", "prediction": True}),
        json.dumps({"id": "attribute_005", "prediction": {"n": 8}}),  # "{'n': 8}" -> "n 8" -> "8"
    ]
    write_preds(pred_dir, "attribute", lines)
    trace_dir = tmp_path / "t"
    metrics = evaluate_predictions(pred_dir, data_dir, tmp_path / "m.json", splits=["attribute"], trace_dir=trace_dir)
    assert metrics["attribute"] == {
        "accuracy": 0.6, "correct": 3, "total": 5, "missing": 0, **_outcomes(5, correct=3, unparseable=2),
    }  # fmt: skip  ("" and True ("true") hold no count)
    normalized = [t["normalized_prediction"] for t in read_jsonl(trace_dir / "attribute.jsonl")]
    assert normalized == ["3", "", "4", "true", "8"]


def test_options_as_letter_mapping(tmp_path: Path) -> None:
    rows = _rows("language")
    for row in rows:
        row["options"] = dict(zip(C.OPTION_LETTERS, LANG_OPTIONS))  # a Parquet struct column
    write_split(tmp_path / "d", "language", rows)
    write_preds(tmp_path / "p", "language", pred_lines("language"))
    metrics = evaluate_predictions(tmp_path / "p", tmp_path / "d", tmp_path / "m.json", splits=["language"])
    assert metrics["language"] == EXPECTED["language"]


def test_blank_eval_type_is_inferred_from_question_type(tmp_path: Path) -> None:
    rows = _rows("attribute")
    for row in rows:
        row["eval_type"] = ""
        row["question_type"] = "count"
    write_split(tmp_path / "d", "attribute", rows)
    write_preds(tmp_path / "p", "attribute", pred_lines("attribute"))
    trace_dir = tmp_path / "t"
    metrics = evaluate_predictions(
        tmp_path / "p", tmp_path / "d", tmp_path / "m.json", splits=["attribute"], trace_dir=trace_dir
    )
    assert metrics["attribute"] == EXPECTED["attribute"]
    assert {t["eval_type"] for t in read_jsonl(trace_dir / "attribute.jsonl")} == {"count_exact"}


def test_determinism(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    outputs = []
    for run in ("one", "two"):
        out = tmp_path / run / "m.json"
        evaluate_predictions(pred_dir, data_dir, out)
        outputs.append([out.read_bytes()] + [(out.parent / "m.traces" / f"{s}.jsonl").read_bytes() for s in C.SPLITS])
    assert outputs[0] == outputs[1]


def test_thousand_questions_score_fast(tmp_path: Path) -> None:
    rows = [
        {"id": f"attribute_{i:04d}", "image": {"bytes": os.urandom(2048), "path": None}, "subset": "attribute",
         "question": "How many legs?", "answer": str(i % 9), "eval_type": "count_exact"}
        for i in range(1000)
    ]  # fmt: skip
    write_split(tmp_path / "d", "attribute", rows)
    write_preds(
        tmp_path / "p",
        "attribute",
        [json.dumps({"id": r["id"], "prediction": f"I see {i % 7} legs."}) for i, r in enumerate(rows)],
    )
    start = time.perf_counter()
    metrics = evaluate_predictions(tmp_path / "p", tmp_path / "d", tmp_path / "m.json", splits=["attribute"])
    elapsed = time.perf_counter() - start
    assert metrics["attribute"]["correct"] == sum(i % 9 == i % 7 for i in range(1000))
    assert elapsed < 5.0  # typically ~0.05 s; a generous bound for a shared machine


# --------------------------------------------------------------------------
# Bad prediction files: file and 1-based line in the message, nothing written
# --------------------------------------------------------------------------
GOOD = json.dumps({"id": "attribute_001", "prediction": "3"})


@pytest.mark.parametrize(
    ("lines", "bad_line", "fragment"),
    [
        ([GOOD, '{"id": "attribute_002", "prediction": "5"'], 2, "invalid JSON"),
        ([GOOD, "not json at all"], 2, "invalid JSON"),
        (['{"id": "attribute_002", "prediction": NaN}'], 1, "NaN"),
        ([GOOD, "", '["attribute_002", "5"]'], 3, "expected a JSON object"),
        ([GOOD, '"just a string"'], 2, "expected a JSON object"),
        ([GOOD, '{"prediction": "5"}'], 2, "missing key 'id'"),
        ([GOOD, '{"id": "attribute_002"}'], 2, "missing key 'prediction'"),
        ([GOOD, '{"id": 2, "prediction": "5"}'], 2, "must be a string"),
        (
            [GOOD, json.dumps({"id": "attribute_002", "prediction": "5"}), GOOD],
            3,
            "duplicate id 'attribute_001' (first on line 1)",
        ),
        ([GOOD, json.dumps({"id": "attribute_999", "prediction": "5"})], 2, "'attribute_999' is not a question"),
        ([json.dumps({"id": "language_001", "prediction": "D"})], 1, "not a question of this split"),
    ],
)
def test_bad_prediction_file(
    bench: tuple[Path, Path], tmp_path: Path, lines: list[str], bad_line: int, fragment: str
) -> None:
    data_dir, pred_dir = bench
    path = write_preds(pred_dir, "attribute", lines)
    out = tmp_path / "out" / "m.json"
    with pytest.raises(PredictionFileError) as info:
        evaluate_predictions(pred_dir, data_dir, out)
    msg = str(info.value)
    assert msg.startswith(f"{path}:{bad_line}: ")
    assert fragment in msg
    assert not (tmp_path / "out").exists()  # nothing written, not even traces of valid splits


def test_invalid_utf8(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    (pred_dir / "attribute.jsonl").write_bytes(b'{"id": "attribute_001", "prediction": "\xff"}\n')
    with pytest.raises(PredictionFileError, match="attribute.jsonl.*UTF-8"):
        evaluate_predictions(pred_dir, data_dir, tmp_path / "m.json")


def test_a_lone_surrogate_names_file_line_and_field(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    lines = pred_lines("attribute")
    lines[1] = '{"id": "attribute_002", "prediction": "5\\ud800"}'  # valid JSON, not valid Unicode text
    path = write_preds(pred_dir, "attribute", lines)
    with pytest.raises(PredictionFileError) as info:
        evaluate_predictions(pred_dir, data_dir, tmp_path / "m.json")
    assert f"{path}:2: field 'prediction' holds a lone surrogate (\\ud800)" in str(info.value)
    assert not (tmp_path / "m.json").exists()


def test_a_folder_given_as_a_prediction_file_says_so(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    (pred_dir / "language.jsonl").unlink()
    (pred_dir / "language.jsonl").mkdir()
    with pytest.raises(PredictionFileError) as info:
        evaluate_predictions(pred_dir, data_dir, tmp_path / "m.json")
    assert f"{pred_dir / 'language.jsonl'}: is a folder, not a prediction file" in str(info.value)


def test_missing_prediction_file(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    (pred_dir / "language.jsonl").unlink()
    with pytest.raises(PredictionFileError) as info:
        evaluate_predictions(pred_dir, data_dir, tmp_path / "m.json")
    assert str(pred_dir / "language.jsonl") in str(info.value) and "not found" in str(info.value)


def test_missing_data_file(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    (data_dir / "texture.parquet").unlink()
    with pytest.raises(DataError) as info:
        evaluate_predictions(pred_dir, data_dir, tmp_path / "m.json")
    assert str(data_dir / "texture.parquet") in str(info.value)


# --------------------------------------------------------------------------
# Bad data: fail closed, naming split, row and field
# --------------------------------------------------------------------------
def _break(rows: list[dict[str, Any]], index: int, **changes: Any) -> list[dict[str, Any]]:
    rows[index] = {**rows[index], **changes}
    return rows


@pytest.mark.parametrize(
    ("split", "rows", "fragments"),
    [
        ("attribute", _break(_rows("attribute"), 1, eval_type="fuzzy"), ["attribute_002", "'eval_type'", "fuzzy"]),
        ("attribute", _break(_rows("attribute"), 2, answer=" "), ["attribute_003", "'answer'", "empty"]),
        ("attribute", _break(_rows("attribute"), 2, answer=None), ["attribute_003", "'answer'", "empty"]),
        ("attribute", _break(_rows("attribute"), 3, id="attribute_001"), ["attribute_001", "'id'", "duplicated"]),
        ("context", _rows("context")[:-1], ["context_003", "'probe'", "edited_target"]),
        (
            "context",
            _break(_rows("context"), 0, probe="base_other"),
            ["context_001__base_source", "'probe'", "base_other"],
        ),
        ("context", _break(_rows("context"), 1, probe="base_source"), ["context_001__base_target", "repeated"]),
        ("attribute", [], ["no rows"]),
    ],
)
def test_bad_data(tmp_path: Path, split: str, rows: list[dict[str, Any]], fragments: list[str]) -> None:
    data_dir = tmp_path / "d"
    if rows:
        path = write_split(data_dir, split, rows)
    else:
        path = write_split(data_dir, split, _rows(split))
        pq.write_table(pq.read_table(path).slice(0, 0), path)  # the split's columns, no row
    write_preds(tmp_path / "p", split, [])
    with pytest.raises(DataError) as info:
        evaluate_predictions(tmp_path / "p", data_dir, tmp_path / "m.json", splits=[split])
    msg = str(info.value)
    assert str(path) in msg and repr(split) in msg
    for fragment in fragments:
        assert fragment in msg


# --------------------------------------------------------------------------
# The CLI
# --------------------------------------------------------------------------
def test_cli_in_process(bench: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_dir, pred_dir = bench
    out = tmp_path / "m.json"
    argv = ["evaluate", "--predictions", str(pred_dir), "--data", str(data_dir), "--output", str(out)]
    assert main(argv) == 0
    assert f"macro_accuracy={EXPECTED['macro_accuracy']:.4f}" in capsys.readouterr().out
    assert json.loads(out.read_text(encoding="utf-8")) == EXPECTED
    write_preds(pred_dir, "context", [*pred_lines("context"), "{oops"])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {pred_dir / 'context.jsonl'}:12: invalid JSON")


def _sabre(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed ``sabre`` console script (as a user would)."""
    script = Path(sys.executable).parent / "sabre"
    cmd = (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "import sys; from sabre_prior.cli import main; sys.exit(main())"]
    )
    return subprocess.run([*cmd, *args], check=False, capture_output=True, text=True, timeout=120)


def test_cli_subprocess_warning_and_error(bench: tuple[Path, Path], tmp_path: Path) -> None:
    data_dir, pred_dir = bench
    args = ["evaluate", "--predictions", str(pred_dir), "--data", str(data_dir), "--output"]
    ok = _sabre(*args, str(tmp_path / "m.json"))
    assert ok.returncode == 0, ok.stderr
    warnings = [line for line in ok.stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 2  # context and attribute each lack one prediction
    assert any("context: 1 of 12 questions have no prediction" in w for w in warnings)
    assert any("attribute: 1 of 5 questions have no prediction" in w for w in warnings)

    bad = write_preds(pred_dir, "attribute", [GOOD, GOOD])
    failed = _sabre(*args, str(tmp_path / "other.json"))
    assert failed.returncode != 0
    assert f"{bad}:2: duplicate id 'attribute_001'" in failed.stderr
    assert "Traceback" not in failed.stderr
    assert not (tmp_path / "other.json").exists()


def test_refused_questions_are_counted_beside_missing(bench: tuple[Path, Path], tmp_path: Path) -> None:
    """A refused question has no prediction (missing, wrong); the usage summary says which were refused."""
    data_dir, pred_dir = bench
    rows = _rows("attribute")
    refused = [rows[0]["id"]]
    write_preds(pred_dir, "attribute", [json.dumps({"id": r["id"], "prediction": r["answer"]}) for r in rows[1:]])
    usage_dir = tmp_path / "usage"
    usage_dir.mkdir()
    (usage_dir / "attribute.json").write_text(json.dumps({"refused_ids": {refused[0]: "finish_reason content_filter"}}))
    (usage_dir / "language.json").write_text(json.dumps({"refused_ids": {}}))
    metrics = evaluate_predictions(
        pred_dir, data_dir, tmp_path / "m.json", splits=["attribute", "language"], usage_dir=usage_dir
    )
    assert metrics["attribute"]["missing"] == 1 and metrics["attribute"]["refused"] == 1
    assert metrics["attribute"]["correct"] == len(rows) - 1  # the refused question counts as wrong
    assert metrics["language"]["refused"] == 0
    assert metrics["attribute"]["outcomes"]["refused"] == 1 and metrics["attribute"]["outcomes"]["failed"] == 0
    with pytest.raises(DataError, match="usage summary not found"):
        evaluate_predictions(pred_dir, data_dir, tmp_path / "m.json", splits=["context"], usage_dir=usage_dir)


def test_truncated_answers_are_told_apart(bench: tuple[Path, Path], tmp_path: Path) -> None:
    """An answer the usage summary lists as stopped at the token limit is `truncated` unless correct."""
    data_dir, pred_dir = bench
    rows = _rows("attribute")
    preds = {rows[0]["id"]: rows[0]["answer"], rows[1]["id"]: "There are", rows[2]["id"]: "2"}
    write_preds(pred_dir, "attribute", [json.dumps({"id": k, "prediction": v}) for k, v in preds.items()])
    usage_dir = tmp_path / "usage"
    usage_dir.mkdir()
    cut = [rows[0]["id"], rows[1]["id"]]  # the first is correct all the same
    (usage_dir / "attribute.json").write_text(json.dumps({"refused_ids": {}, "truncated_ids": cut}))
    evaluate_predictions(
        pred_dir, data_dir, tmp_path / "m.json", splits=["attribute"], usage_dir=usage_dir, trace_dir=tmp_path / "t"
    )
    outcome = {t["id"]: t["outcome"] for t in read_jsonl(tmp_path / "t" / "attribute.jsonl")}
    assert [outcome[r["id"]] for r in rows] == ["correct", "truncated", "wrong", "failed", "failed"]


def test_the_headline_is_what_dvc_metrics_show_prints_in_a_terminals_width(bench: tuple[Path, Path], tmp_path: Path) -> None:
    """`dvc metrics show` on the full metrics files printed ~60 columns a model (issue 33): the headline
    file holds the macro accuracy and each split's accuracy only, in percent as the main table has them."""
    data_dir, pred_dir = bench
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run([str(Path(sys.executable).parent / "dvc"), "init", "--no-scm", "-q"], cwd=repo, check=True)
    for model in ("claude-4.6", "b"):
        args = ["evaluate", "--predictions", str(pred_dir), "--data", str(data_dir), "--output", str(tmp_path / f"{model}.json"),
                "--headline", str(repo / "results" / "headline" / f"{model}.json")]  # fmt: skip
        assert main(args) == 0
    metrics = json.loads((tmp_path / "b.json").read_text())
    shown = json.loads((repo / "results/headline/b.json").read_text())
    assert shown == {"macro": round(100 * metrics["macro_accuracy"], 1),
                     **{s: round(100 * metrics[s]["accuracy"], 1) for s in C.SPLITS}}  # fmt: skip
    proc = subprocess.run([str(Path(sys.executable).parent / "dvc"), "metrics", "show", "results/headline/claude-4.6.json",
                           "results/headline/b.json"], cwd=repo, capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    lines = proc.stdout.splitlines()
    assert len(lines) == 3 and lines[0].split() == ["Path", "attribute", "context", "language", "macro", "texture"], proc.stdout
    assert max(map(len, lines)) <= 100, proc.stdout
