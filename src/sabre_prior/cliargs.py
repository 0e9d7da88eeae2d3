"""Command-line arguments that several ``sabre`` subcommands share, each defined once."""

from __future__ import annotations

import argparse

#: The configuration file every stage reads unless told otherwise.
PARAMS_FILE = "params.yaml"


def add_params(p: argparse.ArgumentParser) -> None:
    """``--params``: the configuration file (default: params.yaml)."""
    p.add_argument("--params", default=PARAMS_FILE, help=f"the configuration file (default: {PARAMS_FILE})")
