"""Scheduling: the resources each job asks for, and a real run through
snakemake-executor-plugin-slurm on a single-node SLURM cluster started on
localhost (tests/fixtures/slurm_cluster.py), whose results must equal a local
run's byte for byte."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


def _load(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, FIXTURES / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


lmp = _load("local_model_project")
slurm_cluster = _load("slurm_cluster")


def _jobs(dry_run_output: str) -> list[dict[str, str]]:
    """The jobs of a `snakemake -n` listing: rule kind, name, wildcards, resources."""
    jobs = []
    for block in re.split(r"\n(?=\[[^\]]+\]\n(?:local)?rule )", dry_run_output):
        m = re.search(r"^(localrule|rule) (\w+):", block, re.M)
        if not m:
            continue
        job = {"kind": m.group(1), "rule": m.group(2)}
        wc = re.search(r"^\s+wildcards: (.*)$", block, re.M)
        res = re.search(r"^\s+resources: (.*)$", block, re.M)
        threads = re.search(r"^\s+threads: (\d+)$", block, re.M)
        for part in (wc.group(1).split(", ") if wc else []) + (res.group(1).split(", ") if res else []):
            key, _, value = part.partition("=")
            job[key] = value
        job["threads"] = threads.group(1) if threads else "1"
        jobs.append(job)
    return jobs


def _empty_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.slow
def test_dry_run_requested_resources(tmp_path: Path) -> None:
    """GPU models ask for their GPUs, CPUs, memory and time in rule predict_local;
    API, baseline, scoring and report jobs ask for no GPU."""
    presets = yaml.safe_load((ROOT / "configs" / "open_models.yaml").read_text())["models"]
    models = {
        "qwen7b": {**presets["qwen2.5-vl-7b"], "cuda_visible_devices": "1"},
        "qwen72b": presets["qwen2.5-vl-72b"],
        # a dry run loads no weights, but a local model's folder must exist (checked at DAG build time)
        "tiny": lmp.tiny_model_settings(_empty_dir(tmp_path / "no-model-needed-for-a-dry-run"), gpus=0),
        "gpt": {"backend": "openai", "model_id": "gpt-4o", "api_key_env": "OPENAI_API_KEY"},
    }
    root = lmp.make_project(tmp_path / "project", models)
    out = lmp.project_module().snakemake(["-n", "--cores", "2", "all"], root).stdout
    jobs = _jobs(out)
    predict = {(j["model"], j["split"]): j for j in jobs if j["rule"].startswith("predict")}
    splits = yaml.safe_load((root / "params.yaml").read_text())["splits"]
    names = yaml.safe_load((root / "params.yaml").read_text())["models"]
    assert set(predict) == {(m, s) for m in names for s in splits}
    for (model, _), job in predict.items():
        if model in ("qwen7b", "qwen72b", "tiny"):
            assert job["rule"] == "predict_local", job
        else:  # API and baselines: rule predict (a local rule on clusters), no GPU
            assert (job["rule"], job["gpu"]) == ("predict", "0"), job
    for split in splits:
        q7, q72, tiny = predict[("qwen7b", split)], predict[("qwen72b", split)], predict[("tiny", split)]
        assert (q7["gpu"], q7["gpu_model"], q7["mem_mb"], q7["threads"]) == ("1", "", "64000", "2")  # --cores 2 caps threads
        assert (q72["gpu"], q72["gpu_model"], q72["mem_mb"], q72["runtime"]) == ("4", "a100", "256000", "480")
        assert (tiny["gpu"], tiny["gpu_model"], tiny["mem_mb"], tiny["runtime"]) == ("0", "", "1000", "10")
    for job in jobs:
        if not job["rule"].startswith("predict"):
            assert job.get("gpu", "0") == "0", job
    # a model pinned to a device on a workstation
    assert re.search(r"^Shell command: CUDA_VISIBLE_DEVICES=1 sabre --log \S+ predict --model qwen7b ", out, re.M), out[-3000:]
    assert not re.search(r"CUDA_VISIBLE_DEVICES=\S* sabre --log \S+ predict --model (qwen72b|tiny|gpt|random) ", out)


FAKE_TOOLS = {
    # records the call, prints a job id
    "sbatch": 'echo "sbatch $*" >> "$FAKE_SLURM_LOG"\ncat > /dev/null\nwc -l < "$FAKE_SLURM_LOG" | tr -d " "\n',
    # every submitted job has failed: the run ends at once
    "squeue": 'n=$(wc -l < "$FAKE_SLURM_LOG")\ni=1\nwhile [ $i -le $n ]; do echo "$i|FAILED"; i=$((i+1)); done\n',
    "sinfo": 'echo PARTITION\necho "gpu*"\n',
    "scontrol": 'echo "MinJobAge               = 300 sec"\n',
    "scancel": "exit 0\n",
    "sacct": "exit 1\n",
    "sacctmgr": "exit 1\n",
    "sshare": "exit 1\n",
}


@pytest.mark.slow
def test_sbatch_requests_with_fake_slurm(tmp_path: Path) -> None:
    """The sbatch lines the SLURM executor writes from the models' settings (fake
    sbatch/squeue/sinfo on PATH; no cluster needed)."""
    if (missing := lmp.project_module().cluster_plugin_missing()) is not None:
        pytest.skip(missing)
    presets = yaml.safe_load((ROOT / "configs" / "open_models.yaml").read_text())["models"]
    models = {
        "qwen72b": presets["qwen2.5-vl-72b"],
        "qwen7b": presets["qwen2.5-vl-7b"],
        "tiny": lmp.tiny_model_settings(_empty_dir(tmp_path / "unused"), gpus=0),
    }
    root = lmp.make_project(tmp_path / "project", models, only=True)
    (root / "data" / "demo").mkdir(parents=True)
    (root / "data" / "parquet").mkdir(parents=True)
    (root / "data" / "parquet" / "context.parquet").write_bytes(b"")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool, body in FAKE_TOOLS.items():
        (bin_dir / tool).write_text("#!/bin/sh\n" + body)
        (bin_dir / tool).chmod(0o755)
    calls = tmp_path / "calls.log"
    calls.write_text("")
    project = lmp.project_module()
    env = {**project.cluster_env(project.env()), "FAKE_SLURM_LOG": str(calls)}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    env.pop("SLURM_CONF", None)
    targets = [f"results/predictions/{m}/context.jsonl" for m in models]
    args = [
        str(project.BIN / "snakemake"), "--profile", "profiles/slurm", "--slurm-no-account",
        "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "1",
        "--retries", "0", "--latency-wait", "1", "--allowed-rules", "predict_local", "--", *targets,
    ]  # fmt: skip
    proc = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0  # the fake cluster fails every job
    lines = {
        re.search(r"wildcards_(\w+?)_context", line).group(1): line.split(" --wrap")[0]
        for line in calls.read_text().splitlines()
    }
    assert sorted(lines) == sorted(models), proc.stdout[-3000:] + proc.stderr[-3000:]
    big, small, tiny = lines["qwen72b"], lines["qwen7b"], lines["tiny"]
    assert "--gpus=a100:4" in big and "--mem 256000" in big and "-t 480" in big and "--cpus-per-task=16" in big
    assert "--gpus=1 " in small + " " and "--mem 64000" in small and "--cpus-per-task=4" in small
    assert "--gpus" not in tiny and "--mem 1000" in tiny and "-t 10" in tiny and "--cpus-per-task=1" in tiny
    assert all("-p gpu" in line and "--export=ALL" in line for line in lines.values())


# -- a real SLURM cluster ------------------------------------------------------------------------
def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not str(p.relative_to(root)).startswith("logs/")
    }


@pytest.mark.slow
def test_slurm_run_equals_local_run(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The tiny VLM's jobs, asking for one (fake) GPU each, and the jobs downstream of them, run
    on the cluster, make the same bytes as the same project run locally (the session's shared
    tiny-VLM run, tests/conftest.py::tiny_vlm_run). The cluster run starts from a copy of the local
    run with every result of the tiny model removed: the demo models' jobs are local rules on a
    cluster, so they would run on the head node exactly as in the local run; what only a cluster
    run can show is the submitted jobs and what they write."""
    reason = slurm_cluster.unavailable_reason()
    if reason:
        pytest.skip(reason)
    if (missing := lmp.project_module().cluster_plugin_missing()) is not None:
        pytest.skip(missing)
    shared = request.getfixturevalue("tiny_vlm_run")  # after the skips: building it runs the pipeline
    local = shared / "local"
    cluster_copy = tmp_path / "cluster"
    shutil.copytree(shared / "local", cluster_copy, symlinks=True)  # with its mtimes and .snakemake/
    removed = [p for p in (cluster_copy / "results").rglob("*") if p.is_file() and "tiny" in p.relative_to(cluster_copy).parts]
    assert len(removed) >= 12, removed  # at least predictions, traces and usage of four splits
    for path in removed:
        path.unlink()
    project = lmp.project_module()

    cluster = slurm_cluster.LocalSlurm(tmp_path / "slurm", mem_mb=6000, gpus=1)
    cluster.start()
    try:
        env = project.cluster_env(cluster.env())
        args = [
            str(project.BIN / "snakemake"),
            "--profile", "profiles/slurm",
            "--slurm-no-account",
            "--slurm-status-command", "squeue",
            "--slurm-init-seconds-before-status-checks", "1",
            "--latency-wait", "5",
            "--retries", "0",
            "--jobs", "4",
            "all",
        ]  # fmt: skip
        env["PATH"] = f"{project.BIN}:{env['PATH']}"
        proc = subprocess.run(args, cwd=cluster_copy, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}\n{cluster.logs()}"
        log = proc.stdout + proc.stderr
        submitted = re.findall(r"Job \d+ has been submitted with SLURM jobid (\d+) \(log: .*?/rule_(\w+)/", log)
        rules = [rule for _, rule in submitted]
        assert rules.count("predict_local") == 4, log[-4000:]
        assert "predict" not in rules and "evaluate" not in rules and "fetch" not in rules  # local rules
        assert set(rules) - {"predict_local"}, log[-4000:]  # a submitted job that asks for no GPU, checked below
        for jobid, rule in submitted:
            info = subprocess.run(["scontrol", "show", "job", jobid], env=env, capture_output=True, text=True).stdout
            if rule == "predict_local":  # the tiny model's settings: 1 GPU, 1 CPU, 1000 MB, 10 min
                assert "gres:gpu:1" in info and "mem=1000M" in info and "TimeLimit=00:10:00" in info, info
            else:
                assert "gres:gpu" not in info, info
    finally:
        cluster.stop()

    for sub in ("results", "data"):
        a, b = _tree(local / sub), _tree(cluster_copy / sub)
        assert sorted(a) == sorted(b)
        assert [k for k in a if a[k] != b[k]] == []
    preds = (cluster_copy / "results" / "predictions" / "tiny" / "context.jsonl").read_text().splitlines()
    assert preds and all("prediction" in json.loads(line) for line in preds)
