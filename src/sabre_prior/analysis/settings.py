"""The ``analysis:`` section of ``params.yaml``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
DEFAULT_CONFIDENCE = 0.95
DEFAULT_THUMBNAIL_PX = 224


@dataclass(frozen=True)
class AnalysisSettings:
    """Bootstrap and report settings (defaults when ``analysis:`` is absent)."""

    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    confidence: float = DEFAULT_CONFIDENCE
    thumbnail_px: int | None = DEFAULT_THUMBNAIL_PX  # None: not read (a command that shows no thumbnail)

    def __post_init__(self) -> None:
        if not isinstance(self.resamples, int) or self.resamples < 1:
            raise ConfigError(f"analysis.bootstrap_resamples must be a positive integer, got {self.resamples!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"analysis.seed must be a non-negative integer, got {self.seed!r}")
        if not 0.0 < float(self.confidence) < 1.0:
            raise ConfigError(f"analysis.confidence must lie strictly between 0 and 1, got {self.confidence!r}")
        if self.thumbnail_px is not None and (not isinstance(self.thumbnail_px, int) or not 16 <= self.thumbnail_px <= 1024):
            raise ConfigError(f"analysis.report.thumbnail_px must be an integer 16-1024, got {self.thumbnail_px!r}")


def analysis_settings(params: Mapping[str, Any], *, thumbnails: bool = True, **overrides: Any) -> AnalysisSettings:
    """Settings from ``params['analysis']``; keyword overrides that are not None win. Only the
    report's command needs ``analysis.report.thumbnail_px``: the others pass ``thumbnails=False``, as
    a command reads only the settings its rule declares (sabre_prior.settings)."""
    section = params.get("analysis") or {}
    values: dict[str, Any] = {
        "resamples": section.get("bootstrap_resamples", DEFAULT_RESAMPLES),
        "seed": section.get("seed", DEFAULT_SEED),
        "confidence": section.get("confidence", DEFAULT_CONFIDENCE),
        "thumbnail_px": (section.get("report") or {}).get("thumbnail_px", DEFAULT_THUMBNAIL_PX) if thumbnails else None,
    }
    values.update({k: v for k, v in overrides.items() if v is not None})
    return AnalysisSettings(**values)
