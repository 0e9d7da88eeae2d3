"""Issue 34: the main table says when a score depends on how the model was served, a flagged macro
shows its count, and no footnote announces a threshold when nothing is flagged."""

from __future__ import annotations

from pathlib import Path

import pytest

from sabre_prior.data.parquet import DataIdentity
from sabre_prior.errors import DataError
from sabre_prior.report import flags, tables
from sabre_prior.report.tables import ModelResults

DATA = DataIdentity(source="demo", kind="demo", revision=None, splits=())
PARAMS = {"splits": ["context", "texture", "attribute", "language"], "analysis": {"report": {"max_nonanswer_rate": 0.05}}}
SPLITS = ("context", "texture", "attribute", "language")


def result(key: str, name: str, nonanswers: dict[str, int], questions: int = 12) -> ModelResults:
    outcomes = {s: {"correct": questions - nonanswers.get(s, 0), "unparseable": nonanswers.get(s, 0)} for s in SPLITS}
    return ModelResults(key, name, dict.fromkeys(SPLITS, 0.5), 0.5, dict.fromkeys(SPLITS, questions), outcomes=outcomes)


def test_a_flagged_macro_shows_its_count_and_the_threshold_only_when_flagged() -> None:
    flagged = result("yes", "Always yes", {"attribute": 12, "language": 12})  # 24 of 48: macro 50%
    md = tables.render_markdown(PARAMS, [flagged], DATA)
    row = next(line for line in md.splitlines() if line.startswith("| Always yes"))
    assert row.split("|")[-2].strip() == "50.0†"  # the macro cell's dagger ...
    assert "macro 24 of 48†" in md  # ... and its count in the footnote
    assert "more than 5% of the split's (the macro's: all splits') questions are non-answers" in md
    tex = tables.render_latex(PARAMS, [flagged], DATA)
    assert "macro 24 of 48†" in tex and "50.0\\textsuperscript{\\dag}" in tex
    # one unparseable answer in 40: counted, nothing flagged, no threshold announced
    calm = result("calm", "Calm", {"attribute": 1}, questions=40)
    md = tables.render_markdown(PARAMS, [calm], DATA)
    assert "attribute 1 of 40 (1 unparseable)" in md
    assert "more than 5%" not in md and "†" not in md


def test_serving_flags_mark_both_models_of_a_pair_and_a_batch_dependent_score(tmp_path: Path) -> None:
    parity = tmp_path / "backend_parity.csv"
    parity.write_text(
        "model_a,model_b,backend_a,backend_b,split,difference,do_not_pool\n"
        "hf,api,transformers,openai,context,12.5,true\n"
        "hf,api,transformers,openai,macro,8.25,true\n"
        "hf,vl,transformers,vllm,macro,0.0,false\n"
    )
    invariance = tmp_path / "batch_invariance.csv"
    invariance.write_text(
        "model,batch_size,difference,difference_low,difference_high,depends_on_batch\n"
        "vl,16,-10.0,-20.0,-2.5,true\nhf,16,0.0,0.0,0.0,false\n"
    )
    names = {"hf": "Qwen (transformers)", "api": "Qwen (API)", "vl": "Qwen (vLLM)"}
    got = flags.serving_flags(parity, invariance, names)
    assert set(got) == {"hf", "api", "vl"}
    assert got["hf"] == ["do not pool with Qwen (API) (openai): the same checkpoint answers significantly differently "
                         "(macro 8.25 points A - B; backend_parity.md)"]  # fmt: skip
    assert got["api"][0].startswith("do not pool with Qwen (transformers) (transformers)")
    assert got["vl"] == ["its score depends on the batch size (batch size 1 - batch size 16: -10.0 points [-20.0, -2.5]; batch_invariance.md)"]
    results = [result(k, n, {}) for k, n in names.items()]
    md = tables.render_markdown(PARAMS, results, DATA, got)
    assert "| Qwen (transformers) ‡ |" in md and "| Qwen (vLLM) ‡ |" in md
    assert "‡: the score depends on how the model was served: Qwen (transformers): do not pool with Qwen (API)" in md
    tex = tables.render_latex(PARAMS, results, DATA, got)
    assert "Qwen (API)\\textsuperscript{\\ddag} &" in tex
    # nothing given, nothing marked
    assert flags.serving_flags(None, tmp_path / "absent.csv") == {}
    assert "‡" not in tables.render_markdown(PARAMS, results, DATA, {})
    bad = tmp_path / "bad.csv"
    bad.write_text("model,x\nhf,1\n")
    with pytest.raises(DataError, match="bad.csv:2: not a backend_parity.csv"):
        flags.serving_flags(bad)
