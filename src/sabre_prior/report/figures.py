"""Figures from the per-model metrics files: PNG and PDF, byte-deterministic.

* ``split_accuracy``: grouped bars, one group per configured split plus the
  macro average, one bar per model; error bars when intervals are given, and the
  sample size (pairs or questions) under each split.
* ``probe_accuracy``: one panel per paired split (context, texture): accuracy
  per probe and, on a shaded background, the strict pair accuracy (all four
  probes right), one bar per model.

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
from . import plotting, style
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
def _grouped_bars(ax: Any, group_labels: Sequence[str], series: Sequence[Series], vertical: bool) -> None:
    n_models = max(len(series), 1)
    group = group_width(n_models)
    width = group / n_models
    fontsize = 7 if n_models <= 6 else 6
    for i, s in enumerate(series):
        color, hatch = s.style.color, s.style.hatch
        ns = list(s.ns) or [None] * len(s.values)
        for g, (value, iv, n) in enumerate(zip(s.values, s.intervals, ns)):
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
                style.score_text(value) + (f" (n={n})" if n is not None else ""),
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


def _legend(fig: Any, results: Sequence[ModelResults], styles: Mapping[str, style.ModelStyle], width_in: float) -> None:
    from matplotlib.patches import Patch

    names = [r.name for r in results]
    handles = []
    for r in results:
        st = styles[r.key]
        handles.append(Patch(facecolor=st.color, hatch=st.hatch, edgecolor="#333333", linewidth=0.4, label=r.name))
    note = interval_note(results)
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=legend_columns(names, width_in),
        frameon=False,
        title="Model" + (f"; {note}" if note else ""),
        title_fontsize=8,
    )


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


def split_accuracy_figure(params: Mapping[str, Any], results: Sequence[ModelResults], data: DataIdentity) -> Any:
    """Grouped bars: configured splits and the macro average, one bar per model, n under each split."""
    splits = configured_splits(params)
    columns = [*splits, MACRO]
    labels = [split_label(c, _uniform_n(results, c), len(splits)) for c in columns]
    styles = style.model_styles(params["models"])
    series = [
        Series(r.name, [r.value(c) for c in columns], [r.interval(c) for c in columns], styles[r.key],
               _bar_ns(results, r, columns))
        for r in results
    ]  # fmt: skip
    width = figure_width(len(columns), len(results))
    height = 4.6 + 0.2 * _legend_rows(results, width)
    fig = plt.figure(figsize=(width, height), layout="constrained")
    ax = fig.add_subplot()
    _grouped_bars(ax, labels, series, _labels_vertical(width, len(columns), len(results)))
    ax.axvline(len(columns) - 1.5, color="#888888", linewidth=0.8, linestyle="--", zorder=1)
    fig.suptitle(figure_title("SABRE-Prior: accuracy by split", data, width))
    _legend(fig, results, styles, width)
    return fig


def probe_accuracy_figure(params: Mapping[str, Any], results: Sequence[ModelResults], data: DataIdentity) -> Any:
    """One panel per configured paired split: per-probe accuracy and the strict pair accuracy."""
    paired = [s for s in configured_splits(params) if s in C.PAIRED_SPLITS]
    styles = style.model_styles(params["models"])
    n_groups = 5
    width = figure_width(n_groups, len(results))
    height = 0.8 + 3.7 * max(len(paired), 1) + 0.2 * _legend_rows(results, width)
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
            )
            for r in results
        ]
        strict_x = len(probes)
        ax.axvspan(strict_x - 0.5, strict_x + 0.5, color="#EDEDED", zorder=0, linewidth=0)
        _grouped_bars(ax, labels, series, _labels_vertical(width, len(labels), len(results)))
        ax.get_xticklabels()[strict_x].set_fontweight("bold")
        n_text = f", {n} pairs" if n is not None else ""
        ax.set_title(f"{COLUMN_TITLES[split]}{n_text}", loc="left", fontweight="bold")
    _legend(fig, results, styles, width)
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
    paths: list[Path] = []
    with plotting.style():
        paths += plotting.save_figure(split_accuracy_figure(params, results, data), Path(outdir), SPLIT_FIGURE)
        paths += plotting.save_figure(probe_accuracy_figure(params, results, data), Path(outdir), PROBE_FIGURE)
    return paths
