"""``sabre audit-run``: one repeat of the API stability audit for one model (issue 21; docs/stability.md).

Repeat ``r`` (1..k-1 of ``audit.repeats: k``; repeat 0 is the main run, nothing is paid twice) asks
the audited subset of every split (:func:`~sabre_prior.inference.audit.select_subset`) again, with
journal keys of its own (the key names the repeat) in a journal of its own
(``.sabre/journal/audit/r<r>/<model>/<split>.jsonl``), scores the answers under the contract and
writes ``results/audit/<model>/r<r>.json``: per audited question its normalized answer, whether it
is correct and its outcome, what the repeat cost per split, and the versions that served it.

One job per model and repeat: ``repeat`` is a wildcard of the rule ``audit_run``
(workflow/rules/robustness.smk), so raising ``audit.repeats`` adds only the new
repeats' jobs and the per-model aggregation (``sabre audit``, :mod:`sabre_prior.audit`) that reads
them. A module of its own (registered in :data:`sabre_prior.commandmap.COMMANDS`): it predicts and
scores, so only this stage depends on both the inference and the scoring code.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from . import contracts as C
from .cliargs import add_data_dir, add_model, add_no_progress, add_params
from .errors import ConfigError
from .inference.audit import audit_journal_dir, audit_settings, audit_subset, select_subset

#: Where the repeats go: ``<RUNS_DIR>/<model>/r<r>.json`` (beside the per-model ``<model>.json``).
RUNS_DIR = "results/audit"
_USAGE_KEYS = ("calls", "billed_input_tokens", "billed_output_tokens", "estimated_cost_usd")


def run_path(model: str, repeat: int, runs_dir: str | Path = RUNS_DIR) -> Path:
    return Path(runs_dir) / model / f"r{repeat}.json"


def run_repeat(
    model: str,
    settings: Mapping[str, Any],
    params: Mapping[str, Any],
    data_dir: Path,
    repeat: int,
    *,
    journal_root: Path = Path("."),
    progress: bool = False,
) -> dict[str, Any]:
    """Ask the audited subset of every split once more as repeat ``repeat``; the repeat's record."""
    from .config import prompt_templates
    from .data.parquet import read_rows
    from .inference.predict import predict_split
    from .io_utils import read_json_file
    from .scoring.evaluate import read_predictions, trace_rows, usage_ids

    # the audited subset only: the pipeline's job does not read audit.repeats (raising it adds repeats
    # and re-runs none of the earlier ones); by hand, the repeat must be one params.yaml asks for
    from .settings import declared

    audit = audit_subset(params)
    if declared(params, "audit.repeats") and repeat not in audit_settings(params).asked:
        repeats = audit_settings(params).repeats
        raise ConfigError(
            f"--repeat {repeat}: audit.repeats is {repeats} in params.yaml, so the repeats to ask are "
            + (f"1..{repeats - 1}" if repeats > 1 else "none (the audit is off)")
            + " (repeat 0 is the main run)"
        )
    template = prompt_templates(params)[0]
    subsets: dict[str, list[str]] = {}
    answers: dict[str, dict[str, Any]] = {}
    usage: dict[str, dict[str, Any]] = {}
    served: dict[str, int] = {}
    for split in params["splits"]:
        data = data_dir / f"{split}.parquet"
        rows = read_rows(data)
        ids = select_subset(rows, split, audit)
        subsets[split] = sorted(ids)
        sub_rows = [r for r in rows if str(r[C.COL_ID]) in ids]
        with tempfile.TemporaryDirectory() as tmp:
            pred_path, usage_path = Path(tmp) / f"{split}.jsonl", Path(tmp) / f"{split}.usage.json"
            predict_split(
                model, settings, split, data, pred_path, template=template, progress=progress,
                usage_output=usage_path,
                run_log_output=Path(C.LOGS_DIR) / "usage" / "audit" / f"r{repeat}" / model / f"{split}.json",
                journal_dir=audit_journal_dir(repeat, journal_root), repeat=repeat, only_ids=ids,
            )  # fmt: skip
            preds = read_predictions(pred_path, ids)
            traces = trace_rows(
                sub_rows, preds, split, data,
                refused=usage_ids(usage_path, "refused_ids"), truncated=usage_ids(usage_path, "truncated_ids"),
            )  # fmt: skip
            summary = read_json_file(usage_path, missing="usage summary not found")
        usage[split] = {k: summary.get(k) for k in _USAGE_KEYS}
        for t in traces:
            answers[f"{split}/{t['id']}"] = {
                "answer": None if t["missing"] else t["normalized_prediction"],
                "correct": t["correct"],
                "outcome": t["outcome"],
            }
        for version, n in (summary.get("served") or {}).items():
            served[version] = served.get(version, 0) + int(n)
    return {
        "model": model,
        "repeat": repeat,
        "template": template,
        "questions_per_split": audit.questions,
        "seed": audit.seed,
        "subset": subsets,
        "answers": dict(sorted(answers.items())),
        "usage": usage,
        "served": dict(sorted(served.items())),
    }


# ---------------------------------------------------------------------------
# sabre audit-run
# ---------------------------------------------------------------------------
def _audit_run(args: argparse.Namespace) -> int:
    from .config import model_settings
    from .settings import load_settings
    from .io_utils import write_json

    params = load_settings(args)
    settings = model_settings(params, args.model, args.params)
    if args.output and args.repeat is None:
        raise ConfigError("--output names one repeat's file: give --repeat too (or --outdir for every repeat)")
    repeats = [args.repeat] if args.repeat is not None else audit_settings(params).asked
    if not repeats:
        print(f"{args.model}: audit off (audit.repeats is 1): nothing to ask")
    for r in repeats:
        record = run_repeat(args.model, settings, params, Path(args.data), r, progress=not args.no_progress)
        out = Path(args.output) if args.output else run_path(args.model, r, args.outdir)
        write_json(out, record)
        calls = sum(int(u.get("calls") or 0) for u in record["usage"].values())
        print(f"{args.model}: repeat {r} of {len(record['answers'])} questions ({calls} calls) -> {out}")
    return 0


def _p_audit_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "audit-run", help="API stability audit: ask the audited subset once more as repeat r (1..audit.repeats-1)"
    )
    add_model(p)
    p.add_argument("--repeat", type=int, help="the repeat to ask (default: every repeat 1..audit.repeats-1)")
    add_data_dir(p)
    p.add_argument("--outdir", default=RUNS_DIR, help=f"where <model>/r<r>.json go (default: {RUNS_DIR})")
    p.add_argument("--output", help="the repeat's JSON (with --repeat; default: <outdir>/<model>/r<repeat>.json)")
    add_no_progress(p)
    add_params(p)
    p.set_defaults(func=_audit_run)


#: Subcommand registrars.
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_audit_run]
