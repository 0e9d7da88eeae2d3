"""DVC tracks every artifact and agrees with Snakemake (real runs of both on the demo, in temporary git repos).

The pipeline is built once per module by `snakemake --cores 2 all` (with secrets planted in the
environment); each scenario works on a copy of that tree, mtimes and .snakemake/ included.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from pathlib import Path

import pytest
import yaml
from dvc_helpers import (
    NEW_MODEL,
    PLANTED,
    aggregate_stages,
    copy_tree,
    dvc,
    dvc_ran,
    git,
    out,
    planned_jobs,
    set_param_models,
    smk,
    timed,
)
from project import BIN, ROOT


pytestmark = pytest.mark.slow

UP_TO_DATE = "Data and pipelines are up to date."
#: Stages that aggregate over all models (re-run when a model is added or changed): from the declaration.
AGGREGATES = aggregate_stages()


def _params(project: Path) -> dict:
    return yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))


def _rule(stage: str) -> str:
    return stage.split("@", 1)[0]


def _model_of(stage: str) -> str | None:
    if "@" not in stage or stage.startswith("fetch@"):
        return None
    key = stage.split("@", 1)[1]
    if stage.startswith("prompt_run@"):  # <template>-<model>
        return key.split("-", 1)[1]
    return key.rsplit("-", 1)[0] if stage.startswith("predict@") else key


@pytest.fixture(scope="module")
def built(demo_repo_run: Path) -> Path:
    """The session's `snakemake --cores 2 all` in a git repo of the project (tests/conftest.py). Read-only."""
    return demo_repo_run


def _changed(project: Path) -> set[str]:
    """Stages `dvc status --json` reports (the public view of DVC's comparison with dvc.lock)."""
    text = dvc(project, "status", "--json").stdout.strip()
    return set(json.loads(text)) if text else set()


def _lock(project: Path) -> dict:
    return yaml.safe_load((project / "dvc.lock").read_text())["stages"]


def _tracked(project: Path) -> list[str]:
    return [o["path"] for entry in _lock(project).values() for o in entry.get("outs", [])]


@pytest.fixture
def work(built: Path, tmp_path: Path) -> Path:
    return copy_tree(built, tmp_path / "work")


# ---------------------------------------------------------------------------
# after a Snakemake run
# ---------------------------------------------------------------------------
def test_snakemake_run_leaves_every_stage_recorded_and_dvc_clean(built: Path) -> None:
    assert UP_TO_DATE in dvc(built, "status").stdout
    stages = dvc(built, "stage", "list", "--name-only").stdout.split()
    lock = yaml.safe_load((built / "dvc.lock").read_text())
    assert stages and set(lock["stages"]) == set(stages)
    for name, entry in lock["stages"].items():  # every output is hashed (and so in the cache)
        assert entry.get("outs"), name
        assert all(o.get("md5") for o in entry["outs"]), name


def test_git_ignores_what_dvc_tracks(built: Path) -> None:
    tracked_by_dvc = _tracked(built)
    extra = [".snakemake", ".dvc/cache", ".dvc/tmp", ".sabre/made", ".sabre/state"]
    ignored = git(built, "check-ignore", *tracked_by_dvc, *extra).stdout.split()
    assert set(ignored) == {*tracked_by_dvc, *extra}
    changed = git(built, "status", "--porcelain", "--untracked-files=all").stdout.split("\n")
    # nothing for git to see but dvc.lock, which this repository does not commit (a user commits it
    # with params.yaml after a real run: README, "Share with a colleague")
    assert {line[3:] for line in changed if line} == {"dvc.lock"}


def test_no_planted_secret_in_dvc_or_snakemake_state(built: Path) -> None:
    places = [built / "dvc.lock", built / "params.yaml", built / ".dvc", built / ".snakemake"]
    files = [p for place in places for p in ([place] if place.is_file() else place.rglob("*")) if p.is_file()]
    assert len(files) > 20
    for path in files:
        data = path.read_bytes()
        for name, secret in PLANTED.items():
            assert secret.encode() not in data, f"{name} written to {path}"


def test_no_op_runs_do_nothing(work: Path) -> None:
    proc, smk_s = timed([str(BIN / "snakemake"), "--cores", "2", "all"], work)
    assert planned_jobs(out(proc)) == {}
    proc, dvc_s = timed([str(BIN / "dvc"), "repro"], work)
    assert dvc_ran(out(proc)) == []
    # timings are printed, not asserted: the speed targets are checked by benchmarks/bench_dag.py
    print(f"\nno-op: snakemake --cores 2 all {smk_s:.1f} s, dvc repro {dvc_s:.1f} s")


# ---------------------------------------------------------------------------
# DVC restores files with new mtimes: Snakemake must not re-run anything
# ---------------------------------------------------------------------------
def test_checkout_into_an_empty_tree_needs_no_snakemake_job(work: Path) -> None:
    shutil.rmtree(work / "data")
    shutil.rmtree(work / "results")
    shutil.rmtree(work / ".snakemake")
    dvc(work, "checkout")
    # whatever order the files came back in: make every output older than every input
    files = sorted(p for d in ("data", "results") for p in (work / d).rglob("*"))
    random.Random(0).shuffle(files)
    for i, path in enumerate(files):
        os.utime(path, (1_600_000_000 + i, 1_600_000_000 + i))
    assert UP_TO_DATE in dvc(work, "status").stdout
    assert planned_jobs(out(smk(work, "-n", "all"))) == {}
    assert planned_jobs(out(smk(work, "-n", "all"))) == {}  # and it stays so


def test_an_edited_output_is_made_again_by_either_tool(work: Path) -> None:
    """An output is what its job makes: a prediction edited by hand is not what the predict job
    made, so both tools make it again (DVC: "modified" outs), and nothing downstream scores the edit."""
    path = work / "results/predictions/prior/language.jsonl"
    original = path.read_text()
    lines = original.splitlines()
    first = json.loads(lines[0])
    first["prediction"] = "Z" if first["prediction"] != "Z" else "Y"
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    assert "predict@prior-language" in _changed(work)
    jobs = planned_jobs(out(smk(work, "-n", "all")))
    assert jobs.get("predict") == 1, jobs
    smk(work, "--cores", "2", "all")
    assert UP_TO_DATE in dvc(work, "status").stdout
    assert path.read_text() == original


# ---------------------------------------------------------------------------
# adding or changing one model re-runs only that model (plus aggregation)
# ---------------------------------------------------------------------------
def _new_model_stages(params: dict) -> set[str]:
    m = "always_yes_again"
    return {
        *(f"predict@{m}-{s}" for s in params["splits"]), f"evaluate@{m}", f"intervals@{m}", f"audit@{m}",
        *(f"prompt_run@{t}-{m}" for t in params["prompt"]["templates"]),
    }  # fmt: skip


def test_dvc_repro_after_adding_a_model_runs_only_its_stages(new_model_dvc_repro: Path, tmp_path: Path) -> None:
    """`dvc repro` after adding a model (the session's run of that step, tests/conftest.py) runs only
    the new model's stages and the aggregates; Snakemake then has nothing to do."""
    work = copy_tree(new_model_dvc_repro / "project", tmp_path / "work")
    ran = dvc_ran((new_model_dvc_repro / "dvc_repro.out").read_text(encoding="utf-8"))
    seconds = float((new_model_dvc_repro / "dvc_repro.seconds").read_text())
    print(f"\ndvc repro after adding a model: {len(ran)} stages in {seconds:.1f} s: {', '.join(ran)}")
    assert set(ran) - AGGREGATES - {"recipes"} == _new_model_stages(_params(work))
    assert len(ran) == len(set(ran))
    assert not [s for s in ran if _model_of(s) not in (None, "always_yes_again")]
    assert planned_jobs(out(smk(work, "-n", "all"))) == {}  # Snakemake agrees afterwards


def test_snakemake_after_adding_a_model_runs_only_its_jobs(work: Path) -> None:
    set_param_models(work, NEW_MODEL)
    jobs = planned_jobs(out(smk(work, "-n", "all")))
    n_splits = len(_params(work)["splits"])
    assert jobs.pop("recipes") == 1  # params.yaml changed: DVC's stage `recipes` is out of date too
    assert jobs.pop("predict") == n_splits and jobs.pop("evaluate") == 1 and jobs.pop("intervals") == 1
    assert jobs.pop("prompt_run") == len(_params(work)["prompt"]["templates"]) and jobs.pop("audit") == 1
    assert set(jobs) <= AGGREGATES and all(n == 1 for n in jobs.values()), jobs
    smk(work, "--cores", "2", "all")
    assert UP_TO_DATE in dvc(work, "status").stdout


def test_changing_one_models_settings_reruns_only_that_model_in_both(work: Path) -> None:
    params = (work / "params.yaml").read_text()
    block = re.search(r"\n  random:\n(    .*\n)+", params)
    assert block and "seed: 0" in block.group(0)
    (work / "params.yaml").write_text(params.replace(block.group(0), block.group(0).replace("seed: 0", "seed: 7")))
    jobs = planned_jobs(out(smk(work, "-n", "all")))
    assert jobs["predict"] == len(_params(work)["splits"]) and jobs["evaluate"] == 1, jobs
    ran = dvc_ran(out(dvc(work, "repro")))
    assert {s for s in ran if s.startswith("predict@")} == {f"predict@random-{s}" for s in _params(work)["splits"]}
    assert not [s for s in ran if _model_of(s) not in (None, "random")]
    assert planned_jobs(out(smk(work, "-n", "all"))) == {}


def test_code_change_reruns_in_snakemake_what_dvc_would(work: Path) -> None:
    """A module's edit changes the recipe of exactly the jobs whose command imports it."""
    evaluate_py = work / "src/sabre_prior/scoring/evaluate.py"
    evaluate_py.write_text(evaluate_py.read_text() + "\n# an edit the recipes of the jobs importing it see\n")
    models = list(_params(work)["models"])
    templates = _params(work)["prompt"]["templates"]
    assert "recipes" in _changed(work)
    jobs = planned_jobs(out(smk(work, "-n", "all")))
    assert jobs["evaluate"] == len(models), jobs
    # the prompt runs score their answers with the same code, the audit reads the traces again (issue 21)
    assert jobs["audit"] == len(models) and jobs["prompt_run"] == len(templates) * len(models), jobs
    assert "predict" not in jobs and "fetch" not in jobs
    ran = [s for s in dvc_ran(out(dvc(work, "repro"))) if s != "recipes"]
    assert {s for s in ran if s.startswith("evaluate@")} == {f"evaluate@{m}" for m in models}
    assert not [s for s in ran if s.startswith(("predict@", "fetch@"))]
    assert planned_jobs(out(smk(work, "-n", "all"))) == {}
    assert UP_TO_DATE in dvc(work, "status").stdout


# ---------------------------------------------------------------------------
# metrics and plots
# ---------------------------------------------------------------------------
def test_dvc_metrics_show_every_models_split_accuracies(work: Path) -> None:
    shown = json.loads(dvc(work, "metrics", "show", "--json").stdout)
    (workspace,) = shown.values()  # one revision: the workspace
    files = workspace["data"]
    params = _params(work)
    for model in params["models"]:
        data = files[f"results/metrics/{model}.json"]["data"]
        assert 0.0 <= data["macro_accuracy"] <= 1.0
        for split in params["splits"]:
            assert 0.0 <= data[split]["accuracy"] <= 1.0
    table = dvc(work, "metrics", "show").stdout
    assert "macro_accuracy" in table and "context.accuracy" in table


def test_dvc_plots_show_renders_split_accuracy_by_model(work: Path) -> None:
    dvc(work, "plots", "show", "-o", "plots_html")
    html = (work / "plots_html" / "index.html").read_text()
    assert "xOffset" in html  # the grouped-bars template
    for model in _params(work)["models"]:
        assert f'"model": "{model}"' in html
    csv = (work / "results/plots/split_accuracy.csv").read_text().splitlines()
    assert csv[0] == "model,split,accuracy" and len(csv) == 1 + len(_params(work)["models"]) * 5


def test_root_has_dvc_configured_for_the_project() -> None:
    config = (ROOT / ".dvc" / "config").read_text()
    assert re.search(r"autostage\s*=\s*false", config) and re.search(r"analytics\s*=\s*false", config)
    ignore = (ROOT / ".dvcignore").read_text().split()
    assert {"__pycache__/", ".snakemake_timestamp"} <= set(ignore)
