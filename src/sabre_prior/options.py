"""Multiple-choice options as letter -> text, whatever container the source used.

The one home of :func:`options_mapping`: the data checks and mirrors (``data``), the scoring
contract (``scoring``), the prompts (``inference``) and the analysis all read options through
it.  It sits at the package top, importing nothing of the package, so none of those packages
imports another to get it (``tests/test_import_cycles.py`` checks there is no package-level
import cycle).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

__all__ = ["options_mapping"]


#: An option text that already carries its letter: "A. red", "A) red", "(A) red", "A: red".
_LETTERED = re.compile(r"^\s*\(?([A-Za-z])\s*[.):]\s+(.*)$", re.S)


def _without_letter(text: str, letter: str) -> str:
    """``"A. red"`` at option A -> ``"red"`` (a prompt must not read ``A. A. red``); other texts unchanged."""
    match = _LETTERED.match(text)
    return match.group(2).strip() if match and match.group(1).upper() == letter and match.group(2).strip() else text


def _parse_options_text(text: str) -> Any:
    """Options stored as text (a CSV mirror): JSON (list or object), a Python literal, or one option
    per line / separated by ``|`` (the documented delimiter forms)."""
    import ast
    import json

    text = text.strip()
    if not text:
        return None
    if text[0] in "[{":
        try:
            return json.loads(text)
        except ValueError:
            try:  # pandas writes a list column to CSV as its Python repr: ['a', 'b']
                return ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise ValueError(f"options text {text[:60]!r} is neither JSON nor a list literal") from None
    sep = "\n" if "\n" in text else "|"
    parts = [part.strip() for part in text.split(sep) if part.strip()]
    if len(parts) < 2:
        raise ValueError(f"options text {text[:60]!r} is not JSON, a list literal, or options one per line or separated by |")
    return parts


def options_mapping(options: Any) -> dict[str, str]:
    """Options as letter -> text, whatever container the source used.

    A list maps to A, B, C, D in order; a mapping keeps its (upper-cased) keys; text is parsed
    (:func:`_parse_options_text`). A text that already starts with its own letter (``"A. red"``)
    loses that prefix, so prompts show ``A. red`` (not ``A. A. red``) and option-text matching
    compares ``red``.
    """
    if options is None:
        return {}
    if isinstance(options, str):
        return options_mapping(_parse_options_text(options))
    if isinstance(options, Mapping):
        pairs = [(str(k).strip().upper(), v) for k, v in options.items() if v is not None]
    elif isinstance(options, (list, tuple)):
        pairs = [(chr(ord("A") + i), v) for i, v in enumerate(options)]
    elif hasattr(options, "tolist"):  # numpy arrays and the like
        return options_mapping(options.tolist())
    else:
        raise TypeError(f"options must be a list, a mapping or text, got {type(options).__name__}")
    return {k: _without_letter("" if v is None else str(v), k) for k, v in pairs}
