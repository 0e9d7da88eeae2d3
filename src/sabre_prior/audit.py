"""``sabre audit``: the API stability audit's run, statistics and command (issue 21; docs/stability.md).

See :mod:`sabre_prior.inference.audit` for the settings and the audited subset.  A module of its own
(registered in :data:`sabre_prior.cli.COMMANDS`): it runs the models and reads traces, so only the
audit stage depends on both the inference and the analysis code.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import contracts as C
from .cliargs import add_params
from .inference.audit import audit_journal_dir, audit_settings, select_subset


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
# The run
# ---------------------------------------------------------------------------
def run_audit(
    model: str,
    settings: Mapping[str, Any],
    params: Mapping[str, Any],
    data_dir: Path,
    traces_dir: Path,
    *,
    journal_root: Path = Path("."),
    progress: bool = False,
) -> dict[str, Any]:
    """Ask the audited subset again for repeats 1..k-1 and compare with repeat 0 (the main traces)."""
    from .analysis.settings import analysis_settings
    from .analysis.traces import read_trace
    from .config import prompt_templates
    from .data.parquet import read_rows
    from .io_utils import read_json_file
    from .scoring.evaluate import read_predictions, trace_rows, usage_ids
    from .inference.predict import predict_split

    audit = audit_settings(params)
    splits = list(params["splits"])
    usage_by_repeat: dict[str, dict[str, Any]] = {}
    template = prompt_templates(params)[0]
    answers: dict[str, list[dict[str, Any]]] = {}
    subsets: dict[str, list[str]] = {}
    served: dict[str, int] = {}
    for split in splits:
        data = data_dir / f"{split}.parquet"
        rows = read_rows(data)
        ids = select_subset(rows, split, audit) if audit.enabled else set()
        subsets[split] = sorted(ids)
        main = {t["id"]: t for t in read_trace(traces_dir / f"{split}.jsonl", split)}
        for qid in subsets[split]:
            t = main[qid]
            answers[f"{split}/{qid}"] = [{"answer": None if t["missing"] else t["normalized_prediction"], "correct": t["correct"]}]
        sub_rows = [r for r in rows if str(r[C.COL_ID]) in ids]
        for r in range(1, audit.repeats):
            with tempfile.TemporaryDirectory() as tmp:
                pred_path, usage = Path(tmp) / f"{split}.jsonl", Path(tmp) / f"{split}.usage.json"
                predict_split(
                    model, settings, split, data, pred_path, template=template, progress=progress,
                    usage_output=usage,
                    run_log_output=Path(C.LOGS_DIR) / "usage" / "audit" / f"r{r}" / model / f"{split}.json",
                    journal_dir=audit_journal_dir(r, journal_root), repeat=r, only_ids=ids,
                )  # fmt: skip
                preds = read_predictions(pred_path, ids)
                traces = trace_rows(
                    sub_rows, preds, split, data,
                    refused=usage_ids(usage, "refused_ids"), truncated=usage_ids(usage, "truncated_ids"),
                )  # fmt: skip
                summary = read_json_file(usage, missing="usage summary not found")
            usage_by_repeat.setdefault(f"r{r}", {})[split] = {
                k: summary.get(k) for k in ("calls", "billed_input_tokens", "billed_output_tokens", "estimated_cost_usd")
            }
            for t in traces:
                answers[f"{split}/{t['id']}"].append(
                    {"answer": None if t["missing"] else t["normalized_prediction"], "correct": t["correct"]}
                )
            for version, n in (summary.get("served") or {}).items():
                served[version] = served.get(version, 0) + int(n)
    a = analysis_settings(params)
    result = {
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
    }
    return result


# ---------------------------------------------------------------------------
# audit (API stability)
# ---------------------------------------------------------------------------
def _audit(args: argparse.Namespace) -> int:
    from .config import load_params, model_settings
    from .io_utils import write_json
    

    params = load_params(args.params)
    result = run_audit(
        args.model,
        model_settings(params, args.model, args.params),
        params,
        Path(args.data),
        Path(args.traces_dir),
        progress=not args.no_progress,
    )
    write_json(Path(args.output), result)
    if result["enabled"]:
        flip = result["flip_rate"]
        print(f"{args.model}: {result['repeats']} repeats of {result['questions']} questions, flip rate {flip['estimate']:.3f} -> {args.output}")
    else:
        print(f"{args.model}: audit off (audit.repeats is 1) -> {args.output}")
    return 0


def _p_audit(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="API stability audit: re-ask a fixed subset audit.repeats - 1 times (repeat 0 is the main run)")
    p.add_argument("--model", required=True, help="a key of `models` in params.yaml")
    p.add_argument("--data", default=C.PARQUET_DIR, help=f"directory of <split>.parquet (default: {C.PARQUET_DIR})")
    p.add_argument("--traces-dir", required=True, help="the model's main traces (repeat 0)")
    p.add_argument("--output", required=True, help="the audit JSON to write")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_params(p)
    p.set_defaults(func=_audit)




#: Subcommand registrars.
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_audit]
