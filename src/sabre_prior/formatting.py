"""Result formatting, in one place: intervals, percents, p-values, CSV and Markdown tables.

Two roundings are in use, and each output keeps the one it has always had:

* ``"half_up"`` (the default): the paper's rule, half away from zero on the decimal value of the
  fraction after removing binary float noise (:func:`percent`).  The main tables and figures use it.
* ``"float"``: Python's ``f"{100 * x:.{d}f}"``, i.e. the binary float rounded to nearest (ties to
  even on the stored value).  The analysis tables (comparison, diagnostics, paper comparison) and
  the ``sabre intervals`` summary use it.

They differ on ties: 0.1225 gives ``12.3`` (half_up) and ``12.2`` (float).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any, Literal

from .io_utils import write_text

Rounding = Literal["half_up", "float"]

#: Float noise tolerated on a fraction before rounding (see :func:`percent`).
_NOISE_QUANTUM = Decimal("1e-9")


# ---------------------------------------------------------------------------
# Intervals
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided interval (same units as the estimate; fractions 0-1 for accuracies)."""

    estimate: float
    low: float
    high: float

    def as_dict(self, ndigits: int = 10) -> dict[str, float]:
        return {
            "estimate": round(self.estimate, ndigits),
            "low": round(self.low, ndigits),
            "high": round(self.high, ndigits),
        }


# ---------------------------------------------------------------------------
# Numbers (pure)
# ---------------------------------------------------------------------------
def percent(fraction: float, decimals: int = 1) -> Decimal:
    """A fraction (0-1) as a percent with ``decimals`` decimals, rounded half away from zero.

    Half away from zero (not Python's banker's ``round``) is what the paper
    uses: (10+40+17+58)/4 = 31.25 is reported as 31.3.  Binary float noise is
    removed first by rounding the fraction to 9 decimals, so 0.1225 (stored as
    0.12249999999999999...) gives 12.3 and a macro of 0.31249999999999994
    gives 31.3.  Ratios of counts below a million are never closer than 1e-9
    to a rounding tie unless they are exactly on it, so this never changes an
    honest result.
    """
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not math.isfinite(fraction):
        raise ValueError(f"not a finite number: {fraction!r}")
    exact = Decimal(fraction).quantize(_NOISE_QUANTUM, rounding=ROUND_HALF_EVEN)
    value = (exact * 100).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return value.copy_abs() if value == 0 else value  # no "-0.0"


def format_percent(
    fraction: float | None,
    decimals: int = 1,
    *,
    rounding: Rounding = "half_up",
    signed: bool = False,
    missing: str | None = None,
) -> str:
    """A fraction (0-1) as percent text: 1/3 -> ``33.3``, 0.4 -> ``40.0``, 0.00125 -> ``0.1``.

    ``signed`` shows ``+`` on non-negative values (differences in percentage points).
    ``missing`` is the text for ``None``; without it ``None`` is an error.
    """
    if fraction is None and missing is not None:
        return missing
    if rounding == "float":
        if fraction is None:
            raise ValueError("not a finite number: None")
        return f"{100.0 * fraction:{'+' if signed else ''}.{decimals}f}"
    if rounding != "half_up":
        raise ValueError(f"unknown rounding {rounding!r} (half_up or float)")
    text = str(percent(fraction, decimals))  # type: ignore[arg-type]  # None raises ValueError there
    return f"+{text}" if signed and not text.startswith("-") else text


def format_interval(
    estimate: float, low: float, high: float, decimals: int = 1, *, rounding: Rounding = "half_up"
) -> str:
    """``40.0 [31.0, 50.0]``: a percent estimate with its interval (fractions in)."""
    est, lo, hi = (format_percent(x, decimals, rounding=rounding) for x in (estimate, low, high))
    return f"{est} [{lo}, {hi}]"


def format_p(p: float | None) -> str:
    """p-values: three significant digits, '<0.001' below that; '-' for unknown."""
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3g}"


# ---------------------------------------------------------------------------
# Tables (deterministic text)
# ---------------------------------------------------------------------------
def md_table(
    header: Sequence[str],
    rows: Iterable[Sequence[Any]],
    align: Sequence[str] | None = None,
    *,
    compact_rule: bool = False,
    escape: bool = True,
) -> str:
    """A GitHub-flavoured Markdown table; ``align`` holds 'l' or 'r' per column (default: first left).

    The rule line is ``| --- | --: |`` or, with ``compact_rule``, ``|:--|--:|``.  With ``escape``
    a ``|`` inside a cell is backslash-escaped; without it the cells are taken as they are.
    """
    align = align or ["l"] + ["r"] * (len(header) - 1)
    if compact_rule:
        rule = "|" + "|".join(":--" if a == "l" else "--:" for a in align) + "|"
    else:
        rule = "| " + " | ".join("---" if a == "l" else "--:" for a in align) + " |"
    cells = [[str(c).replace("|", "\\|") if escape else str(c) for c in row] for row in rows]
    lines = ["| " + " | ".join(header) + " |", rule]
    lines += ["| " + " | ".join(r) + " |" for r in cells]
    return "\n".join(lines) + "\n"


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any] | Mapping[str, Any]]) -> str:
    """CSV with ``\\n`` line ends: the header, then each row (a sequence, or a mapping keyed by the header).

    Cells: ``None`` is empty, booleans are ``true``/``false``.  A mapping with a key outside the
    header is an error; one that lacks a key leaves that cell empty.
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        if isinstance(row, Mapping):
            extra = [k for k in row if k not in header]
            if extra:
                raise ValueError(f"row has fields not in the header: {', '.join(map(repr, extra))}")
            row = [row.get(k) for k in header]
        writer.writerow([_cell(v) for v in row])
    return buf.getvalue()


def write_csv(path: str | Path, header: Sequence[str], rows: Iterable[Sequence[Any] | Mapping[str, Any]]) -> None:
    """:func:`csv_text`, written atomically."""
    write_text(path, csv_text(header, rows))


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value
