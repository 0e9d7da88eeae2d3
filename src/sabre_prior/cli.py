"""The ``sabre`` command line.  Snakemake rules and DVC stages call these commands.

Each subcommand is a thin wrapper: parse arguments, call one function of the
package, print a short summary.  Errors meant for the user (:class:`SabreError`)
are printed without a traceback and give a non-zero exit code.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Callable, Sequence

from . import __version__
from . import contracts as C
from .cliargs import add_params
from .errors import SabreError


# ---------------------------------------------------------------------------
# demo-data
# ---------------------------------------------------------------------------
def _demo_data(args: argparse.Namespace) -> int:
    from .demo import generate

    summary = generate(Path(args.output), scale=args.scale, seed=args.seed)
    print(summary)
    return 0


def _p_demo_data(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo-data", help="write the embedded demo benchmark in the hub repo layout")
    p.add_argument("--output", default=C.DEMO_DIR, help=f"output directory (default: {C.DEMO_DIR})")
    p.add_argument("--scale", choices=["small", "full"], default="small", help="small (seconds) or full (real sizes)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_demo_data)


# ---------------------------------------------------------------------------
# fetch
# ---------------------------------------------------------------------------
def _fetch(args: argparse.Namespace) -> int:
    from .config import load_params
    from .fetch import fetch_split

    source, revision = args.source, args.revision
    if source is None:
        params = load_params(args.params)
        source = params["dataset"]["source"]
        revision = revision or params["dataset"].get("revision")
    if source == "demo":
        source = C.DEMO_DIR
    revision = revision or None
    output = Path(args.output) if args.output else C.parquet_path(args.split)
    summary = fetch_split(source, args.split, output, revision=revision)
    print(summary)
    return 0


def _p_fetch(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fetch", help="load one split with datasets.load_dataset and write self-contained Parquet")
    p.add_argument("--split", required=True, choices=C.SPLITS)
    p.add_argument("--source", help="hub repo id or local directory (default: dataset.source from --params)")
    p.add_argument("--revision", help="hub revision (default: dataset.revision from --params)")
    p.add_argument("--output", help="output Parquet file (default: data/parquet/<split>.parquet)")
    add_params(p)
    p.set_defaults(func=_fetch)


# ---------------------------------------------------------------------------
# predict
# ---------------------------------------------------------------------------
def _predict(args: argparse.Namespace) -> int:
    from .config import load_params, model_settings
    from .models.base import prefetch_sdk

    params = load_params(args.params)
    settings = model_settings(params, args.model, args.params)
    prefetch_sdk(settings)  # an API SDK imports in the background while the data is read
    from .inference import predict_split

    data = Path(args.data) if args.data else C.parquet_path(args.split)
    output = Path(args.output) if args.output else C.predictions_path(args.model, args.split)
    template = (params.get("prompt") or {}).get("template")
    run = predict_split(
        args.model,
        settings,
        args.split,
        data,
        output,
        template=template,
        progress=not args.no_progress,
        usage_output=Path(args.usage) if args.usage else None,
        retry_refusals=args.retry_refusals,
    )
    print(
        f"{args.model}/{args.split}: {run.answered} answered ({run.cached} from the journal, "
        f"{run.calls} calls, {run.retries} retries), {len(run.refused)} refused -> {output}"
    )
    return 0


def _p_predict(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("predict", help="run one model on one split; write the official prediction file")
    p.add_argument("--model", required=True, help="a key of `models` in params.yaml")
    p.add_argument("--split", required=True, choices=C.SPLITS)
    p.add_argument("--data", help="Parquet split (default: data/parquet/<split>.parquet)")
    p.add_argument("--output", help="prediction file (default: results/predictions/<model>/<split>.jsonl)")
    p.add_argument(
        "--usage", help="usage summary to write (default: results/usage/<model>/<split>.json)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--retry-refusals",
        action="store_true",
        help="send again the questions the provider refused in an earlier run (refusals are final otherwise)",
    )
    add_params(p)
    p.set_defaults(func=_predict)


# ---------------------------------------------------------------------------
# estimate (dry run)
# ---------------------------------------------------------------------------
def _estimate(args: argparse.Namespace) -> int:
    from .config import load_params, model_settings
    from .inference import estimate_split, format_estimates

    params = load_params(args.params)
    models = args.models or list(params["models"])
    splits = args.splits or list(params["splits"])
    template = (params.get("prompt") or {}).get("template")
    estimates = [
        estimate_split(m, model_settings(params, m, args.params), s, Path(args.data_dir) / f"{s}.parquet", template=template)
        for m in models
        for s in splits
    ]
    print(format_estimates(estimates))
    return 0


def _p_estimate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "estimate", help="dry run: calls still to make (journal hits excluded), tokens and cost; no call is made"
    )
    p.add_argument("--models", nargs="+", help="models of params.yaml (default: all)")
    p.add_argument("--splits", nargs="+", choices=C.SPLITS, help="splits (default: the splits of params.yaml)")
    p.add_argument("--data-dir", default=C.PARQUET_DIR, help=f"directory of <split>.parquet (default: {C.PARQUET_DIR})")
    add_params(p)
    p.set_defaults(func=_estimate)


# ---------------------------------------------------------------------------
# batches (provider batch APIs)
# ---------------------------------------------------------------------------
def _batches(args: argparse.Namespace) -> int:
    from .batch import format_batches, list_batches
    from .config import load_params, model_settings

    params = load_params(args.params)
    splits = args.splits or list(params["splits"])
    rows = list_batches(args.model, model_settings(params, args.model, args.params), splits, cancel=args.cancel, query=not args.offline)
    print(format_batches(args.model, rows))
    return 0


def _p_batches(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("batches", help="list a model's pending provider batches with their status; --cancel cancels them")
    p.add_argument("--model", required=True, help="a key of `models` in params.yaml")
    p.add_argument("--splits", nargs="+", choices=C.SPLITS, help="splits (default: the splits of params.yaml)")
    p.add_argument("--cancel", action="store_true", help="cancel every pending batch (its finished answers are still collected)")
    p.add_argument("--offline", action="store_true", help="list from the ledger only, without asking the provider")
    add_params(p)
    p.set_defaults(func=_batches)


# ---------------------------------------------------------------------------
# evaluate
# ---------------------------------------------------------------------------
def _evaluate(args: argparse.Namespace) -> int:
    from .evaluate import evaluate_predictions

    splits = args.splits
    if args.params is not None:
        from .config import load_params

        splits = list(load_params(args.params)["splits"])
    metrics = evaluate_predictions(
        Path(args.predictions),
        Path(args.data),
        Path(args.output),
        splits=splits or list(C.SPLITS),
        trace_dir=Path(args.trace_dir) if args.trace_dir else None,
        usage_dir=Path(args.usage) if args.usage else None,
    )
    print(f"macro_accuracy={metrics[C.M_MACRO]:.4f} -> {args.output}")
    return 0


def _p_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="score prediction files under the official contract (like evaluate.py)")
    p.add_argument("--predictions", required=True, help="directory holding <split>.jsonl prediction files")
    p.add_argument("--output", required=True, help="metrics JSON file to write")
    p.add_argument("--data", default=C.PARQUET_DIR, help=f"directory of <split>.parquet (default: {C.PARQUET_DIR})")
    p.add_argument(
        "--trace-dir",
        help="where per-question traces <split>.jsonl go (default: beside --output, in <output stem>.traces/)",
    )
    p.add_argument(
        "--usage",
        help="directory of <split>.json usage summaries (from sabre predict): count refused questions in `refused`",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--splits", nargs="+", choices=C.SPLITS, help="splits to score (default: all four)")
    which.add_argument("--params", help="score the splits configured in this params file (the pipeline's way)")
    p.set_defaults(func=_evaluate)


# ---------------------------------------------------------------------------
# tables / figures
# ---------------------------------------------------------------------------
def _add_intervals_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--intervals-dir",
        default=None,
        help=f"directory of <model>.json bootstrap intervals (e.g. {C.INTERVALS_DIR}); default: none, no intervals",
    )


def _tables(args: argparse.Namespace) -> int:
    from .config import load_params
    from .tables import write_main_tables

    params = load_params(args.params)
    intervals = Path(args.intervals_dir) if args.intervals_dir else None
    paths = write_main_tables(params, Path(args.metrics_dir), Path(args.outdir), intervals)
    for path in paths:
        print(path)
    return 0


def _p_tables(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tables", help="write the paper's main table (md, csv, tex)")
    p.add_argument("--metrics-dir", default=C.METRICS_DIR)
    p.add_argument("--outdir", default=C.TABLES_DIR)
    _add_intervals_dir(p)
    add_params(p)
    p.set_defaults(func=_tables)


def _figures(args: argparse.Namespace) -> int:
    from .config import load_params
    from .figures import write_figures

    params = load_params(args.params)
    intervals = Path(args.intervals_dir) if args.intervals_dir else None
    paths = write_figures(params, Path(args.metrics_dir), Path(args.outdir), intervals)
    for path in paths:
        print(path)
    return 0


def _p_figures(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("figures", help="draw the figures (PNG and PDF)")
    p.add_argument("--metrics-dir", default=C.METRICS_DIR)
    p.add_argument("--outdir", default=C.FIGURES_DIR)
    _add_intervals_dir(p)
    add_params(p)
    p.set_defaults(func=_figures)


# ---------------------------------------------------------------------------
# check-config
# ---------------------------------------------------------------------------
def _check_config(args: argparse.Namespace) -> int:
    from .config import load_params

    params = load_params(args.params)
    print(f"{args.params}: valid ({len(params['models'])} models, splits: {', '.join(params['splits'])})")
    return 0


def _p_check_config(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check-config", help="validate params.yaml against the schema")
    add_params(p)
    p.set_defaults(func=_check_config)


from .analysis.commands import REGISTRARS as ANALYSIS_REGISTRARS  # noqa: E402
from .dvc_commands import REGISTRARS as DVC_REGISTRARS  # noqa: E402

#: Subcommand registrars, in help order.  Add new commands here.
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [
    _p_check_config,
    _p_demo_data,
    _p_fetch,
    _p_predict,
    _p_estimate,
    _p_batches,
    _p_evaluate,
    _p_tables,
    _p_figures,
    *ANALYSIS_REGISTRARS,
    *DVC_REGISTRARS,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sabre", description="SABRE-Prior evaluation pipeline")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--version", action="version", version=f"sabre {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in REGISTRARS:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return int(args.func(args) or 0)
    except SabreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
