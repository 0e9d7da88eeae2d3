"""``sabre`` subcommands for reproducibility: ``manifest``, ``dvc-yaml``, ``dvc-sync``.

Registered through :data:`REGISTRARS` (see :data:`sabre_prior.cli.COMMANDS`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .. import contracts as C
from ..cliargs import add_params
from ..errors import SabreError

if TYPE_CHECKING:  # pragma: no cover
    from .pipeline import Pipeline


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
    from ..config import load_params
    from .manifest import code_ids, find_commits, write_manifest

    root = Path(".")
    if args.find_commits:
        source = Path(args.output)
        ids = json.loads(source.read_text(encoding="utf-8"))["code"] if source.is_file() else code_ids(root)
        commits = find_commits(root, ids)
        print("\n".join(commits) if commits else "no commit among the last 200 holds exactly this code")
        return 0 if commits else 1
    params = load_params(args.params)
    usage = Path(args.usage_dir) if args.usage_dir else None
    manifest = write_manifest(params, Path(args.params), Path(args.data), Path(args.output), root, usage)
    head = _git_head(root)
    matches = head != "unknown" and head in find_commits(root, manifest["code"], limit=1)
    # the commit goes to the log, not into the tracked manifest (see sabre_prior.repro.manifest)
    print(f"git HEAD: {head} (code identical to HEAD: {'yes' if matches else 'no'})")
    print(f"manifest: {len(manifest['data'])} splits, {len(manifest['models'])} models -> {args.output}")
    return 0


def _p_manifest(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("manifest", help="write the run manifest (code ids, package versions, params and data hashes)")
    p.add_argument("--output", default="results/manifest.json")
    p.add_argument("--data", default=C.PARQUET_DIR, help=f"directory of <split>.parquet (default: {C.PARQUET_DIR})")
    p.add_argument(
        "--usage-dir",
        help="usage summaries (<model>/<split>.json): list the model versions the providers said served each model",
    )
    p.add_argument(
        "--find-commits",
        action="store_true",
        help="list the git commits whose code equals the code ids in --output (or of the working tree)",
    )
    add_params(p)
    p.set_defaults(func=_manifest)


# ---------------------------------------------------------------------------
# dvc-yaml, dvc-sync
# ---------------------------------------------------------------------------
def _pipeline(args: argparse.Namespace) -> "Pipeline":
    from ..config import load_params
    from .pipeline import Pipeline

    return Pipeline(load_params(args.params), Path("."))


def _dvc_yaml(args: argparse.Namespace) -> int:
    from .pipeline import DVC_YAML, dvc_yaml_is_fresh, write_dvc_yaml

    pipeline = _pipeline(args)
    if args.check:
        if dvc_yaml_is_fresh(pipeline):
            print(f"{DVC_YAML} is up to date with the declaration")
            return 0
        print(f"{DVC_YAML} differs from the declaration: run `sabre dvc-yaml`", file=sys.stderr)
        return 1
    changed = write_dvc_yaml(pipeline)
    print(f"{DVC_YAML} {'written' if changed else 'unchanged'} ({len(pipeline.stages)} stages, {len(pipeline.jobs())} jobs)")
    return 0


def _p_dvc_yaml(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dvc-yaml",
        help="generate dvc.yaml from the pipeline's declaration (sabre_prior.repro.pipeline) and params.yaml's dataset",
    )
    p.add_argument("--check", action="store_true", help="exit 1 when dvc.yaml differs from a fresh rendering")
    add_params(p)
    p.set_defaults(func=_dvc_yaml)


def _dvc_sync(args: argparse.Namespace) -> int:
    from . import dagsync

    root = Path(".")
    if not dagsync.is_dvc_project(root):
        raise SabreError(f"{root.resolve()}: not a DVC project (no .dvc/ or dvc.yaml); run `dvc init` first")
    if args.action == "check":
        problems = dagsync.check(root)
        print("\n".join(problems) if problems else "Snakemake rules, dvc.yaml and DVC's stages agree")
        return 1 if problems else 0
    pipeline = _pipeline(args)
    if args.action == "align":
        print(dagsync.align(pipeline).summary())
        return 0
    # commit: every job whose outputs exist and that Snakemake finds up to date
    jobs = pipeline.jobs()
    names = [j.name for j in jobs if dagsync.job_times(root, j).up_to_date]
    proc = dagsync.commit(root, names, jobs)
    if proc is not None and proc.returncode != 0:
        raise SabreError(f"dvc commit failed: {proc.stderr.strip()[-2000:]}")
    print(f"committed {len(names)} stages")
    return 0


def _p_dvc_sync(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dvc-sync",
        help="keep Snakemake and DVC in step: check, align, commit",
        description=(
            "check: dvc.yaml is fresh and the Snakemake rules and DVC's stages are the declaration's (exit 1 on a "
            "difference); align: what the Snakefile does before planning (stamps, mtimes; `dvc status` only on an "
            "inconsistency); commit: `dvc commit` every job whose outputs are newer than its inputs."
        ),
    )
    p.add_argument("action", choices=["check", "align", "commit"])
    add_params(p)
    p.set_defaults(func=_dvc_sync)


REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_manifest, _p_dvc_yaml, _p_dvc_sync]
