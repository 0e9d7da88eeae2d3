"""``sabre tables | figures | plot-data | manifest``: the paper's tables and figures, plot data for
`dvc plots`, the run manifest.

Registered through :data:`REGISTRARS` (see :data:`sabre_prior.cli.COMMANDS`).  Heavy imports
happen inside the handlers so that ``sabre --help`` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

from .. import contracts as C
from ..cliargs import add_data_dir, add_params


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
    paths = write_main_tables(params, Path(args.metrics_dir), Path(args.outdir), intervals, data_dir=Path(args.data))
    for path in paths:
        print(path)
    return 0


def _p_tables(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tables", help="write the paper's main table (md, csv, tex)")
    p.add_argument("--metrics-dir", default=C.METRICS_DIR, help="folder of the per-model metrics JSON files (sabre evaluate)")
    p.add_argument("--outdir", default=C.TABLES_DIR, help="folder for main_results.md/.csv/.tex and main_results_ci.csv")
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
    from .plotdata import write_headline, write_plot_data

    params = load_settings(args)
    n = write_plot_data(params, Path(args.metrics_dir), Path(args.output))
    print(f"{n} rows -> {args.output}")
    if args.headline:
        write_headline(params, Path(args.metrics_dir), Path(args.headline))
        print(f"headline accuracies -> {args.headline}/<model>.json")
    return 0


def _p_plot_data(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot-data", help="write per-split accuracy by model for `dvc plots` (CSV)")
    p.add_argument("--metrics-dir", default=C.METRICS_DIR, help="folder of the per-model metrics JSON files (sabre evaluate)")
    p.add_argument("--output", default="results/plots/split_accuracy.csv", help="the CSV that `dvc plots` reads")
    p.add_argument(
        "--headline",
        default="results/headline",
        help="folder of <model>.json with the macro and split accuracies (`dvc metrics show`; '' for none)",
    )
    add_params(p)
    p.set_defaults(func=_plot_data)


# ---------------------------------------------------------------------------
# manifest
# ---------------------------------------------------------------------------
def _git_head(root: Path) -> str:
    import subprocess

    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _manifest(args: argparse.Namespace) -> int:
    from ..settings import load_settings
    from .manifest import code_ids, find_commits, write_manifest

    root = Path(".")
    if args.find_commits:
        commits = find_commits(root, code_ids(root))
        print(
            "\n".join(commits)
            if commits
            else "no commit among the last 200 holds exactly this working tree's code (src/sabre_prior, Snakefile, "
            "workflow): commit it first"
        )
        return 0 if commits else 1
    params = load_settings(args)
    usage = Path(args.usage_dir) if args.usage_dir else None
    manifest = write_manifest(params, Path(args.params), Path(args.data), Path(args.output), root, usage)
    # the commit goes to the log, not into the tracked manifest (a commit that changes no output
    # changes no byte of it): `sabre manifest --find-commits` names the commits holding the code
    print(f"git HEAD: {_git_head(root)}")
    print(f"manifest: {len(manifest['data'])} splits, {len(manifest['models'])} models -> {args.output}")
    return 0


def _p_manifest(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("manifest", help="write the run manifest (package versions, models and their decoding, data hashes)")
    p.add_argument("--output", default="results/manifest.json", help="the run manifest JSON to write")
    add_data_dir(p)
    p.add_argument(
        "--usage-dir",
        default="results/usage",
        help="usage summaries (<model>/<split>.json): list the model versions the providers said served each model",
    )
    p.add_argument(
        "--find-commits",
        action="store_true",
        help="write nothing; list the git commits holding exactly the code of the working tree (src/sabre_prior, "
        "Snakefile, workflow), which made the results when `snakemake -n all` has nothing to do",
    )
    add_params(p)
    p.set_defaults(func=_manifest)


#: Subcommand registrars, in help order.
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_tables, _p_figures, _p_plot_data, _p_manifest]
