"""The paper's main table (Markdown, CSV, LaTeX) from the per-model metrics files.

Layout: one row per model in ``params.yaml`` order; columns Context, Texture,
Attribute, Language, Macro avg.; accuracy in percent with one decimal.  When
bootstrap intervals (``results/intervals/<model>.json``) are given, the
Markdown and LaTeX cells read ``40.0 [31.0, 50.0]`` and an extra long-format
``main_results_ci.csv`` is written; the main CSV never changes shape.

Numbers are rounded and bolded by :mod:`.style` (one rule for every output); the data source in the
caption is what the Parquet splits record (:func:`sabre_prior.data.parquet.data_identity`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from .. import contracts as C
from ..config import display_name
from ..errors import SabreError
from ..data.parquet import DataIdentity, data_identity
from ..formatting import Interval, csv_text, md_table
from ..io_utils import read_json_file, write_text
from . import flags, style

#: The four split columns of the main table, in the paper's order.
TABLE_SPLITS: tuple[str, ...] = tuple(C.MAIN_TABLE_COLUMNS[1:5])
#: Column key of the macro average (CSV header and intervals file).
MACRO: str = C.MAIN_TABLE_COLUMNS[5]
#: Human-readable column titles (md/tex headers, figure labels).
COLUMN_TITLES: dict[str, str] = {
    "context": "Context",
    "texture": "Texture",
    "attribute": "Attribute",
    "language": "Language",
    MACRO: "Macro avg.",
}

MAIN_STEM = "main_results"
CI_CSV_NAME = "main_results_ci.csv"
#: ``nonanswer``, ``questions``, ``flagged``: the cell's non-answers (report.flags), empty without outcome counts.
CI_CSV_COLUMNS: tuple[str, ...] = ("model", "split", "estimate", "low", "high", *flags.COLUMNS)

#: How far an interval's estimate may differ from the metrics accuracy.
_ESTIMATE_TOLERANCE = 1e-6


class ResultsFileError(SabreError):
    """A metrics or intervals file is missing or malformed (names file and field)."""


# ---------------------------------------------------------------------------
# Escaping (pure)
# ---------------------------------------------------------------------------
_LATEX_SPECIALS: dict[str, str] = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "[": "{[}",  # a row may not start with "[" after "\\"
    "]": "{]}",
}
_MARKDOWN_SPECIALS = frozenset("\\`*_|[]<>")


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters in one pass."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)


def markdown_escape(text: str) -> str:
    """Backslash-escape characters that would break a Markdown table cell or format it."""
    return "".join("\\" + ch if ch in _MARKDOWN_SPECIALS else ch for ch in text)


# ---------------------------------------------------------------------------
# Reading the results
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class IntervalSettings:
    """How a model's intervals were computed."""

    confidence: float
    resamples: int | None
    seed: int | None


@dataclass(frozen=True)
class ModelResults:
    """One model's numbers, as the tables and figures use them (fractions 0-1)."""

    key: str
    name: str
    #: split -> strict accuracy, for the configured splits only
    accuracy: dict[str, float]
    macro: float
    #: paired split -> total (pairs or questions, from the metrics file)
    totals: dict[str, int] = field(default_factory=dict)
    #: paired split -> probe -> accuracy
    probe_accuracy: dict[str, dict[str, float]] = field(default_factory=dict)
    #: paired split -> question-level accuracy
    question_accuracy: dict[str, float] = field(default_factory=dict)
    #: split or ``"macro"`` -> interval; None when no intervals were given
    intervals: dict[str, Interval] | None = None
    interval_settings: IntervalSettings | None = None
    #: split -> questions the provider refused (no prediction, scored as wrong)
    refused: dict[str, int] = field(default_factory=dict)
    #: split -> outcome -> questions (contracts.OUTCOMES; metrics written before issue 21 have none)
    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)

    def nonanswer_block(self, split: str) -> dict[str, Any] | None:
        """The :func:`.flags.block` of a split (all splits for ``macro``); None without outcome counts."""
        n = self.nonanswer(split)
        return None if n is None else flags.block(*n)

    def nonanswer(self, split: str) -> tuple[int, int] | None:
        """(non-answers, questions) of a split (all splits for ``macro``), None when the metrics do not count outcomes."""
        if split == MACRO:
            parts = [n for s in self.outcomes if (n := self.nonanswer(s)) is not None]
            return (sum(p[0] for p in parts), sum(p[1] for p in parts)) if parts else None
        counts = self.outcomes.get(split)
        if not counts:
            return None
        return sum(counts.get(o, 0) for o in C.NON_ANSWERS), sum(counts.values())

    def flagged(self, split: str, threshold: float) -> bool:
        return flags.flagged(self.nonanswer_block(split), threshold)

    def value(self, column: str) -> float | None:
        """Accuracy of a table column (a split or ``"macro"``); None if not configured."""
        return self.macro if column == MACRO else self.accuracy.get(column)

    def interval(self, column: str) -> Interval | None:
        return None if self.intervals is None else self.intervals.get(column)


def configured_splits(params: Mapping[str, Any]) -> list[str]:
    """The configured splits in the table's canonical order."""
    wanted = set(params.get("splits") or C.SPLITS)
    return [s for s in TABLE_SPLITS if s in wanted]


def _read_json(path: Path, what: str, model: str) -> dict[str, Any]:
    data = read_json_file(
        path,
        missing=f"{what} file for model '{model}' not found "
        "(configured in params.yaml; produce it first, e.g. with `snakemake`)",
        error=ResultsFileError,
    )
    if not isinstance(data, dict):
        raise ResultsFileError(f"{path}: top level must be a JSON object")
    return data


def _fraction(path: Path, where: str, value: Any) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not 0.0 <= value <= 1.0:
        raise ResultsFileError(f"{path}: {where} must be a fraction between 0 and 1, got {value!r}")
    return float(value)


def _mapping(path: Path, where: str, value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ResultsFileError(f"{path}: {where} must be a JSON object, got {value!r}")
    return value


def _parse_metrics(path: Path, data: Mapping[str, Any], splits: Sequence[str], key: str, name: str) -> ModelResults:
    accuracy: dict[str, float] = {}
    totals: dict[str, int] = {}
    probes: dict[str, dict[str, float]] = {}
    questions: dict[str, float] = {}
    refused: dict[str, int] = {}
    outcomes: dict[str, dict[str, int]] = {}
    for split in splits:
        if split not in data:
            raise ResultsFileError(f"{path}: split '{split}' is configured in params.yaml but missing here")
        block = _mapping(path, split, data[split])
        if C.M_ACCURACY not in block:
            raise ResultsFileError(f"{path}: {split}.{C.M_ACCURACY} is missing")
        accuracy[split] = _fraction(path, f"{split}.{C.M_ACCURACY}", block[C.M_ACCURACY])
        total = block.get(C.M_TOTAL)
        if isinstance(total, int) and not isinstance(total, bool):
            totals[split] = total
        n_refused = block.get(C.M_REFUSED)
        if isinstance(n_refused, int) and not isinstance(n_refused, bool) and n_refused > 0:
            refused[split] = n_refused
        if C.M_OUTCOMES in block:
            raw_outcomes = _mapping(path, f"{split}.{C.M_OUTCOMES}", block[C.M_OUTCOMES])
            unknown = sorted(set(raw_outcomes) - set(C.OUTCOMES))
            if unknown:
                raise ResultsFileError(f"{path}: {split}.{C.M_OUTCOMES}: unknown outcome(s) {', '.join(unknown)}")
            outcomes[split] = {o: int(raw_outcomes.get(o, 0)) for o in C.OUTCOMES}
        if split in C.PAIRED_SPLITS:
            if C.M_PROBE_ACCURACY in block:
                raw = _mapping(path, f"{split}.{C.M_PROBE_ACCURACY}", block[C.M_PROBE_ACCURACY])
                probes[split] = {
                    str(p): _fraction(path, f"{split}.{C.M_PROBE_ACCURACY}.{p}", v) for p, v in raw.items()
                }
            if C.M_QUESTION_ACCURACY in block:
                questions[split] = _fraction(path, f"{split}.{C.M_QUESTION_ACCURACY}", block[C.M_QUESTION_ACCURACY])
    if C.M_MACRO not in data:
        raise ResultsFileError(f"{path}: {C.M_MACRO} is missing")
    macro = _fraction(path, C.M_MACRO, data[C.M_MACRO])
    return ModelResults(key, name, accuracy, macro, totals, probes, questions, refused=refused, outcomes=outcomes)


def _parse_intervals(
    path: Path, data: Mapping[str, Any], result: ModelResults, columns: Sequence[str]
) -> tuple[dict[str, Interval], IntervalSettings]:
    intervals: dict[str, Interval] = {}
    for column in columns:
        json_key = C.I_MACRO if column == MACRO else column
        if json_key not in data:
            raise ResultsFileError(f"{path}: interval for '{json_key}' is missing")
        block = _mapping(path, json_key, data[json_key])
        values: dict[str, float] = {}
        for part in (C.I_ESTIMATE, C.I_LOW, C.I_HIGH):
            if part not in block:
                raise ResultsFileError(f"{path}: {json_key}.{part} is missing")
            values[part] = _fraction(path, f"{json_key}.{part}", block[part])
        iv = Interval(values[C.I_ESTIMATE], values[C.I_LOW], values[C.I_HIGH])
        if not iv.low - _ESTIMATE_TOLERANCE <= iv.estimate <= iv.high + _ESTIMATE_TOLERANCE:
            raise ResultsFileError(f"{path}: {json_key}: need low <= estimate <= high, got {iv}")
        expected = result.value(column)
        if expected is not None and abs(iv.estimate - expected) > _ESTIMATE_TOLERANCE:
            raise ResultsFileError(
                f"{path}: {json_key}.estimate = {iv.estimate!r} but the metrics file says {expected!r}; "
                f"the intervals are stale, recompute them"
            )
        intervals[column] = iv
    conf = data.get(C.I_CONFIDENCE)
    if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0.0 < conf < 1.0:
        raise ResultsFileError(f"{path}: {C.I_CONFIDENCE} must be a number between 0 and 1, got {conf!r}")
    resamples = data.get(C.I_RESAMPLES)
    seed = data.get(C.I_SEED)
    settings = IntervalSettings(
        float(conf),
        resamples if isinstance(resamples, int) and not isinstance(resamples, bool) else None,
        seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
    )
    return intervals, settings


def load_results(params: Mapping[str, Any], metrics_dir: Path, intervals_dir: Path | None = None) -> list[ModelResults]:
    """Read every configured model's metrics (and intervals, when a directory is given)."""
    models = list((params.get("models") or {}).keys())
    if not models:
        raise ResultsFileError("params.yaml: no models configured")
    splits = configured_splits(params)
    columns = [*splits, MACRO]
    results: list[ModelResults] = []
    for key in models:
        path = Path(metrics_dir) / f"{key}.json"
        result = _parse_metrics(path, _read_json(path, "metrics", key), splits, key, display_name(params, key))
        if intervals_dir is not None:
            ipath = Path(intervals_dir) / f"{key}.json"
            intervals, settings = _parse_intervals(ipath, _read_json(ipath, "intervals", key), result, columns)
            result = ModelResults(
                result.key,
                result.name,
                result.accuracy,
                result.macro,
                result.totals,
                result.probe_accuracy,
                result.question_accuracy,
                intervals,
                settings,
                result.refused,
                result.outcomes,
            )
        results.append(result)
    return results


# ---------------------------------------------------------------------------
# Rendering (pure)
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    """One table cell: ``value`` (rounded percent) decides bold; ``text`` is shown."""

    value: Decimal | None
    text: str  # the point estimate, e.g. "40.0"; "" when not configured
    interval: str  # " [31.0, 50.0]" or ""
    bold: bool = False


TABLE_COLUMNS: tuple[str, ...] = (*TABLE_SPLITS, MACRO)
#: Marks a cell whose non-answer rate exceeds analysis.report.max_nonanswer_rate (see the caption).
FLAG = flags.FLAG


def build_cells(results: Sequence[ModelResults], threshold: float | None = None) -> list[list[Cell]]:
    """Rows of cells (columns: the four splits, then macro); bold by :func:`.style.best_flags`.

    Every number is rounded by :mod:`.style` (one rule for the md, csv and tex tables, the figures
    and the HTML report). With ``threshold`` a split whose non-answer rate exceeds it carries
    :data:`FLAG` after its value."""
    rows: list[list[Cell]] = []
    for r in results:
        row: list[Cell] = []
        for column in TABLE_COLUMNS:
            value = r.value(column)
            iv = r.interval(column)
            suffix = f" [{style.score_text(iv.low)}, {style.score_text(iv.high)}]" if iv is not None else ""
            if value is None:
                row.append(Cell(None, "", ""))
            else:
                flag = flags.mark(r.nonanswer_block(column), threshold) if threshold is not None else ""
                row.append(Cell(style.score_value(value), style.score_text(value) + flag, suffix))
        rows.append(row)
    for j in range(len(TABLE_COLUMNS)):
        for row, bold in zip(rows, style.best_flags([row[j].value for row in rows])):
            if bold:
                row[j] = Cell(row[j].value, row[j].text, row[j].interval, bold=True)
    return rows


def column_n(results: Sequence[ModelResults], split: str) -> int | None:
    """The sample size of a split's score when every model has the same one (None otherwise)."""
    ns = {r.totals.get(split) for r in results}
    return ns.pop() if len(ns) == 1 and None not in ns else None


def column_header(results: Sequence[ModelResults], column: str) -> str:
    """``Context (n = 100 pairs)``: the title and, for a split, its sample size shared by every model."""
    title = COLUMN_TITLES[column]
    n = column_n(results, column) if column != MACRO else None
    return f"{title} ({style.n_text(n, column in C.PAIRED_SPLITS)})" if n is not None else title


def _n_suffix(results: Sequence[ModelResults], r: ModelResults, column: str) -> str:
    """`` (n = 97)`` after a cell when the models' sample sizes differ (else the header has it)."""
    if column == MACRO or column_n(results, column) is not None or column not in r.totals:
        return ""
    return f" (n = {r.totals[column]})"


def _caption(data: DataIdentity, results: Sequence[ModelResults], splits: Sequence[str], params: Mapping[str, Any]) -> str:
    text = (
        f"Accuracy in percent on SABRE-Prior (data: {data.label}). Context and texture: strict four-probe "
        "pair accuracy; attribute: exact count; language: exact option; macro avg.: unweighted mean "
        f"of the four. n: the pairs or questions each split's score counts. {style.BOLD_RULE}"
    )
    cells = build_cells(results)
    ties = style.tie_note(
        [(COLUMN_TITLES[c], [row[j].value for row in cells]) for j, c in enumerate(TABLE_COLUMNS)]
    )
    if ties:
        text += " " + ties
    settings = sorted(
        {r.interval_settings for r in results if r.interval_settings is not None},
        key=lambda s: (s.confidence, s.resamples or 0, s.seed or 0),
    )
    for s in settings:
        extra = ", ".join(
            part
            for part in (
                f"{s.resamples} resamples" if s.resamples is not None else "",
                f"seed {s.seed}" if s.seed is not None else "",
            )
            if part
        )
        level = format(Decimal(str(s.confidence)) * 100, "f").rstrip("0").rstrip(".")
        text += f" Brackets: {level}% bootstrap confidence interval" + (f" ({extra})." if extra else ".")
    if len(splits) < len(TABLE_SPLITS):
        text += " Empty cells: split not configured (the macro average then covers fewer splits)."
    refusing = [r for r in results if r.refused]
    if refusing:
        parts = [
            f"{r.name} {sum(r.refused.values())} ("
            + ", ".join(f"{s} {n}" for s, n in sorted(r.refused.items(), key=lambda kv: TABLE_SPLITS.index(kv[0])))
            + ")"
            for r in refusing
        ]
        text += " Questions refused by the provider (no answer, counted as wrong): " + "; ".join(parts) + "."
    return text + _outcome_notes(params, results)


def _outcome_notes(params: Mapping[str, Any], results: Sequence[ModelResults]) -> str:
    """Footnotes: every model's non-answers by split and kind, and which cells are flagged."""
    from .flags import max_nonanswer_rate

    threshold = max_nonanswer_rate(params)
    parts = []
    for r in results:
        cells = []
        for split in TABLE_SPLITS:
            counts = r.outcomes.get(split)
            n = r.nonanswer(split)
            if not counts or n is None or not n[0]:
                continue
            kinds = ", ".join(f"{counts[o]} {o}" for o in C.NON_ANSWERS if counts.get(o))
            cells.append(f"{split} {n[0]} of {n[1]} ({kinds})" + (FLAG if r.flagged(split, threshold) else ""))
        macro = r.nonanswer(MACRO)
        if cells and macro is not None and r.flagged(MACRO, threshold):  # the macro cell's dagger, counted
            cells.append(f"macro {macro[0]} of {macro[1]}{FLAG}")
        if cells:
            parts.append(f"{r.name}: " + "; ".join(cells))
    if not any(r.outcomes for r in results):
        return ""
    if not parts:
        return " Every question was answered (no unparseable, refused, failed or truncated answer)."
    text = (
        " Non-answers (unparseable, refused, failed, truncated; counted as wrong, as the contract says; "
        "bounds in failure_aware.md): " + ". ".join(parts) + "."
    )
    if any(r.flagged(c, threshold) for r in results for c in TABLE_COLUMNS):  # no threshold announced for nothing
        level = format(Decimal(str(threshold)) * 100, "f").rstrip("0").rstrip(".")
        text += f" {FLAG}: more than {level}% of the split's (the macro's: all splits') questions are non-answers (analysis.report.max_nonanswer_rate)."
    return text


def _serving_mark(serving: Mapping[str, Sequence[str]] | None, key: str) -> str:
    return f" {flags.SERVING_FLAG}" if serving and key in serving else ""


def _serving_caption(serving: Mapping[str, Sequence[str]] | None, results: Sequence[ModelResults]) -> str:
    note = flags.serving_note({r.key: serving[r.key] for r in results if serving and r.key in serving}, {r.key: r.name for r in results})
    return " " + note if note else ""


def render_markdown(
    params: Mapping[str, Any], results: Sequence[ModelResults], data: DataIdentity, serving: Mapping[str, Sequence[str]] | None = None
) -> str:
    header = ["Model", *(markdown_escape(column_header(results, c)) for c in TABLE_COLUMNS)]

    def shown(r: ModelResults, c: Cell, column: str) -> str:
        if c.value is None:
            return "–"
        return (f"**{c.text}**" if c.bold else c.text) + c.interval + _n_suffix(results, r, column)

    rows = [
        [markdown_escape(r.name) + _serving_mark(serving, r.key), *(shown(r, c, col) for c, col in zip(cells, TABLE_COLUMNS))]
        for r, cells in zip(results, build_cells(results, _threshold(params)))
    ]
    caption = _caption(data, results, configured_splits(params), params) + _serving_caption(serving, results)
    return md_table(header, rows, compact_rule=True, escape=False) + "\n" + caption + "\n"


def render_latex(
    params: Mapping[str, Any], results: Sequence[ModelResults], data: DataIdentity, serving: Mapping[str, Sequence[str]] | None = None
) -> str:
    header = ["Model", *(column_header(results, c) for c in TABLE_COLUMNS)]
    lines = [
        "% " + _caption(data, results, configured_splits(params), params) + _serving_caption(serving, results),
        "% Generated by `sabre tables`; needs \\usepackage{booktabs}.",
        "\\begin{tabular}{l" + "r" * (len(header) - 1) + "}",
        "\\toprule",
        " & ".join(latex_escape(h) for h in header) + " \\\\",
        "\\midrule",
    ]
    for r, cells in zip(results, build_cells(results, _threshold(params))):
        shown = [
            (
                "--"
                if c.value is None
                else (f"\\textbf{{{c.text}}}" if c.bold else c.text) + c.interval + _n_suffix(results, r, col)
            ).replace(FLAG, "\\textsuperscript{\\dag}")
            for c, col in zip(cells, TABLE_COLUMNS)
        ]
        name = latex_escape(r.name) + ("\\textsuperscript{\\ddag}" if _serving_mark(serving, r.key) else "")
        lines.append(" & ".join([name, *shown]) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def _threshold(params: Mapping[str, Any]) -> float:
    from .flags import max_nonanswer_rate

    return max_nonanswer_rate(params)


def render_csv(results: Sequence[ModelResults]) -> str:
    """Header exactly ``model,context,texture,attribute,language,macro``; plain percents."""
    rows = [[r.key, *(c.text for c in cells)] for r, cells in zip(results, build_cells(results))]
    return csv_text(C.MAIN_TABLE_COLUMNS, rows)


def render_ci_csv(results: Sequence[ModelResults], threshold: float = flags.DEFAULT_MAX_NONANSWER_RATE) -> str:
    """Long format: ``model,split,estimate,low,high`` (percent), then the cell's non-answers, its
    questions and whether it is flagged (:mod:`.flags`); ``split`` is ``macro`` for the average."""
    rows: list[list[Any]] = []
    for r in results:
        for column in TABLE_COLUMNS:
            iv = r.interval(column)
            if iv is not None:
                counts = flags.columns(r.nonanswer_block(column), threshold).values()
                rows.append([r.key, column, *(style.score_text(x) for x in (iv.estimate, iv.low, iv.high)), *counts])
    return csv_text(CI_CSV_COLUMNS, rows)


# ---------------------------------------------------------------------------
# Failure-aware scores (sabre_prior.analysis.failure): official, non-answers excluded, at chance
# ---------------------------------------------------------------------------
FAILURE_STEM = "failure_aware"
FAILURE_CSV_COLUMNS: tuple[str, ...] = (
    "model", "split", "bound", "estimate", "low", "high", "nonanswer", "questions", "nonanswer_rate", "flagged",
)  # fmt: skip
BOUND_TITLES = {"official": "Official", "excluded": "Non-answers excluded", "chance": "Non-answers at chance"}


def _failure_block(path: Path) -> Mapping[str, Any] | None:
    data = read_json_file(path, missing="intervals file not found", error=ResultsFileError)
    block = data.get("failure_aware") if isinstance(data, Mapping) else None
    if block is not None and not isinstance(block, Mapping):
        raise ResultsFileError(f"{path}: 'failure_aware' is not an object")
    return block


def _bound_text(iv: Mapping[str, float] | None) -> str:
    if iv is None:
        return "n/a"
    return f"{style.score_text(iv['estimate'])} [{style.score_text(iv['low'])}, {style.score_text(iv['high'])}]"


def render_failure_markdown(
    params: Mapping[str, Any], results: Sequence[ModelResults], blocks: Mapping[str, Mapping[str, Any]]
) -> str:
    from .flags import flag_text, flagged

    threshold = _threshold(params)
    columns = [*configured_splits(params), MACRO]
    rows = []
    for r in results:
        block = blocks[r.key]
        for column in columns:
            b = block.get(MACRO if column == MACRO else column) or {}
            flag = flagged(b, threshold)
            rows.append(
                [markdown_escape(r.name), COLUMN_TITLES[column], *(_bound_text(b.get(k)) for k in BOUND_TITLES),
                 flag_text(b) + (f" {FLAG}" if flag else "")]
            )  # fmt: skip
    level = format(Decimal(str(threshold)) * 100, "f").rstrip("0").rstrip(".")
    any_flag = any(flagged(blocks[r.key].get(c) or {}, threshold) for r in results for c in columns)
    flag_sentence = (f" {FLAG}: more than {level}% of the questions are non-answers (analysis.report.max_nonanswer_rate)."
                     if any_flag else "")  # fmt: skip
    return (
        "# Failure-aware scores\n\n"
        + md_table(["Model", "Split", *BOUND_TITLES.values(), "Non-answers"], rows, compact_rule=True, escape=False)
        + "\nAccuracy in percent with percentile bootstrap intervals (the settings of results/intervals). "
        "Official: the contract's score, a non-answer (unparseable, refused, failed or truncated) counts as wrong. "
        "Non-answers excluded: the score over the units (pairs for context/texture) without any non-answer "
        "(n/a: none left). Non-answers at chance: each non-answer replaced by a uniform guess (yes/no 1/2, "
        f"1/options, 1/distinct counts), as an expected score.{flag_sentence}\n"
    )


def render_failure_csv(
    params: Mapping[str, Any], results: Sequence[ModelResults], blocks: Mapping[str, Mapping[str, Any]]
) -> str:
    from .flags import flagged

    threshold = _threshold(params)
    rows: list[list[Any]] = []
    for r in results:
        for column in [*configured_splits(params), MACRO]:
            b = blocks[r.key].get(column) or {}
            for bound in BOUND_TITLES:
                iv = b.get(bound)
                values = [style.score_text(iv[k]) for k in ("estimate", "low", "high")] if iv else [None, None, None]
                rows.append(
                    [r.key, column, bound, *values, b.get("nonanswer"), b.get("questions"), b.get("rate"),
                     flagged(b, threshold)]
                )  # fmt: skip
    return csv_text(FAILURE_CSV_COLUMNS, rows)


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------
def write_main_tables(
    params: Mapping[str, Any],
    metrics_dir: Path,
    outdir: Path,
    intervals_dir: Path | None = None,
    *,
    data_dir: Path,
    parity_csv: Path | None = None,
    invariance_csv: Path | None = None,
) -> list[Path]:
    """Write ``main_results.{md,csv,tex}`` (and ``main_results_ci.csv`` with intervals); return the paths.

    The data source named in the caption is what the Parquet splits in ``data_dir`` record
    (:func:`sabre_prior.data.parquet.data_identity`), not ``params.yaml``.
    Without ``intervals_dir`` a stale ``main_results_ci.csv`` from an earlier run is removed.
    """
    results = load_results(params, Path(metrics_dir), Path(intervals_dir) if intervals_dir else None)
    data = data_identity(Path(data_dir), configured_splits(params))
    outdir = Path(outdir)
    # issue 34: a model whose score depends on the backend or the batch size carries SERVING_FLAG
    serving = flags.serving_flags(parity_csv, invariance_csv, {r.key: r.name for r in results})
    outputs = {
        outdir / f"{MAIN_STEM}.md": render_markdown(params, results, data, serving),
        outdir / f"{MAIN_STEM}.csv": render_csv(results),
        outdir / f"{MAIN_STEM}.tex": render_latex(params, results, data, serving),
    }
    ci_path = outdir / CI_CSV_NAME
    if intervals_dir is not None:
        outputs[ci_path] = render_ci_csv(results, _threshold(params))
        blocks = {r.key: _failure_block(Path(intervals_dir) / f"{r.key}.json") for r in results}
        if any(b is not None for b in blocks.values()):  # intervals files written before issue 21 have none
            missing = [k for k, b in blocks.items() if b is None]
            if missing:
                raise ResultsFileError(
                    f"{intervals_dir}: {', '.join(f'{k}.json' for k in missing)} lack the 'failure_aware' block "
                    "the others have (re-run `sabre intervals` for them)"
                )
            full = {k: b for k, b in blocks.items() if b is not None}
            outputs[outdir / f"{FAILURE_STEM}.md"] = render_failure_markdown(params, results, full)
            outputs[outdir / f"{FAILURE_STEM}.csv"] = render_failure_csv(params, results, full)
    elif ci_path.exists():
        ci_path.unlink()
    for path, text in outputs.items():
        write_text(path, text)
    return list(outputs)
