"""The ``sabre`` command line.  Snakemake rules and DVC stages call these commands.

Each stage's subcommands live with the stage (``<stage>/commands.py``, a list
``REGISTRARS``); this module only dispatches: :data:`COMMANDS` names the module
of each subcommand, and a run imports the requested command's module only (all
of them for ``sabre --help``), so a command depends on its stage and the core.
Each subcommand is a thin wrapper: parse arguments, call one function of the
package, print a short summary.  Errors meant for the user (:class:`SabreError`)
are printed without a traceback and give a non-zero exit code.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import Callable, Sequence

from . import __version__
from .cliargs import add_params
from .errors import SabreError


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


#: This module's own subcommands (the core's).
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_check_config]

#: Subcommand -> the module (below ``sabre_prior``) whose ``REGISTRARS`` define it, in help order.
COMMANDS: dict[str, str] = {
    "check-config": "cli",
    "demo-data": "data.commands",
    "fetch": "data.commands",
    "predict": "inference.commands",
    "prompt-run": "prompt_run",
    "estimate": "inference.commands",
    "batches": "inference.commands",
    "evaluate": "scoring.commands",
    "tables": "report.commands",
    "figures": "report.commands",
    "plot-data": "report.commands",
    "intervals": "analysis.commands",
    "compare": "analysis.commands",
    "diagnose": "analysis.commands",
    "paper-compare": "analysis.commands",
    "report": "analysis.commands",
    "prompt-sensitivity": "analysis.commands",
    "audit": "audit",
    "stability": "analysis.commands",
    "manifest": "repro.commands",
    "dvc-yaml": "repro.commands",
    "dvc-sync": "repro.commands",
}


def command_modules(argv: Sequence[str]) -> list[str]:
    """The modules ``argv`` needs: the requested subcommand's only, or all of them (help, unknown)."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in COMMANDS:
        return [COMMANDS[command]]
    return list(dict.fromkeys(COMMANDS.values()))


def build_parser(modules: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser with the subcommands of ``modules`` (default: all of them)."""
    parser = argparse.ArgumentParser(prog="sabre", description="SABRE-Prior evaluation pipeline")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--version", action="version", version=f"sabre {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in dict.fromkeys(COMMANDS.values()) if modules is None else modules:
        registrars = REGISTRARS if module == "cli" else importlib.import_module(f"{__package__}.{module}").REGISTRARS
        for register in registrars:
            register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(command_modules(sys.argv[1:] if argv is None else argv))
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
