"""Versioned prompt templates.

``screening_v1`` reproduces the default prompt of the authors' open-source
screening client (SPEC.md section 4): the image, then ``Question: <question>``;
for multiple choice a blank line, ``Options:`` and one ``A. <text>`` line per
option; then a blank line and a type-specific instruction followed by
`` Do not explain.``.
"""

from __future__ import annotations

from typing import Any, Mapping

from .errors import ConfigError

DEFAULT_TEMPLATE = "screening_v1"

_INSTRUCTIONS_V1 = {
    "yes_no_exact": "Answer with only yes or no.",
    "count_exact": "Answer with only the count.",
    "choice_exact": "Answer with only the option letter.",
    "multiple_choice_exact": "Answer with only the option letter.",
}


def options_mapping(options: Any) -> dict[str, str]:
    """Options as letter -> text; a list maps to A, B, C, D in order."""
    if options is None:
        return {}
    if isinstance(options, Mapping):
        return {str(k).strip().upper(): "" if v is None else str(v) for k, v in options.items() if v is not None}
    if isinstance(options, (list, tuple)):
        return {chr(ord("A") + i): str(v) for i, v in enumerate(options)}
    # numpy arrays and the like
    if hasattr(options, "tolist"):
        return options_mapping(options.tolist())
    raise TypeError(f"options must be a list or a mapping, got {type(options).__name__}")


def _screening_v1(row: Mapping[str, Any], eval_type: str) -> str:
    parts = [f"Question: {row['question']}"]
    opts = options_mapping(row.get("options"))
    if opts:
        parts.append("")
        parts.append("Options:")
        parts.extend(f"{k}. {v}" for k, v in opts.items())
    instruction = _INSTRUCTIONS_V1.get(eval_type)
    parts.append("")
    parts.append(f"{instruction} Do not explain." if instruction else "Do not explain.")
    return "\n".join(parts)


TEMPLATES = {"screening_v1": _screening_v1}


def render(row: Mapping[str, Any], eval_type: str, template: str = DEFAULT_TEMPLATE) -> str:
    """Render the prompt text for one dataset row."""
    try:
        fn = TEMPLATES[template]
    except KeyError:
        raise ConfigError(f"unknown prompt template {template!r}; known: {', '.join(sorted(TEMPLATES))}") from None
    return fn(row, eval_type)
