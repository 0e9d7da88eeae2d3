"""Batch invariance, audited (issue 34; docs/parity.md): does a model answer the same at batch size 1?

A model with ``batch_audit: true`` in params.yaml has the stability audit's subset (a fixed, seeded,
stratified subset of ``audit.questions`` per split, ``audit.seed``: :func:`~.inference.audit.select_subset`)
asked once more at batch size 1, in a journal of its own (``.sabre/journal/batch1/``: the batch size
is not part of a journal key, so the main run's answers are never reused), and compared with the
main run's answers at the configured ``batch_size`` (its traces):

* **flip rate**: share of the audited questions whose normalized answer differs between the two
  (a missing answer counts as an answer of its own), with a percentile bootstrap interval over the
  questions (:func:`sabre_prior.audit.stability`, the stability table's statistics);
* **difference**: accuracy at batch size 1 minus at the configured batch size on the subset, in
  percentage points, with a paired percentile-bootstrap interval over the questions; an interval
  that excludes 0 means the score **depends on the batch size**, which the main table and the report
  say beside the model (:func:`sabre_prior.report.flags.serving_flags`).

``sabre batch-audit --model M`` writes ``results/audit/batch/<model>.json`` (one job per model);
``sabre batch-invariance`` writes ``results/tables/batch_invariance.{md,csv}`` and
``results/figures/batch_invariance.{png,pdf}``.  The vLLM backend's ``batch_invariant: true``
(``VLLM_BATCH_INVARIANT=1``) is the documented remedy; the audit measures whether it is needed.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import contracts as C
from .cliargs import add_data_dir, add_model, add_no_progress, add_params
from .errors import ConfigError

RUNS_DIR = "results/audit/batch"
STEM = "batch_invariance"
JOURNAL = Path(C.JOURNAL_DIR) / "batch1"
DEFAULT_BATCH_SIZE = 16  # the engine's and the local backends' default (inference.engine.EngineSettings)
CSV_COLUMNS: tuple[str, ...] = (
    "model", "backend", "batch_size", "batch_invariant", "questions", "flipped", "flip_rate", "flip_low", "flip_high",
    "accuracy_batch_n", "accuracy_batch_1", "difference", "difference_low", "difference_high", "depends_on_batch",
)  # fmt: skip


def audited_models(params: Mapping[str, Any]) -> list[str]:
    """The models with ``batch_audit: true``, in params order."""
    return [m for m, s in (params.get("models") or {}).items() if isinstance(s, Mapping) and s.get("batch_audit")]


def compare(answers: Mapping[str, Sequence[Mapping[str, Any]]], resamples: int, seed: int, confidence: float) -> dict[str, Any]:
    """``answers``: question key -> [main run, batch size 1], each ``{"answer", "correct"}``."""
    import numpy as np

    from .analysis.stats import paired_replicates, percentile_interval, resample_indices, split_rng
    from .audit import stability
    from .formatting import Interval

    out = stability(answers, resamples, seed, confidence)
    keys = sorted(answers)
    if not keys:
        return {**out, "difference": None, "depends_on_batch": False}
    main = np.array([bool(answers[k][0]["correct"]) for k in keys], dtype=float)
    one = np.array([bool(answers[k][1]["correct"]) for k in keys], dtype=float)
    reps = paired_replicates(one, main, resample_indices(len(keys), resamples, split_rng(seed, "batch_audit")))
    low, high = percentile_interval(reps, confidence)
    diff = Interval(float(one.mean() - main.mean()), low, high)
    return {**out, "difference": diff.as_dict(), "depends_on_batch": bool(low > 0 or high < 0)}


def run_batch_audit(
    model: str,
    settings: Mapping[str, Any],
    params: Mapping[str, Any],
    data_dir: Path,
    traces_dir: Path,
    *,
    journal_root: Path = Path("."),
    progress: bool = False,
) -> dict[str, Any]:
    """Ask the audited subset at batch size 1 and compare it with the main run's traces."""
    from .analysis.settings import analysis_settings
    from .analysis.traces import read_trace
    from .config import prompt_templates
    from .data.parquet import read_rows
    from .inference.audit import audit_subset, select_subset
    from .inference.predict import predict_split
    from .scoring.evaluate import read_predictions, trace_rows, usage_ids

    if not settings.get("batch_audit"):
        raise ConfigError(f"models.{model}.batch_audit is not true in params.yaml: this model is not audited at batch size 1")
    subset = audit_subset(params)  # the stability audit's subset, whether or not it repeats
    template = prompt_templates(params)[0]
    batch_n = int(settings.get("batch_size", DEFAULT_BATCH_SIZE))
    one = {**settings, "batch_size": 1}
    answers: dict[str, list[dict[str, Any]]] = {}
    subsets: dict[str, list[str]] = {}
    for split in params["splits"]:
        data = Path(data_dir) / f"{split}.parquet"
        rows = read_rows(data)
        ids = select_subset(rows, split, subset)
        subsets[split] = sorted(ids)
        main = {t["id"]: t for t in read_trace(Path(traces_dir) / f"{split}.jsonl", split)}
        with tempfile.TemporaryDirectory() as tmp:
            pred_path, usage_path = Path(tmp) / f"{split}.jsonl", Path(tmp) / f"{split}.usage.json"
            predict_split(
                model, one, split, data, pred_path, template=template, progress=progress, usage_output=usage_path,
                run_log_output=Path(C.LOGS_DIR) / "usage" / "batch1" / model / f"{split}.json",
                journal_dir=Path(journal_root) / JOURNAL, only_ids=ids,
            )  # fmt: skip
            preds = read_predictions(pred_path, ids)
            traces = trace_rows(
                [r for r in rows if str(r[C.COL_ID]) in ids], preds, split, data,
                refused=usage_ids(usage_path, "refused_ids"), truncated=usage_ids(usage_path, "truncated_ids"),
            )  # fmt: skip
        for t in traces:
            m = main[t["id"]]
            answers[f"{split}/{t['id']}"] = [
                {"answer": None if m["missing"] else m["normalized_prediction"], "correct": m["correct"]},
                {"answer": None if t["missing"] else t["normalized_prediction"], "correct": t["correct"]},
            ]
    a = analysis_settings(params, thumbnails=False)
    return {
        "model": model,
        "backend": settings.get("backend"),
        "batch_size": batch_n,
        "batch_invariant": bool(settings.get("batch_invariant", False)),
        "questions_per_split": subset.questions,
        "seed": subset.seed,
        "template": template,
        "subset": subsets,
        **compare(answers, a.resamples, a.seed, a.confidence),
        "answers": {k: [x["answer"] for x in v] for k, v in sorted(answers.items())},
    }


# ---------------------------------------------------------------------------
# The table and the figure
# ---------------------------------------------------------------------------
def _pp(x: float | None) -> float | None:
    return None if x is None else round(100.0 * x, 2)


def table_rows(records: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    rows = []
    for r in records:
        flip, acc, diff = r["flip_rate"], r["accuracy"], r["difference"]
        rows.append(
            [r["model"], r["backend"], r["batch_size"], r["batch_invariant"], r["questions"], r["flipped"],
             _pp(flip["estimate"]), _pp(flip["low"]), _pp(flip["high"]), _pp(acc["per_repeat"][0]),
             _pp(acc["per_repeat"][1]), _pp(diff["estimate"]), _pp(diff["low"]), _pp(diff["high"]), r["depends_on_batch"]]
        )  # fmt: skip
    return rows


NOTHING = "No model has batch_audit: true in params.yaml: no answer was asked again at batch size 1."


def write_invariance(params: Mapping[str, Any], runs_dir: Path, tables_dir: Path, figures_dir: Path) -> list[dict[str, Any]]:
    from .analysis.settings import analysis_settings
    from .config import display_name
    from .formatting import format_interval, md_table, write_csv
    from .io_utils import read_json_file, write_text

    records = []
    for model in audited_models(params):
        fix = f"run `sabre batch-audit --model {model}` (or the pipeline)"
        records.append(read_json_file(Path(runs_dir) / f"{model}.json", missing=f"batch audit of {model!r} not found: {fix}"))
    rows = table_rows(records)
    write_csv(Path(tables_dir) / f"{STEM}.csv", CSV_COLUMNS, rows)
    conf = analysis_settings(params, thumbnails=False).confidence
    head = (
        "# Batch invariance\n\n"
        "The stability audit's subset (audit.questions per split, seeded, stratified) asked again at batch size 1 "
        "and compared with the main run at the configured batch size. Flip rate: share of the audited questions "
        f"whose normalized answer differs (%, {conf:.0%} percentile bootstrap interval over the questions). "
        "Difference: accuracy at batch size 1 minus at batch size N (points, paired bootstrap interval); "
        "**depends on batch size** when the interval excludes 0.\n\n"
    )
    if not records:
        write_text(Path(tables_dir) / f"{STEM}.md", head + NOTHING + "\n")
    else:
        body = []
        for r in records:
            iv = lambda d: format_interval(d["estimate"], d["low"], d["high"])  # noqa: E731
            diff = iv(r["difference"])
            body.append(
                [display_name(params, r["model"]), r["backend"] + (" (VLLM_BATCH_INVARIANT=1)" if r["batch_invariant"] else ""),
                 r["batch_size"], r["questions"], f"{iv(r['flip_rate'])} ({r['flipped']} flipped)",
                 (diff if diff.startswith("-") else "+" + diff) + (" **depends on batch size**" if r["depends_on_batch"] else "")]
            )  # fmt: skip
        table = md_table(["Model", "Backend", "Batch size N", "Questions", "Flip rate", "Batch 1 - batch N"], body)
        write_text(Path(tables_dir) / f"{STEM}.md", head + table)
    draw(records, {m: display_name(params, m) for m in audited_models(params)}, Path(figures_dir))
    return records


def draw(records: Sequence[Mapping[str, Any]], names: Mapping[str, str], outdir: Path) -> list[Path]:
    """Each audited model's flip rate and accuracy difference with their intervals."""
    from .report.plotting import note_figure, plt, save_figure, style

    if not records:
        return note_figure("Batch invariance: no model is audited at batch size 1\n(batch_audit: true in params.yaml).", outdir, STEM)
    with style():
        fig, (left, right) = plt.subplots(1, 2, figsize=(8.0, 0.9 + 0.45 * len(records)))
        ys = list(range(len(records)))
        for ax, key, label in ((left, "flip_rate", "Flip rate, batch 1 vs N (%)"), (right, "difference", "Accuracy batch 1 - N (points)")):
            est = [100 * r[key]["estimate"] for r in records]
            err = [[e - 100 * r[key]["low"] for e, r in zip(est, records)], [100 * r[key]["high"] - e for e, r in zip(est, records)]]
            ax.errorbar(est, ys, xerr=err, fmt="o", color="0.2", capsize=2, markersize=4)
            ax.set_xlabel(label)
            ax.set_yticks(ys, [names.get(r["model"], r["model"]) if ax is left else "" for r in records])
            ax.invert_yaxis()
        right.axvline(0, color="0.5", linewidth=0.8)
        left.set_xlim(left=0)
        fig.tight_layout()
        return save_figure(fig, outdir, STEM)


# ---------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------
def _batch_audit(args: argparse.Namespace) -> int:
    from .config import model_settings
    from .io_utils import write_json
    from .settings import load_settings

    params = load_settings(args)
    settings = model_settings(params, args.model, args.params)
    traces = Path(args.traces_dir) if args.traces_dir else Path(C.TRACES_DIR) / args.model
    record = run_batch_audit(args.model, settings, params, Path(args.data), traces, progress=not args.no_progress)
    out = Path(args.output) if args.output else Path(RUNS_DIR) / f"{args.model}.json"
    write_json(out, record)
    flip = record["flip_rate"]
    print(f"{args.model}: {record['questions']} questions at batch size 1 vs {record['batch_size']}: "
          f"{record['flipped']} flipped ({100 * flip['estimate']:.1f}%)"
          + ("; the score depends on the batch size" if record["depends_on_batch"] else "") + f" -> {out}")  # fmt: skip
    return 0


def _p_batch_audit(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("batch-audit", help="ask a model's audited subset again at batch size 1 (batch_audit: true)")
    add_model(p)
    add_data_dir(p)
    p.add_argument("--traces-dir", help="the model's main traces (default: results/traces/<model>)")
    p.add_argument("--output", help=f"the record to write (default: {RUNS_DIR}/<model>.json)")
    add_no_progress(p)
    add_params(p)
    p.set_defaults(func=_batch_audit)


def _batch_invariance(args: argparse.Namespace) -> int:
    from .settings import load_settings

    params = load_settings(args)
    records = write_invariance(params, Path(args.runs_dir), Path(args.outdir), Path(args.figures_dir))
    moving = [r["model"] for r in records if r["depends_on_batch"]]
    print(f"batch invariance: {len(records)} audited model(s)" + (f"; depends on batch size: {', '.join(moving)}" if moving else "")
          + f" -> {args.outdir}/{STEM}.md")  # fmt: skip
    return 0


def _p_batch_invariance(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("batch-invariance", help="the batch-invariance table and figure from every model's batch audit")
    p.add_argument("--runs-dir", default=RUNS_DIR, help=f"<model>.json from `sabre batch-audit` (default: {RUNS_DIR})")
    p.add_argument("--outdir", default=C.TABLES_DIR, help="folder for batch_invariance.md/.csv")
    p.add_argument("--figures-dir", default=C.FIGURES_DIR, help="folder for the batch_invariance figure (.png, .pdf)")
    add_params(p)
    p.set_defaults(func=_batch_invariance)


#: Subcommand registrars.
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_batch_audit, _p_batch_invariance]
