"""``sabre intervals | compare | diagnose | paper-compare | report``: thin CLI wrappers.

Registered through :data:`REGISTRARS` (see :data:`sabre_prior.cli.COMMANDS`).  Heavy imports happen inside
the handlers so that ``sabre --help`` stays fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import contracts as C
from ..cliargs import add_data_dir, add_model, add_params

if TYPE_CHECKING:
    _Sub = argparse._SubParsersAction[argparse.ArgumentParser]


def _add_bootstrap(p: argparse.ArgumentParser) -> None:
    p.add_argument("--resamples", type=int, help="bootstrap resamples (default: analysis.bootstrap_resamples)")
    p.add_argument("--seed", type=int, help="bootstrap seed (default: analysis.seed)")
    p.add_argument("--confidence", type=float, help="interval level, e.g. 0.95 (default: analysis.confidence)")


def _load(args: argparse.Namespace, thumbnails: bool = False, bootstrap: bool = True) -> tuple[dict[str, Any], Any]:
    """The command's settings and (``bootstrap``) the analysis settings it reads from them."""
    from ..settings import load_settings
    from .settings import analysis_settings

    params = load_settings(args)
    if not bootstrap:
        return params, None
    overrides = {k: getattr(args, k, None) for k in ("resamples", "seed", "confidence")}
    return params, analysis_settings(params, thumbnails=thumbnails, **overrides)


def _names(params: dict[str, Any]) -> dict[str, str]:
    from ..config import display_name

    return {m: display_name(params, m) for m in params["models"]}


# ---------------------------------------------------------------------------
def _intervals(args: argparse.Namespace) -> int:
    from .intervals import write_model_intervals

    params, settings = _load(args)
    trace_dir = Path(args.traces_dir) if args.traces_dir else Path(C.TRACES_DIR) / args.model
    output = Path(args.output) if args.output else C.intervals_path(args.model)
    metrics = None if args.no_metrics_check else (Path(args.metrics) if args.metrics else C.metrics_path(args.model))
    iv = write_model_intervals(trace_dir, output, params["splits"], settings, metrics)
    cells = " ".join(f"{s}={_interval_text(iv[s])}" for s in params["splits"])
    print(f"{args.model}: {cells} macro={_interval_text(iv[C.I_MACRO])} -> {output}")
    return 0


def _interval_text(entry: dict[str, Any]) -> str:
    """``40.0 [31.0, 50.0]``: one entry of an intervals file in percent, rounded as every score is (report.style)."""
    from ..report.style import score_text

    est, low, high = (score_text(float(entry[k])) for k in (C.I_ESTIMATE, C.I_LOW, C.I_HIGH))
    return f"{est} [{low}, {high}]"


def _p_intervals(sub: _Sub) -> None:
    p = sub.add_parser("intervals", help="bootstrap confidence intervals of a model's split and macro accuracies")
    add_model(p)
    p.add_argument("--traces-dir", help="the model's traces (default: results/traces/<model>)")
    p.add_argument("--metrics", help="metrics file to cross-check (default: results/metrics/<model>.json)")
    p.add_argument("--no-metrics-check", action="store_true", help="do not cross-check against the metrics file")
    p.add_argument("--output", help=f"output JSON (default: {C.INTERVALS_DIR}/<model>.json)")
    _add_bootstrap(p)
    add_params(p)
    p.set_defaults(func=_intervals)


# ---------------------------------------------------------------------------
def _compare(args: argparse.Namespace) -> int:
    from ..report.flags import max_nonanswer_rate, trace_blocks
    from .comparison import compare_models, write_comparison
    from .traces import read_model_traces, unit_outcomes

    params, settings = _load(args)
    traces = {m: read_model_traces(Path(args.traces_dir) / m, params["splits"]) for m in params["models"]}
    outcomes = {
        m: {s: unit_outcomes(rows, s, str(Path(args.traces_dir) / m / f"{s}.jsonl")) for s, rows in per.items()}
        for m, per in traces.items()
    }
    rows = compare_models(outcomes, params["splits"], settings)
    nonanswers = {m: trace_blocks(per) for m, per in traces.items()}
    for path in write_comparison(rows, args.outdir, _names(params), settings, nonanswers, max_nonanswer_rate(params)):
        print(path)
    return 0


def _add_traces_root(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--traces-dir", default=C.TRACES_DIR, help=f"root of <model>/<split>.jsonl traces (default: {C.TRACES_DIR})"
    )


def _p_compare(sub: _Sub) -> None:
    p = sub.add_parser("compare", help="paired comparison of every two models (bootstrap interval, exact McNemar)")
    _add_traces_root(p)
    p.add_argument(
        "--outdir", default=C.TABLES_DIR, help=f"where model_comparison.{{md,csv}} go (default: {C.TABLES_DIR})"
    )
    _add_bootstrap(p)
    add_params(p)
    p.set_defaults(func=_compare)


# ---------------------------------------------------------------------------
def _diagnose(args: argparse.Namespace) -> int:
    from ..data.parquet import data_identity, read_rows
    from ..report.flags import max_nonanswer_rate
    from ..report.style import model_styles
    from .diagnostics import model_diagnostics, write_diagnostics
    from .traces import read_model_traces

    params, _ = _load(args, bootstrap=False)
    splits = params["splits"]
    identity = data_identity(Path(args.data), splits)  # what the Parquet splits record, not params.yaml
    data = {s: read_rows(Path(args.data) / f"{s}.parquet") for s in splits if s in ("attribute", "language")}
    diag = {m: model_diagnostics(read_model_traces(Path(args.traces_dir) / m, splits), data) for m in params["models"]}
    written = write_diagnostics(
        diag, _names(params), args.tables_dir, args.figures_dir, args.json, identity.label, model_styles(params["models"]),
        max_nonanswer_rate(params),
    )
    for path in written:
        print(path)
    return 0


def _p_diagnose(sub: _Sub) -> None:
    p = sub.add_parser("diagnose", help="world-prior diagnostics, parse failures, pair-outcome figure")
    _add_traces_root(p)
    add_data_dir(p)
    p.add_argument("--tables-dir", default=C.TABLES_DIR, help="folder for the diagnostics CSV tables")
    p.add_argument("--figures-dir", default=C.FIGURES_DIR, help="folder for the diagnostics figures")
    p.add_argument("--json", default=C.DIAGNOSTICS_JSON, help="machine-readable output")
    add_params(p)
    p.set_defaults(func=_diagnose)


# ---------------------------------------------------------------------------
def _paper_compare(args: argparse.Namespace) -> int:
    from .paper import write_paper_comparison

    params, _ = _load(args, bootstrap=False)
    paths, rows = write_paper_comparison(params, args.intervals_dir, args.outdir, _names(params))
    outside = sum(not r.inside for r in rows)
    print(f"{len(rows)} comparisons, {outside} reported value(s) outside our interval")
    for path in paths:
        print(path)
    return 0


def _p_paper_compare(sub: _Sub) -> None:
    p = sub.add_parser("paper-compare", help="compare models that have a paper_name with the paper's reported table")
    p.add_argument("--intervals-dir", default=C.INTERVALS_DIR, help="folder of the per-model interval JSON files (sabre intervals)")
    p.add_argument("--outdir", default=C.TABLES_DIR, help="folder for paper_comparison.md/.csv")
    add_params(p)
    p.set_defaults(func=_paper_compare)


# ---------------------------------------------------------------------------
def _report(args: argparse.Namespace) -> int:
    from .report import report_data, write_report

    params, settings = _load(args, thumbnails=True)
    if args.thumbnail_px is not None:
        from dataclasses import replace

        settings = replace(settings, thumbnail_px=args.thumbnail_px)
    data = report_data(
        params,
        traces_dir=args.traces_dir,
        data_dir=args.data,
        intervals_dir=args.intervals_dir,
        diagnostics_json=args.diagnostics,
        settings=settings,
        figures=args.figure or [],
        comparison_csv=args.comparison,
        paper_csv=args.paper,
        sensitivity_csv=args.sensitivity,
        stability_csv=args.stability,
        parity_csv=args.parity,
        invariance_csv=args.invariance,
    )
    out = write_report(args.output, data)
    print(f"{out} ({out.stat().st_size / 1e6:.2f} MB, {len(data['images'])} thumbnails)")
    return 0


def _p_report(sub: _Sub) -> None:
    p = sub.add_parser("report", help="write the static HTML report (opens from disk, no server)")
    p.add_argument("--traces-dir", default=C.TRACES_DIR, help="folder of per-model score traces (sabre evaluate)")
    p.add_argument("--data", default=C.PARQUET_DIR, help="folder of the fetched <split>.parquet files (images for the thumbnails)")
    p.add_argument("--intervals-dir", default=C.INTERVALS_DIR, help="folder of the per-model interval JSON files (sabre intervals)")
    p.add_argument("--diagnostics", default=C.DIAGNOSTICS_JSON, help="the diagnostics JSON (sabre diagnose)")
    p.add_argument("--comparison", help="model_comparison.csv (optional)")
    p.add_argument("--paper", help="paper_comparison.csv (optional)")
    p.add_argument("--sensitivity", help="prompt_sensitivity.csv (optional; sabre prompt-sensitivity)")
    p.add_argument("--stability", help="stability.csv (optional; sabre stability)")
    p.add_argument("--parity", help="backend_parity.csv (optional; sabre parity)")
    p.add_argument("--invariance", help="batch_invariance.csv (optional; sabre batch-invariance)")
    p.add_argument("--figure", action="append", help="a PNG figure to show (repeatable)")
    p.add_argument("--thumbnail-px", type=int, help="thumbnail box size (default: analysis.report.thumbnail_px)")
    p.add_argument("--output", default=C.REPORT_PATH, help="the HTML report to write")
    add_params(p)
    p.set_defaults(func=_report)


# ---------------------------------------------------------------------------
def _prompt_sensitivity(args: argparse.Namespace) -> int:
    from .robustness import write_sensitivity

    params, settings = _load(args)
    data = write_sensitivity(params, Path(args.prompts_dir), Path(args.outdir), Path(args.figures_dir), settings)
    print(f"prompt sensitivity: {len(data)} models x {len(next(iter(data.values()), []))} templates -> {args.outdir}")
    return 0


def _p_prompt_sensitivity(sub: _Sub) -> None:
    p = sub.add_parser("prompt-sensitivity", help="each template's macro and its paired difference from the main one")
    p.add_argument("--prompts-dir", default="results/prompts", help="<template>/<model>/traces/ from `sabre prompt-run`")
    p.add_argument("--outdir", default=C.TABLES_DIR, help="folder for prompt_sensitivity.md/.csv")
    p.add_argument("--figures-dir", default=C.FIGURES_DIR, help="folder for the prompt_sensitivity figure (.png, .pdf)")
    _add_bootstrap(p)
    add_params(p)
    p.set_defaults(func=_prompt_sensitivity)


def _stability(args: argparse.Namespace) -> int:
    from .robustness import write_stability

    params, _ = _load(args, bootstrap=False)
    prompts = Path(args.prompts_dir) if args.prompts_dir else None
    out = write_stability(params, Path(args.audit_dir), Path(args.usage_dir), Path(args.outdir), prompts)
    drifting = [e["model"] for e in out if e["drift"]]
    print(f"stability: {len(out)} models" + (f"; drift: {', '.join(drifting)}" if drifting else "") + f" -> {args.outdir}")
    return 0


def _p_stability(sub: _Sub) -> None:
    p = sub.add_parser("stability", help="API stability table: flip rate, accuracy across repeats, served versions")
    p.add_argument("--audit-dir", default="results/audit", help="<model>.json from `sabre audit`")
    p.add_argument("--usage-dir", default=C.USAGE_DIR, help="the main run's usage summaries (served versions)")
    p.add_argument("--prompts-dir", help="the prompt runs (<template>/<model>/usage/): their cost in cost.csv")
    p.add_argument("--outdir", default=C.TABLES_DIR, help="folder for stability.md/.csv and cost.csv")
    add_params(p)
    p.set_defaults(func=_stability)


# ---------------------------------------------------------------------------
def _parity(args: argparse.Namespace) -> int:
    from .parity import DO_NOT_POOL, write_parity

    params, settings = _load(args)
    rows, paths = write_parity(params, Path(args.traces_dir), Path(args.outdir), Path(args.figures_dir), settings)
    pairs = {(r.comparison.model_a, r.comparison.model_b): r.do_not_pool for r in rows}
    flagged = [f"{a}/{b}" for (a, b), f in pairs.items() if f]
    print(f"backend parity: {len(pairs)} pair(s)" + (f"; {DO_NOT_POOL}: {', '.join(flagged)}" if flagged else ""))
    for path in paths:
        print(path)
    return 0


def _p_parity(sub: _Sub) -> None:
    p = sub.add_parser("parity", help="models serving one checkpoint through different backends, compared question by question")
    _add_traces_root(p)
    p.add_argument("--outdir", default=C.TABLES_DIR, help="folder for backend_parity.md/.csv")
    p.add_argument("--figures-dir", default=C.FIGURES_DIR, help="folder for the backend_parity figure (.png, .pdf)")
    _add_bootstrap(p)
    add_params(p)
    p.set_defaults(func=_parity)


REGISTRARS: list[Callable[[_Sub], None]] = [
    _p_intervals, _p_compare, _p_diagnose, _p_paper_compare, _p_report, _p_prompt_sensitivity, _p_stability,
    _p_parity,
]  # fmt: skip
