"""``sabre audit``: the API stability audit's statistics per model (issue 21; docs/stability.md).

See :mod:`sabre_prior.inference.audit` for the settings and the audited subset, and
:mod:`sabre_prior.audit_run` (``sabre audit-run``, the ``audit_run`` stage: one job per model and
repeat) for the repeats' answers.  This module asks nothing: it reads repeat 0 from the main traces
and repeats 1..k-1 from their records, and computes the flip rate and the accuracy across repeats.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import contracts as C
from .cliargs import add_data_dir, add_model, add_params
from .inference.audit import audit_settings, select_subset
from .report import flags


# ---------------------------------------------------------------------------
# Statistics (pure)
# ---------------------------------------------------------------------------
def stability(answers: Mapping[str, Sequence[Mapping[str, Any]]], resamples: int, seed: int, confidence: float) -> dict[str, Any]:
    """``answers``: question key -> one ``{"answer", "correct"}`` per repeat (repeat 0 first)."""
    import numpy as np

    from .analysis.stats import percentile_interval, resample_indices, split_rng
    from .formatting import Interval

    keys = sorted(answers)
    if not keys:
        return {"questions": 0, "flip_rate": None, "accuracy": None}
    repeats = len(answers[keys[0]])
    flips = np.array([len({str(a["answer"]) for a in answers[k]}) > 1 for k in keys], dtype=float)
    idx = resample_indices(len(keys), resamples, split_rng(seed, "audit"))
    low, high = percentile_interval(flips[idx].mean(axis=1), confidence)
    per_repeat = [float(np.mean([bool(answers[k][r]["correct"]) for k in keys])) for r in range(repeats)]
    return {
        "questions": len(keys),
        "repeats": repeats,
        "flipped": int(flips.sum()),
        "flip_rate": Interval(float(flips.mean()), low, high).as_dict(),
        "accuracy": {
            "per_repeat": [round(a, 10) for a in per_repeat],
            "mean": round(float(np.mean(per_repeat)), 10),
            "sd": round(float(np.std(per_repeat, ddof=1)) if repeats > 1 else 0.0, 10),
            "min": round(min(per_repeat), 10),
            "max": round(max(per_repeat), 10),
        },
    }


# ---------------------------------------------------------------------------
# The aggregation: repeat 0 (the main traces) and the repeats' records
# ---------------------------------------------------------------------------
def run_audit(
    model: str,
    params: Mapping[str, Any],
    data_dir: Path,
    traces_dir: Path,
    runs_dir: Path,
) -> dict[str, Any]:
    """Compare the audited subset's answers across repeat 0 (the main traces) and repeats 1..k-1
    (``<runs_dir>/r<r>.json``, each written by ``sabre audit-run``: :mod:`sabre_prior.audit_run`).
    Asks nothing: a missing or stale repeat is an error naming its file and the command that makes it."""
    from .analysis.settings import analysis_settings
    from .analysis.traces import read_trace
    from .config import prompt_templates
    from .data.parquet import read_rows
    from .errors import DataError
    from .io_utils import read_json_file

    audit = audit_settings(params)
    splits = list(params["splits"])
    template = prompt_templates(params)[0]
    answers: dict[str, list[dict[str, Any]]] = {}
    subsets: dict[str, list[str]] = {}
    nonanswer = 0  # over every repeat's audited answers (a failed repeat reads as a flip)
    for split in splits:
        rows = read_rows(data_dir / f"{split}.parquet")
        subsets[split] = sorted(select_subset(rows, split, audit)) if audit.enabled else []
        main = {t["id"]: t for t in read_trace(traces_dir / f"{split}.jsonl", split)}
        for qid in subsets[split]:
            t = main[qid]
            answers[f"{split}/{qid}"] = [{"answer": None if t["missing"] else t["normalized_prediction"], "correct": t["correct"]}]
            nonanswer += t["outcome"] in C.NON_ANSWERS
    usage_by_repeat: dict[str, dict[str, Any]] = {}
    served: dict[str, int] = {}
    for r in audit.asked:
        path = Path(runs_dir) / f"r{r}.json"
        fix = f"run `sabre audit-run --model {model} --repeat {r}` (or the pipeline)"
        run = read_json_file(path, missing=f"repeat {r} of the audit of model {model!r} not found: {fix}", error=DataError)
        if not isinstance(run, Mapping):
            raise DataError(f"{path}: top level must be a JSON object")
        for field, want in (("model", model), ("repeat", r), ("template", template), ("subset", subsets)):
            if run.get(field) != want:
                raise DataError(
                    f"{path}: field {field!r} is not this audit's ({field} of params.yaml and the data now): "
                    f"the repeat is stale, {fix}"
                )
        got = run.get("answers")
        if not isinstance(got, Mapping) or set(got) != set(answers):
            raise DataError(f"{path}: field 'answers' does not hold exactly the audited questions: {fix}")
        usage_by_repeat[f"r{r}"] = dict(run.get("usage") or {})
        for key, entry in got.items():
            answers[key].append({"answer": entry["answer"], "correct": entry["correct"]})
            nonanswer += entry.get("outcome") in C.NON_ANSWERS
        for version, n in (run.get("served") or {}).items():
            served[version] = served.get(version, 0) + int(n)
    a = analysis_settings(params, thumbnails=False)
    # while the audit is off there is nothing to count (and the record stays what it was)
    counts = {"nonanswer": flags.block(nonanswer, sum(len(v) for v in answers.values()))} if audit.enabled else {}
    return {
        "model": model,
        "enabled": audit.enabled,
        "repeats": audit.repeats,
        "questions_per_split": audit.questions,
        "seed": audit.seed,
        "template": template,
        "subset": subsets,
        **stability(answers, a.resamples, a.seed, a.confidence),
        "served_in_repeats": dict(sorted(served.items())),
        "usage": usage_by_repeat,
        "answers": {k: [x["answer"] for x in v] for k, v in sorted(answers.items())},
        **counts,
    }


# ---------------------------------------------------------------------------
# audit (API stability)
# ---------------------------------------------------------------------------
def _audit(args: argparse.Namespace) -> int:
    from .audit_run import RUNS_DIR
    from .settings import load_settings
    from .io_utils import write_json

    params = load_settings(args)
    runs_dir = Path(args.runs_dir) if args.runs_dir else Path(RUNS_DIR) / args.model
    result = run_audit(args.model, params, Path(args.data), Path(args.traces_dir), runs_dir)
    write_json(Path(args.output), result)
    if result["enabled"]:
        flip = result["flip_rate"]
        print(f"{args.model}: {result['repeats']} repeats of {result['questions']} questions, flip rate {flip['estimate']:.3f} -> {args.output}")
    else:
        print(f"{args.model}: audit off (audit.repeats is 1) -> {args.output}")
    return 0


def _p_audit(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "audit",
        help="API stability audit of one model: the flip rate and accuracy across repeat 0 (the main run) "
        "and repeats 1..audit.repeats-1 (sabre audit-run)",
    )
    add_model(p)
    add_data_dir(p)
    p.add_argument("--traces-dir", required=True, help="the model's main traces (repeat 0)")
    p.add_argument("--runs-dir", help="the model's repeats r<r>.json from `sabre audit-run` (default: results/audit/<model>)")
    p.add_argument("--output", required=True, help="the audit JSON to write")
    add_params(p)
    p.set_defaults(func=_audit)


#: Subcommand registrars.
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_audit]
