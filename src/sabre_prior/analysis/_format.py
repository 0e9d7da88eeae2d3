"""Small writers shared by the analysis tables and figures (deterministic output)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..io_utils import write_text


def md_table(header: Sequence[str], rows: Iterable[Sequence[Any]], align: Sequence[str] | None = None) -> str:
    """A GitHub-flavoured Markdown table; ``align`` holds 'l' or 'r' per column."""
    align = align or ["l"] + ["r"] * (len(header) - 1)
    rule = ["---" if a == "l" else "--:" for a in align]
    esc = [[str(c).replace("|", "\\|") for c in row] for row in rows]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in esc]
    return "\n".join(lines) + "\n"


def write_csv(path: str | Path, header: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """CSV with a fixed header and ``\\n`` line ends, written atomically."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(header), lineterminator="\n", extrasaction="raise")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in row.items()})
    write_text(path, buf.getvalue())


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def pct(value: float | None, decimals: int = 1) -> str:
    """A fraction as a percent string; '-' for unknown."""
    return "-" if value is None else f"{100.0 * value:.{decimals}f}"


def fmt_p(p: float | None) -> str:
    """p-values: three significant digits, '<0.001' below that."""
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3g}"
