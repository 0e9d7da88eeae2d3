"""``sabre prompt-run``: one model under one prompt template, every split, scored.

A module of its own (registered in :data:`sabre_prior.cli.COMMANDS`): it predicts and scores, so
only the prompt_run stage depends on both the inference and the scoring code.

The prompt-sensitivity dimension (issue 21): ``prompt.templates`` lists the templates
(docs/prompts.md); the first is the main table's.  For every template and model this writes,
under ``results/prompts/<template>/<model>/``, the predictions, usage summaries, traces and the
metrics of every split, exactly as the main run does for its own.

Nothing is paid twice: a template's answers live in their own journal
(``.sabre/journal/prompts/<template>/<model>/<split>.jsonl``, so that the jobs of several templates
can run at once), and before any call it is seeded with every answer the main journal
(``.sabre/journal/<model>/<split>.jsonl``) already holds for that template: the main template's
run is then all journal hits, and adding a template pays only for its own prompts.  The
journal key names the template and its version (:func:`~sabre_prior.inference.journal.request_key`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import argparse
from collections.abc import Callable

from . import contracts as C
from .cliargs import add_data_dir, add_model, add_no_progress, add_params
from .inference.journal import Journal, journal_path, read_journal, template_journal_dir

if TYPE_CHECKING:
    from .inference.modelconfig import ModelConfig

log = logging.getLogger(__name__)

PROMPTS_DIR = "results/prompts"

def seed_journal(model: str, split: str, template: str, *, main_dir: Path | None = None, into: Path | None = None) -> int:
    """Copy the main journal's final answers given under ``template`` into the template's journal.

    Returns how many lines were copied (keys already present are left alone).
    """
    main = read_journal(journal_path(model, split, journal_dir=main_dir))
    wanted = [r for r in main.values() if r.get("template") == template]
    if not wanted:
        return 0
    copied = 0
    with Journal(journal_path(model, split, journal_dir=into or template_journal_dir(template))) as journal:
        for rec in wanted:
            if rec["key"] not in journal:
                journal.append({k: v for k, v in rec.items() if k != "v"})
                copied += 1
    return copied


def run_template(
    model: str,
    settings: "Mapping[str, Any] | ModelConfig",
    template: str,
    splits: Sequence[str],
    data_dir: str | Path,
    outdir: str | Path,
    *,
    progress: bool = False,
    main_journal_dir: str | Path | None = None,
    journal_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Predict every split under ``template`` and score it; returns the metrics."""
    from .inference.predict import predict_split
    from .inference.prompts import check_templates
    from .scoring.evaluate import evaluate_predictions

    check_templates([template])
    out = Path(outdir)
    jdir = Path(journal_dir) if journal_dir is not None else template_journal_dir(template)
    from .inference.modelconfig import as_config

    own = as_config(model, settings).without("prompt_template")  # the template asked for wins
    for split in splits:
        copied = seed_journal(
            model, split, template, main_dir=Path(main_journal_dir) if main_journal_dir else None, into=jdir
        )
        if copied:
            log.info("%s/%s/%s: %d answers reused from the main journal", template, model, split, copied)
        predict_split(
            model,
            own,
            split,
            Path(data_dir) / f"{split}.parquet",
            out / "predictions" / f"{split}.jsonl",
            template=template,
            progress=progress,
            usage_output=out / "usage" / f"{split}.json",
            run_log_output=Path(C.LOGS_DIR) / "usage" / "prompts" / template / model / f"{split}.json",
            journal_dir=jdir,
        )
    return evaluate_predictions(
        out / "predictions",
        Path(data_dir),
        out / "metrics.json",
        splits=list(splits),
        trace_dir=out / "traces",
        usage_dir=out / "usage",
    )


# ---------------------------------------------------------------------------
# prompt-run (the prompt-sensitivity dimension)
# ---------------------------------------------------------------------------
def _prompt_run(args: argparse.Namespace) -> int:
    from .config import model_settings, prompt_templates
    from .errors import ConfigError
    from .settings import declared, load_settings

    params = load_settings(args)
    # the pipeline's job reads only the main template (to reuse its answers: adding a template re-runs
    # no other template's job); by hand, the template must be one prompt.templates lists
    if declared(params, "prompt.templates") and args.template not in prompt_templates(params):
        raise ConfigError(f"{args.params}: prompt.templates does not list {args.template!r}: {prompt_templates(params)}")
    metrics = run_template(
        args.model,
        model_settings(params, args.model, args.params),
        args.template,
        list(params["splits"]),
        Path(args.data),
        Path(args.outdir),
        progress=not args.no_progress,
    )
    print(f"{args.template}/{args.model}: macro_accuracy={metrics[C.M_MACRO]:.4f} -> {args.outdir}")
    return 0


def _p_prompt_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "prompt-run", help="run one model under one template of prompt.templates on every split and score it"
    )
    p.add_argument("--template", required=True, help="a template listed in prompt.templates (docs/prompts.md)")
    add_model(p)
    add_data_dir(p)
    p.add_argument("--outdir", required=True, help="where predictions/, usage/, traces/ and metrics.json go")
    add_no_progress(p)
    add_params(p)
    p.set_defaults(func=_prompt_run)



#: Subcommand registrars.
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_p_prompt_run]
