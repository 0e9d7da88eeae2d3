"""Prompt sensitivity and API stability tables (issue 21): how much of a gap is the measurement.

**Prompt sensitivity** (``results/tables/prompt_sensitivity.{md,csv}``, figure
``results/figures/prompt_sensitivity.{png,pdf}``): per model and template of ``prompt.templates``,
the macro accuracy with its percentile bootstrap interval, the non-answer count, and the paired
bootstrap interval of the template's macro minus the main template's (the first): both are scored
on the same units, resampled with the same indices (per split, :func:`~.stats.split_rng`); the
macro difference's replicate ``b`` is the mean of the splits' replicates ``b``.

**Stability** (``results/tables/stability.{md,csv}``): per model, from ``results/audit/<model>.json``
(:mod:`sabre_prior.audit`), the flip rate with its interval, the subset accuracy's mean,
standard deviation and range across repeats, and the served model versions with a drift flag; a
model whose audited answers (every repeat) hold more non-answers than
``analysis.report.max_nonanswer_rate`` allows is flagged (:mod:`sabre_prior.report.flags`).

**Cost** (``results/tables/cost.csv``, written with the stability table): calls, billed tokens and
estimated cost per model, template, repeat and split (main run, prompt runs, audit repeats).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import contracts as C
from ..formatting import Interval, format_interval, md_table, write_csv
from ..io_utils import read_json_file, write_text
from ..report import flags
from ..report.flags import FLAG, flag_text, flagged, footnote, max_nonanswer_rate
from .settings import AnalysisSettings
from .stats import paired_replicates, percentile_interval, replicate_means, resample_indices, split_rng
from .traces import read_model_traces, unit_outcomes

SENSITIVITY_STEM = "prompt_sensitivity"
STABILITY_STEM = "stability"


def template_scores(
    traces: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]], main: str, settings: AnalysisSettings
) -> list[dict[str, Any]]:
    """``traces``: template -> split -> trace rows (one model).  One row per template (``main`` first)."""
    splits = list(traces[main])
    outcomes = {t: {s: unit_outcomes(rows, s) for s, rows in per.items()} for t, per in traces.items()}
    idx = {s: resample_indices(outcomes[main][s].n, settings.resamples, split_rng(settings.seed, s)) for s in splits}
    out = []
    for template in [main, *[t for t in traces if t != main]]:
        per = outcomes[template]
        reps = np.mean([replicate_means(per[s].correct, idx[s]) for s in splits], axis=0)
        estimate = float(np.mean([per[s].accuracy for s in splits]))
        macro = Interval(estimate, *percentile_interval(reps, settings.confidence))
        diffs = []
        for s in splits:
            if per[s].ids != outcomes[main][s].ids:
                raise ValueError(f"split {s!r}: template {template!r} was scored on other units than {main!r}")
            diffs.append(paired_replicates(per[s].correct, outcomes[main][s].correct, idx[s]))
        diff_est = estimate - float(np.mean([outcomes[main][s].accuracy for s in splits]))
        diff = Interval(diff_est, *percentile_interval(np.mean(diffs, axis=0), settings.confidence))
        questions = sum(len(traces[template][s]) for s in splits)
        nonanswer = sum(1 for s in splits for r in traces[template][s] if r["outcome"] in C.NON_ANSWERS)
        out.append(
            {
                "template": template,
                "main": template == main,
                "macro": macro.as_dict(),
                "difference": diff.as_dict(),
                "questions": questions,
                "nonanswer": nonanswer,
                "rate": round(nonanswer / questions, 10),
            }
        )
    return out


def sensitivity(
    params: Mapping[str, Any], prompts_dir: Path, settings: AnalysisSettings
) -> dict[str, list[dict[str, Any]]]:
    from ..config import prompt_templates

    templates = prompt_templates(params)
    result = {}
    for model in params["models"]:
        traces = {t: read_model_traces(Path(prompts_dir) / t / model / "traces", params["splits"]) for t in templates}
        result[model] = template_scores(traces, templates[0], settings)
    return result


SENSITIVITY_HEADER = (
    "model", "template", "main", "macro", "macro_low", "macro_high",
    "difference", "difference_low", "difference_high", "nonanswer", "questions", "nonanswer_flag",
)  # fmt: skip


def _pct(iv: Mapping[str, float], signed: bool = False) -> str:
    text = format_interval(iv["estimate"], iv["low"], iv["high"])
    return f"+{text}" if signed and not text.startswith("-") else text


def write_sensitivity(
    params: Mapping[str, Any], prompts_dir: Path, tables_dir: Path, figures_dir: Path, settings: AnalysisSettings
) -> dict[str, Any]:
    from ..config import display_name

    data = sensitivity(params, prompts_dir, settings)
    threshold = max_nonanswer_rate(params)
    rows, md_rows = [], []
    for model, entries in data.items():
        for e in entries:
            flag = flagged(e, threshold)
            rows.append(
                [model, e["template"], e["main"], e["macro"]["estimate"], e["macro"]["low"], e["macro"]["high"],
                 e["difference"]["estimate"], e["difference"]["low"], e["difference"]["high"],
                 e["nonanswer"], e["questions"], flag]
            )  # fmt: skip
            md_rows.append(
                [display_name(params, model), e["template"] + (" (main)" if e["main"] else ""), _pct(e["macro"]),
                 "-" if e["main"] else _pct(e["difference"], signed=True),
                 flag_text(e) + (" **flagged**" if flag else "")]
            )  # fmt: skip
    write_csv(tables_dir / f"{SENSITIVITY_STEM}.csv", SENSITIVITY_HEADER, rows)
    text = (
        "# Prompt sensitivity\n\n"
        f"Macro accuracy (%) per prompt template [{settings.confidence:.0%} percentile bootstrap, "
        f"{settings.resamples} resamples], and the paired bootstrap interval of each template's macro minus "
        f"the main template's ({data and next(iter(data.values()))[0]['template']}). Non-answers: unparseable, "
        f"refused, failed or truncated; flagged above {threshold:.0%} (analysis.report.max_nonanswer_rate). "
        "Template texts: docs/prompts.md.\n\n"
        + md_table(["Model", "Template", "Macro", "Difference from main", "Non-answers"], md_rows)
    )
    write_text(tables_dir / f"{SENSITIVITY_STEM}.md", text)
    draw_sensitivity(data, {m: display_name(params, m) for m in data}, figures_dir)
    return data


#: The prompt-sensitivity figure's title.
SENSITIVITY_TITLE = "SABRE-Prior: macro accuracy by prompt template"


def one_template_text(template: str) -> str:
    """What the prompt-sensitivity figure says when there is nothing to compare."""
    return (
        f"Only one prompt template ({template}) is configured: there is nothing to compare.\n"
        "List two or more under prompt.templates in params.yaml (docs/prompts.md) to see how much the\n"
        "macro accuracy depends on the wording of the prompt."
    )


def draw_sensitivity(data: Mapping[str, Sequence[Mapping[str, Any]]], names: Mapping[str, str], outdir: Path) -> list[Path]:
    """Left: each template's macro with its interval, per model; right: the paired difference from the main
    template (the reference: a dashed line at 0). Templates are black markers of distinct shapes (colour
    means a model in every figure: report.style); the title gives n. With one template there is nothing
    to compare: the figure says so (and is written all the same, so that the outputs exist)."""
    from ..report.plotting import plt, save_figure, style
    from ..report.style import REFERENCE_COLOR, REFERENCE_DASHES, TEMPLATE_COLOR, TEMPLATE_MARKERS

    models = list(data)
    templates = [e["template"] for e in next(iter(data.values()))] if data else []
    ns = sorted({e["questions"] for entries in data.values() for e in entries})
    n_text = f"n = {ns[0]} questions per model and template" if len(ns) == 1 else "n: questions per model and template differ (see the table)"
    with style():
        if len(templates) < 2:
            fig = plt.figure(figsize=(8.0, 2.2))
            fig.suptitle(SENSITIVITY_TITLE)
            fig.text(0.5, 0.45, one_template_text(templates[0] if templates else "none"), ha="center", va="center", fontsize=9)
            return save_figure(fig, Path(outdir), SENSITIVITY_STEM)
        fig, (left, right) = plt.subplots(1, 2, figsize=(8.0, 1.6 + 0.45 * max(1, len(models)) * len(templates) / 2))
        step = 0.8 / len(templates)
        for ti, template in enumerate(templates):
            marker = TEMPLATE_MARKERS[ti % len(TEMPLATE_MARKERS)]
            face = TEMPLATE_COLOR if ti == 0 else "white"  # the main template filled, the others open
            ys = [mi + (ti - (len(templates) - 1) / 2) * step for mi in range(len(models))]
            for ax, key in ((left, "macro"), (right, "difference")):
                est = [100 * next(e for e in data[m] if e["template"] == template)[key]["estimate"] for m in models]
                lo = [100 * next(e for e in data[m] if e["template"] == template)[key]["low"] for m in models]
                hi = [100 * next(e for e in data[m] if e["template"] == template)[key]["high"] for m in models]
                err = [[e - lo_ for e, lo_ in zip(est, lo)], [h - e for e, h in zip(est, hi)]]
                ax.errorbar(est, ys, xerr=err, fmt=marker, color=TEMPLATE_COLOR, markerfacecolor=face, capsize=2,
                            markersize=4, label=template + (" (main)" if ti == 0 else "") if key == "macro" else None)  # fmt: skip
        for ax in (left, right):
            ax.set_yticks(range(len(models)), [names.get(m, m) for m in models])
            ax.invert_yaxis()
        right.axvline(0, color=REFERENCE_COLOR, linestyle=REFERENCE_DASHES, linewidth=0.8, label=f"main template ({templates[0]})")
        right.set_yticklabels([])
        left.set_xlabel("Macro accuracy (%)")
        right.set_xlabel("Difference from the main template (points)")
        left.set_title("Macro by prompt template", loc="left")
        right.set_title("Paired difference from main", loc="left")
        handles = [*left.get_legend_handles_labels()[0], *right.get_legend_handles_labels()[0]]
        fig.legend(handles=handles, loc="lower center", ncols=min(4, len(handles)), frameon=False)
        fig.suptitle(f"{SENSITIVITY_TITLE}\n{n_text}")
        fig.tight_layout(rect=(0, 0.1, 1, 1))
        return save_figure(fig, Path(outdir), SENSITIVITY_STEM)


# ---------------------------------------------------------------------------
# Stability
# ---------------------------------------------------------------------------
STABILITY_HEADER = (
    "model", "repeats", "questions", "flipped", "flip_rate", "flip_low", "flip_high",
    "accuracy_mean", "accuracy_sd", "accuracy_min", "accuracy_max", "served", "drift",
    "nonanswer", "answers", "nonanswer_flag",
)  # fmt: skip


def served_versions(usage_dir: Path, splits: Sequence[str]) -> dict[str, int]:
    """What the provider said served a model's main-run answers (version -> answers), from its usage summaries."""
    served: dict[str, int] = {}
    for split in splits:
        path = usage_dir / f"{split}.json"
        if path.is_file():
            for version, n in (read_json_file(path, missing="usage summary not found", mapping=True).get("served") or {}).items():
                served[version] = served.get(version, 0) + int(n)
    return dict(sorted(served.items()))


def drift(served: Mapping[str, int]) -> bool:
    """More than one served version among a model's answers: a later run was served by another version."""
    return len(served) > 1


COST_STEM = "cost"
COST_HEADER = ("model", "template", "repeat", "split", "calls", "billed_input_tokens", "billed_output_tokens", "estimated_cost_usd")
_COST_KEYS = COST_HEADER[4:]


def cost_rows(
    params: Mapping[str, Any], usage_dir: Path, prompts_dir: Path | None, audits: Mapping[str, Mapping[str, Any]]
) -> list[list[Any]]:
    """What was spent, split by model, template and repeat: the main run (its template, repeat 0),
    every other template's prompt run (repeat 0) and the audit's repeats 1..k-1 (the main template)."""
    from ..config import prompt_templates

    templates = prompt_templates(params)
    rows: list[list[Any]] = []

    def usage(path: Path) -> Mapping[str, Any]:
        return read_json_file(path, missing="usage summary not found (run `sabre predict` / `sabre prompt-run`)")

    for model in params["models"]:
        for split in params["splits"]:
            u = usage(Path(usage_dir) / model / f"{split}.json")
            rows.append([model, u.get("template") or templates[0], 0, split, *(u.get(k) for k in _COST_KEYS)])
        if prompts_dir is not None:
            for t in templates[1:]:
                for split in params["splits"]:
                    u = usage(Path(prompts_dir) / t / model / "usage" / f"{split}.json")
                    rows.append([model, t, 0, split, *(u.get(k) for k in _COST_KEYS)])
        for rep, per_split in sorted((audits.get(model) or {}).get("usage", {}).items(), key=lambda kv: int(kv[0][1:])):
            for split, u in per_split.items():
                rows.append([model, audits[model].get("template"), int(rep[1:]), split, *(u.get(k) for k in _COST_KEYS)])
    return rows


def write_stability(
    params: Mapping[str, Any], audit_dir: Path, usage_dir: Path, tables_dir: Path, prompts_dir: Path | None = None
) -> list[dict[str, Any]]:
    from ..config import display_name

    threshold = max_nonanswer_rate(params)
    rows, md_rows, out, flagged_entries = [], [], [], []
    for model in params["models"]:
        audit = read_json_file(Path(audit_dir) / f"{model}.json", missing="audit file not found (run `sabre audit`)")
        served = served_versions(Path(usage_dir) / model, params["splits"])
        for version, n in (audit.get("served_in_repeats") or {}).items():
            served[version] = served.get(version, 0) + int(n)
        served_text = "; ".join(f"{v} ({n})" for v, n in sorted(served.items())) or "not reported"
        is_drift = drift(served)
        entry = {"model": model, "audit": audit, "served": served, "drift": is_drift}
        out.append(entry)
        if not audit.get("enabled"):
            rows.append([model, 1, 0, None, None, None, None, None, None, None, None, served_text, is_drift, None, None, None])
            md_rows.append([display_name(params, model), "off", "-", "-", served_text + (" **drift**" if is_drift else "")])
            continue
        flip, acc = audit["flip_rate"], audit["accuracy"]
        block = audit.get("nonanswer")  # every repeat's audited answers (audits written before the flags: none)
        flag = flagged(block, threshold)
        rows.append(
            [model, audit["repeats"], audit["questions"], audit["flipped"], flip["estimate"], flip["low"], flip["high"],
             acc["mean"], acc["sd"], acc["min"], acc["max"], served_text, is_drift,
             *flags.columns(block, threshold).values()]
        )  # fmt: skip
        flagged_entries.append((display_name(params, model), "audit (every repeat)", block))
        md_rows.append(
            [display_name(params, model), f"{audit['repeats']} x {audit['questions']}",
             f"{_pct(flip)} ({audit['flipped']} flipped)" + (f" {FLAG}" if flag else ""),
             f"{100 * acc['mean']:.1f} (sd {100 * acc['sd']:.1f}, {100 * acc['min']:.1f}-{100 * acc['max']:.1f})",
             served_text + (" **drift**" if is_drift else "")]
        )  # fmt: skip
    write_csv(tables_dir / f"{STABILITY_STEM}.csv", STABILITY_HEADER, rows)
    audits = {e["model"]: e["audit"] for e in out}
    write_csv(tables_dir / f"{COST_STEM}.csv", COST_HEADER, cost_rows(params, usage_dir, prompts_dir, audits))
    text = (
        "# API stability\n\n"
        "Each audited question (a fixed, seeded, stratified subset; audit in params.yaml) asked `repeats` times, "
        "repeat 0 being the main run. Flip rate: share of audited questions whose normalized answer is not the same "
        "in every repeat (%, percentile bootstrap interval over questions). Accuracy: on the subset, per repeat "
        "(mean, sd, range; %). Served: the model version the provider reported (answers); **drift** when answers "
        "of one model were served by more than one version.\n\n"
        + md_table(["Model", "Repeats x questions", "Flip rate", "Accuracy across repeats", "Served"], md_rows)
    )
    note = footnote(flagged_entries, threshold)  # a non-answer in one repeat and an answer in another is a flip
    if note:
        text += "\n" + note + "\n"
    write_text(tables_dir / f"{STABILITY_STEM}.md", text)
    return out
