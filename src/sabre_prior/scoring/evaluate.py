"""``sabre evaluate``: score prediction files like the official ``evaluate.py``.

Inputs: ``<data_dir>/<split>.parquet`` (the benchmark, read without images)
and ``<pred_dir>/<split>.jsonl`` (one ``{"id": ..., "prediction": ...}`` per
line).  Outputs: the metrics JSON (format in :mod:`sabre_prior.contracts`)
and one trace per split with :data:`~sabre_prior.contracts.TRACE_KEYS`.

Prediction files, decided and checked here:

* lines end at ``\n`` (a trailing ``\r`` is tolerated); blank
  (whitespace-only) lines are skipped;
* invalid JSON, a line that is not an object, a missing ``id`` or
  ``prediction`` key, a non-string ``id``, a duplicate id and an id that is
  not in the split are errors naming the file and 1-based line;
* extra keys are ignored; a ``prediction`` that is null or not a string is
  scored as the contract does (``str()``, null -> empty text);
* a question with no line is *missing*: scored as wrong, counted in the
  split's ``missing`` and reported with a warning and in the command's summary line; a file with
  no line at all (a predict step that did not finish, a file emptied) is an error, unless the usage
  summary lists every question as refused by the provider.  With the usage summaries
  (``usage_dir``, written by ``sabre predict``), the missing questions the
  provider refused are also counted in ``refused``.

``macro_accuracy`` is the unweighted mean over the splits evaluated.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import contracts as C
from ..data.parquet import read_rows
from ..errors import DataError, PredictionFileError
from ..io_utils import read_json_file, write_json, write_jsonl
from ..options import options_mapping
from .contract import resolve_eval_type, score
from .pairs import group_pairs, pair_correct

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prediction:
    value: Any
    line: int


def default_trace_dir(output: Path) -> Path:
    """Traces go beside the metrics file: ``<parent>/<stem>.traces/``."""
    return output.parent / f"{output.stem}.traces"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def read_predictions(path: Path, known_ids: set[str]) -> dict[str, Prediction]:
    """Parse one prediction file; raise :class:`PredictionFileError` naming file and line."""
    if path.is_dir():
        raise PredictionFileError(
            f"{path}: is a folder, not a prediction file (expected a JSONL file with one line per question of the split)"
        )
    if not path.is_file():
        raise PredictionFileError(f"{path}: prediction file not found (expected one line per question of the split)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PredictionFileError(f"{path}: not valid UTF-8 ({exc})") from None
    preds: dict[str, Prediction] = {}
    # Split on "\n" only: str.splitlines() would also break at U+2028, U+0085...,
    # which JSON writers (ensure_ascii=False) leave unescaped inside strings.
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            obj = json.loads(line, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            raise PredictionFileError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        except ValueError as exc:
            raise PredictionFileError(f"{where}: invalid JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise PredictionFileError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        for key in (C.PRED_ID, C.PRED_PREDICTION):
            if key not in obj:
                raise PredictionFileError(f"{where}: missing key {key!r}")
        qid = obj[C.PRED_ID]
        if not isinstance(qid, str):
            raise PredictionFileError(f"{where}: {C.PRED_ID!r} must be a string, got {qid!r}")
        if qid in preds:
            raise PredictionFileError(f"{where}: duplicate id {qid!r} (first on line {preds[qid].line})")
        if qid not in known_ids:
            raise PredictionFileError(f"{where}: id {qid!r} is not a question of this split")
        bad = _lone_surrogate(obj)
        if bad is not None:
            raise PredictionFileError(
                f"{where}: field {bad[0]!r} holds a lone surrogate ({bad[1]}), which is not valid Unicode text "
                "and cannot be written as UTF-8; write the text as valid UTF-8 (a surrogate pair, or the character itself)"
            )
        preds[qid] = Prediction(obj[C.PRED_PREDICTION], lineno)
    return preds


def _lone_surrogate(obj: Any, field: str = "") -> tuple[str, str] | None:
    """(field, the escaped code point) of the first lone surrogate in ``obj``'s texts (JSON ``"\\ud800"``
    decodes to one), else None."""
    if isinstance(obj, str):
        for ch in obj:
            if "\ud800" <= ch <= "\udfff":
                return field or "<value>", f"\\u{ord(ch):04x}"
        return None
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        name = f"{field}.{key}" if field else str(key)
        if isinstance(key, str) and _lone_surrogate(key) is not None:
            return name, _lone_surrogate(key)[1]  # type: ignore[index]
        found = _lone_surrogate(value, name)
        if found is not None:
            return found
    return None


def _check_rows(rows: list[dict[str, Any]], split: str, data_path: Path) -> None:
    if not rows:
        raise DataError(f"{data_path}: split {split!r} has no rows")
    seen: set[str] = set()
    for i, row in enumerate(rows):
        qid = row.get(C.COL_ID)
        if not isinstance(qid, str) or not qid:
            raise DataError(f"{data_path}: split {split!r}, row {i}: field {C.COL_ID!r} is missing or not a string")
        if qid in seen:
            raise DataError(f"{data_path}: split {split!r}, row {qid!r}: field {C.COL_ID!r} is duplicated")
        seen.add(qid)
    if split in C.PAIRED_SPLITS:
        group_pairs(rows, split, data_path)


def question_outcome(*, missing: bool, refused: bool, correct: bool, truncated: bool, parsed: bool) -> str:
    """One question's outcome (:data:`~sabre_prior.contracts.OUTCOMES`, in their precedence)."""
    if missing:
        return "refused" if refused else "failed"
    if correct:
        return "correct"
    if truncated:
        return "truncated"
    return "wrong" if parsed else "unparseable"


def chance_levels(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Per question id: the probability that a uniform guess is correct.

    yes/no 1/2; a choice 1/(number of options, else the four letters A-D); a count
    1/(number of distinct expected counts in the split); free-text types 0 (no guess to draw).
    """
    from .contract import extract_count, normalize_text

    def eval_type_of(row: Mapping[str, Any]) -> str | None:
        try:
            return resolve_eval_type(row)
        except DataError:  # reported with its file by trace_rows
            return None

    types = {r[C.COL_ID]: eval_type_of(r) for r in rows}
    counts = {extract_count(normalize_text(r.get(C.COL_ANSWER))).value for r in rows if types[r[C.COL_ID]] == "count_exact"}
    out: dict[str, float] = {}
    for r in rows:
        eval_type = types[r[C.COL_ID]]
        if eval_type == "yes_no_exact":
            out[r[C.COL_ID]] = 0.5
        elif eval_type in ("choice_exact", "multiple_choice_exact"):
            try:
                n = len(options_mapping(r.get(C.COL_OPTIONS))) or len(C.OPTION_LETTERS)
            except (TypeError, ValueError):
                n = len(C.OPTION_LETTERS)
            out[r[C.COL_ID]] = 1.0 / n
        elif eval_type == "count_exact":
            out[r[C.COL_ID]] = 1.0 / max(1, len(counts))
        else:
            out[r[C.COL_ID]] = 0.0
    return out


def trace_rows(
    rows: list[dict[str, Any]],
    preds: dict[str, Prediction],
    split: str,
    data_path: Path,
    *,
    refused: set[str] = frozenset(),  # type: ignore[assignment]
    truncated: set[str] = frozenset(),  # type: ignore[assignment]
) -> list[dict[str, Any]]:
    """Score every question of a split; one trace dict (TRACE_KEYS order) per row, in data order.

    ``refused`` / ``truncated``: question ids the usage summary lists as refused by the provider /
    stopped at the output-token limit (they decide those outcomes).
    """
    paired = split in C.PAIRED_SPLITS
    out: list[dict[str, Any]] = []
    chance = chance_levels(rows)
    for row in rows:
        qid = row[C.COL_ID]
        pred = preds.get(qid)
        raw = None if pred is None else pred.value
        try:
            eval_type = resolve_eval_type(row)
        except DataError as exc:
            raise DataError(f"{data_path}: {exc}") from None
        try:
            scored = score(raw, row.get(C.COL_ANSWER), eval_type, row.get(C.COL_OPTIONS))
        except DataError as exc:  # its message names the field
            raise DataError(f"{data_path}: split {split!r}, row {qid!r}: {exc}") from None
        values = (
            qid,
            split,
            row.get(C.COL_PAIR_ID) if paired else None,
            row.get(C.COL_PROBE) if paired else None,
            eval_type,
            raw,
            scored.normalized_prediction,
            row.get(C.COL_ANSWER),
            scored.normalized_answer,
            scored.parsed,
            pred is None,
            scored.correct and pred is not None,
            question_outcome(
                missing=pred is None,
                refused=qid in refused,
                correct=scored.correct and pred is not None,
                truncated=qid in truncated,
                parsed=scored.parsed,
            ),
            chance[qid],
        )
        out.append(dict(zip(C.TRACE_KEYS, values, strict=True)))
    return out


def split_metrics(traces: list[dict[str, Any]], split: str) -> dict[str, Any]:
    """Metrics of one split from its traces (pairs for the paired splits)."""
    n_correct = sum(t["correct"] for t in traces)
    missing = sum(t["missing"] for t in traces)
    counts = {o: 0 for o in C.OUTCOMES}
    for t in traces:
        counts[t["outcome"]] += 1
    nonanswer = sum(counts[o] for o in C.NON_ANSWERS)
    outcomes = {C.M_OUTCOMES: counts, C.M_NONANSWER: nonanswer, C.M_NONANSWER_RATE: nonanswer / len(traces)}
    if split not in C.PAIRED_SPLITS:
        return {
            C.M_ACCURACY: n_correct / len(traces),
            C.M_CORRECT: n_correct,
            C.M_TOTAL: len(traces),
            C.M_MISSING: missing,
            **outcomes,
        }
    pair_ok = pair_correct(traces, split)
    probe_hits: dict[str, list[int]] = {p: [0, 0] for p in C.PROBES[split]}
    for t in traces:
        probe_hits[t["probe"]][0] += t["correct"]
        probe_hits[t["probe"]][1] += 1
    pairs_correct = sum(pair_ok.values())
    return {
        C.M_ACCURACY: pairs_correct / len(pair_ok),
        C.M_CORRECT: pairs_correct,
        C.M_TOTAL: len(pair_ok),
        C.M_MISSING: missing,
        C.M_QUESTION_ACCURACY: n_correct / len(traces),
        C.M_PROBE_ACCURACY: {p: hits / n for p, (hits, n) in probe_hits.items()},
        **outcomes,
    }


def usage_ids(usage_path: Path, key: str) -> set[str]:
    """Question ids a usage summary lists under ``key`` (none when it has no such list)."""
    data = read_json_file(usage_path, missing="usage summary not found (written by `sabre predict`)", mapping=True)
    ids = data.get(key)
    return {str(i) for i in ids} if isinstance(ids, (dict, list)) else set()


def refused_ids(usage_path: Path) -> set[str]:
    """Question ids a usage summary lists as refused by the provider (none when it has no such list)."""
    return usage_ids(usage_path, "refused_ids")


def evaluate_predictions(
    pred_dir: Path,
    data_dir: Path,
    output: Path,
    *,
    splits: Sequence[str] = C.SPLITS,
    trace_dir: Path | None = None,
    usage_dir: Path | None = None,
) -> dict[str, Any]:
    """Score ``<pred_dir>/<split>.jsonl`` against ``<data_dir>/<split>.parquet``.

    Writes the metrics JSON to ``output`` (after every trace) and returns it.
    Nothing is written when any input is invalid.
    """
    if not splits:
        raise DataError("no splits to evaluate")
    unknown = [s for s in splits if s not in C.SPLITS]
    if unknown:
        raise DataError(f"unknown split(s) {', '.join(unknown)}; known: {', '.join(C.SPLITS)}")
    if len(set(splits)) != len(splits):
        raise DataError(f"a split is listed twice: {' '.join(splits)}")
    pred_dir, data_dir, output = Path(pred_dir), Path(data_dir), Path(output)
    traces_dir = Path(trace_dir) if trace_dir is not None else default_trace_dir(output)
    all_traces: dict[str, list[dict[str, Any]]] = {}
    metrics: dict[str, Any] = {}
    for split in splits:
        data_path = data_dir / f"{split}.parquet"
        rows = read_rows(data_path)
        _check_rows(rows, split, data_path)
        preds = read_predictions(pred_dir / f"{split}.jsonl", {r[C.COL_ID] for r in rows})
        refused: set[str] = set()
        truncated: set[str] = set()
        if usage_dir is not None:
            usage_file = Path(usage_dir) / f"{split}.json"
            refused, truncated = usage_ids(usage_file, "refused_ids"), usage_ids(usage_file, "truncated_ids")
        all_traces[split] = trace_rows(rows, preds, split, data_path, refused=refused, truncated=truncated)
        if not preds and not {r[C.COL_ID] for r in rows} <= refused:
            pred_path = pred_dir / f"{split}.jsonl"
            raise PredictionFileError(
                f"{pred_path}: holds no prediction for any of the split's {len(rows)} questions"
                + (" (the usage summary does not list them all as refused)" if usage_dir is not None else "")
                + ": the predict step did not finish, or the file was emptied; run `sabre predict` for this "
                "model and split again (in the pipeline: delete the file and run `snakemake`); nothing was written"
            )
        metrics[split] = split_metrics(all_traces[split], split)
        if usage_dir is not None:
            missing_ids = {t["id"] for t in all_traces[split] if t["missing"]}
            metrics[split][C.M_REFUSED] = len(missing_ids & refused)
        if metrics[split][C.M_MISSING]:
            log.warning(
                "%s: %d of %d questions have no prediction in %s (scored as wrong)",
                split, metrics[split][C.M_MISSING], len(rows), pred_dir / f"{split}.jsonl",
            )  # fmt: skip
    metrics[C.M_MACRO] = sum(metrics[s][C.M_ACCURACY] for s in splits) / len(splits)
    for split, traces in all_traces.items():
        write_jsonl(traces_dir / f"{split}.jsonl", traces)
    write_json(output, metrics)
    return metrics


def headline(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The few numbers ``dvc metrics show`` shows for a model, one row a model within a terminal's
    width (about 85 columns with the four splits): the macro accuracy and each split's accuracy, in
    percent with one decimal as in the main table. Each split's n is the data's, the same in every
    row: it is in the main table and the metrics file, with everything else."""
    from ..formatting import percent  # rounded half away from zero, as the tables round

    out: dict[str, Any] = {"macro": float(percent(float(metrics[C.M_MACRO])))}
    for split in C.SPLITS:
        if split in metrics:
            out[split] = float(percent(float(metrics[split][C.M_ACCURACY])))
    return out
