"""The ``sabre`` command line.  Snakemake rules and DVC stages call these commands.

Each stage's subcommands live with the stage (``<stage>/commands.py``, a list
``REGISTRARS``); this module only dispatches: :data:`COMMANDS` names the module
of each subcommand, and a run imports the requested command's module only (all
of them for ``sabre --help``), so a command depends on its stage and the core.
Each subcommand is a thin wrapper: parse arguments, call one function of the
package, print a short summary.  Errors meant for the user (:class:`SabreError`,
and a file the system refuses to read or write) are printed without a traceback (``sabre --debug``
shows it) and give a non-zero exit code.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from pathlib import Path
from typing import Callable, Sequence

from .cliargs import add_params
from .errors import SabreError


# ---------------------------------------------------------------------------
# check-config
# ---------------------------------------------------------------------------
def _check_config(args: argparse.Namespace) -> int:
    from .buildcheck import check_settings
    from .settings import load_settings

    params = load_settings(args)
    check_settings(params, args.params)
    print(f"{args.params}: valid ({len(params['models'])} models, splits: {', '.join(params['splits'])})")
    return 0


def _p_check_config(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check-config", help="validate params.yaml against the schema")
    add_params(p)
    p.set_defaults(func=_check_config)


#: This module's own subcommands (the core's).
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_check_config]

from .commandmap import COMMANDS  # noqa: E402  (subcommand -> its module)


class _Version(argparse.Action):
    """``--version``, reading the package metadata only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, default: str = argparse.SUPPRESS,
                 help: str | None = None) -> None:  # fmt: skip
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:  # fmt: skip
        from . import __version__

        print(f"sabre {__version__}")
        parser.exit()


def command_modules(argv: Sequence[str]) -> list[str]:
    """The modules ``argv`` needs: the requested subcommand's only, or all of them (help, unknown)."""
    args = list(argv)
    command = None
    for i, a in enumerate(args):
        if a.startswith("-") or (i > 0 and args[i - 1] == "--log"):
            continue  # an option, or the value of the global --log
        command = a
        break
    if command in COMMANDS:
        return [COMMANDS[command]]
    return list(dict.fromkeys(COMMANDS.values()))


def build_parser(modules: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser with the subcommands of ``modules`` (default: all of them)."""
    parser = argparse.ArgumentParser(prog="sabre", description="SABRE-Prior evaluation pipeline")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging (default: info)")
    parser.add_argument(
        "--log",
        metavar="FILE",
        help="write everything the command prints to FILE (as `> FILE 2>&1` would) and, when it fails, also "
        "print the last lines of FILE on the terminal (the pipeline's stages use this; default: print to the terminal)",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="on an error, show the Python traceback as well as the message (default: the message only)",
    )
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in dict.fromkeys(COMMANDS.values()) if modules is None else modules:
        registrars = REGISTRARS if module == "cli" else importlib.import_module(f"{__package__}.{module}").REGISTRARS
        for register in registrars:
            register(sub)
    for command in sub.choices.values():
        for action in command._actions:
            _name_default(action)
    return parser


def _name_default(action: argparse.Action) -> None:
    """Append ``(default: ...)`` to an option's help unless it says its default already (a flag's is off)."""
    if not action.option_strings or not action.help or action.help is argparse.SUPPRESS or action.required:
        return
    if "default" in action.help.lower() or "%(default)" in action.help or action.nargs == 0:
        return
    value = action.default
    shown = "none" if value is None or value == [] else " ".join(map(str, value)) if isinstance(value, list) else value
    action.help = f"{action.help} (default: {str(shown).replace('%', '%%')})"


#: Lines of a failed command's log shown on the terminal (``--log``).
TAIL_LINES = 15


def _redirect_output(path: str) -> int:
    """Send this process's stdout and stderr (file descriptors 1 and 2, so child processes and C
    libraries too) to ``path``; returns a copy of the terminal's stderr."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return saved


def _show_tail(path: str, terminal: int, rc: int, command: str) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    shown = lines[-TAIL_LINES:]
    text = f"sabre {command} failed (exit {rc}); the last {len(shown)} lines of {path}:\n" + "".join(
        f"  {line}\n" for line in shown
    )
    os.write(terminal, text.encode("utf-8", errors="replace"))


def _run(args: argparse.Namespace, debug: bool = False) -> int:
    from .settings import UndeclaredSetting

    try:
        return int(args.func(args) or 0)
    except UndeclaredSetting as exc:  # a bug of the rule or the command, not of the user's input
        print(f"error: {exc}", file=sys.stderr)
        return 3
    except SabreError as exc:
        if debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        from .io_utils import NO_SPACE, NOT_WRITABLE, disk_full_message

        if debug or (exc.errno not in NO_SPACE and not (exc.errno in NOT_WRITABLE and exc.filename)):
            raise
        # a file read or written outside io_utils' atomic writers (a library's cache, a log): no traceback either
        if exc.errno in NO_SPACE:
            print(f"error: {disk_full_message(exc.filename or '<a file of this command>', exc)}", file=sys.stderr)
        else:
            print(f"error: {exc.filename}: {exc.strerror or exc} (check its permissions and those of its folder; "
                  "sabre --debug ... shows where)", file=sys.stderr)  # fmt: skip
        return 2


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(command_modules(words))
    args = parser.parse_args(argv)
    debug = vars(args).pop("debug")  # how errors are shown, not an argument of the command
    terminal = _redirect_output(args.log) if args.log else None
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if terminal is None:
        return _run(args, debug)
    try:
        rc = _run(args, debug)
    except BaseException:  # noqa: BLE001 - an unexpected crash: its traceback goes to the log, its tail to the terminal
        import traceback

        traceback.print_exc()
        rc = 1
    if rc != 0:
        _show_tail(args.log, terminal, rc, args.command)
    os.close(terminal)
    return rc


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
