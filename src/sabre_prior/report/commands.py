"""``sabre tables | figures | plot-data``: the paper's tables and figures, plot data for `dvc plots`
and `dvc metrics`.

Registered through :data:`REGISTRARS` (see :data:`sabre_prior.cli.COMMANDS`).  Heavy imports
happen inside the handlers so that ``sabre --help`` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

from .. import contracts as C
from ..cliargs import add_params


# ---------------------------------------------------------------------------
# tables / figures
# ---------------------------------------------------------------------------
def _add_intervals_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--intervals-dir",
        default=None,
        help=f"directory of <model>.json bootstrap intervals (e.g. {C.INTERVALS_DIR}); default: none, no intervals",
    )


def _add_data(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data",
        default=C.PARQUET_DIR,
        help=f"directory of the <split>.parquet files the results were computed from; the data source shown "
        f"is what they record (default: {C.PARQUET_DIR})",
    )


def _tables(args: argparse.Namespace) -> int:
    from ..settings import load_settings
    from .tables import write_main_tables

    params = load_settings(args)
    intervals = Path(args.intervals_dir) if args.intervals_dir else None
    paths = write_main_tables(params, Path(args.metrics_dir), Path(args.outdir), intervals, data_dir=Path(args.data),
                              parity_csv=args.parity, invariance_csv=args.invariance)  # fmt: skip
    for path in paths:
        print(path)
    return 0


def _p_tables(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tables", help="write the paper's main table (md, csv, tex)")
    p.add_argument("--metrics-dir", default=C.METRICS_DIR, help="folder of the per-model metrics JSON files (sabre evaluate)")
    p.add_argument("--outdir", default=C.TABLES_DIR, help="folder for main_results.md/.csv/.tex and main_results_ci.csv")
    p.add_argument("--parity", type=Path, help="backend_parity.csv (sabre parity): models not to pool are marked")
    p.add_argument("--invariance", type=Path, help="batch_invariance.csv (sabre batch-invariance): scores that move with the batch size are marked")
    _add_intervals_dir(p)
    _add_data(p)
    add_params(p)
    p.set_defaults(func=_tables)


def _figures(args: argparse.Namespace) -> int:
    from ..settings import load_settings
    from .figures import write_figures

    params = load_settings(args)
    intervals = Path(args.intervals_dir) if args.intervals_dir else None
    paths = write_figures(params, Path(args.metrics_dir), Path(args.outdir), intervals, data_dir=Path(args.data))
    for path in paths:
        print(path)
    return 0


def _p_figures(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("figures", help="draw the figures (PNG and PDF)")
    p.add_argument("--metrics-dir", default=C.METRICS_DIR, help="folder of the per-model metrics JSON files (sabre evaluate)")
    p.add_argument("--outdir", default=C.FIGURES_DIR, help="folder for the PNG and PDF figures")
    _add_intervals_dir(p)
    _add_data(p)
    add_params(p)
    p.set_defaults(func=_figures)


# ---------------------------------------------------------------------------
# plot-data
# ---------------------------------------------------------------------------
def _plot_data(args: argparse.Namespace) -> int:
    from ..settings import load_settings
    from .plotdata import write_plot_data

    params = load_settings(args)
    n = write_plot_data(params, Path(args.metrics_dir), Path(args.output))
    print(f"{n} rows -> {args.output}")
    return 0


def _p_plot_data(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot-data", help="write per-split accuracy by model for `dvc plots` (CSV)")
    p.add_argument("--metrics-dir", default=C.METRICS_DIR, help="folder of the per-model metrics JSON files (sabre evaluate)")
    p.add_argument("--output", default="results/plots/split_accuracy.csv", help="the CSV that `dvc plots` reads")
    add_params(p)
    p.set_defaults(func=_plot_data)


#: Subcommand registrars, in help order.
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_tables, _p_figures, _p_plot_data]
