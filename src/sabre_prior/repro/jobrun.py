"""A ``sabre`` command as a pipeline job: one source of defaults, made records, no degraded outputs.

:func:`adopt` runs before a subcommand that is a stage's command. It finds the job of the
pipeline's declaration (for the project's ``params.yaml``) the arguments name:

* options left at their defaults take the rule's values, so ``sabre tables`` run by hand is
  exactly the rule's command and writes the rule's bytes (one source of defaults: the declaration);
* arguments that still differ from every job of that stage, with an output under ``data/`` or
  ``results/``, are refused, naming the differing options: a hand run cannot overwrite a pipeline
  output with fewer inputs than the rule gives it (write elsewhere, e.g. ``--outdir /tmp/t``).

After the command succeeds, :func:`record` writes the job's made record
(:mod:`sabre_prior.repro.state`) so both orchestrators know what the outputs were made from.
Outside a project (no ``params.yaml`` beside ``dvc.yaml`` or ``Snakefile``) nothing happens.
"""

from __future__ import annotations

import argparse
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..errors import SabreError

#: Namespace entries that are not the command's arguments.
_IGNORED = frozenset({"func", "verbose", "command", "log"})
#: Where the pipeline's outputs live (a hand run may write elsewhere freely).
_OUTPUT_ROOTS = ("data", "results")


class HandRunRefused(SabreError):
    exit_code = 2


@dataclass
class Adopted:
    job: Any
    recipe: str | None
    root: Path


def _project_root() -> Path | None:
    root = Path.cwd()
    if (root / "params.yaml").is_file() and ((root / "dvc.yaml").is_file() or (root / "Snakefile").is_file()):
        return root
    return None


def _argv_of(command: str) -> list[str]:
    """The arguments of a declared command (after ``sabre``, without the log redirection)."""
    words = shlex.split(command.split(" > ", 1)[0])
    return words[1:]


def _values(ns: argparse.Namespace) -> dict[str, Any]:
    return {k: v for k, v in vars(ns).items() if k not in _IGNORED}


def _defaults(parser: argparse.ArgumentParser, sub: str) -> dict[str, Any]:
    for action in parser._subparsers._group_actions if parser._subparsers else []:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction) and sub in action.choices:  # noqa: SLF001
            sp = action.choices[sub]
            return {a.dest: sp.get_default(a.dest) for a in sp._actions if a.dest != "help"}  # noqa: SLF001
    return {}


def _under_outputs(root: Path, value: Any) -> bool:
    if not isinstance(value, str) or not value:
        return False
    try:
        rel = (root / value).resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return bool(rel.parts) and rel.parts[0] in _OUTPUT_ROOTS


def relax_required(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[tuple[str, str]]:
    """For a stage's subcommand, its required options become optional (the declared job supplies
    them: :func:`adopt`); returns ``(dest, option)`` of each, to check after :func:`adopt`."""
    args = list(argv)
    sub = next((a for i, a in enumerate(args) if not a.startswith("-") and not (i and args[i - 1] == "--log")), None)
    from .pipeline import STAGES

    if sub is None or not any(s.cmd.split()[1] == sub for s in STAGES):
        return []
    relaxed = []
    for action in parser._subparsers._group_actions if parser._subparsers else []:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction) and sub in action.choices:  # noqa: SLF001
            for a in action.choices[sub]._actions:  # noqa: SLF001
                if a.required and a.option_strings:
                    a.required = False
                    relaxed.append((a.dest, a.option_strings[-1]))
    return relaxed


def check_required(parser: argparse.ArgumentParser, args: argparse.Namespace, relaxed: Sequence[tuple[str, str]]) -> None:
    missing = [opt for dest, opt in relaxed if getattr(args, dest, None) is None]
    if missing:
        parser.error(
            f"the following arguments are required: {', '.join(missing)} (they take the pipeline's values only "
            f"when the other arguments name one of its jobs)"
        )


def adopt(parser: argparse.ArgumentParser, argv: Sequence[str], args: argparse.Namespace) -> Adopted | None:
    """Fill defaults from the declared job, refuse a degrading hand run; the job, or None."""
    root = _project_root()
    sub = getattr(args, "command", None)
    if root is None or not sub:
        return None
    from .pipeline import STAGES

    if not any(s.cmd.split()[1] == sub for s in STAGES):
        return None
    from ..config import load_params
    from .pipeline import Pipeline

    try:
        params = load_params(getattr(args, "params", None) or "params.yaml")
    except SabreError:
        return None  # the command itself reports a broken params.yaml
    pipeline = Pipeline(params, root)
    candidates = [j for j in pipeline.jobs() if j.stage.cmd.split()[1] == sub]
    if not candidates:
        return None
    defaults = _defaults(parser, sub)
    given = _values(args)
    explicit = {k for k, v in given.items() if k not in defaults or defaults[k] != v}
    best: tuple[int, Any, dict[str, Any]] | None = None
    for job in candidates:
        declared = _values(parser.parse_args(_argv_of(job.command)))
        filled = {k: (v if k in explicit else declared.get(k, v)) for k, v in given.items()}
        differ = sorted(k for k in set(filled) | set(declared) if filled.get(k) != declared.get(k))
        if not differ:
            for k, v in declared.items():
                setattr(args, k, v)
            if not os.environ.get("DVC_STAGE") and not os.environ.get("SABRE_RUN"):
                from .runlock import refuse_hand_run_while_busy

                refuse_hand_run_while_busy(root, f"sabre {sub}")
            from .state import recipe_digest

            return Adopted(job, recipe_digest(root, job), root)
        outs = {
            k for k, v in declared.items()
            if isinstance(v, str) and v and any(o == v or o.startswith(v.rstrip("/") + "/") for o in job.outputs)
        }
        writes = any(_under_outputs(root, filled.get(k)) for k in outs)
        if writes and (best is None or len(differ) < best[0]):
            best = (len(differ), job, {k: declared.get(k) for k in differ})
    if best is not None:
        _, job, want = best
        shown = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in want.items())
        raise HandRunRefused(
            f"`sabre {sub}` with these arguments would overwrite outputs of the pipeline's job {job.name} "
            f"with other inputs than its rule gives it (the rule passes {shown}); run it with the rule's "
            f"arguments (leave them at their defaults), or write elsewhere than {'/ or '.join(_OUTPUT_ROOTS)}/"
        )
    return None


def record(adopted: Adopted | None) -> None:
    """After the command succeeded: the job's made record."""
    if adopted is None:
        return
    from .state import write_made

    write_made(adopted.root, adopted.job, adopted.recipe)
