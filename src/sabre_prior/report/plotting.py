"""Shared figure style and byte-deterministic saving (matplotlib, Agg backend)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display; must precede pyplot

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ..io_utils import atomic_writer
from . import style as style_module

__all__ = ["DPI", "HATCHES", "PALETTE", "RC", "note_figure", "plt", "save_figure", "series_style", "style"]

#: The model colours and hatches are :mod:`.style`'s (one palette for every figure and the HTML report).
PALETTE, HATCHES = style_module.PALETTE, style_module.HATCHES

DPI = 150
FONT = "DejaVu Sans"  # ships with matplotlib: the same glyphs everywhere

RC: dict[str, Any] = {
    "font.family": "sans-serif",
    "font.sans-serif": [FONT],
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.fontsize": 8,
    "hatch.linewidth": 0.6,
    "savefig.dpi": DPI,
    "figure.dpi": DPI,
    "svg.hashsalt": "sabre-prior",
    "pdf.fonttype": 42,  # embed TrueType: selectable, editable text
    "path.simplify": False,
}

PNG_METADATA: dict[str, Any] = {"Software": None}
PDF_METADATA: dict[str, Any] = {"Creator": "sabre-prior", "Producer": None, "CreationDate": None, "ModDate": None}


# The PDF backend subsets fonts with fontTools, which logs every table at INFO.
logging.getLogger("fontTools").setLevel(logging.WARNING)


def series_style(index: int) -> tuple[str, str]:
    """Colour and hatch of the model at position ``index`` in params.yaml (:func:`.style.model_style`)."""
    st = style_module.model_style(index)
    return st.color, st.hatch


@contextlib.contextmanager
def style() -> Iterator[None]:
    """The project's rc settings, restored afterwards."""
    rc: Any = RC  # matplotlib types rc keys as literals
    with plt.rc_context(rc):
        yield


def save_figure(fig: Figure, outdir: Path, stem: str) -> list[Path]:
    """Write ``<stem>.png`` and ``<stem>.pdf`` atomically, with no timestamps or versions; close ``fig``."""
    paths: list[Path] = []
    try:
        for ext, metadata in (("png", PNG_METADATA), ("pdf", PDF_METADATA)):
            path = Path(outdir) / f"{stem}.{ext}"
            with atomic_writer(path, "wb") as fh:
                fig.savefig(fh, format=ext, dpi=DPI, metadata=metadata)
            paths.append(path)
    finally:
        plt.close(fig)
    return paths


def note_figure(text: str, outdir: Path, stem: str) -> list[Path]:
    """A figure that only says ``text`` (a table with nothing to draw says so in its figure too)."""
    with style():
        fig, ax = plt.subplots(figsize=(6.0, 1.2))
        ax.axis("off")
        ax.text(0.5, 0.5, text, ha="center", va="center")
        return save_figure(fig, Path(outdir), stem)
