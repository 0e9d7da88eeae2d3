"""Comparison with the paper's reported main table (docs/benchmark.md).

The reported table ships as ``sabre_prior/resources/paper_main_results.csv``
(percent).  Models with a ``paper_name`` in ``params.yaml`` are compared with
their reported row: reported, reproduced, difference (reproduced - reported,
percentage points), our interval, and whether the reported value lies inside
it.  Output: ``results/tables/paper_comparison.{md,csv}``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .. import contracts as C
from ..errors import ConfigError, DataError
from ..formatting import md_table, write_csv
from ..io_utils import write_text
from .failure import flag_text, flagged, max_nonanswer_rate
from .intervals import read_intervals

PAPER_RESOURCE = "paper_main_results.csv"
METRICS: tuple[str, ...] = (*C.SPLITS, "macro")
CSV_COLUMNS: tuple[str, ...] = (
    "model",
    "paper_name",
    "metric",
    "reported",
    "reproduced",
    "difference",
    "low",
    "high",
    "inside",
    "nonanswer",
    "questions",
    "flagged",
)
#: Reported values are rounded (whole percents, macro to 0.1): allow that much slack at the interval's ends.
ROUNDING_SLACK = 0.05


@dataclass(frozen=True)
class PaperRow:
    """One comparison (percent)."""

    model: str
    paper_name: str
    metric: str
    reported: float
    reproduced: float
    low: float
    high: float
    nonanswer_flag: str = ""  # "<n> of <N> non-answers (<rate>%)" above analysis.report.max_nonanswer_rate
    nonanswer: int | None = None  # the metric's non-answers and questions (None: intervals without outcome counts)
    questions: int | None = None

    @property
    def difference(self) -> float:
        return self.reproduced - self.reported

    @property
    def inside(self) -> bool:
        return self.low - ROUNDING_SLACK <= self.reported <= self.high + ROUNDING_SLACK


def load_paper_table(text: str | None = None) -> dict[str, dict[str, float]]:
    """``{paper model name: {metric: percent}}`` from the shipped CSV (or ``text``)."""
    if text is None:
        text = (resources.files("sabre_prior") / "resources" / PAPER_RESOURCE).read_text(encoding="utf-8")
    table: dict[str, dict[str, float]] = {}
    for lineno, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        try:
            table[row["model"]] = {m: float(row[m]) for m in METRICS}
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{PAPER_RESOURCE}:{lineno}: bad row ({exc})") from None
    return table


def mapped_models(params: Mapping[str, Any], paper: Mapping[str, Any]) -> dict[str, str]:
    """``{model key: paper name}`` for models with a ``paper_name``; unknown names are config errors."""
    out: dict[str, str] = {}
    for key, settings in (params.get("models") or {}).items():
        name = (settings or {}).get("paper_name")
        if name is None:
            continue
        if name not in paper:
            known = ", ".join(sorted(paper))
            raise ConfigError(
                f"params.yaml: models.{key}.paper_name {name!r} is not a model of the paper's table; known: {known}"
            )
        out[key] = name
    return out


def compare_with_paper(
    mapping: Mapping[str, str],
    paper: Mapping[str, Mapping[str, float]],
    intervals: Mapping[str, Mapping[str, Any]],
    splits: Sequence[str],
    max_nonanswer_rate: float | None = None,
) -> list[PaperRow]:
    """Rows for every mapped model: each configured split and, with all four splits, the macro."""
    metrics = [s for s in C.SPLITS if s in splits]
    if set(C.SPLITS) <= set(splits):
        metrics.append("macro")
    rows: list[PaperRow] = []
    for model, name in mapping.items():
        iv = intervals[model]
        for metric in metrics:
            key = C.I_MACRO if metric == "macro" else metric
            e = iv[key]
            block = (iv.get("failure_aware") or {}).get(key)
            flag = ""
            if max_nonanswer_rate is not None and flagged(block, max_nonanswer_rate):
                flag = flag_text(block)
            rows.append(
                PaperRow(
                    model,
                    name,
                    metric,
                    paper[name][metric],
                    100.0 * e[C.I_ESTIMATE],
                    100.0 * e[C.I_LOW],
                    100.0 * e[C.I_HIGH],
                    flag,
                    None if block is None else int(block["nonanswer"]),
                    None if block is None else int(block["questions"]),
                )
            )
    return rows


def markdown(rows: Sequence[PaperRow], names: Mapping[str, str], confidence: float | None) -> str:
    level = f"{100 * confidence:g}%" if confidence else "bootstrap"
    head = [
        "# Comparison with the paper",
        "",
        (
            f"Reported: the paper's main table (percent). Reproduced: this run, with its {level} interval. "
            "Difference: reproduced - reported (percentage points). Inside: the reported value lies in our interval "
            f"(allowing {ROUNDING_SLACK} points for the paper's rounding). †: more non-answers (unparseable, "
            "refused, failed, truncated) than analysis.report.max_nonanswer_rate allows; part of the gap is the measurement."
        ),
        "",
    ]
    if not rows:
        return "\n".join(head + ["No configured model has a `paper_name`: nothing to compare.", ""])
    body = [
        [names.get(r.model, r.model), r.paper_name, r.metric, f"{r.reported:g}", f"{r.reproduced:.1f} [{r.low:.1f}, {r.high:.1f}]",
         f"{r.difference:+.1f}", "yes" if r.inside else "**no**"]
        for r in rows
    ]  # fmt: skip
    for row, r in zip(body, rows):
        if r.nonanswer_flag:  # issue 21: too many non-answers to read the gap as the model's
            row[4] += f" † ({r.nonanswer_flag})"
    return "\n".join(head) + md_table(["Model", "Paper model", "Metric", "Reported", "Reproduced [CI]", "Difference", "Inside"], body,
                                      ["l", "l", "l", "r", "r", "r", "l"])  # fmt: skip


def write_paper_comparison(
    params: Mapping[str, Any], intervals_dir: str | Path, outdir: str | Path, names: Mapping[str, str]
) -> tuple[list[Path], list[PaperRow]]:
    """Write ``paper_comparison.{md,csv}`` (header-only CSV when no model maps to the paper)."""
    paper = load_paper_table()
    mapping = mapped_models(params, paper)
    intervals = {m: read_intervals(Path(intervals_dir) / f"{m}.json") for m in mapping}
    rows = compare_with_paper(mapping, paper, intervals, params.get("splits") or C.SPLITS, max_nonanswer_rate(params))
    confidence = next((iv.get(C.I_CONFIDENCE) for iv in intervals.values()), None)
    out = Path(outdir)
    md, csv_path = out / "paper_comparison.md", out / "paper_comparison.csv"
    write_text(md, markdown(rows, names, confidence))
    write_csv(
        csv_path,
        CSV_COLUMNS,
        (
            {"model": r.model, "paper_name": r.paper_name, "metric": r.metric, "reported": r.reported,
             "reproduced": round(r.reproduced, 2), "difference": round(r.difference, 2), "low": round(r.low, 2),
             "high": round(r.high, 2), "inside": r.inside, "nonanswer": r.nonanswer, "questions": r.questions,
             "flagged": None if r.nonanswer is None else bool(r.nonanswer_flag)}
            for r in rows
        ),
    )  # fmt: skip
    return [md, csv_path], rows
