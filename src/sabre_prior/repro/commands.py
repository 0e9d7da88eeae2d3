"""``sabre`` subcommands for reproducibility: ``manifest``, ``generate``, ``recipes``, ``recover``, ``status``.

Registered through :data:`REGISTRARS` (see :data:`sabre_prior.cli.COMMANDS`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..cliargs import add_data_dir, add_params
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
    from .manifest import find_commits, recipe_code_ids, write_manifest

    root = Path(".")
    if args.find_commits:
        ids = recipe_code_ids(root)
        if not ids:
            raise SabreError("no recipes in .sabre/recipes/: run the pipeline (or `sabre recipes`) first")
        commits = find_commits(root, ids)
        print("\n".join(commits) if commits else "no commit among the last 200 holds exactly the code these results ran")
        return 0 if commits else 1
    params = load_params(args.params)
    usage = Path(args.usage_dir) if args.usage_dir else None
    manifest = write_manifest(params, Path(args.params), Path(args.data), Path(args.output), root, usage)
    # the commit goes to the log, not into the tracked manifest: the code each job ran is in its
    # recipe (.sabre/recipes/, git blob ids), so `sabre manifest --find-commits` names the commits
    print(f"git HEAD: {_git_head(root)}")
    print(f"manifest: {len(manifest['data'])} splits, {len(manifest['models'])} models -> {args.output}")
    return 0


def _p_manifest(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("manifest", help="write the run manifest (package versions, models and their decoding, data hashes)")
    p.add_argument("--output", default="results/manifest.json", help="the run manifest JSON to write")
    add_data_dir(p)
    p.add_argument(
        "--usage-dir",
        help="usage summaries (<model>/<split>.json): list the model versions the providers said served each model",
    )
    p.add_argument(
        "--find-commits",
        action="store_true",
        help="list the git commits holding exactly the code the results were made with (from the jobs' recipes)",
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


def _generate(args: argparse.Namespace) -> int:
    from .generated import render_all, stale_captions

    pipeline = _pipeline(args)
    wanted = render_all(pipeline)
    stale = [p for p, text in wanted.items() if not Path(p).is_file() or Path(p).read_text(encoding="utf-8") != text]
    extra = stale_captions(Path("."))
    if args.check:
        if stale or extra:
            print(f"{', '.join(stale + extra)} differ from the declaration: run `sabre generate`", file=sys.stderr)
            return 1
        print("dvc.yaml, the rule files, the command map and the captions are up to date with the declaration")
        return 0
    from ..io_utils import atomic_writer

    for path in stale:
        with atomic_writer(path) as fh:
            fh.write(wanted[path])
    for path in extra:
        Path(path).unlink()
    removed = f", {len(extra)} removed" if extra else ""
    print(f"{len(stale)} of {len(wanted)} files written{removed} ({len(pipeline.stages)} stages, {len(pipeline.jobs())} jobs)")
    return 0


def _p_generate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "generate",
        help="write dvc.yaml, workflow/rules/*.smk, the command map and the report captions from the declarations"
        " (sabre_prior.repro.generated)",
    )
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file differs from a fresh rendering")
    add_params(p)
    p.set_defaults(func=_generate)


def _recipes(args: argparse.Namespace) -> int:
    from . import dagsync
    from .state import write_recipes

    pipeline = _pipeline(args)
    hub = dagsync.resolve_hub(pipeline)
    from .pipeline import dvc_yaml_is_fresh

    if os.environ.get("DVC_STAGE") and not dvc_yaml_is_fresh(pipeline):
        # dvc.yaml depends on the kind of dataset.source (the demo stage, a mirror's folders) and on
        # audit.repeats (the audit_run stage's matrix lists the repeats: DVC's templating has no range)
        raise SabreError(
            "dvc.yaml was generated for another dataset.source or audit.repeats (or is stale): "
            "run `sabre generate`, then `dvc repro` again"
        )
    written = write_recipes(pipeline, hub)
    if os.environ.get("DVC_STAGE") == "recipes":  # DVC records this stage when the command ends
        from .state import write_made

        write_made(pipeline.root, dagsync.RECIPES, "-")  # type: ignore[arg-type]
    print(f"recipes: {len(written)} of {len(pipeline.jobs())} rewritten")
    return 0


def _simple(name: str, func: Callable[[argparse.Namespace], int], help: str) -> Callable[[argparse._SubParsersAction], None]:
    """The registrar of a subcommand whose only option is ``--params``."""

    def register(sub: argparse._SubParsersAction) -> None:
        p = sub.add_parser(name, help=help)
        add_params(p)
        p.set_defaults(func=func)

    return register


_p_recipes = _simple(
    "recipes", _recipes, "write each job's recipe (.sabre/recipes/): command, settings read, code ids (the DVC stage `recipes`)"
)


def _recover(args: argparse.Namespace) -> int:
    from . import dagsync

    for line in dagsync.recover(_pipeline(args)):
        print(line)
    return 0


def _p_recover(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "recover",
        help="after a kill or a crash: remove temp files, repair a damaged dvc.lock, record every proven job",
        description=(
            "The one recovery step after Snakemake or `dvc repro` was killed (Ctrl-C, OOM, a lost node) or "
            "dvc.lock was damaged: temporary files are removed, a dvc.lock that DVC can no longer read is set "
            "aside in .sabre/damaged/ and rebuilt, and every job whose outputs are proven to be what its recipe "
            "and inputs make is recorded with `dvc commit` (the cache is then complete for `dvc push`). "
            "Nothing is re-run and nothing unproven is recorded: run `snakemake --cores 8 all` or `dvc repro` "
            "afterwards to make the rest."
        ),
    )
    add_params(p)
    p.set_defaults(func=_recover)


def _status(args: argparse.Namespace) -> int:
    from . import dagsync, state

    pipeline = _pipeline(args)
    root = pipeline.root
    jobs = pipeline.jobs()
    todo = []
    for job in jobs:
        content = pipeline.recipe(job, dagsync.resolve_hub(pipeline) if job.stage.name == "fetch" else None)
        on_disk = (root / job.stamp).read_text(encoding="utf-8") if (root / job.stamp).is_file() else None
        if on_disk != content:
            todo.append((job.name, "its recipe (command, settings or code) changed"))
            continue
        verdict = state.verify(root, job, state.recipe_digest(root, job))
        if not verdict.proven:
            todo.append((job.name, verdict.why))
    names = dagsync.downstream(jobs, [n for n, _ in todo])
    why = dict(todo)
    for name in [j.name for j in jobs if j.name in names]:
        print(f"{name}: {why.get(name, 'an input is made again')}")
    print(f"{len(names)} of {len(jobs)} jobs to run" if names else "every job is up to date")
    return 1 if names else 0


_p_status = _simple("status", _status, "which jobs would run, and why (read only; exit 1 when some would)")


REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_manifest, _p_generate, _p_recipes, _p_recover, _p_status]
