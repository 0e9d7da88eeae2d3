"""Backend parity (issue 34): which models serve one checkpoint, the per-split agreement, the flag."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from synthetic_project import always_yes, make_project, oracle

from sabre_prior.analysis import parity
from sabre_prior.analysis.settings import AnalysisSettings
from sabre_prior.errors import ConfigError


def lower_yes_no(row: dict[str, Any]) -> str | None:
    """The oracle's answers, yes/no in lower case: the same extracted answer, another raw text."""
    text = oracle(row)
    return text.lower() if row["eval_type"] == "yes_no_exact" else text


def _project(root: Path) -> Path:
    make_project(root, {"local": oracle, "served": lower_yes_no, "ref": oracle, "broken": always_yes})
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["models"]["served"]["same_model_as"] = "local"
    params["models"]["broken"]["same_model_as"] = "ref"
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return root


def test_checkpoint_key_and_pairs() -> None:
    params = {
        "models": {
            "hf": {"backend": "transformers", "model_id": "Qwen/Qwen2.5-VL-7B-Instruct", "revision": "abc"},
            "vl": {"backend": "vllm", "model_id": "Qwen/Qwen2.5-VL-7B-Instruct", "revision": "abc"},
            "vl_other_rev": {"backend": "vllm", "model_id": "Qwen/Qwen2.5-VL-7B-Instruct", "revision": "def"},
            "hf_b1": {"backend": "transformers", "model_id": "Qwen/Qwen2.5-VL-7B-Instruct", "revision": "abc"},
            "api": {"backend": "openai", "model_id": "qwen2.5-vl-7b-instruct", "api_key_env": "K",
                    "same_model_as": "Qwen/Qwen2.5-VL-7B-Instruct@abc"},
            "api2": {"backend": "openai", "model_id": "x", "api_key_env": "K", "same_model_as": "vl"},
            "random": {"backend": "baseline", "strategy": "random"},
        }
    }  # fmt: skip
    assert parity.checkpoint_key(params, "api") == ("Qwen/Qwen2.5-VL-7B-Instruct", "abc")
    assert parity.checkpoint_key(params, "api2") == ("Qwen/Qwen2.5-VL-7B-Instruct", "abc")
    assert parity.checkpoint_key(params, "random") == ("model:random", None)
    pairs = {(a, b) for a, b, _ in parity.parity_pairs(params)}
    # another revision is another checkpoint; two transformers entries without a declaration are not a pair
    assert pairs == {("hf", "vl"), ("hf", "api"), ("hf", "api2"), ("vl", "hf_b1"), ("vl", "api"), ("vl", "api2"),
                     ("hf_b1", "api"), ("hf_b1", "api2"), ("api", "api2")}  # fmt: skip
    loop = {"models": {"a": {"backend": "baseline", "strategy": "random", "same_model_as": "b"},
                       "b": {"backend": "baseline", "strategy": "random", "same_model_as": "a"}}}  # fmt: skip
    with pytest.raises(ConfigError, match="refers back to itself"):
        parity.parity_pairs(loop)


def test_parity_table_same_answers_and_a_planted_disagreement(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    params = yaml.safe_load((root / "params.yaml").read_text())
    rows = parity.parity(params, root / "results" / "traces", AnalysisSettings(resamples=500))
    by = {(r.comparison.model_a, r.comparison.split): r for r in rows}
    # the same answers, served with other letter case: 100% same answer, text identical only off yes/no
    for split in ("context", "texture", "attribute", "language", "macro"):
        r = by[("local", split)]
        assert r.same_answer == 1.0 and r.comparison.difference == 0.0 and not r.do_not_pool
    assert by[("local", "context")].identical_text == 0.0 and by[("local", "attribute")].identical_text == 1.0
    assert by[("local", "macro")].questions == 24 + 24 + 8 + 8
    assert by[("local", "macro")].identical_text == pytest.approx(16 / 64)
    # always yes against the oracle: every unit discordant; McNemar 2 * 0.5**8 on attribute
    assert by[("ref", "attribute")].comparison.p_value == pytest.approx(2 / 2**8)
    assert by[("ref", "context")].comparison.a_only == 6 and by[("ref", "context")].same_answer == 0.5
    assert all(by[("ref", s)].do_not_pool for s in ("context", "macro"))


def test_sabre_parity_writes_table_figure_and_flags(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    proc = subprocess.run([sys.executable, "-m", "sabre_prior.cli", "parity", "--resamples", "500"],
                          cwd=root, capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "2 pair(s); do not pool: ref/broken" in proc.stdout
    md = (root / "results" / "tables" / "backend_parity.md").read_text()
    assert "## A = Ref, B = Broken (model:ref) — **do not pool**" in md
    assert "## A = Local, B = Served (model:local)\n" in md
    assert "Decoding: A: baseline: strategy oracle. B: baseline: strategy oracle." in md
    for ext in ("png", "pdf"):
        assert (root / "results" / "figures" / f"backend_parity.{ext}").stat().st_size > 1000
    with open(root / "results" / "tables" / "backend_parity.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == 10 and {r["do_not_pool"] for r in table if r["model_a"] == "ref"} == {"true"}
    flags = parity.read_flags(root / "results" / "tables" / "backend_parity.csv")
    assert flags == {"ref": ["broken"], "broken": ["ref"]}


def test_no_pair_says_so(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj", {"local": oracle, "ref": always_yes})
    params = yaml.safe_load((root / "params.yaml").read_text())
    rows, paths = parity.write_parity(params, root / "results" / "traces", root / "t", root / "f", AnalysisSettings(resamples=100))
    assert rows == []
    assert parity.NO_PAIR in (root / "t" / "backend_parity.md").read_text()
    assert (root / "t" / "backend_parity.csv").read_text().count("\n") == 1  # the header only
    assert (root / "f" / "backend_parity.png").is_file()
    assert parity.read_flags(root / "t" / "backend_parity.csv") == {}
