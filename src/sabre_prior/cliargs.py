"""Command-line arguments that several ``sabre`` subcommands share, each defined once."""

from __future__ import annotations

import argparse

from . import contracts as C

#: The configuration file every stage reads unless told otherwise.
PARAMS_FILE = "params.yaml"


def add_params(p: argparse.ArgumentParser) -> None:
    """``--params``: the configuration file (default: params.yaml); ``--settings``: the settings a
    pipeline rule passes instead (sabre_prior.settings: the command may read only those)."""
    p.add_argument("--params", default=PARAMS_FILE, help=f"the configuration file (default: {PARAMS_FILE})")
    p.add_argument(
        "--settings",
        metavar="JSON",
        help="the settings of params.yaml this command may read, as the pipeline's rule passes them "
        "(instead of reading --params; default: read --params)",
    )


def add_model(p: argparse.ArgumentParser) -> None:
    """``--model``: the model a command runs or reads (required)."""
    p.add_argument("--model", required=True, help="a key of `models` in params.yaml")


def add_data_dir(p: argparse.ArgumentParser) -> None:
    """``--data``: the folder of the fetched Parquet splits."""
    p.add_argument("--data", default=C.PARQUET_DIR, help=f"directory of <split>.parquet (default: {C.PARQUET_DIR})")


def add_no_progress(p: argparse.ArgumentParser) -> None:
    """``--no-progress``: no progress bar (logs and CI)."""
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
