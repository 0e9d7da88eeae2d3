"""benchmarks/gpu_check.py: its plumbing on CPU (the GPU figures need a GPU machine)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"


def _module():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_agreement_uses_the_scoring_contract() -> None:
    gc = _module()
    rows = {
        "a": {"eval_type": "yes_no_exact", "options": None},
        "b": {"eval_type": "count_exact", "options": None},
        "c": {"eval_type": "multiple_choice_exact", "options": ["x", "y", "unknown", "z"]},
        "d": {"eval_type": "yes_no_exact", "options": None},
    }
    vllm = {"answers": {"a": "Yes.", "b": "3", "c": "C", "d": "No"}, "rows": rows}
    hf = {"answers": {"a": "yes", "b": "three", "c": "unknown", "d": "Yes"}, "rows": rows}
    agree = gc.agreement(vllm, hf)
    assert agree == {"questions": 4, "identical_text": 0.0, "same_extracted_answer": 0.75}


def test_backend_settings() -> None:
    gc = _module()
    args = gc.parse_args(["--max-pixels", "1003520", "--tensor-parallel-size", "2"])
    v = gc.backend_settings(args, "vllm", "/m", dummy=True)
    assert v["load_format"] == "dummy" and v["tensor_parallel_size"] == 2 and v["batch_size"] == 1000
    assert v["processor_kwargs"] == {"max_pixels": 1003520} and v["max_output_tokens"] == 64
    t = gc.backend_settings(args, "transformers", "/m", dummy=False)
    assert "load_format" not in t and t["batch_size"] == 16 and t["device"] == "auto"


@pytest.mark.slow
def test_smoke_run_on_cpu(tmp_path: Path) -> None:
    """The whole script on the tiny model: data, a random-weights checkpoint, a worker."""
    pytest.importorskip("transformers", reason="the local-model stack (bash scripts/install.sh --local) is not installed")
    work = tmp_path / "work"
    base = [sys.executable, str(SCRIPT), "--backends", "transformers", "--device", "cpu", "--scale", "small",
            "--max-questions", "10", "--max-new-tokens", "3", "--workdir", str(work)]  # fmt: skip
    proc = subprocess.run([*base, "--tiny"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    proc = subprocess.run(
        [*base, "--random-weights", "--model", str(work / "tiny-vlm"), "--output", str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((tmp_path / "r.json").read_text())
    hf = result["backends"]["transformers"]
    assert result["random_weights"] and hf["questions"] == 10 and hf["questions_per_s"] > 0
    assert 10 <= hf["output_tokens"] <= 30 and hf["input_tokens"] > 160
    assert (work / "random-weights" / "config.json").exists()
    assert "questions" in proc.stdout and "q/s" in proc.stdout
    assert result["decoding"]["strategy"] == "greedy" and result["decoding"]["max_new_tokens"] == 3
    # a random checkpoint of a family architecture, built from no files (the 7B one needs a GPU), with
    # where the time goes, the FLOPs per question, batch 1 vs batch N and each switch's effect (issue 34)
    proc = subprocess.run([*base, "--random-arch", "qwen2_5_vl", "--output", str(tmp_path / "a.json"), "--hf-batch-size", "4",
                           "--variants", "--variant-questions", "8", "--batch1-questions", "6"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    arch = json.loads((tmp_path / "a.json").read_text())
    hf = arch["backends"]["transformers"]
    assert hf["questions"] == 10 and "transformers target" in proc.stdout
    assert json.loads((work / "random-qwen2_5_vl" / "config.json").read_text())["model_type"] == "qwen2_5_vl"
    split = hf["time_split_s"]
    assert split["image_decode_s"] > 0 and split["processor_s"] > 0 and split["prefill_s"] > 0 and split["decode_s"] >= 0
    assert "model: vision tower + prefill" in proc.stdout
    flops = hf["flops"]
    assert flops["text_params"] > 0 and flops["vision_params"] > 0 and flops["image_tokens"] > 0
    assert flops["image_patches"] == 4 * flops["image_tokens"]  # Qwen2.5-VL merges 2 x 2 patches into one token
    assert flops["flops_per_question"] > 2 * flops["text_params"] * flops["prompt_tokens"]
    assert hf["bf16_matmul_tflops"] is None and "ratio_to_bf16_rate" not in flops  # no GPU: no rate, no ratio
    assert hf["batch1_vs_batchN"]["questions"] == 6 and "batch size 1 vs the configured batch size on 6 questions" in proc.stdout
    assert [v["variant"] for v in hf["variants"]] == ["none", "+prefetch", "+group by length", "+fast processor", "none, again"]
    assert all(v["questions"] == 8 and v["questions_per_s"] > 0 for v in hf["variants"])


def test_missing_requirements_are_named_before_the_demo_is_built(tmp_path: Path) -> None:
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here: the check passes by design")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--backends", "vllm", "--workdir", str(tmp_path / "w")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "vllm is not installed (needed by the vllm backend)" in proc.stderr
    assert not (tmp_path / "w").exists()  # nothing built: the check comes first


@pytest.mark.slow
def test_device_script_on_cpu(tmp_path: Path) -> None:
    """benchmarks/gpu_check_device.sh (the command docs/performance.md shows) on this machine's CPU:
    the demo's Parquet splits in .gpu/parquet-full, its output files under $OUT."""
    import os
    import shutil

    pytest.importorskip("transformers", reason="the local-model stack (pip install -e '.[local]') is not installed")
    from sabre_prior.data.demo import generate
    from sabre_prior.data.fetch import fetch_split

    root = tmp_path / "repo"
    shutil.copytree(ROOT / "benchmarks", root / "benchmarks")
    shutil.copytree(ROOT / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests" / "fixtures", root / "tests" / "fixtures")
    generate(tmp_path / "demo", scale="small", seed=0)
    for split in ("context", "texture", "attribute", "language"):
        fetch_split(str(tmp_path / "demo"), split, root / ".gpu" / "parquet-full" / f"{split}.parquet")
    env = {**os.environ, "GPU_CHECK_CPU": "1", "PY": sys.executable, "OUT": str(tmp_path / "out"), "W": str(tmp_path / "w")}
    proc = subprocess.run(
        ["bash", "benchmarks/gpu_check_device.sh", "--random-arch", "qwen2_5_vl", "--device", "cpu", "--max-questions", "8",
         "--max-new-tokens", "2", "--hf-batch-size", "4", "--batch1-questions", "4"],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "rc=0 after" in proc.stdout and ("vllm: not installed on this machine" in proc.stdout or "\nvllm " in proc.stdout)
    result = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert result["backends"]["transformers"]["questions"] == 8
    assert (tmp_path / "out" / "gpu_check.log").read_text().count("batch size 1 vs the configured batch size on 4 questions") == 1
