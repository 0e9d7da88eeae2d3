"""DVC records and shares what Snakemake makes (real runs of both on the demo, in temporary git repos).

dvc.yaml has one stage whose command runs Snakemake, so both tools run the same jobs: Snakemake
decides. The pipeline is built once per session by `snakemake --cores 2 all` (with secrets planted in
the environment); each scenario works on a copy of that tree, mtimes and .snakemake/ included.
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
    AGGREGATES,
    NEW_MODEL,
    PER_MODEL,
    PLANTED,
    copy_tree,
    dvc,
    dvc_ran_stage,
    git,
    jobs_run,
    out,
    planned_jobs,
    set_param_models,
    smk,
    timed,
)
from project import BIN, ROOT

pytestmark = pytest.mark.slow

UP_TO_DATE = "Data and pipelines are up to date."


def _params(project: Path) -> dict:
    return yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def built(demo_repo_run: Path) -> Path:
    """The session's `snakemake --cores 2 all` in a git repo of the project (tests/conftest.py). Read-only."""
    return demo_repo_run


def _lock(project: Path) -> dict:
    return yaml.safe_load((project / "dvc.lock").read_text())["stages"]


def _tracked(project: Path) -> list[str]:
    return [o["path"] for entry in _lock(project).values() for o in entry.get("outs", [])]


@pytest.fixture
def work(built: Path, tmp_path: Path) -> Path:
    return copy_tree(built, tmp_path / "work")


def _models_run(output: str) -> set[str]:
    return {wc["model"] for _, wc in jobs_run(output) if "model" in wc}


# ---------------------------------------------------------------------------
# after a Snakemake run
# ---------------------------------------------------------------------------
def test_snakemake_run_records_the_stage_and_dvc_is_clean(built: Path) -> None:
    assert UP_TO_DATE in dvc(built, "status").stdout
    lock = _lock(built)
    assert list(lock) == ["pipeline"]
    entry = lock["pipeline"]
    assert all(o.get("md5") for o in entry["outs"])  # every output hashed (and so in the cache)
    assert {p["path"] for p in entry["deps"]} == {"Snakefile", "workflow", "src/sabre_prior"}
    assert entry["params"]["params.yaml"]["models"] == _params(built)["models"]


def test_git_ignores_what_dvc_tracks(built: Path) -> None:
    tracked_by_dvc = _tracked(built)
    extra = [".snakemake", ".dvc/cache", ".dvc/tmp"]
    ignored = git(built, "check-ignore", *tracked_by_dvc, *extra).stdout.split()
    assert set(ignored) == {*tracked_by_dvc, *extra}
    changed = git(built, "status", "--porcelain", "--untracked-files=all").stdout.split("\n")
    # nothing for git to see but dvc.lock, which this repository does not commit (a user commits it
    # with params.yaml after a real run: README, "Share with a colleague")
    assert {line[3:] for line in changed if line} == {"dvc.lock"}


def test_no_planted_secret_in_dvc_or_snakemake_state(built: Path) -> None:
    places = [built / "dvc.lock", built / "params.yaml", built / ".dvc", built / ".snakemake", built / "results/logs"]
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
    assert not dvc_ran_stage(out(proc)) and "didn't change" in out(proc)
    # timings are printed, not asserted: the speed targets are checked by benchmarks/bench_dag.py
    print(f"\nno-op: snakemake --cores 2 all {smk_s:.1f} s, dvc repro {dvc_s:.1f} s")


# ---------------------------------------------------------------------------
# DVC restores files with new mtimes: one documented step adopts them
# ---------------------------------------------------------------------------
def test_after_a_checkout_into_an_empty_tree_one_touch_adopts_the_outputs(work: Path) -> None:
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
    dry = out(smk(work, "-n", "all"))
    assert "snakemake --touch --forceall --cores 1" in dry  # the warning names the step
    before = {p: p.read_bytes() for p in (work / "results").rglob("*") if p.is_file()}
    smk(work, "--touch", "--forceall", "--cores", "1")
    assert {p: p.read_bytes() for p in (work / "results").rglob("*") if p.is_file() and "logs" not in p.parts} == {
        p: b for p, b in before.items() if "logs" not in p.parts
    }
    dry = out(smk(work, "-n", "all"))
    assert planned_jobs(dry) == {} and "--touch" not in dry
    assert UP_TO_DATE in dvc(work, "status").stdout
    # Snakemake now knows the settings each output was made with: a changed one re-runs its jobs
    text = (work / "params.yaml").read_text()
    (work / "params.yaml").write_text(text.replace("  seed: 0\n  confidence", "  seed: 3\n  confidence", 1))
    assert planned_jobs(out(smk(work, "-n", "all"))).get("intervals") == len(_params(work)["models"])


def test_an_edited_output_is_an_input_to_what_reads_it(work: Path) -> None:
    """A prediction edited by hand: DVC reports the stage's outputs modified, Snakemake re-runs what reads
    the file (Snakemake compares times, not contents); afterwards both tools agree again."""
    path = work / "results/predictions/prior/language.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["prediction"] = "Z" if first["prediction"] != "Z" else "Y"
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    assert "modified" in dvc(work, "status").stdout
    jobs = planned_jobs(out(smk(work, "-n", "all")))
    assert jobs.get("evaluate") == 1 and "predict" not in jobs, jobs
    smk(work, "--cores", "2", "all")
    assert UP_TO_DATE in dvc(work, "status").stdout
    assert planned_jobs(out(smk(work, "-n", "all"))) == {}


# ---------------------------------------------------------------------------
# adding or changing one model re-runs only that model (plus aggregation)
# ---------------------------------------------------------------------------
def test_dvc_repro_after_adding_a_model_runs_only_its_jobs(new_model_dvc_repro: Path, tmp_path: Path) -> None:
    """`dvc repro` after adding a model (the session's run of that step, tests/conftest.py) runs
    Snakemake, which runs only the new model's jobs and the aggregates; both tools then agree."""
    work = copy_tree(new_model_dvc_repro / "project", tmp_path / "work")
    text = (new_model_dvc_repro / "dvc_repro.out").read_text(encoding="utf-8")
    seconds = float((new_model_dvc_repro / "dvc_repro.seconds").read_text())
    jobs = jobs_run(text)
    print(f"\ndvc repro after adding a model: {len(jobs)} jobs in {seconds:.1f} s")
    assert dvc_ran_stage(text)
    assert _models_run(text) == {"always_yes_again"}
    assert {r for r, _ in jobs} <= AGGREGATES | PER_MODEL
    assert sum(1 for r, _ in jobs if r == "predict") == len(_params(work)["splits"])
    assert planned_jobs(out(smk(work, "-n", "all"))) == {}
    assert UP_TO_DATE in dvc(work, "status").stdout


def test_snakemake_after_adding_a_model_runs_only_its_jobs(work: Path) -> None:
    set_param_models(work, NEW_MODEL)
    assert "models" in dvc(work, "status").stdout  # DVC names the setting
    proc = smk(work, "--cores", "2", "all")
    assert _models_run(out(proc)) == {"always_yes_again"}
    assert {r for r, _ in jobs_run(out(proc))} - PER_MODEL == AGGREGATES - {"dvc_lock"}
    assert UP_TO_DATE in dvc(work, "status").stdout


def test_changing_one_models_settings_reruns_only_that_model(work: Path) -> None:
    params = (work / "params.yaml").read_text()
    block = re.search(r"\n  random:\n(    .*\n)+", params)
    assert block and "seed: 0" in block.group(0)
    (work / "params.yaml").write_text(params.replace(block.group(0), block.group(0).replace("seed: 0", "seed: 7")))
    proc = dvc(work, "repro")
    assert dvc_ran_stage(out(proc)) and _models_run(out(proc)) == {"random"}
    assert sum(1 for r, _ in jobs_run(out(proc)) if r == "predict") == len(_params(work)["splits"])
    assert planned_jobs(out(smk(work, "-n", "all"))) == {}


def test_renaming_a_model_reruns_only_what_shows_the_name(work: Path) -> None:
    text = (work / "params.yaml").read_text()
    (work / "params.yaml").write_text(text.replace("display_name: World prior", "display_name: Prior-following", 1))
    jobs = planned_jobs(out(smk(work, "-n", "all")))
    assert jobs and set(jobs) <= AGGREGATES, jobs


def test_a_code_edit_reruns_the_jobs_that_run_that_code(work: Path) -> None:
    """Editing the scoring code re-runs the jobs that score (evaluate, the prompt runs, the audit) and what
    reads their outputs, never a prediction or a fetch."""
    evaluate_py = work / "src/sabre_prior/scoring/evaluate.py"
    evaluate_py.write_text(evaluate_py.read_text() + "\n# an edit\n")
    models = list(_params(work)["models"])
    assert "src/sabre_prior" in dvc(work, "status").stdout
    jobs = planned_jobs(out(smk(work, "-n", "all")))
    assert jobs["evaluate"] == len(models) and jobs["prompt_run"] == len(models) and jobs["audit"] == len(models), jobs
    # predict imports the scoring code (to check answers as they come): its jobs re-run too, from the journal
    assert "fetch" not in jobs and "demo_data" not in jobs
    proc = dvc(work, "repro")
    assert dvc_ran_stage(out(proc))
    assert planned_jobs(out(smk(work, "-n", "all"))) == {}
    assert UP_TO_DATE in dvc(work, "status").stdout


# ---------------------------------------------------------------------------
# metrics and plots
# ---------------------------------------------------------------------------
def test_dvc_metrics_show_one_row_per_model_with_the_headline_accuracies(work: Path) -> None:
    shown = json.loads(dvc(work, "metrics", "show", "--json").stdout)
    (workspace,) = shown.values()  # one revision: the workspace
    files = workspace["data"]
    params = _params(work)
    assert set(files) == {f"results/headline/{m}.json" for m in params["models"]}
    for model in params["models"]:
        data = files[f"results/headline/{model}.json"]["data"]
        assert set(data) == {"macro", *params["splits"]}
        assert all(0.0 <= v <= 100.0 for v in data.values())
    table = dvc(work, "metrics", "show").stdout
    assert max(len(line) for line in table.splitlines()) <= 100, table  # reads in a terminal


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
