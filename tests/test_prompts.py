"""The authors' screening-client prompt (docs/benchmark.md)."""

from __future__ import annotations

import pytest

from sabre_prior.errors import ConfigError
from sabre_prior.inference.prompts import render
from sabre_prior.options import options_mapping


def test_yes_no_prompt() -> None:
    row = {"question": "Is there a toaster visible in this kitchen?"}
    assert render(row, "yes_no_exact") == (
        "Question: Is there a toaster visible in this kitchen?\n\nAnswer with only yes or no. Do not explain."
    )


def test_count_prompt() -> None:
    assert render({"question": "How many legs?"}, "count_exact").endswith(
        "\n\nAnswer with only the count. Do not explain."
    )


@pytest.mark.parametrize(
    "options",
    [["red", "blue", "green", "cannot be determined"], {"A": "red", "B": "blue", "C": "green", "D": "cannot be determined"}],
)
def test_choice_prompt_lists_options(options) -> None:
    row = {"question": "What colour is the car?", "options": options}
    assert render(row, "multiple_choice_exact") == (
        "Question: What colour is the car?\n\nOptions:\nA. red\nB. blue\nC. green\nD. cannot be determined\n\n"
        "Answer with only the option letter. Do not explain."
    )


def test_options_mapping_forms() -> None:
    assert options_mapping(None) == {}
    assert options_mapping(("x", "y")) == {"A": "x", "B": "y"}
    assert options_mapping({"a": "x", "b": None}) == {"A": "x"}
    with pytest.raises(TypeError):
        options_mapping(42)


def test_unknown_template() -> None:
    with pytest.raises(ConfigError, match="unknown prompt template"):
        render({"question": "q"}, "yes_no_exact", "nope_v9")
