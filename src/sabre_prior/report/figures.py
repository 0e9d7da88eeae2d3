"""Figures from the per-model metrics files: PNG and PDF, byte-deterministic.

* ``split_accuracy``: grouped bars, one group per configured split plus the
  macro average, one bar per model; error bars when intervals are given, and the
  sample size (pairs or questions) under each split.
* ``probe_accuracy``: one panel per paired split (context, texture): accuracy
  per probe and, on a shaded background, the strict pair accuracy (all four
  probes right), one bar per model.

Both draw each group's chance level (what a uniform guess scores: a dashed line) and mark with
:data:`~sabre_prior.report.flags.FLAG` the value of a bar that stands for a flagged split (more
non-answers than ``analysis.report.max_nonanswer_rate``), as the tables do, with the note in the legend.

Every model has its :mod:`.style` colour (by its position in params.yaml) and every score its
:mod:`.style` rounding; the data source in the title is what the Parquet splits record.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import contracts as C
from ..data.parquet import DataIdentity, data_identity
from ..formatting import Interval
from . import flags, plotting, style
from .flags import FLAG, max_nonanswer_rate
from .plotting import plt
from .tables import COLUMN_TITLES, MACRO, ModelResults, configured_splits, load_results

#: The figure stems (defined in contracts, which the rules read too).
SPLIT_FIGURE, PROBE_FIGURE, FIGURE_STEMS = C.SPLIT_FIGURE, C.PROBE_FIGURE, C.FIGURE_STEMS

_MIN_WIDTH_IN = 7.5
_BAR_IN = 0.24  # width of one bar when the figure has to grow
_GROUP_GAP_IN = 0.45
_MARGIN_IN = 1.1


@dataclass(frozen=True)
class Series:
    """One model's bars across the groups (fractions 0-1; None = no bar)."""

    name: str
    values: Sequence[float | None]
    intervals: Sequence[Interval | None]
    style: style.ModelStyle
    #: per group: the sample size to print on the bar (only where the models' sizes differ; else None)
    ns: Sequence[int | None] = ()
    #: per group: the bar stands for a flagged split (more non-answers than analysis.report.max_nonanswer_rate)
    flags: Sequence[bool] = ()


# ---------------------------------------------------------------------------
# Labels (pure)
# ---------------------------------------------------------------------------
def figure_title(main: str, data: DataIdentity, width_in: float) -> str:
    """The title, then the data source (as the Parquet splits record it) on its own line(s), wrapped."""
    source = textwrap.fill(f"data: {data.label}", width=max(20, int(width_in * 11)))
    return f"{main}\n{source}"


def interval_note(results: Sequence[ModelResults]) -> str:
    """``error bars: 95% bootstrap confidence interval, 2000 resamples``, from the intervals' own settings."""
    settings = {r.interval_settings for r in results if r.interval_settings is not None}
    if len(settings) != 1:
        return "error bars: bootstrap confidence interval" if settings else ""
    s = settings.pop()
    level = f"{s.confidence * 100:g}%"
    extra = f", {s.resamples} resamples" if s.resamples is not None else ""
    return f"error bars: {level} bootstrap confidence interval{extra}"


def probe_label(split: str, probe: str) -> str:
    """``base_source`` -> ``base image\\nsource probe\\n(expect yes)``; unknown probes keep their name."""
    known = C.PROBES.get(split, {}).get(probe)
    if known is None:
        return probe.replace("_", " ")
    role, answer = known
    obj = probe.split("_", 1)[1] if "_" in probe else probe
    return f"{role} image\n{obj} probe\n(expect {answer})"


def split_label(split: str, n: int | None = None, n_splits: int = 4) -> str:
    """The group label under the bars: title, the unit, and the sample size ``n`` shared by every model."""
    if split == MACRO:
        return f"{COLUMN_TITLES[MACRO]}\n(mean of the\n{n_splits} splits)"
    title = COLUMN_TITLES.get(split, split)
    lines = [title]
    if split in C.PAIRED_SPLITS:
        lines.append("(strict pair)")
    if n is not None:
        lines.append(style.n_text(n, split in C.PAIRED_SPLITS))
    return "\n".join(lines)


def probe_order(split: str, results: Sequence[ModelResults]) -> list[str]:
    """Canonical probes first, then any other probe found in the metrics, sorted."""
    canonical = list(C.PROBES.get(split, {}))
    extra = sorted({p for r in results for p in r.probe_accuracy.get(split, {})} - set(canonical))
    return canonical + extra


# ---------------------------------------------------------------------------
# Geometry (pure)
# ---------------------------------------------------------------------------
def figure_width(n_groups: int, n_models: int) -> float:
    """Inches: grows with the number of bars so that vertical value labels fit."""
    return max(_MIN_WIDTH_IN, n_groups * (n_models * _BAR_IN + _GROUP_GAP_IN) + _MARGIN_IN)


def group_width(n_models: int) -> float:
    """Axis units taken by one group of bars: narrower for one or two models."""
    return min(0.8, 0.2 + 0.15 * n_models)


def legend_columns(names: Sequence[str], width_in: float) -> int:
    longest = max((len(n) for n in names), default=1)
    per_col = 0.5 + 0.062 * longest  # swatch + text at 8 pt
    return max(1, min(len(names), int((width_in - 0.4) // per_col)))


def _labels_vertical(width_in: float, n_groups: int, n_models: int) -> bool:
    bar_in = (width_in - _MARGIN_IN) / n_groups * group_width(n_models) / n_models
    return bar_in < 0.36  # "100.0" at 7 pt needs about 0.3 in


# ---------------------------------------------------------------------------
# Drawing
# ---------------------------------------------------------------------------
def _grouped_bars(
    ax: Any, group_labels: Sequence[str], series: Sequence[Series], vertical: bool, chance: Sequence[float | None] = ()
) -> None:
    n_models = max(len(series), 1)
    group = group_width(n_models)
    width = group / n_models
    fontsize = 7 if n_models <= 6 else 6
    for g, level in enumerate(chance):  # the reference: what a uniform guess scores, across the group's bars
        if level is not None:
            ax.hlines(level * 100, g - group / 2 - 0.04, g + group / 2 + 0.04, colors=style.REFERENCE_COLOR,
                      linestyles=style.REFERENCE_DASHES, linewidth=1.0, zorder=3.5)  # fmt: skip
    for i, s in enumerate(series):
        color, hatch = s.style.color, s.style.hatch
        ns = list(s.ns) or [None] * len(s.values)
        marks = list(s.flags) or [False] * len(s.values)
        for g, (value, iv, n, flagged) in enumerate(zip(s.values, s.intervals, ns, marks)):
            if value is None:
                continue
            x = g - group / 2 + width * (i + 0.5)
            height = value * 100
            ax.bar(x, height, width, color=color, hatch=hatch, edgecolor="#333333", linewidth=0.4, zorder=2)
            top = height
            if iv is not None:
                low, high = iv.low * 100, iv.high * 100
                ax.errorbar(
                    x,
                    height,
                    yerr=[[max(0.0, height - low)], [max(0.0, high - height)]],
                    fmt="none",
                    ecolor="#222222",
                    elinewidth=0.8,
                    capsize=2 if n_models <= 8 else 1,
                    zorder=3,
                )
                top = max(top, high)
            ax.text(
                x,
                top + 1.2,
                style.score_text(value) + (f" {FLAG}" if flagged else "") + (f" (n={n})" if n is not None else ""),
                ha="center",
                va="bottom",
                rotation=90 if vertical else 0,
                fontsize=fontsize,
                zorder=4,
            )
    ax.set_xticks(range(len(group_labels)))
    ax.set_xticklabels(group_labels)
    ax.set_xlim(-0.55, len(group_labels) - 0.45)
    ax.set_ylim(0, 116 if vertical else 108)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("Accuracy (%)")
    ax.grid(axis="y", color="#DDDDDD", linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)
    ax.tick_params(axis="x", length=0)


def flag_note(threshold: float) -> str:
    """What :data:`FLAG` beside a bar's value means (the tables' footnote says the same)."""
    return (
        f"{FLAG}: more than {flags.threshold_text(threshold)} of the split's questions are non-answers (unparseable, "
        "refused, failed, truncated; analysis.report.max_nonanswer_rate): the bar says little about what the model "
        "sees (tables/failure_aware.md has the counts)"
    )


def _legend(
    fig: Any, results: Sequence[ModelResults], styles: Mapping[str, style.ModelStyle], width_in: float,
    *, chance: bool = False, flagged_note: str = "",
) -> None:  # fmt: skip
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    names = [r.name for r in results]
    handles: list[Any] = []
    for r in results:
        st = styles[r.key]
        handles.append(Patch(facecolor=st.color, hatch=st.hatch, edgecolor="#333333", linewidth=0.4, label=r.name))
    if chance:
        handles.append(Line2D([], [], color=style.REFERENCE_COLOR, linestyle=style.REFERENCE_DASHES, linewidth=1.0,
                              label=CHANCE_LABEL))  # fmt: skip
    note = interval_note(results)
    title = "Model" + (f"; {note}" if note else "")
    if flagged_note:
        title += "\n" + textwrap.fill(flagged_note, width=max(40, int(width_in * 16)))
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=legend_columns([*names, CHANCE_LABEL] if chance else names, width_in),
        frameon=False,
        title=title,
        title_fontsize=8,
    )


#: The reference line's legend entry.
CHANCE_LABEL = "chance (a uniform guess)"


def chance_accuracy(data_dir: Path, splits: Sequence[str]) -> dict[str, float]:
    """What a uniform guess scores on each split (strict pairs for context and texture: the product of
    the pair's four chances, averaged over pairs) and their macro mean, from the questions in
    ``data_dir`` and each question's chance as the failure-aware scores take it
    (:func:`sabre_prior.scoring.evaluate.chance_levels`)."""
    from ..data.parquet import read_rows
    from ..scoring.evaluate import chance_levels

    out: dict[str, float] = {}
    for split in splits:
        rows = read_rows(Path(data_dir) / f"{split}.parquet")
        levels = chance_levels(rows)
        if split in C.PAIRED_SPLITS:
            pairs: dict[Any, float] = {}
            for r in rows:
                pairs[r[C.COL_PAIR_ID]] = pairs.get(r[C.COL_PAIR_ID], 1.0) * levels[r[C.COL_ID]]
            units = list(pairs.values())
        else:
            units = [levels[r[C.COL_ID]] for r in rows]
        out[split] = sum(units) / len(units) if units else 0.0
    if splits:
        out[MACRO] = sum(out[s] for s in splits) / len(splits)
    return out


def _flagged_note(results: Sequence[ModelResults], columns: Sequence[str], threshold: float | None) -> str:
    if threshold is None or not any(r.flagged(c, threshold) for r in results for c in columns):
        return ""
    return flag_note(threshold)


def _has_intervals(results: Sequence[ModelResults]) -> bool:
    return any(r.intervals is not None for r in results)


def _legend_rows(results: Sequence[ModelResults], width_in: float) -> int:
    names = [r.name for r in results]
    ncols = legend_columns(names, width_in)
    return -(-len(names) // ncols)


def _uniform_n(results: Sequence[ModelResults], split: str) -> int | None:
    ns = {r.totals.get(split) for r in results}
    return ns.pop() if len(ns) == 1 and None not in ns else None


def _bar_ns(results: Sequence[ModelResults], r: ModelResults, columns: Sequence[str]) -> list[int | None]:
    """Per group, ``r``'s sample size where the models' sizes differ (the group label has it otherwise)."""
    return [
        r.totals.get(c) if c != MACRO and c in r.totals and _uniform_n(results, c) is None else None for c in columns
    ]


def split_accuracy_figure(
    params: Mapping[str, Any], results: Sequence[ModelResults], data: DataIdentity, chance: Mapping[str, float] | None = None
) -> Any:
    """Grouped bars: configured splits and the macro average, one bar per model, n under each split;
    the chance level of each group (a dashed line) and :data:`FLAG` on the bar of a flagged split."""
    splits = configured_splits(params)
    columns = [*splits, MACRO]
    threshold = max_nonanswer_rate(params)
    labels = [split_label(c, _uniform_n(results, c), len(splits)) for c in columns]
    styles = style.model_styles(params["models"])
    series = [
        Series(r.name, [r.value(c) for c in columns], [r.interval(c) for c in columns], styles[r.key],
               _bar_ns(results, r, columns), [r.flagged(c, threshold) for c in columns])
        for r in results
    ]  # fmt: skip
    width = figure_width(len(columns), len(results))
    note = _flagged_note(results, columns, threshold)
    height = 4.6 + 0.2 * _legend_rows(results, width) + (0.45 if note else 0.0)
    fig = plt.figure(figsize=(width, height), layout="constrained")
    ax = fig.add_subplot()
    levels = [chance.get(c) for c in columns] if chance else []
    _grouped_bars(ax, labels, series, _labels_vertical(width, len(columns), len(results)), levels)
    ax.axvline(len(columns) - 1.5, color="#888888", linewidth=0.8, linestyle="--", zorder=1)
    fig.suptitle(figure_title("SABRE-Prior: accuracy by split", data, width))
    _legend(fig, results, styles, width, chance=bool(levels), flagged_note=note)
    return fig


def probe_accuracy_figure(
    params: Mapping[str, Any], results: Sequence[ModelResults], data: DataIdentity, chance: Mapping[str, float] | None = None
) -> Any:
    """One panel per configured paired split: per-probe accuracy and the strict pair accuracy, each
    group with its chance level (a yes/no probe 50%) and :data:`FLAG` on every bar of a flagged split."""
    paired = [s for s in configured_splits(params) if s in C.PAIRED_SPLITS]
    threshold = max_nonanswer_rate(params)
    styles = style.model_styles(params["models"])
    n_groups = 5
    width = figure_width(n_groups, len(results))
    note = _flagged_note(results, paired, threshold)
    height = 0.8 + 3.7 * max(len(paired), 1) + 0.2 * _legend_rows(results, width) + (0.45 if note else 0.0)
    fig = plt.figure(figsize=(width, height), layout="constrained")
    fig.suptitle(figure_title("SABRE-Prior paired splits: accuracy per probe", data, width))
    if not paired:
        ax = fig.add_subplot()
        ax.axis("off")
        ax.text(0.5, 0.5, "No paired split (context, texture) is configured.", ha="center", va="center")
        return fig
    axes = fig.subplots(len(paired), 1, squeeze=False)[:, 0]
    for ax, split in zip(axes, paired):
        probes = probe_order(split, results)
        n = _uniform_n(results, split)
        strict = "strict pair\n(all four\nprobes right)" + (f"\n{style.n_text(n, True)}" if n is not None else "")
        labels = [probe_label(split, p) for p in probes] + [strict]
        series = [
            Series(
                r.name,
                [r.probe_accuracy.get(split, {}).get(p) for p in probes] + [r.accuracy.get(split)],
                [*(None for _ in probes), r.interval(split)],
                styles[r.key],
                [*(None for _ in probes), *_bar_ns(results, r, [split])],
                [r.flagged(split, threshold)] * (len(probes) + 1),
            )
            for r in results
        ]
        strict_x = len(probes)
        ax.axvspan(strict_x - 0.5, strict_x + 0.5, color="#EDEDED", zorder=0, linewidth=0)
        levels = [0.5 if p in C.PROBES.get(split, {}) else None for p in probes] + [chance.get(split)] if chance else []
        _grouped_bars(ax, labels, series, _labels_vertical(width, len(labels), len(results)), levels)
        ax.get_xticklabels()[strict_x].set_fontweight("bold")
        n_text = f", {n} pairs" if n is not None else ""
        ax.set_title(f"{COLUMN_TITLES[split]}{n_text}", loc="left", fontweight="bold")
    _legend(fig, results, styles, width, chance=bool(chance), flagged_note=note)
    return fig


def write_figures(
    params: Mapping[str, Any],
    metrics_dir: Path,
    outdir: Path,
    intervals_dir: Path | None = None,
    *,
    data_dir: Path,
) -> list[Path]:
    """Write ``split_accuracy`` and ``probe_accuracy`` as PNG and PDF; return the paths.

    The data source in the titles is what the Parquet splits in ``data_dir`` record, not params.yaml."""
    results = load_results(params, Path(metrics_dir), Path(intervals_dir) if intervals_dir else None)
    data = data_identity(Path(data_dir), configured_splits(params))
    chance = chance_accuracy(Path(data_dir), configured_splits(params))
    paths: list[Path] = []
    with plotting.style():
        paths += plotting.save_figure(split_accuracy_figure(params, results, data, chance), Path(outdir), SPLIT_FIGURE)
        paths += plotting.save_figure(probe_accuracy_figure(params, results, data, chance), Path(outdir), PROBE_FIGURE)
    return paths
