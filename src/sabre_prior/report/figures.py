"""Figures from the per-model metrics files: PNG and PDF, byte-deterministic.

* ``split_accuracy``: grouped bars, one group per configured split plus the
  macro average, one bar per model; error bars when intervals are given.
* ``probe_accuracy``: one panel per paired split (context, texture): accuracy
  per probe and, on a shaded background, the strict pair accuracy (all four
  probes right), one bar per model.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import contracts as C
from . import plotting
from ..formatting import Interval, format_percent
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


# ---------------------------------------------------------------------------
# Labels (pure)
# ---------------------------------------------------------------------------
def data_source_label(params: Mapping[str, Any]) -> str:
    """Where the numbers come from, for the figure title."""
    source = str((params.get("dataset") or {}).get("source", "unknown"))
    return "embedded demo benchmark, synthetic images" if source == "demo" else source


def figure_title(main: str, params: Mapping[str, Any], width_in: float) -> str:
    """The title, then the data source on its own line(s), wrapped to the figure width."""
    source = textwrap.fill(f"data: {data_source_label(params)}", width=max(20, int(width_in * 11)))
    return f"{main}\n{source}"


def probe_label(split: str, probe: str) -> str:
    """``base_source`` -> ``base image\\nsource probe\\n(expect yes)``; unknown probes keep their name."""
    known = C.PROBES.get(split, {}).get(probe)
    if known is None:
        return probe.replace("_", " ")
    role, answer = known
    obj = probe.split("_", 1)[1] if "_" in probe else probe
    return f"{role} image\n{obj} probe\n(expect {answer})"


def split_label(split: str) -> str:
    title = COLUMN_TITLES.get(split, split)
    return f"{title}\n(strict pair)" if split in C.PAIRED_SPLITS else title


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
        color, hatch = plotting.series_style(i)
        for g, (value, iv) in enumerate(zip(s.values, s.intervals)):
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
                format_percent(value),
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


def _legend(fig: Any, results: Sequence[ModelResults], width_in: float) -> None:
    from matplotlib.patches import Patch

    names = [r.name for r in results]
    handles = []
    for i, name in enumerate(names):
        color, hatch = plotting.series_style(i)
        handles.append(Patch(facecolor=color, hatch=hatch, edgecolor="#333333", linewidth=0.4, label=name))
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=legend_columns(names, width_in),
        frameon=False,
        title="Model" + (" (error bars: confidence interval)" if _has_intervals(results) else ""),
        title_fontsize=8,
    )


def _has_intervals(results: Sequence[ModelResults]) -> bool:
    return any(r.intervals is not None for r in results)


def _legend_rows(results: Sequence[ModelResults], width_in: float) -> int:
    names = [r.name for r in results]
    ncols = legend_columns(names, width_in)
    return -(-len(names) // ncols)


def split_accuracy_figure(params: Mapping[str, Any], results: Sequence[ModelResults]) -> Any:
    """Grouped bars: configured splits and the macro average, one bar per model."""
    columns = [*configured_splits(params), MACRO]
    labels = [split_label(c) for c in columns]
    series = [Series(r.name, [r.value(c) for c in columns], [r.interval(c) for c in columns]) for r in results]
    width = figure_width(len(columns), len(results))
    height = 4.4 + 0.2 * _legend_rows(results, width)
    fig = plt.figure(figsize=(width, height), layout="constrained")
    ax = fig.add_subplot()
    _grouped_bars(ax, labels, series, _labels_vertical(width, len(columns), len(results)))
    ax.axvline(len(columns) - 1.5, color="#888888", linewidth=0.8, linestyle="--", zorder=1)
    fig.suptitle(figure_title("SABRE-Prior: accuracy by split", params, width))
    _legend(fig, results, width)
    return fig


def probe_accuracy_figure(params: Mapping[str, Any], results: Sequence[ModelResults]) -> Any:
    """One panel per configured paired split: per-probe accuracy and the strict pair accuracy."""
    paired = [s for s in configured_splits(params) if s in C.PAIRED_SPLITS]
    n_groups = 5
    width = figure_width(n_groups, len(results))
    height = 0.8 + 3.7 * max(len(paired), 1) + 0.2 * _legend_rows(results, width)
    fig = plt.figure(figsize=(width, height), layout="constrained")
    fig.suptitle(figure_title("SABRE-Prior paired splits: accuracy per probe", params, width))
    if not paired:
        ax = fig.add_subplot()
        ax.axis("off")
        ax.text(0.5, 0.5, "No paired split (context, texture) is configured.", ha="center", va="center")
        return fig
    axes = fig.subplots(len(paired), 1, squeeze=False)[:, 0]
    for ax, split in zip(axes, paired):
        probes = probe_order(split, results)
        labels = [probe_label(split, p) for p in probes] + ["strict pair\n(all four\nprobes right)"]
        series = [
            Series(
                r.name,
                [r.probe_accuracy.get(split, {}).get(p) for p in probes] + [r.accuracy.get(split)],
                [*(None for _ in probes), r.interval(split)],
            )
            for r in results
        ]
        strict_x = len(probes)
        ax.axvspan(strict_x - 0.5, strict_x + 0.5, color="#EDEDED", zorder=0, linewidth=0)
        _grouped_bars(ax, labels, series, _labels_vertical(width, len(labels), len(results)))
        ax.get_xticklabels()[strict_x].set_fontweight("bold")
        totals = {r.totals.get(split) for r in results}
        n_text = f", {totals.pop()} pairs" if len(totals) == 1 and None not in totals else ""
        ax.set_title(f"{COLUMN_TITLES[split]}{n_text}", loc="left", fontweight="bold")
    _legend(fig, results, width)
    return fig


def write_figures(
    params: Mapping[str, Any], metrics_dir: Path, outdir: Path, intervals_dir: Path | None = None
) -> list[Path]:
    """Write ``split_accuracy`` and ``probe_accuracy`` as PNG and PDF; return the paths."""
    results = load_results(params, Path(metrics_dir), Path(intervals_dir) if intervals_dir else None)
    paths: list[Path] = []
    with plotting.style():
        paths += plotting.save_figure(split_accuracy_figure(params, results), Path(outdir), SPLIT_FIGURE)
        paths += plotting.save_figure(probe_accuracy_figure(params, results), Path(outdir), PROBE_FIGURE)
    return paths
