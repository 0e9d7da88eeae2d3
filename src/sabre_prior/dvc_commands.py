"""``sabre`` subcommands for reproducibility: ``manifest``, ``plot-data``, ``dvc-sync``.

Registered in :data:`sabre_prior.cli.REGISTRARS` through :data:`REGISTRARS`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

from . import contracts as C
from .errors import SabreError


def _add_params(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", default="params.yaml", help="the configuration file (default: params.yaml)")


# ---------------------------------------------------------------------------
# manifest
# ---------------------------------------------------------------------------
def _git_head(root: Path) -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _manifest(args: argparse.Namespace) -> int:
    from .config import load_params
    from .manifest import code_ids, find_commits, write_manifest

    root = Path(".")
    if args.find_commits:
        source = Path(args.output)
        ids = json.loads(source.read_text(encoding="utf-8"))["code"] if source.is_file() else code_ids(root)
        commits = find_commits(root, ids)
        print("\n".join(commits) if commits else "no commit among the last 200 holds exactly this code")
        return 0 if commits else 1
    params = load_params(args.params)
    manifest = write_manifest(params, Path(args.params), Path(args.data), Path(args.output), root)
    head = _git_head(root)
    matches = head != "unknown" and head in find_commits(root, manifest["code"], limit=1)
    # the commit goes to the log, not into the tracked manifest (see sabre_prior.manifest)
    print(f"git HEAD: {head} (code identical to HEAD: {'yes' if matches else 'no'})")
    print(f"manifest: {len(manifest['data'])} splits, {len(manifest['models'])} models -> {args.output}")
    return 0


def _p_manifest(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("manifest", help="write the run manifest (code ids, package versions, params and data hashes)")
    p.add_argument("--output", default="results/manifest.json")
    p.add_argument("--data", default=C.PARQUET_DIR, help=f"directory of <split>.parquet (default: {C.PARQUET_DIR})")
    p.add_argument(
        "--find-commits",
        action="store_true",
        help="list the git commits whose code equals the code ids in --output (or of the working tree)",
    )
    _add_params(p)
    p.set_defaults(func=_manifest)


# ---------------------------------------------------------------------------
# plot-data
# ---------------------------------------------------------------------------
def _plot_data(args: argparse.Namespace) -> int:
    from .config import load_params
    from .plotdata import write_plot_data

    params = load_params(args.params)
    n = write_plot_data(params, Path(args.metrics_dir), Path(args.output))
    print(f"{n} rows -> {args.output}")
    return 0


def _p_plot_data(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot-data", help="write per-split accuracy by model for `dvc plots` (CSV)")
    p.add_argument("--metrics-dir", default=C.METRICS_DIR)
    p.add_argument("--output", default="results/plots/split_accuracy.csv")
    _add_params(p)
    p.set_defaults(func=_plot_data)


# ---------------------------------------------------------------------------
# dvc-sync
# ---------------------------------------------------------------------------
def _dvc_sync(args: argparse.Namespace) -> int:
    from . import dvcsync

    root = Path(".")
    if not dvcsync.is_dvc_project(root):
        raise SabreError(f"{root.resolve()}: not a DVC project (no .dvc/ or dvc.yaml); run `dvc init` first")
    if args.action == "check":
        report = dvcsync.parity(root)
        print(report.describe())
        return 0 if report.ok else 1
    if args.action == "align":
        print(dvcsync.align(root).summary())
        return 0
    # commit: every stage whose outputs exist, unless DVC sees a change not acted on
    stages = dvcsync.load_stages(root)
    outputs = {o for s in stages for o in s.outs if (root / o).exists()}
    done = dvcsync.commit(root, outputs=outputs, ran=set(), success=True, stages=stages)
    print(f"committed {len(done)} stages" + (": " + ", ".join(done) if done else ""))
    pending = [s.name for s in dvcsync.load_stages(root) if not s.up_to_date]
    if pending:
        print(f"not up to date (run `dvc repro` or `snakemake all`): {', '.join(pending)}", file=sys.stderr)
    return 0


def _p_dvc_sync(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dvc-sync",
        help="keep Snakemake and DVC in step: check (dvc.yaml mirrors the rules), align, commit",
        description=(
            "check: compare the jobs Snakemake plans for `all` with the stages of dvc.yaml (exit 1 on a difference); "
            "align: what the Snakefile does before planning (mtimes, Snakemake records, from dvc.lock); "
            "commit: record existing outputs in dvc.lock (what the Snakefile's onsuccess handler does)."
        ),
    )
    p.add_argument("action", choices=["check", "align", "commit"])
    p.set_defaults(func=_dvc_sync)


REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_manifest, _p_plot_data, _p_dvc_sync]
