"""How every output shows results: model colours, score rounding, the bold rule, captions.

One module, used by the tables (md, csv, tex), the figures, the diagnostics figure, the HTML
report and the ``dvc plots`` template, so that they cannot disagree:

* **Colours** (:func:`model_style`, :func:`model_styles`): a model's colour (and, past eight
  models, hatch) is fixed by its position in ``params.yaml``'s ``models``, the same in every
  figure and in the HTML report's swatches.
* **Rounding** (:func:`score_value`, :func:`score_text`): split and macro scores are percents with
  :data:`SCORE_DECIMALS` decimal, rounded half away from zero (:func:`sabre_prior.formatting.percent`),
  everywhere: tables, figure labels and the HTML table (which gets its text from here, not from
  JavaScript's ``toFixed``).
* **Bold** (:func:`best_flags`): a column's best value is bold only when one model alone has it
  (rounded as shown) and at least two models are compared; a shared best (e.g. every model at
  0.0) is not bold and the caption says where the best is shared (:func:`tie_note`).
* **Captions** (:func:`caption`, :func:`caption_path`): one sentence or two per figure and table,
  in ``resources/caption_<stem>.rst`` (written by hand, one file per stem); the HTML report shows them under each figure and
  ``snakemake --report`` shows the same files (``report(..., caption=...)``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import Any

from ..formatting import format_percent, percent

__all__ = [
    "BOLD_RULE",
    "DARK_OUTCOMES",
    "HATCHES",
    "OUTCOME_COLORS",
    "PALETTE",
    "REFERENCE_COLOR",
    "REFERENCE_DASHES",
    "TEMPLATE_COLOR",
    "TEMPLATE_MARKERS",
    "SCORE_DECIMALS",
    "ModelStyle",
    "best_flags",
    "caption",
    "caption_path",
    "model_style",
    "model_styles",
    "n_text",
    "score_text",
    "score_value",
    "tie_note",
    "unit_name",
]

# ---------------------------------------------------------------------------
# Colours
# ---------------------------------------------------------------------------
#: Okabe-Ito colours (colour-blind safe), black left out so error bars stay visible.
PALETTE: tuple[str, ...] = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#D55E00",  # vermillion
    "#F0E442",  # yellow
    "#999999",  # grey
)
#: After the palette is used up, the colours repeat with these hatches (matplotlib hatch codes).
HATCHES: tuple[str, ...] = ("", "///", "...", "xxx")

#: Colour means the model, in every figure: what else a figure tells apart is drawn in colours far from
#: every model colour (CIE76 distance of at least 30 in Lab, tests/test_report_style.py), or in black.
#: The pair outcomes (pair_outcomes figure; the HTML report's badges, report.css):
OUTCOME_COLORS: dict[str, str] = {
    "all_correct": "#332288",  # indigo
    "prior_following": "#661100",  # dark brown
    "always_yes": "#DDCC77",  # sand
    "always_no": "#999933",  # olive
    "other": "#FFFFFF",  # white (outlined)
}
#: Outcome colours dark enough for white text on them.
DARK_OUTCOMES: frozenset[str] = frozenset({"all_correct", "prior_following"})
#: The prompt templates (prompt_sensitivity figure): black markers, one shape a template.
TEMPLATE_COLOR = "#000000"
TEMPLATE_MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X", "*")
#: Reference lines (chance, the main template): black, dashed.
REFERENCE_COLOR = "#000000"
REFERENCE_DASHES = (0, (3, 2))


@dataclass(frozen=True)
class ModelStyle:
    """A model's colour (hex) and hatch ('' for none) in every figure and in the HTML report."""

    color: str
    hatch: str

    def as_dict(self) -> dict[str, str]:
        return {"color": self.color, "hatch": self.hatch}


def model_style(index: int) -> ModelStyle:
    """Style of the model at position ``index`` of ``params.yaml``'s models: distinct for up to 32."""
    if index < 0:
        raise ValueError(f"model index must be >= 0, got {index}")
    return ModelStyle(PALETTE[index % len(PALETTE)], HATCHES[(index // len(PALETTE)) % len(HATCHES)])


def model_styles(models: Mapping[str, Any] | Iterable[str]) -> dict[str, ModelStyle]:
    """``{model key: style}`` keyed by the order of ``models`` (params["models"] or its keys)."""
    return {key: model_style(i) for i, key in enumerate(models)}


# ---------------------------------------------------------------------------
# Scores: one rounding, one bold rule
# ---------------------------------------------------------------------------
#: Decimals of every split and macro score shown (tables, figures, HTML report).
SCORE_DECIMALS = 1

BOLD_RULE = (
    "Bold: the best value of a column when one model alone has it (as rounded here); "
    "none where the best is shared or only one model is shown."
)


def score_value(fraction: float) -> Decimal:
    """A score (fraction 0-1) as the rounded percent shown (half away from zero)."""
    return percent(fraction, SCORE_DECIMALS)


def score_text(fraction: float) -> str:
    """A score (fraction 0-1) as shown: ``1/3`` -> ``33.3``."""
    return format_percent(fraction, SCORE_DECIMALS)


def best_flags(values: Sequence[Decimal | None]) -> list[bool]:
    """Which cells of one column are bold: the highest value, only when exactly one cell has it
    and at least two cells have a value (a unique maximum of two or more is above the others, so above 0)."""
    present = [v for v in values if v is not None]
    if len(present) < 2:
        return [False] * len(values)
    best = max(present)
    if present.count(best) > 1:
        return [False] * len(values)
    return [v == best for v in values]


def tie_note(columns: Sequence[tuple[str, Sequence[Decimal | None]]]) -> str:
    """``Best shared (not bold): Context 0.0 (4 models).`` for the columns whose best is tied; '' if none."""
    parts = []
    for title, values in columns:
        present = [v for v in values if v is not None]
        if len(present) < 2:
            continue
        best = max(present)
        ties = present.count(best)
        if ties > 1:
            everyone = " (every model)" if ties == len(present) else f" ({ties} models)"
            parts.append(f"{title} {best}{everyone}")
    return ("Best shared, so not bold: " + "; ".join(parts) + ".") if parts else ""


def unit_name(paired: bool, n: int) -> str:
    """What a split's score counts: pairs (context, texture) or questions."""
    word = "pair" if paired else "question"
    return word if n == 1 else word + "s"


def n_text(n: int, paired: bool) -> str:
    """``n = 12 pairs``: the sample size beside an interval."""
    return f"n = {n} {unit_name(paired, n)}"


# ---------------------------------------------------------------------------
# Captions
# ---------------------------------------------------------------------------
def caption_path(stem: str) -> Path:
    """The caption file of a figure or table stem (``resources/caption_<stem>.rst``), which must exist."""
    path = Path(str(resources.files("sabre_prior") / "resources" / f"caption_{stem}.rst"))
    if not path.is_file():
        raise KeyError(f"no caption for {stem!r} ({path} is missing)")
    return path


def caption(stem: str) -> str:
    """The caption text of a figure or table stem, as one line (without the file's RST comment lines)."""
    lines = caption_path(stem).read_text(encoding="utf-8").splitlines()
    return " ".join(" ".join(line for line in lines if not line.startswith("..")).split())
