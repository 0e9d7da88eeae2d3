"""``sabre predict | estimate | batches``: run a model, estimate the calls, list provider batches.

Registered through :data:`REGISTRARS` (see :data:`sabre_prior.cli.COMMANDS`).  Heavy imports
happen inside the handlers so that ``sabre --help`` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .. import contracts as C
from ..cliargs import add_model, add_no_progress, add_params

if TYPE_CHECKING:
    from ..data.reader import ForkedRows, LocalRows


# ---------------------------------------------------------------------------
# predict
# ---------------------------------------------------------------------------
def _predict(args: argparse.Namespace) -> int:
    from ..data.reader import open_rows

    data = Path(args.data) if args.data else C.parquet_path(args.split)
    # the rows are read by a forked child (pyarrow's import and the first rows on the other core)
    rows = open_rows(data)
    try:
        return _predict_rows(args, data, rows)
    finally:
        rows.close()


def _predict_rows(args: argparse.Namespace, data: Path, rows: ForkedRows | LocalRows) -> int:
    from ..config import load_params_overlapped, model_settings
    from .models.base import prefetch_sdk

    # the schema check runs in a child process while this one imports what the calls need; its
    # verdict comes before anything is sent, and a schema error is the error reported first
    if args.settings:  # the rule's settings (validated by Snakemake already)
        from ..settings import decode

        params, verdict = decode(args.settings), (lambda: None)
    else:
        params, verdict = load_params_overlapped(args.params)
    try:
        settings = model_settings(params, args.model, args.params)
        prefetch_sdk(settings)  # an API SDK imports in the background while the data is read
        from .modelconfig import ModelConfig
        from .predict import predict_split

        config = ModelConfig.parse(args.model, settings)  # the one parse of the entry, handed to everything

        output = Path(args.output) if args.output else C.predictions_path(args.model, args.split)
        from ..config import prompt_templates
        from .prompts import check_templates

        template = check_templates(prompt_templates(params), args.params)[0]  # the main table's
    except Exception:
        verdict()
        raise
    verdict()
    run = predict_split(
        args.model,
        config,
        args.split,
        data,
        output,
        template=template,
        progress=not args.no_progress,
        usage_output=Path(args.usage) if args.usage else None,
        retry_refusals=args.retry_refusals,
        rows=rows,
    )
    print(
        f"{args.model}/{args.split}: {run.answered} answered ({run.cached} from the journal, "
        f"{run.calls} calls, {run.retries} retries), {len(run.refused)} refused -> {output}"
    )
    return 0


def _p_predict(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("predict", help="run one model on one split; write the official prediction file")
    add_model(p)
    p.add_argument("--split", required=True, choices=C.SPLITS, help="the split to answer")
    p.add_argument("--data", help="Parquet split (default: data/parquet/<split>.parquet)")
    p.add_argument("--output", help="prediction file (default: results/predictions/<model>/<split>.jsonl)")
    p.add_argument(
        "--usage", help="usage summary to write (default: results/usage/<model>/<split>.json)"
    )
    add_no_progress(p)
    p.add_argument(
        "--retry-refusals",
        action="store_true",
        help="send again the questions the provider refused in an earlier run (refusals are final otherwise)",
    )
    add_params(p)
    p.set_defaults(func=_predict)


# ---------------------------------------------------------------------------
# estimate (dry run)
# ---------------------------------------------------------------------------
def _estimate(args: argparse.Namespace) -> int:
    from ..settings import load_settings
    from .modelconfig import ModelConfig
    from .predict import estimate_dimensions, format_estimates

    from ..config import prompt_templates
    from .prompts import check_templates

    params = load_settings(args)
    models = args.models or list(params["models"])
    splits = args.splits or list(params["splits"])
    templates = check_templates(prompt_templates(params), args.params)
    estimates = [
        e
        for m in models
        for config in [ModelConfig.from_params(params, m, args.params)]
        for s in splits
        for e in estimate_dimensions(params, m, config, s, Path(args.data_dir), templates)
    ]
    from ..data.parquet import priced_data

    print("\n".join(priced_data(str(params["dataset"]["source"]), splits, args.data_dir)))
    print(format_estimates(estimates))
    return 0


def _p_estimate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "estimate", help="dry run: calls still to make (journal hits excluded), tokens and cost; no call is made"
    )
    p.add_argument("--models", nargs="+", help="models of params.yaml (default: all)")
    p.add_argument("--splits", nargs="+", choices=C.SPLITS, help="the splits to price (default: the splits of params.yaml)")
    p.add_argument("--data-dir", default=C.PARQUET_DIR, help=f"directory of <split>.parquet (default: {C.PARQUET_DIR})")
    add_params(p)
    p.set_defaults(func=_estimate)


# ---------------------------------------------------------------------------
# batches (provider batch APIs)
# ---------------------------------------------------------------------------
def _batches(args: argparse.Namespace) -> int:
    from ..config import model_settings
    from ..settings import load_settings
    from .batch import format_batches, list_batches

    params = load_settings(args)
    splits = args.splits or list(params["splits"])
    settings = model_settings(params, args.model, args.params)
    if settings.get("batch") in (None, False):
        from .. import registry
        from ..errors import ConfigError

        try:
            registry.check_supported(args.model, settings)
        except ConfigError:
            raise ConfigError(
                f"{args.params}: models.{args.model} does not use a provider batch API (it has no `batch:` setting, "
                f"and backend {settings.get('backend')!r}"
                + (f" with provider {settings.get('provider')!r}" if settings.get("provider") else "")
                + " has none we use), so it has no batches to list or cancel; `sabre batches` is for models with "
                "`batch: true` (see docs/api_models.md, 'Batch mode')"
            ) from None
    rows = list_batches(args.model, model_settings(params, args.model, args.params), splits, cancel=args.cancel, query=not args.offline)
    print(format_batches(args.model, rows))
    return 0


def _p_batches(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("batches", help="list a model's pending provider batches with their status; --cancel cancels them")
    add_model(p)
    p.add_argument("--splits", nargs="+", choices=C.SPLITS, help="the splits whose batches to show (default: the splits of params.yaml)")
    p.add_argument("--cancel", action="store_true", help="cancel every pending batch (its finished answers are still collected)")
    p.add_argument("--offline", action="store_true", help="list from the ledger only, without asking the provider")
    add_params(p)
    p.set_defaults(func=_batches)


#: Subcommand registrars, in help order.
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_predict, _p_estimate, _p_batches]
