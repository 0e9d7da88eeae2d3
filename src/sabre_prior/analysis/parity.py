"""Backend parity (issue 34): would the score change if the model were served another way?

Models of ``params.yaml`` that serve one checkpoint (:func:`checkpoint_key`: the same ``model_id``
and ``revision``, or a declared ``same_model_as``: another model's name, or a checkpoint id such as
``Qwen/Qwen2.5-VL-7B-Instruct@<revision>`` that an API model says it serves) are compared two by
two, per split, from their traces (``results/traces/<model>/<split>.jsonl``):

* **same answer**: share of questions whose extracted answer (the trace's ``normalized_prediction``)
  is the same on both sides; two non-answers (nothing extracted on either side) count as the same;
* **identical text**: share of questions whose raw responses are the same text (outer whitespace
  stripped);
* **accuracy difference** A - B on the split's units (pairs for context/texture) with its paired
  percentile-bootstrap interval and the exact McNemar test on the discordant units, the macro
  average with the paired bootstrap interval and test (:func:`.comparison.compare_pair`, the model
  comparison's machinery), Holm-adjusted over every row of the table.

A pair with a Holm-adjusted p below ``1 - analysis.confidence`` in any row is flagged **do not pool**:
its two scores are not one model's score.  Outputs ``results/tables/backend_parity.{md,csv}`` and
``results/figures/backend_parity.{png,pdf}``, each pair printed with both sides' decoding settings.
The main table and the report read the CSV (:func:`read_flags`) and put the flag beside both models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from .. import contracts as C
from ..errors import ConfigError, DataError
from ..formatting import format_p, format_percent, md_table, write_csv
from ..io_utils import write_text
from .comparison import Comparison, compare_pair
from .settings import AnalysisSettings
from .stats import holm_adjust
from .traces import Trace, read_model_traces, unit_outcomes

STEM = "backend_parity"
DO_NOT_POOL = "do not pool"
CSV_COLUMNS: tuple[str, ...] = (
    "model_a", "model_b", "backend_a", "backend_b", "checkpoint", "split", "questions", "same_answer",
    "identical_text", "n", "accuracy_a", "accuracy_b", "difference", "low", "high", "a_only", "b_only",
    "test", "p_value", "p_holm", "do_not_pool", "decoding_a", "decoding_b",
)  # fmt: skip


# ---------------------------------------------------------------------------
# Which models serve the same checkpoint
# ---------------------------------------------------------------------------
def _split_revision(checkpoint: str) -> tuple[str, str | None]:
    name, _, revision = checkpoint.partition("@")
    return name.strip(), (revision.strip() or None)


def checkpoint_key(params: Mapping[str, Any], model: str, _seen: tuple[str, ...] = ()) -> tuple[str, str | None]:
    """``(checkpoint id, revision)`` a model serves.

    ``same_model_as`` wins: another model's name (its checkpoint, followed through chains) or a
    checkpoint id (``id`` or ``id@revision``); else the model's ``model_id`` and ``revision``; a model
    with neither (an offline baseline) serves ``model:<its name>``, only its own."""
    models = params.get("models") or {}
    settings = models.get(model) or {}
    declared = settings.get("same_model_as")
    if declared is not None:
        declared = str(declared)
        if declared == model or declared in _seen:
            raise ConfigError(f"params.yaml: models.{model}.same_model_as: {declared!r} refers back to itself")
        if declared in models:
            return checkpoint_key(params, declared, (*_seen, model))
        return _split_revision(declared)
    model_id = settings.get("model_id")
    if not model_id:
        return f"model:{model}", None
    return str(model_id).strip(), (settings.get("revision") or None)


def parity_pairs(params: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(model_a, model_b, checkpoint)`` for every two models serving one checkpoint, in params order.

    Two models of the same ``backend`` count too when one declares ``same_model_as`` (a second
    deployment); without a declaration only models of different backends are paired (two entries of
    one backend and one checkpoint differ in a setting on purpose)."""
    models = list(params.get("models") or {})
    keys = {m: checkpoint_key(params, m) for m in models}
    pairs = []
    for a, b in combinations(models, 2):
        if keys[a] != keys[b]:
            continue
        sa, sb = params["models"][a], params["models"][b]
        declared = "same_model_as" in sa or "same_model_as" in sb
        if sa.get("backend") == sb.get("backend") and not declared:
            continue
        name, revision = keys[a]
        pairs.append((a, b, name + (f"@{revision}" if revision else "")))
    return pairs


def decoding_text(settings: Mapping[str, Any], model: str) -> str:
    """The decoding settings a model's answers were made with, in one line."""
    from .. import registry
    from ..inference.models.local_common import decoding_for

    backend = str(settings.get("backend"))
    kind = registry.kind_of(backend)
    if kind == "local":
        d = decoding_for(model, settings) or {}
        text = (f"{backend}: greedy, max_new_tokens {d.get('max_new_tokens')}, repetition_penalty "
                f"{d.get('repetition_penalty')}, batch_size {settings.get('batch_size', 16)}, dtype {settings.get('dtype', 'auto')}")  # fmt: skip
        return text + (", VLLM_BATCH_INVARIANT=1" if settings.get("batch_invariant") else "")
    if kind == "api":
        parts = [f"temperature {settings.get('temperature', 0)}", f"max_output_tokens {registry.max_output_tokens(settings, model)}"]
        for key in ("reasoning_effort", "thinking_budget", "image_detail"):
            if settings.get(key) is not None:
                parts.append(f"{key} {settings[key]}")
        where = settings.get("base_url") or settings.get("provider") or backend
        return f"{backend} ({where}): " + ", ".join(parts)
    return f"{backend}: strategy {settings.get('strategy')}" + (f", seed {settings['seed']}" if "seed" in settings else "")


# ---------------------------------------------------------------------------
# The comparison
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ParityRow:
    """One split (or the macro average) of one pair."""

    checkpoint: str
    questions: int
    same_answer: float
    identical_text: float
    comparison: Comparison
    do_not_pool: bool = False


def _answered_nothing(row: Mapping[str, Any]) -> bool:
    return not row["parsed"]


def agreement(a: Sequence[Trace], b: Sequence[Trace], names: tuple[str, str], split: str) -> tuple[int, float, float]:
    """``(questions, same extracted answer, identical raw text)`` of one split's two traces."""
    ra, rb = {r["id"]: r for r in a}, {r["id"]: r for r in b}
    if set(ra) != set(rb):
        only = sorted(set(ra) ^ set(rb))[:3]
        raise DataError(
            f"split {split!r}: {names[0]!r} and {names[1]!r} answered different questions (e.g. {only}); "
            "run both on the same data"
        )
    same = text = 0
    for qid, x in ra.items():
        y = rb[qid]
        if _answered_nothing(x) and _answered_nothing(y):
            same += 1
        elif not _answered_nothing(x) and not _answered_nothing(y) and x["normalized_prediction"] == y["normalized_prediction"]:
            same += 1
        text += (x["prediction"] or "").strip() == (y["prediction"] or "").strip()
    n = len(ra)
    return n, same / n, text / n


def parity(
    params: Mapping[str, Any], traces_dir: Path, settings: AnalysisSettings
) -> list[ParityRow]:
    """Every pair's rows (splits, then macro), Holm-adjusted over the table, pairs flagged."""
    splits = list(params["splits"])
    rows: list[ParityRow] = []
    for a, b, checkpoint in parity_pairs(params):
        ta = read_model_traces(Path(traces_dir) / a, splits)
        tb = read_model_traces(Path(traces_dir) / b, splits)
        oa = {s: unit_outcomes(ta[s], s, str(Path(traces_dir) / a / f"{s}.jsonl")) for s in splits}
        ob = {s: unit_outcomes(tb[s], s, str(Path(traces_dir) / b / f"{s}.jsonl")) for s in splits}
        comparisons = compare_pair(a, b, oa, ob, splits, settings)
        per_split = [agreement(ta[s], tb[s], (a, b), s) for s in splits]
        total = sum(q for q, _, _ in per_split)
        macro = (total, sum(q * s for q, s, _ in per_split) / total, sum(q * t for q, _, t in per_split) / total)
        for (q, same, text), comp in zip([*per_split, macro], comparisons, strict=True):
            rows.append(ParityRow(checkpoint, q, same, text, comp))
    adjusted = holm_adjust([r.comparison.p_value for r in rows])
    alpha = 1.0 - settings.confidence
    rows = [
        ParityRow(r.checkpoint, r.questions, r.same_answer, r.identical_text,
                  Comparison(**{**r.comparison.__dict__, "p_holm": p}))
        for r, p in zip(rows, adjusted, strict=True)
    ]  # fmt: skip
    flagged = {(r.comparison.model_a, r.comparison.model_b) for r in rows if r.comparison.p_holm < alpha}
    return [
        ParityRow(r.checkpoint, r.questions, r.same_answer, r.identical_text, r.comparison,
                  (r.comparison.model_a, r.comparison.model_b) in flagged)
        for r in rows
    ]  # fmt: skip


# ---------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------
def _pp(x: float) -> float:
    return round(100.0 * x, 2)


def csv_rows(params: Mapping[str, Any], rows: Sequence[ParityRow]) -> list[dict[str, Any]]:
    models = params["models"]
    out = []
    for r in rows:
        c = r.comparison
        out.append(
            {
                "model_a": c.model_a, "model_b": c.model_b, "backend_a": models[c.model_a].get("backend"),
                "backend_b": models[c.model_b].get("backend"), "checkpoint": r.checkpoint, "split": c.split,
                "questions": r.questions, "same_answer": _pp(r.same_answer), "identical_text": _pp(r.identical_text),
                "n": c.n, "accuracy_a": _pp(c.accuracy_a), "accuracy_b": _pp(c.accuracy_b),
                "difference": _pp(c.difference), "low": _pp(c.low), "high": _pp(c.high), "a_only": c.a_only,
                "b_only": c.b_only, "test": c.test, "p_value": round(c.p_value, 6), "p_holm": round(c.p_holm, 6),
                "do_not_pool": r.do_not_pool, "decoding_a": decoding_text(models[c.model_a], c.model_a),
                "decoding_b": decoding_text(models[c.model_b], c.model_b),
            }
        )  # fmt: skip
    return out


NO_PAIR = (
    "No two configured models serve the same checkpoint (the same model_id and revision through different "
    "backends, or a declared same_model_as): nothing to compare."
)


def markdown(params: Mapping[str, Any], rows: Sequence[ParityRow], settings: AnalysisSettings) -> str:
    from ..config import display_name

    level = f"{100 * settings.confidence:g}%"
    head = [
        "# Backend parity",
        "",
        (
            "Models that serve one checkpoint through different backends (the same model_id and revision, or a "
            "declared same_model_as), compared question by question. Same answer: share of questions with the "
            "same extracted answer (two non-answers count as the same); identical text: share with the same raw "
            f"response. A - B: accuracy difference in percentage points on the split's units with a {level} paired "
            f"percentile-bootstrap interval ({settings.resamples} resamples); p: exact McNemar test on the "
            "discordant units (paired bootstrap for the macro average); p (Holm): adjusted over every row of "
            f"this table. **{DO_NOT_POOL}**: some row's p (Holm) is below {1 - settings.confidence:.2g}: the two "
            "scores are not one model's score."
        ),
        "",
    ]
    if not rows:
        return "\n".join([*head, NO_PAIR, ""])
    out = head
    header = ["Split", "Questions", "Same answer", "Identical text", "A", "B", "A - B", f"{level} CI", "p", "p (Holm)"]
    blocks: dict[tuple[str, str], list[ParityRow]] = {}
    for r in rows:
        blocks.setdefault((r.comparison.model_a, r.comparison.model_b), []).append(r)
    pct = lambda x, **kw: format_percent(x, rounding="float", **kw)  # noqa: E731
    for (a, b), block in blocks.items():
        verdict = f" — **{DO_NOT_POOL}**" if block[0].do_not_pool else ""
        out += [f"## A = {display_name(params, a)}, B = {display_name(params, b)} ({block[0].checkpoint}){verdict}", ""]
        body = [
            [r.comparison.split, r.questions, pct(r.same_answer), pct(r.identical_text), pct(r.comparison.accuracy_a),
             pct(r.comparison.accuracy_b), pct(r.comparison.difference, signed=True),
             f"[{pct(r.comparison.low, signed=True)}, {pct(r.comparison.high, signed=True)}]",
             format_p(r.comparison.p_value), format_p(r.comparison.p_holm)]
            for r in block
        ]  # fmt: skip
        out.append(md_table(header, body))
        out += [
            f"Decoding: A: {decoding_text(params['models'][a], a)}. B: {decoding_text(params['models'][b], b)}.",
            "",
        ]
    return "\n".join(out)


def draw(params: Mapping[str, Any], rows: Sequence[ParityRow], outdir: Path) -> list[Path]:
    """Left: same-answer and identical-text shares per split; right: A - B with its interval. One row of
    panels per pair; with no pair, a figure that says there is nothing to compare."""
    from ..config import display_name
    from ..report.plotting import note_figure, plt, save_figure, series_style, style

    blocks: dict[tuple[str, str], list[ParityRow]] = {}
    for r in rows:
        blocks.setdefault((r.comparison.model_a, r.comparison.model_b), []).append(r)
    if not blocks:
        return note_figure("Backend parity: no two configured models serve the same checkpoint;\nnothing to compare.", outdir, STEM)
    with style():
        fig, axes = plt.subplots(len(blocks), 2, figsize=(8.0, 0.8 + 1.6 * len(blocks)), squeeze=False)
        for (left, right), ((a, b), block) in zip(axes, blocks.items()):
            labels = [r.comparison.split for r in block]
            ys = range(len(block))
            for i, (key, label) in enumerate((("same_answer", "same answer"), ("identical_text", "identical text"))):
                color, _ = series_style(i)
                left.barh([y + (i - 0.5) * 0.38 for y in ys], [100 * getattr(r, key) for r in block], height=0.36,
                          color=color, label=label)  # fmt: skip
            left.set_xlim(0, 100)
            left.set_yticks(list(ys), labels)
            left.invert_yaxis()
            left.set_xlabel("Questions (%)")
            flag = f" ({DO_NOT_POOL})" if block[0].do_not_pool else ""
            left.set_title(f"{display_name(params, a)} vs {display_name(params, b)}{flag}", loc="left")
            est = [100 * r.comparison.difference for r in block]
            err = [[e - 100 * r.comparison.low for e, r in zip(est, block)], [100 * r.comparison.high - e for e, r in zip(est, block)]]
            right.errorbar(est, list(ys), xerr=err, fmt="o", color="0.2", capsize=2, markersize=4)
            right.axvline(0, color="0.5", linewidth=0.8)
            right.set_yticks(list(ys), [])
            right.invert_yaxis()
            right.set_xlabel("Accuracy A - B (points)")
        axes[0][0].legend(loc="lower right", frameon=False)
        fig.tight_layout()
        return save_figure(fig, Path(outdir), STEM)


def write_parity(
    params: Mapping[str, Any], traces_dir: Path, tables_dir: Path, figures_dir: Path, settings: AnalysisSettings
) -> tuple[list[ParityRow], list[Path]]:
    rows = parity(params, traces_dir, settings)
    md, csv = Path(tables_dir) / f"{STEM}.md", Path(tables_dir) / f"{STEM}.csv"
    write_text(md, markdown(params, rows, settings))
    write_csv(csv, CSV_COLUMNS, csv_rows(params, rows))
    return rows, [md, csv, *draw(params, rows, Path(figures_dir))]


def read_flags(path: str | Path | None) -> dict[str, list[str]]:
    """``model -> [other models it must not be pooled with]`` from a ``backend_parity.csv`` (empty
    without a file: the table was not asked for)."""
    import csv

    if path is None or not Path(path).is_file():
        return {}
    out: dict[str, list[str]] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for i, row in enumerate(csv.DictReader(fh), start=2):
            try:
                a, b, flagged = row["model_a"], row["model_b"], row["do_not_pool"]
            except KeyError as exc:
                raise DataError(f"{path}:{i}: column {exc.args[0]!r} is missing (not a backend_parity.csv)") from None
            if flagged == "true" and row.get("split") == C.I_MACRO:
                out.setdefault(a, []).append(b)
                out.setdefault(b, []).append(a)
    return out
