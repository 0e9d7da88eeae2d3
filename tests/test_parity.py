"""Snakemake's rules and dvc.yaml name the same pipeline: one DVC stage runs `snakemake all`, its
outputs are exactly the folders and files the rules write (sabre_prior.sync.TRACKED, which the
Snakefile's onsuccess prunes), and its params name every setting of the schema.

The rules are read through Snakemake's documented command lines only: `--detailed-summary`
(every output with its rule and inputs) and `-n --quiet rules` (the jobs a dry run plans).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from dvc_helpers import make_repo, out, smk
from project import ROOT

from sabre_prior.config import load_schema
from sabre_prior.sync import METRICS, PLOTS, STAGE, TRACKED

DVC_YAML = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))


def _stage() -> dict:
    assert list(DVC_YAML["stages"]) == [STAGE]
    return DVC_YAML["stages"][STAGE]


def _names(entries: list) -> list[str]:
    return [next(iter(e)) if isinstance(e, dict) else e for e in entries]


def test_dvc_yaml_is_one_stage_that_runs_snakemake_on_the_whole_workflow() -> None:
    stage = _stage()
    # every output (`snakemake all` adds dvc.lock); then the rule dvc_lock notes what the run made
    assert stage["cmd"] == "snakemake --cores all outputs && snakemake --touch --cores 1 dvc.lock"
    assert set(stage["deps"]) == {"Snakefile", "workflow", "src/sabre_prior"}
    outs = stage["outs"]
    assert _names(outs) == list(TRACKED)
    assert all(e[next(iter(e))] == {"persist": True} for e in outs)  # Snakemake sees what it made before
    assert _names(stage["metrics"]) == list(METRICS) and _names(stage["plots"]) == list(PLOTS)
    assert all(e[next(iter(e))]["persist"] for e in (*stage["metrics"], *stage["plots"]))


def _leaves(schema: dict, prefix: str = "") -> list[str]:
    props = schema.get("properties")
    if not props or schema.get("type") != "object":
        return [prefix]
    return [leaf for key, sub in props.items() for leaf in _leaves(sub, f"{prefix}{key}." if prefix or key else key)]


def test_dvc_params_name_every_setting_of_the_schema() -> None:
    """`dvc status` and `dvc params diff` name the setting that changed: every leaf of the schema is
    one of the stage's params or lies under one (a model's settings under `models`)."""
    params = _stage()["params"]
    schema = load_schema()
    leaves = [leaf.rstrip(".") for key, sub in schema["properties"].items() for leaf in _leaves(sub, key + ".")]
    assert len(leaves) >= 12
    for leaf in leaves:
        assert any(leaf == p or leaf.startswith(p + ".") for p in params), leaf
    assert "models" in params and "splits" in params


@pytest.mark.slow  # needs the session's finished demo run
def test_every_output_of_the_rules_is_tracked_and_every_tracked_path_is_made(workflow_summary: list[dict]) -> None:
    outputs = {row["output"] for row in workflow_summary}
    assert len(outputs) > 100
    tracked = (*TRACKED, *METRICS, *PLOTS)
    untracked = sorted(o for o in outputs if not any(o == t or o.startswith(t + "/") for t in tracked))
    assert untracked == ["data/demo", "dvc.lock"]  # temporary: removed once fetched; DVC's own record
    assert all(any(o == t or o.startswith(t + "/") for o in outputs) for t in tracked)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("parity") / "project")


def planned(project: Path) -> dict[str, int]:
    """Rule -> jobs a dry run of `all` plans (`snakemake -n --quiet rules`)."""
    text = out(smk(project, "-n", "--quiet", "rules", "all"))
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", text, re.M) if m.group(1) not in ("all", "total")}


@pytest.mark.slow
def test_audit_repeats_add_one_job_per_model_and_repeat(project: Path, tmp_path: Path) -> None:
    """repeats: 1 (the default) plans no audit_run job; repeats: 3 plans one per model and repeat 1..2."""
    models = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))["models"]
    assert "audit_run" not in planned(project)
    other = tmp_path / "repeats"
    shutil.copytree(project, other, symlinks=True)
    text = (other / "params.yaml").read_text(encoding="utf-8")
    (other / "params.yaml").write_text(text.replace("  repeats: 1\n", "  repeats: 3\n", 1), encoding="utf-8")
    jobs = planned(other)
    assert jobs["audit_run"] == 2 * len(models) and jobs["audit"] == len(models)


@pytest.mark.slow
def test_a_local_source_has_no_demo_job_and_its_fetch_reads_the_splits_files(
    project: Path, tmp_path: Path, demo_dir: Path
) -> None:
    from layouts import write_layout

    other = tmp_path / "local"
    shutil.copytree(project, other, symlinks=True)
    mirror = write_layout(demo_dir, tmp_path / "mirror", "shards")
    text = (other / "params.yaml").read_text(encoding="utf-8")
    (other / "params.yaml").write_text(text.replace("source: demo", f"source: {mirror}", 1), encoding="utf-8")
    jobs = planned(other)
    assert "demo_data" not in jobs and jobs["fetch"] == 4
    dry = out(smk(other, "-n", "data/parquet/context.parquet"))
    inputs = re.search(r"^\s+input: (.+)$", dry, re.M).group(1).split(", ")
    assert f"{mirror}/README.md" in inputs, inputs
    data = [i for i in inputs if i.startswith(str(mirror)) and not i.endswith("README.md")]
    assert data and all("/context/" in i for i in data), inputs
