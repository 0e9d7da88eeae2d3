"""Backend parity end to end (issue 34): one tiny checkpoint of a real architecture (Qwen2.5-VL's
classes, tests/fixtures/tiny_families.py) answered through the transformers backend and through an
OpenAI-compatible loopback server that serves the same checkpoint (tests/servers/hf_served.py, as
``vllm serve`` would): parity of 100% is seen, and a planted disagreement is seen too."""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent / "analysis"))
from synthetic_project import make_project, oracle  # noqa: E402

from tests.servers.hf_served import HFServedServer  # noqa: E402

# find_spec, not importorskip: collecting this module (in every xdist worker) does not import transformers
if importlib.util.find_spec("transformers") is None:
    pytest.skip("the local-model stack (pip install -e '.[local]') is not installed", allow_module_level=True)
pytestmark = pytest.mark.slow
SPLITS = ("context", "texture", "attribute", "language")
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def sabre(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-m", "sabre_prior.cli", *args], cwd=root, capture_output=True, text=True,
                          timeout=600, env={**os.environ, **(env or {})})  # fmt: skip


def run_model(root: Path, model: str) -> None:
    for split in SPLITS:
        proc = sabre(root, "predict", "--model", model, "--split", split, "--no-progress", env={"LOOPBACK_KEY": "k"})
        assert proc.returncode == 0, proc.stderr[-3000:]
    proc = sabre(root, "evaluate", "--predictions", f"results/predictions/{model}", "--params", "params.yaml",
                 "--output", f"results/metrics/{model}.json", "--trace-dir", f"results/traces/{model}",
                 "--usage", f"results/usage/{model}")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]


def parity_rows(root: Path) -> dict[tuple[str, str, str], dict[str, str]]:
    proc = sabre(root, "parity", "--resamples", "200")
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(root / "results/tables/backend_parity.csv", newline="") as fh:
        return {(r["model_a"], r["model_b"], r["split"]): r for r in csv.DictReader(fh)}


def test_transformers_and_a_served_copy_agree_and_a_planted_disagreement_shows(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("tiny_families", FIXTURES / "tiny_families.py")
    assert spec and spec.loader
    families = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(families)
    checkpoint = families.build("qwen2_5_vl", tmp_path / "qwen2_5_vl")
    root = make_project(tmp_path / "proj", {"unused": oracle})
    params = yaml.safe_load((root / "params.yaml").read_text())
    local = {"backend": "transformers", "model_id": str(checkpoint), "device": "cpu", "batch_size": 1,
             "max_output_tokens": 4, "display_name": "Tiny (transformers)"}  # fmt: skip

    def served(url: str, name: str) -> dict[str, object]:
        # the same model_id: the parity table pairs them without a declaration
        return {"backend": "openai", "model_id": str(checkpoint), "base_url": url + "/v1", "api_key_env": "LOOPBACK_KEY",
                "max_output_tokens": 4, "concurrency": 1, "display_name": name, "max_attempts": 1}  # fmt: skip

    with HFServedServer(checkpoint) as server:
        params["models"] = {"hf": local, "served": served(server.url, "Tiny (served)")}
        (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        run_model(root, "hf")
        run_model(root, "served")
        assert server.requests == 64
    rows = parity_rows(root)
    macro = rows[("hf", "served", "macro")]
    assert macro["questions"] == "64" and macro["same_answer"] == "100.0" and macro["identical_text"] == "100.0"
    assert macro["difference"] == "0.0" and macro["do_not_pool"] == "false"
    assert "transformers: greedy, max_new_tokens 4" in macro["decoding_a"] and macro["decoding_b"].startswith("openai (http://127.0.0.1")

    # the server now answers "Yes." for 1 in 2 images: the table sees it
    def plant(text: str, image: bytes) -> bool:
        return hashlib.sha256(image).digest()[0] % 2 == 0

    with HFServedServer(checkpoint, plant=plant) as server:
        params["models"]["planted"] = served(server.url, "Tiny (served, planted)")
        (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        run_model(root, "planted")
        planted = server.planted
    assert 10 < planted < 54
    rows = parity_rows(root)
    macro = rows[("hf", "planted", "macro")]
    # the random checkpoint never answers exactly "Yes.": every planted answer is another text, and
    # on a yes/no question another extracted answer
    assert float(macro["identical_text"]) == pytest.approx(100 * (64 - planted) / 64, abs=0.01)
    assert 100 * (64 - planted) / 64 <= float(macro["same_answer"]) < 100.0
    assert rows[("hf", "planted", "context")]["same_answer"] != "100.0"
    assert ("served", "planted", "macro") not in rows  # one backend twice, no same_model_as: not a pair
    md = (root / "results/tables/backend_parity.md").read_text()
    assert "## A = Tiny (transformers), B = Tiny (served, planted)" in md
