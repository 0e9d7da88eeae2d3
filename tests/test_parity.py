"""One declaration: dvc.yaml is generated from it, and Snakemake and DVC plan the same commands.

The plans are read through the documented command lines only: `snakemake -n -p --forceall`
("Shell command:" lines) and `dvc repro --dry --force` ("Running stage" and "> command" lines).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from dvc_helpers import NEW_MODEL, dvc, make_repo, out, set_param_models, smk
from project import ROOT

from sabre_prior.repro.pipeline import STAGES, Pipeline, render_dvc_yaml

BIN = Path(sys.executable).parent


def normalize(cmd: str) -> tuple[str, ...]:
    """The words of a command without quoting, whitespace or a leading VAR=value (device pinning)."""
    words = shlex.split(cmd)
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        words = words[1:]
    return tuple(words)


def snakemake_plan(project: Path) -> Counter:
    proc = smk(project, "-n", "-p", "--forceall", "all", extra_env={"SABRE_DVC_SYNC": "0"})
    cmds = re.findall(r"^Shell command: (.+)$", out(proc), re.M)
    # the rule `recipes` also writes its marker for Snakemake (sabre_prior.repro.dagsync.RECIPES_DONE)
    return Counter(normalize(c.split(" && ")[0] if " recipes && " in c else c) for c in cmds if c != "None")


def dvc_plan(project: Path) -> tuple[Counter, list[str]]:
    proc = dvc(project, "repro", "--dry", "--force")
    text = out(proc)
    stages = re.findall(r"Running stage '([^']+)'", text)
    cmds = [c for c in re.findall(r"^> (.+)$", text, re.M) if not c.startswith("mkdir -p ")]
    return Counter(normalize(c) for c in cmds), stages


def test_committed_dvc_yaml_and_rule_files_are_fresh() -> None:
    """CI's freshness check: regenerate dvc.yaml and the rule files from the declaration and compare."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    assert (ROOT / "dvc.yaml").read_text(encoding="utf-8") == render_dvc_yaml(Pipeline(params, ROOT)), (
        "dvc.yaml is stale: run `sabre generate` and commit it"
    )
    proc = subprocess.run([str(BIN / "sabre"), "generate", "--check"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("parity") / "project")


@pytest.mark.slow  # plans with both tools
def test_both_tools_plan_the_same_commands(project: Path) -> None:
    smk_plan = snakemake_plan(project)
    dvc_cmds, stages = dvc_plan(project)
    assert smk_plan == dvc_cmds
    params = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
    jobs = Pipeline(params, project).jobs()  # the declaration's jobs, plus DVC's `recipes` stage
    assert len(stages) == sum(smk_plan.values()) == len(jobs) + 1
    for model in params["models"]:  # stage names keyed by model and split, never by list index
        assert f"evaluate@{model}" in stages and all(f"predict@{model}-{s}" in stages for s in params["splits"])
    # every stage with jobs here (audit_run has none while audit.repeats is 1)
    assert {s.name for s in Pipeline(params, project).stages} | {"recipes"} == {name.split("@")[0] for name in stages}
    assert {s.name for s in STAGES} - {s.name for s in Pipeline(params, project).stages} == {"audit_run"}


def test_audit_repeats_are_a_dimension_with_no_job_while_the_audit_is_off() -> None:
    """repeats: 1 (the default) adds no job and no DVC stage; repeats: 3 adds one audit_run job per
    model and repeat 1..2, a DVC matrix over the repeats written out (DVC has no range), and the
    per-model audit reads them; a dvc.yaml made for other repeats is stale."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    assert params["audit"]["repeats"] == 1
    off = Pipeline(params, ROOT)
    assert not [j for j in off.jobs() if j.stage.name == "audit_run"]
    assert "audit_run" not in yaml.safe_load(render_dvc_yaml(off))["stages"]
    audit_off = next(j for j in off.jobs() if j.name == f"audit@{off.models[0]}")
    assert not [i for i in audit_off.inputs if i.startswith("results/audit/")]
    on = Pipeline({**params, "audit": {**params["audit"], "repeats": 3}}, ROOT)
    runs = [j.name for j in on.jobs() if j.stage.name == "audit_run"]
    assert runs == [f"audit_run@{m}-{r}" for m in on.models for r in (1, 2)]
    stage = yaml.safe_load(render_dvc_yaml(on))["stages"]["audit_run"]
    assert stage["matrix"] == {"model": "${models}", "repeat": [1, 2]}
    audit_on = next(j for j in on.jobs() if j.name == f"audit@{on.models[0]}")
    assert [i for i in audit_on.inputs if i.startswith("results/audit/")] == [
        f"results/audit/{on.models[0]}/r{r}.json" for r in (1, 2)
    ]
    # repeat 1's job reads no audit.repeats: its recipe is the same for 2 and 3 repeats
    two = Pipeline({**params, "audit": {**params["audit"], "repeats": 2}}, ROOT)
    job = {j.name: j for j in on.jobs()}[f"audit_run@{on.models[0]}-1"]
    assert on.reads(job) == two.reads({j.name: j for j in two.jobs()}[job.name]) and "audit.repeats" not in on.reads(job)
    assert render_dvc_yaml(on) != render_dvc_yaml(two) != render_dvc_yaml(off)


@pytest.mark.slow  # plans with both tools
def test_both_tools_plan_the_same_audit_repeats(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "repeats"
    shutil.copytree(project, other, symlinks=True)
    text = (other / "params.yaml").read_text(encoding="utf-8")
    (other / "params.yaml").write_text(text.replace("  repeats: 1\n", "  repeats: 3\n", 1), encoding="utf-8")
    subprocess.run([str(BIN / "sabre"), "generate"], cwd=other, capture_output=True, text=True, check=True)
    plan, stages = dvc_plan(other)
    assert snakemake_plan(other) == plan
    models = yaml.safe_load(text)["models"]
    assert sorted(s for s in stages if s.startswith("audit_run@")) == sorted(f"audit_run@{m}-{r}" for m in models for r in (1, 2))
    assert sum(n for cmd, n in plan.items() if cmd[3:4] == ("audit-run",)) == 2 * len(models)


def test_dvc_yaml_check_catches_an_edited_dvc_yaml(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(project, other, symlinks=True)
    text = (other / "dvc.yaml").read_text(encoding="utf-8")
    assert "--outdir results/tables" in text
    (other / "dvc.yaml").write_text(text.replace("--outdir results/tables", "--outdir results/tables --x", 1))
    proc = subprocess.run([str(BIN / "sabre"), "generate", "--check"], cwd=other, capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "run `sabre generate`" in proc.stderr
    rules = other / "workflow/rules/scoring.smk"  # a rule file edited by hand is caught too
    (other / "dvc.yaml").write_text(text, encoding="utf-8")
    rules.write_text(rules.read_text(encoding="utf-8").replace("--output", "--outptu", 1), encoding="utf-8")
    proc = subprocess.run([str(BIN / "sabre"), "generate", "--check"], cwd=other, capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "workflow/rules/scoring.smk" in proc.stderr


@pytest.mark.slow  # plans with both tools
def test_adding_a_model_needs_no_regeneration(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "model"
    shutil.copytree(project, other, symlinks=True)
    before = (other / "dvc.yaml").read_bytes()
    set_param_models(other, NEW_MODEL)
    params = yaml.safe_load((other / "params.yaml").read_text(encoding="utf-8"))
    assert render_dvc_yaml(Pipeline(params, other)).encode() == before
    names = set(dvc(other, "stage", "list", "--name-only").stdout.split())
    assert {"evaluate@always_yes_again", "predict@always_yes_again-context", "intervals@always_yes_again"} <= names


@pytest.mark.slow  # plans with both tools
def test_a_local_source_has_no_demo_stage_and_depends_on_each_splits_folder(
    project: Path, tmp_path: Path, demo_dir: Path
) -> None:
    from layouts import write_layout

    other = tmp_path / "local"
    shutil.copytree(project, other, symlinks=True)
    mirror = write_layout(demo_dir, tmp_path / "mirror", "shards")
    text = (other / "params.yaml").read_text(encoding="utf-8")
    (other / "params.yaml").write_text(text.replace("source: demo", f"source: {mirror}", 1), encoding="utf-8")
    params = yaml.safe_load((other / "params.yaml").read_text(encoding="utf-8"))
    stages = yaml.safe_load(render_dvc_yaml(Pipeline(params, other)))["stages"]
    assert "demo_data" not in stages
    assert stages["fetch"]["do"]["deps"][:2] == [f"{mirror}/README.md", f"{mirror}/${{item}}"]
    # the Snakefile regenerates dvc.yaml for the new source; then both plan the same commands
    smk(other, "-n", "all")
    assert snakemake_plan(other) == dvc_plan(other)[0]
    assert "demo-data" not in str(snakemake_plan(other))


def test_generate_writes_the_command_map_and_captions_and_removes_a_stale_caption(project: Path, tmp_path: Path) -> None:
    """The command map and the caption files are generated too: an edited map, an edited caption and
    the caption of an output no stage shows are each caught by --check, and `sabre generate` mends all three."""
    other = tmp_path / "other"
    shutil.copytree(project, other, symlinks=True)
    cmap = other / "src/sabre_prior/commandmap.py"
    cmap.write_text(cmap.read_text(encoding="utf-8").replace('    "fetch": "data.commands",\n', ""), encoding="utf-8")
    cap = other / "src/sabre_prior/resources/caption_main_results.rst"
    fresh_caption = cap.read_text(encoding="utf-8")
    cap.write_text(fresh_caption.replace("The main table", "A table"), encoding="utf-8")
    gone = other / "src/sabre_prior/resources/caption_dropped_table.rst"
    gone.write_text("A table no stage makes any more.\n", encoding="utf-8")
    proc = subprocess.run([str(BIN / "sabre"), "generate", "--check"], cwd=other, capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    for name in ("commandmap.py", "caption_main_results.rst", "caption_dropped_table.rst"):
        assert name in proc.stderr, proc.stderr
    proc = subprocess.run([str(BIN / "sabre"), "generate"], cwd=other, capture_output=True, text=True, check=True)
    assert "2 of" in proc.stdout and "1 removed" in proc.stdout, proc.stdout
    assert not gone.exists() and cap.read_text(encoding="utf-8") == fresh_caption
    assert cmap.read_text(encoding="utf-8") == (project / "src/sabre_prior/commandmap.py").read_text(encoding="utf-8")
    proc = subprocess.run([str(BIN / "sabre"), "generate", "--check"], cwd=other, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_generate_outside_a_checkout_writes_no_package_files(tmp_path: Path) -> None:
    """A project without the package source (sabre installed from a wheel): `sabre generate` writes
    dvc.yaml and the rule files, and no src/ tree (the command map and captions are the package's)."""
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    proc = subprocess.run([str(BIN / "sabre"), "generate"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "dvc.yaml").is_file() and (tmp_path / "workflow/rules/report.smk").is_file()
    assert not (tmp_path / "src").exists()
