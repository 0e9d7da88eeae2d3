"""``sabre demo-data | fetch``: write the demo benchmark, fetch a split to Parquet.

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
# demo-data
# ---------------------------------------------------------------------------
def _demo_data(args: argparse.Namespace) -> int:
    from .demo import generate

    summary = generate(Path(args.output), scale=args.scale, seed=args.seed)
    print(summary)
    return 0


def _p_demo_data(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo-data", help="write the embedded demo benchmark in the hub repo layout")
    p.add_argument("--output", default=C.DEMO_DIR, help=f"output directory (default: {C.DEMO_DIR})")
    p.add_argument("--scale", choices=["small", "full"], default="small", help="small (seconds) or full (real sizes) (default: small)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated questions and images (default: 0)")
    p.set_defaults(func=_demo_data)


# ---------------------------------------------------------------------------
# fetch
# ---------------------------------------------------------------------------
def _fetch(args: argparse.Namespace) -> int:
    from ..settings import load_settings
    from .fetch import fetch_split

    source, revision = args.source, args.revision
    if source is None:
        params = load_settings(args)
        source = params["dataset"]["source"]
        revision = revision or params["dataset"].get("revision")
    if source == "demo":
        source = C.DEMO_DIR
    revision = revision or None
    output = Path(args.output) if args.output else C.parquet_path(args.split)
    summary = fetch_split(source, args.split, output, revision=revision)
    print(summary)
    return 0


def _p_fetch(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fetch", help="load one split with datasets.load_dataset and write self-contained Parquet")
    p.add_argument("--split", required=True, choices=C.SPLITS, help="the split to fetch")
    p.add_argument("--source", help="hub repo id or local directory (default: dataset.source from --params)")
    p.add_argument("--revision", help="hub revision (default: dataset.revision from --params)")
    p.add_argument("--output", help="output Parquet file (default: data/parquet/<split>.parquet)")
    add_params(p)
    p.set_defaults(func=_fetch)


#: Subcommand registrars, in help order.
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_demo_data, _p_fetch]
