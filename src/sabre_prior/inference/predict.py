"""Running one model on one split and writing its prediction file.

The prediction file ``results/predictions/<model>/<split>.jsonl`` holds one
line ``{"id": ..., "prediction": ...}`` per answered question, in dataset order
(the official format).  It is written atomically, and only when every question
has a final outcome: a failed call is never stored as an answer.  A refused
question (:mod:`sabre_prior.inference.outcomes`) is final: it has no line (the official
contract scores a missing prediction as wrong), it is listed with its reason
in the usage summary, and a re-run does not send it again unless asked to
(``--retry-refusals`` or ``retry_refusals: true``).  When questions fail
after all retries, the run still finishes the others (they go to the response
journal), writes the failures to the run log and raises
:class:`InferenceIncomplete` (exit code 3) listing the failed ids; running the
same command again only calls the failed questions.

API and local models go through :class:`sabre_prior.inference.engine.Engine` and the
response journal (``.sabre/journal/<model>/<split>.jsonl``); offline
baselines bypass the journal.  Next to the predictions each run writes the
usage summary ``results/usage/<model>/<split>.json`` (deterministic) and the
run log ``results/logs/usage/<model>/<split>.json`` (this run's calls, cache
hits, retries, failures and latencies).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .. import contracts as C
from ..data.reader import FIRST_READ_BATCH, ForkedRows, LocalRows, image_mime
from .engine import Engine, EngineResult, WorkItem
from ..errors import BackendError, InferenceIncomplete
from ..io_utils import write_json, write_jsonl
from .journal import Journal, is_refusal, journal_path, read_journal, request_key
from .models.base import Backend, MissingKeyError, Query, create_backend
from .prompts import DEFAULT_TEMPLATE, ImagePolicy, prepare_image, render, template_version
from ..scoring.contract import resolve_eval_type
from .usage import format_failures, run_log, run_log_path, summarize
from .batch import apply_batch_pricing
from .modelconfig import ModelConfig, as_config

log = logging.getLogger(__name__)

#: Output tokens expected for a short answer ("Yes.", "3", "B"), for estimates.
EXPECTED_OUTPUT_TOKENS = 3


@dataclass
class SplitRun:
    model: str
    split: str
    answered: int = 0
    failed: list[str] = field(default_factory=list)
    cached: int = 0
    calls: int = 0
    retries: int = 0
    refused: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)


def resolve_template(config: ModelConfig, template: str | None = None) -> str:
    """The model's own ``prompt_template``, else the global one, else ``screening_v1``."""
    return str(config.prompt_template or template or DEFAULT_TEMPLATE)


def iter_queries(
    data_path: Path,
    split: str,
    template: str,
    repeat: int = 0,
    only_ids: set[str] | None = None,
    rows: ForkedRows | LocalRows | None = None,
) -> Iterator[Query]:
    """One :class:`Query` per row (or per row of ``only_ids``), with the image's original bytes, in file order.

    ``rows``: the split's rows opened already (:func:`sabre_prior.data.reader.open_rows`), else read here.
    """
    for row in rows if rows is not None else LocalRows(data_path, FIRST_READ_BATCH):
        if only_ids is not None and str(row[C.COL_ID]) not in only_ids:
            continue
        image = row.pop(C.COL_IMAGE)
        eval_type = resolve_eval_type(row)
        row[C.COL_EVAL_TYPE] = eval_type
        text = render(row, eval_type, template)
        yield Query(
            id=str(row[C.COL_ID]), split=split, text=text, image=image, image_mime=image_mime(image), row=row, template=template,
            repeat=repeat,
        )


def build_queries(data_path: Path, split: str, template: str, repeat: int = 0) -> list[Query]:
    return list(iter_queries(data_path, split, template, repeat))


def iter_work_items(
    queries: Iterable[Query], backend: Backend, template: str, policy: ImagePolicy, repeat: int = 0
) -> Iterator[WorkItem]:
    """Apply the image policy and key every query by content."""
    identity = backend.cache_identity()
    version = template_version(template)
    for q in queries:
        sent = prepare_image(q.image, policy)
        if sent.reencoded:
            q = dataclasses.replace(q, image=sent.data, image_mime=sent.mime)
        key = request_key(identity, template, version, q.text, sent.sha256, repeat)
        est = backend.estimate_input_tokens(q, sent.width, sent.height) if backend.kind != "offline" else 0
        yield WorkItem(query=q, key=key, image=sent.record(), est_tokens=est)


def work_items(
    queries: Iterable[Query], backend: Backend, template: str, policy: ImagePolicy, repeat: int = 0
) -> list[WorkItem]:
    return list(iter_work_items(queries, backend, template, policy, repeat))


def _collecting(items: Iterable[WorkItem], into: list[WorkItem]) -> Iterator[WorkItem]:
    """Pass the items on, keeping each without its image bytes (memory stays flat in N)."""
    from .engine import without_image

    for item in items:
        into.append(without_image(item))
        yield item


def pacing_path(backend: Backend, journal_dir: str | Path | None = None) -> Path:
    """``.sabre/pacing/<provider>+<model>+<endpoint>.json``: one budget per model and endpoint, whatever the job.

    The main run's journal is ``.sabre/journal`` and the template runs' and audit repeats' are folders
    inside it (``journal/prompts/<template>``, ``journal/audit/r<n>``): every one of them paces in the
    ``pacing`` folder beside the main journal, so a model's main run, template runs and repeats at once
    share one ceiling and one pace against the provider's one limit.  A journal folder outside any
    ``.sabre/journal`` (tests, a custom layout) paces in the ``pacing`` folder beside it."""
    from .ratelimit import state_path

    jdir = Path(journal_dir) if journal_dir is not None else Path(C.JOURNAL_DIR)
    main = Path(C.JOURNAL_DIR).parts
    root = next((d for d in (jdir, *jdir.parents) if d.parts[-len(main):] == main), jdir)
    return state_path(root.parent / "pacing", getattr(backend, "provider_name", "api"),
                      str(getattr(backend, "model_id", backend.name)), getattr(backend, "base_url", None))  # fmt: skip


def _prepare(
    config: ModelConfig, split: str, data_path: Path, template: str | None, repeat: int = 0
) -> tuple[Backend, str, list[WorkItem]]:
    template = resolve_template(config, template)
    backend = create_backend(config.name, config.settings)
    items = work_items(build_queries(data_path, split, template, repeat), backend, template, config.images, repeat)
    return backend, template, items


def predict_split(
    model: str,
    settings: Mapping[str, Any] | ModelConfig,
    split: str,
    data_path: str | Path,
    output: str | Path,
    *,
    template: str | None = None,
    progress: bool = True,
    usage_output: str | Path | None = None,
    run_log_output: str | Path | None = None,
    journal_dir: str | Path | None = None,
    retry_refusals: bool = False,
    repeat: int = 0,
    only_ids: set[str] | None = None,
    rows: ForkedRows | LocalRows | None = None,
) -> SplitRun:
    """Answer every question of ``split`` with ``model`` and write the prediction file.

    ``rows``: the split's rows opened already (``sabre predict`` forks their reader before its
    other imports, :mod:`sabre_prior.data.reader`); closed here. Else read in this process.

    ``retry_refusals``: send again the questions the journal holds as refused.
    Raises :class:`BackendError` before any call when the backend is not ready
    (e.g. the API key variable is unset), :class:`InferenceIncomplete` when
    questions failed (no prediction file is written then). ``settings``: the model's
    :class:`ModelConfig` (a plain params entry is parsed into one here).
    """
    data_path = Path(data_path)
    rows = rows if rows is not None else LocalRows(data_path, FIRST_READ_BATCH)
    try:
        result, items, backend, config, template, journaled = _run(
            model, settings, split, data_path, rows, template, progress, journal_dir, retry_refusals, repeat, only_ids
        )
    finally:
        rows.close()
    return _finish(
        config,
        split,
        template,
        items,
        result,
        Path(output),
        usage_output,
        run_log_output,
        journaled,
        backend.run_info(),
    )


def _run(
    model: str,
    settings: Mapping[str, Any] | ModelConfig,
    split: str,
    data_path: Path,
    rows: ForkedRows | LocalRows,
    template: str | None,
    progress: bool,
    journal_dir: str | Path | None,
    retry_refusals: bool,
    repeat: int,
    only_ids: set[str] | None,
) -> tuple[EngineResult, list[WorkItem], Backend, ModelConfig, str, bool]:
    """:func:`predict_split`'s calls: the engine's result, the items it was given, and what wrote them."""
    config = as_config(model, settings).retrying_refusals(retry_refusals)
    template = resolve_template(config, template)
    backend = create_backend(model, config.settings)
    try:
        backend.check_ready()  # fail fast: a missing key or SDK stops here, before any call
        missing_key: MissingKeyError | None = None
    except MissingKeyError as exc:
        missing_key = exc  # fatal unless the journal already holds every answer (checked below)
    policy = config.images
    items: list[WorkItem] = []
    # a generator: the engine starts calling while later questions are still being read
    stream: Iterable[WorkItem] = _collecting(
        iter_work_items(iter_queries(data_path, split, template, repeat, only_ids, rows), backend, template, policy, repeat),
        items,
    )
    if missing_key is not None:
        stream = list(stream)
        done = read_journal(journal_path(model, split, journal_dir=journal_dir))
        if any(item.key not in done or (config.engine.retry_refusals and is_refusal(done[item.key])) for item in stream):
            raise missing_key
        log.info("%s/%s: no API key set, but every answer is in the journal", model, split)
    journal = Journal(journal_path(model, split, journal_dir=journal_dir)) if backend.kind != "offline" else None
    runner: Any = Engine
    extra: dict[str, Any] = {}
    if backend.kind == "api":  # one pacing state per provider and model, shared by all its jobs
        extra["pacing"] = pacing_path(backend, journal_dir)
    if config.batch.enabled:  # provider batch API (sabre_prior.inference.batch; its synchronous retries pace)
        from .batch import BatchEngine as runner

        extra["batch"] = config.batch
    try:
        engine = runner(
            backend,
            journal,
            config.engine,
            desc=f"{model}/{split}",
            progress=progress,
            journal_fields={"model": model, "model_id": config.model_id, "template": template}
            | ({"repeat": repeat} if repeat else {}),
            **extra,
        )
        result = engine.run(stream, total=len(only_ids) if only_ids is not None else rows.count())
    finally:
        if journal is not None:
            journal.close()
    return result, items, backend, config, template, journal is not None


def _finish(
    config: ModelConfig,
    split: str,
    template: str,
    items: list[WorkItem],
    result: EngineResult,
    output: Path,
    usage_output: str | Path | None,
    run_log_output: str | Path | None,
    journaled: bool,
    backend_info: Mapping[str, Any],
) -> SplitRun:
    model = config.name
    ids = [item.query.id for item in items]
    stats = result.stats
    run = SplitRun(
        model=model,
        split=split,
        answered=len(result.answers),
        failed=sorted(result.failures),
        cached=stats.cached,
        calls=stats.calls,
        retries=stats.retries,
        refused=sorted(result.refusals),
    )
    # the usage summary is written whatever happens next: every billed attempt counts
    run.usage = summarize(
        model=model,
        split=split,
        config=config,
        template=template,
        template_version=template_version(template),
        question_ids=ids,
        records=result.records,
        images={item.query.id: item.image for item in items},
        failures=result.failures,
        journaled=journaled,
        refusals=result.refusals,
        spent=result.spent,
    )
    run.usage = apply_batch_pricing(run.usage, config, result.records, result.refusals, result.spent)
    write_json(Path(usage_output) if usage_output else C.usage_path(model, split), run.usage)
    write_json(
        Path(run_log_output) if run_log_output else run_log_path(model, split),
        run_log(
            stats,
            result.failures,
            result.wall_s,
            {"model": model, "split": split, **backend_info, "refused": run.usage["refused_ids"], "usage": run.usage},
        ),
    )
    if result.refusals:
        log.warning(
            "%s/%s: %d of %d questions refused by the provider (final; no prediction, scored as wrong): %s",
            model, split, len(result.refusals), len(ids), ", ".join(sorted(result.refusals)[:10]),
        )  # fmt: skip
    if result.aborted:
        raise BackendError(
            f"{result.aborted}\nstopped early: {len(result.failures)} of {len(ids)} questions without an answer; "
            f"no prediction file was written ({stats.calls} answers made in this run are kept in the journal)"
        )
    if result.failures:
        raise InferenceIncomplete(
            f"{model}/{split}: {len(result.failures)} of {len(ids)} questions failed after all retries; "
            f"no prediction file was written (the {len(result.answers)} answers are kept in the journal: "
            f"re-run the same command to retry only the failed questions):\n{format_failures(result.failures)}"
        )
    # only answers become predictions (a refused question has no line)
    write_jsonl(output, ({C.PRED_ID: qid, C.PRED_PREDICTION: result.answers[qid]} for qid in ids if qid in result.answers))
    log.info(
        "%s/%s: %d predictions written to %s (%d from the journal, %d calls, %d retries, %d refused)",
        model,
        split,
        run.answered,
        output,
        stats.cached,
        stats.calls,
        stats.retries,
        len(run.refused),
    )
    return run


# --------------------------------------------------------------------------
# Dry run: what a run would still cost
# --------------------------------------------------------------------------


@dataclass
class Estimate:
    model: str
    split: str
    backend: str
    questions: int
    cached: int
    to_call: int
    input_tokens: int
    output_tokens_expected: int
    output_tokens_max: int
    cost_expected: float | None
    cost_max: float | None
    key_env: str | None = None
    key_set: bool | None = None
    #: the request leaves reasoning / thinking on: expect the whole output budget per call
    reasoning: bool = False
    #: cost at the bound with every call retried once as a spent-budget empty answer
    cost_allowance: float | None = None
    batch_cost_expected: float | None = None  # the same calls at the batch prices (sabre_prior.inference.batch)
    batch_cost_max: float | None = None
    batch: bool = False  # the model runs in batch mode
    template: str = ""  # the prompt template priced (prompt.templates)
    repeat: int = 0  # the stability audit's repeat (0: the main run)


def estimate_split(
    model: str,
    settings: Mapping[str, Any] | ModelConfig,
    split: str,
    data_path: str | Path,
    *,
    template: str | None = None,
    journal_dir: str | Path | None = None,
    also_journals: Sequence[Path] = (),
    repeat: int = 0,
    only_ids: set[str] | None = None,
) -> Estimate:
    """Calls still to make for ``model`` on ``split`` (journal hits excluded), their tokens and cost.

    Makes no call and needs no key.  Input tokens follow each provider's documented
    image-token rule (:meth:`~sabre_prior.inference.models.base.Backend.image_tokens`) plus
    about four characters per text token; output tokens are given as expected (a
    short answer, or the whole budget for a model that may reason) and as the
    ``max_output_tokens`` bound.  The allowance adds ``empty_budget_retries``
    billed retries of every call at the bound.
    """
    import os

    config = as_config(model, settings)
    backend, template, items = _prepare(config, split, Path(data_path), template, repeat)
    if only_ids is not None:
        items = [i for i in items if i.query.id in only_ids]
    offline = backend.kind == "offline"
    done = {} if offline else read_journal(journal_path(model, split, journal_dir=journal_dir))
    for extra in () if offline else also_journals:
        done.update(read_journal(journal_path(model, split, journal_dir=extra)))
    todo: dict[str, WorkItem] = {}
    cached = 0
    for item in items:
        if item.key in done:
            cached += 1
        elif not offline:
            todo.setdefault(item.key, item)
    calls = list(todo.values())
    max_out = config.max_output_tokens
    input_tokens = sum(i.est_tokens for i in calls)
    may_reason = bool(getattr(backend, "may_reason", lambda: False)())
    expected_out = len(calls) * (max_out if may_reason else min(max_out, EXPECTED_OUTPUT_TOKENS))
    bound_out = len(calls) * max_out
    prices = config.prices
    retries = 1 + config.engine.empty_budget_retries if not offline else 1
    key_env = config.api_key_env
    bprices = config.batch_prices if _batch_capable(config) else None
    return Estimate(
        model=model,
        split=split,
        backend=config.backend,
        questions=len(items),
        cached=cached,
        to_call=len(calls),
        input_tokens=input_tokens,
        output_tokens_expected=expected_out,
        output_tokens_max=bound_out,
        cost_expected=prices.cost(input_tokens, expected_out) if prices else None,
        cost_max=prices.cost(input_tokens, bound_out) if prices else None,
        key_env=key_env,
        key_set=bool(os.environ.get(key_env, "").strip()) if key_env else None,
        reasoning=may_reason,
        cost_allowance=prices.cost(input_tokens * retries, bound_out * retries) if prices else None,
        batch_cost_expected=bprices.cost(input_tokens, expected_out) if bprices else None,
        batch_cost_max=bprices.cost(input_tokens, bound_out) if bprices else None,
        batch=config.batch.enabled,
        template=template,
        repeat=repeat,
    )


def estimate_dimensions(
    params: Mapping[str, Any],
    model: str,
    settings: Mapping[str, Any] | ModelConfig,
    split: str,
    data_dir: Path,
    templates: Sequence[str],
    journal_root: Path | None = None,
) -> list[Estimate]:
    """What ``model`` on ``split`` still costs under every dimension of issue 21.

    The main run (the model's template); every template of ``prompt.templates`` in the prompt
    runs (their own journal, seeded from the main one: the main template costs nothing more);
    the stability audit's repeats 1..k-1 on the audited subset (repeat 0 is the main run).
    """
    from .audit import audit_journal_dir, audit_settings, audited_ids
    from .journal import template_journal_dir

    config = as_config(model, settings)
    root = journal_root or Path(".")
    data = data_dir / f"{split}.parquet"
    main_dir = root / C.JOURNAL_DIR
    out = [estimate_split(model, config, split, data, template=templates[0], journal_dir=main_dir)]
    main_template = resolve_template(config, templates[0])
    own = config.without("prompt_template") if any(t != main_template for t in templates) else config
    for t in templates:
        if t == main_template:  # answered by the main run first and copied from its journal: nothing more to pay
            continue
        out.append(
            estimate_split(
                model, own, split, data, template=t, journal_dir=template_journal_dir(t, root), also_journals=[main_dir]
            )
        )
    audit = audit_settings(params)
    if audit.repeats > 1:
        ids = audited_ids(data, split, audit)
        for r in audit.asked:
            out.append(
                estimate_split(
                    model, config, split, data, template=templates[0],
                    journal_dir=audit_journal_dir(r, root), repeat=r, only_ids=ids,
                )
            )  # fmt: skip
    return out

def _batch_capable(config: ModelConfig) -> bool:
    from .batch import check_supported
    from ..errors import ConfigError

    try:
        check_supported(config.name, config.settings)
    except ConfigError:
        return False
    return True


def format_estimates(estimates: list[Estimate]) -> str:
    """A plain-text table of estimates with totals."""
    header = (
        "model",
        "split",
        "backend",
        "questions",
        "journal",
        "to call",
        "input tok",
        "output tok (exp/max)",
        "cost USD (exp/max)",
        "with retries",
        "batch USD (exp/max)",
        "template",
        "repeat",
    )
    rows: list[tuple[str, ...]] = []

    def money(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.4f}"

    for e in estimates:
        rows.append(
            (
                e.model,
                e.split,
                e.backend,
                str(e.questions),
                str(e.cached),
                str(e.to_call),
                str(e.input_tokens),
                f"{e.output_tokens_expected}/{e.output_tokens_max}" + (" *" if e.reasoning and e.to_call else ""),
                f"{money(e.cost_expected)}/{money(e.cost_max)}",
                money(e.cost_allowance),
                f"{money(e.batch_cost_expected)}/{money(e.batch_cost_max)}{' b' if e.batch else ''}",
                e.template,
                str(e.repeat),
            )
        )
    priced = [e for e in estimates if e.cost_expected is not None]
    total_exp = sum(e.cost_expected or 0.0 for e in priced) if priced else None
    total_max = sum(e.cost_max or 0.0 for e in priced) if priced else None
    total_allow = sum(e.cost_allowance or 0.0 for e in priced) if priced else None
    rows.append(
        (
            "total",
            "",
            "",
            str(sum(e.questions for e in estimates)),
            str(sum(e.cached for e in estimates)),
            str(sum(e.to_call for e in estimates)),
            str(sum(e.input_tokens for e in estimates)),
            f"{sum(e.output_tokens_expected for e in estimates)}/{sum(e.output_tokens_max for e in estimates)}",
            f"{money(total_exp)}/{money(total_max)}",
            money(total_allow),
            _batch_total(estimates, money),
            "",
            "",
        )
    )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(header, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    missing = sorted({f"{e.key_env} (for {e.model})" for e in estimates if e.key_set is False and e.to_call})
    if missing:
        lines.append("")
        lines.append("keys not set yet: " + ", ".join(missing))
    if any(e.batch for e in estimates):
        lines.append("b: runs in batch mode (batch: true): the batch price applies")
    reasoning = sorted({e.model for e in estimates if e.reasoning and e.to_call})
    if reasoning:
        lines.append(
            "* reasoning / thinking not switched off (" + ", ".join(reasoning) + "): "
            "expected output is the whole max_output_tokens budget per call"
        )
    if any(e.repeat or (e.template and e.template != estimates[0].template) for e in estimates):
        lines.append(
            "template / repeat: the prompt-sensitivity runs (prompt.templates; the main template is the main run's) "
            "and the stability audit's repeats (repeat 0 is the main run)"
        )
    lines.append(
        "with retries: the max bound with every call retried as a budget-spent empty answer "
        "(empty_budget_retries, default 1); refusals and failed attempts are billed too"
    )
    unpriced = sorted({e.model for e in estimates if e.cost_expected is None and e.to_call})
    if unpriced:
        lines.append("no prices in params (cost n/a): " + ", ".join(unpriced))
    return "\n".join(lines)


def _batch_total(estimates: list[Estimate], money: Any) -> str:
    """Total cost if every model ran at its batch price where it has one, else at its own."""
    priced = [e for e in estimates if e.cost_expected is not None]
    if not priced:
        return "n/a/n/a"
    exp = sum(e.batch_cost_expected if e.batch_cost_expected is not None else e.cost_expected or 0.0 for e in priced)
    mx = sum(e.batch_cost_max if e.batch_cost_max is not None else e.cost_max or 0.0 for e in priced)
    return f"{money(exp)}/{money(mx)}"
