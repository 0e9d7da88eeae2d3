"""The non-answer flag shared by the tables, the report and the analysis (no heavy imports): a model
or split whose share of non-answers exceeds ``analysis.report.max_nonanswer_rate`` is flagged.

Every table the pipeline writes marks a flagged model and split the same way (issue 21): the value
(or the model's name, in a table without a score) carries :data:`FLAG`, and the table's footnote
(:func:`footnote`) gives the count; a CSV carries the counts and the verdict in columns of its own
(``nonanswer``, ``questions``, ``flagged``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from .. import contracts as C

#: The default of ``analysis.report.max_nonanswer_rate``.
DEFAULT_MAX_NONANSWER_RATE = 0.05
#: The mark of a flagged value (LaTeX: ``\textsuperscript{\dag}``).
FLAG = "†"


def max_nonanswer_rate(params: Mapping[str, Any]) -> float:
    report = ((params.get("analysis") or {}).get("report")) or {}
    return float(report.get("max_nonanswer_rate", DEFAULT_MAX_NONANSWER_RATE))


def block(nonanswer: int, questions: int) -> dict[str, Any]:
    """``{"nonanswer", "questions", "rate"}``: the counts a flag is decided on (rate 0 without questions)."""
    return {"nonanswer": int(nonanswer), "questions": int(questions), "rate": round(nonanswer / questions, 10) if questions else 0.0}


def trace_blocks(traces: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """``{split: block, "macro": block}`` of one model from its trace rows (their ``outcome``);
    the macro block counts every split's questions together."""
    out = {s: block(sum(1 for r in rows if r["outcome"] in C.NON_ANSWERS), len(rows)) for s, rows in traces.items()}
    out[C.I_MACRO] = block(sum(b["nonanswer"] for b in out.values()), sum(b["questions"] for b in out.values()))
    return out


def flagged(block: Mapping[str, Any] | None, threshold: float) -> bool:
    """A split (or macro) block of :func:`failure_aware` whose non-answer rate exceeds ``threshold``."""
    return bool(block) and float(block.get("rate", 0.0)) > threshold  # type: ignore[union-attr]


#: The columns a CSV row carries its flag in: the block's counts and the verdict.
COLUMNS: tuple[str, ...] = ("nonanswer", "questions", "flagged")


def columns(block: Mapping[str, Any] | None, threshold: float) -> dict[str, Any]:
    """A CSV row's :data:`COLUMNS` for ``block`` (all None without one: outputs written before the flags)."""
    if block is None:
        return dict.fromkeys(COLUMNS)
    return {"nonanswer": block["nonanswer"], "questions": block["questions"], "flagged": flagged(block, threshold)}


def flag_text(block: Mapping[str, Any]) -> str:
    """``"12 of 400 non-answers (3.0%)"``."""
    return f"{block['nonanswer']} of {block['questions']} non-answers ({100 * float(block['rate']):.1f}%)"


def mark(block: Mapping[str, Any] | None, threshold: float) -> str:
    """:data:`FLAG` for a flagged block, else ``""`` (what a table puts beside the value)."""
    return FLAG if flagged(block, threshold) else ""


def threshold_text(threshold: float) -> str:
    """``5%`` for 0.05."""
    return format(Decimal(str(threshold)) * 100, "f").rstrip("0").rstrip(".") + "%"


def footnote(entries: Iterable[tuple[str, str, Mapping[str, Any] | None]], threshold: float) -> str:
    """A table's footnote naming each flagged (name, split, block) of ``entries`` with its count,
    ``""`` when none is flagged: ``†: more than 5% non-answers ...: Always yes attribute 12 of 12 ...``."""
    seen: dict[tuple[str, str], str] = {}
    for name, split, b in entries:
        if flagged(b, threshold) and (name, split) not in seen:
            seen[(name, split)] = f"{name} {split} {flag_text(b)}"  # type: ignore[arg-type]
    if not seen:
        return ""
    return (
        f"{FLAG}: more than {threshold_text(threshold)} of the questions are non-answers (unparseable, refused, "
        f"failed or truncated; analysis.report.max_nonanswer_rate): " + "; ".join(seen.values()) + "."
    )


# ---------------------------------------------------------------------------
# Serving flags (issue 34): a score that depends on how the model was served
# ---------------------------------------------------------------------------
#: The mark beside a model whose score depends on the backend or the batch size (LaTeX: ``\ddag``).
SERVING_FLAG = "‡"


def _csv_rows(path: Any) -> list[dict[str, str]]:
    import csv
    from pathlib import Path

    if path is None or not Path(path).is_file():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def serving_flags(parity_csv: Any = None, invariance_csv: Any = None, names: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """``model -> [why its score is not the model's alone]`` from ``backend_parity.csv`` (a pair flagged
    *do not pool*: both models) and ``batch_invariance.csv`` (a score that moves with the batch size by
    more than its interval); empty where a file is not given or absent."""
    from ..errors import DataError

    names = names or {}
    out: dict[str, list[str]] = {}
    for i, row in enumerate(_csv_rows(parity_csv), start=2):
        if not {"model_a", "model_b", "split", "do_not_pool"} <= set(row):
            raise DataError(f"{parity_csv}:{i}: not a backend_parity.csv (needs model_a, model_b, split, do_not_pool)")
        if row["split"] != C.I_MACRO or row["do_not_pool"] != "true":
            continue
        for me, other, backend in ((row["model_a"], row["model_b"], row.get("backend_b")), (row["model_b"], row["model_a"], row.get("backend_a"))):
            out.setdefault(me, []).append(
                f"do not pool with {names.get(other, other)} ({backend}): the same checkpoint answers significantly "
                f"differently (macro {row['difference']} points A - B; backend_parity.md)"
            )
    for i, row in enumerate(_csv_rows(invariance_csv), start=2):
        if not {"model", "depends_on_batch"} <= set(row):
            raise DataError(f"{invariance_csv}:{i}: not a batch_invariance.csv (needs model, depends_on_batch)")
        if row["depends_on_batch"] == "true":
            out.setdefault(row["model"], []).append(
                f"its score depends on the batch size (batch size 1 - batch size {row['batch_size']}: "
                f"{row['difference']} points [{row['difference_low']}, {row['difference_high']}]; batch_invariance.md)"
            )
    return out


def serving_note(flagged_models: Mapping[str, Sequence[str]], names: Mapping[str, str]) -> str:
    """``‡: Model: why; ...`` for a table's caption, ``""`` when no model is flagged."""
    if not flagged_models:
        return ""
    parts = [f"{names.get(m, m)}: " + "; ".join(why) for m, why in flagged_models.items()]
    return f"{SERVING_FLAG}: the score depends on how the model was served: " + ". ".join(parts) + "."
