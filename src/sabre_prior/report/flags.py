"""The non-answer flag shared by the tables, the report and the analysis (no heavy imports): a model
or split whose share of non-answers exceeds ``analysis.report.max_nonanswer_rate`` is flagged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The default of ``analysis.report.max_nonanswer_rate``.
DEFAULT_MAX_NONANSWER_RATE = 0.05


def max_nonanswer_rate(params: Mapping[str, Any]) -> float:
    report = ((params.get("analysis") or {}).get("report")) or {}
    return float(report.get("max_nonanswer_rate", DEFAULT_MAX_NONANSWER_RATE))


def flagged(block: Mapping[str, Any] | None, threshold: float) -> bool:
    """A split (or macro) block of :func:`failure_aware` whose non-answer rate exceeds ``threshold``."""
    return bool(block) and float(block.get("rate", 0.0)) > threshold  # type: ignore[union-attr]


def flag_text(block: Mapping[str, Any]) -> str:
    """``"12 of 400 non-answers (3.0%)"``."""
    return f"{block['nonanswer']} of {block['questions']} non-answers ({100 * float(block['rate']):.1f}%)"
