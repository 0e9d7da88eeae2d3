"""``sabre evaluate``: score prediction files under the official contract.

Registered through :data:`REGISTRARS` (see :data:`sabre_prior.cli.COMMANDS`).  Heavy imports
happen inside the handlers so that ``sabre --help`` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

from .. import contracts as C
from ..cliargs import add_data_dir


# ---------------------------------------------------------------------------
# evaluate
# ---------------------------------------------------------------------------
def _evaluate(args: argparse.Namespace) -> int:
    from .evaluate import evaluate_predictions

    splits = args.splits
    if args.params is not None or args.settings is not None:
        from ..settings import load_settings

        splits = list(load_settings(args)["splits"])
    metrics = evaluate_predictions(
        Path(args.predictions),
        Path(args.data),
        Path(args.output),
        splits=splits or list(C.SPLITS),
        trace_dir=Path(args.trace_dir) if args.trace_dir else None,
        usage_dir=Path(args.usage) if args.usage else None,
    )
    if args.headline:
        from ..io_utils import write_json
        from .evaluate import headline

        write_json(args.headline, headline(metrics))
    missing = [f"{s} {metrics[s][C.M_MISSING]}" for s in metrics if s != C.M_MACRO and metrics[s][C.M_MISSING]]
    lacking = f" (questions without a prediction, scored as wrong: {', '.join(missing)})" if missing else ""
    print(f"macro_accuracy={metrics[C.M_MACRO]:.4f} -> {args.output}{lacking}")
    return 0


def _p_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="score prediction files under the official contract (like evaluate.py)")
    p.add_argument("--predictions", required=True, help="directory holding <split>.jsonl prediction files")
    p.add_argument("--output", required=True, help="metrics JSON file to write")
    add_data_dir(p)
    p.add_argument(
        "--trace-dir",
        help="where per-question traces <split>.jsonl go (default: beside --output, in <output stem>.traces/)",
    )
    p.add_argument(
        "--usage",
        help="directory of <split>.json usage summaries (from sabre predict): count refused questions in `refused`",
    )
    p.add_argument(
        "--headline",
        help="also write the few numbers `dvc metrics show` shows to this JSON file: the macro accuracy and each "
        "split's accuracy, in percent (default: none; the pipeline: results/headline/<model>.json)",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--splits", nargs="+", choices=C.SPLITS, help="splits to score (default: all four)")
    which.add_argument("--params", help="score the splits configured in this params file")
    which.add_argument("--settings", metavar="JSON", help="score the splits of the settings a pipeline rule passes (sabre_prior.settings)")
    p.set_defaults(func=_evaluate)


#: Subcommand registrars, in help order.
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_evaluate]
