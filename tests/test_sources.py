"""Every kind of source under real Snakemake and DVC: local mirrors in each layout (a hub id: test_hub.py).

A temporary git repo of the project with one model (`random`) reads a local mirror built by
tests/layouts.py. The full scenario runs on the `nested` layout (metadata.jsonl, nested image
folders, lettered options); every other layout runs the fetch of two splits through Snakemake.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from dvc_helpers import AGGREGATES as AGGREGATE_RULES
from dvc_helpers import copy_tree, dvc, dvc_ran_stage, jobs_run, make_repo, out, planned_jobs, smk
from layouts import LAYOUTS, write_layout
from project import built_once

pytestmark = pytest.mark.slow

UP_TO_DATE = "Data and pipelines are up to date."
#: Jobs that read every model (or, prompt runs and the audit, a model's main answers) besides the
#: model's own predict, evaluate and intervals: they re-run when one split of one model changes.
AGGREGATES = AGGREGATE_RULES | {"prompt_run", "audit", "batch_audit"}


def use_source(project: Path, source: Path | str) -> None:
    """params.yaml with `source` and one model (keeps the runs short)."""
    params = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
    params["dataset"]["source"] = str(source)
    params["models"] = {"random": params["models"]["random"]}
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")


def edit_question(mirror: Path, split: str) -> None:
    path = mirror / "data" / split / "metadata.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows[0]["question"] = rows[0]["question"].rstrip("?") + " (edited)?"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("sources") / "base")


@pytest.fixture(scope="session")
def local_run(demo_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of the project on a mirror inside it, named by a relative path (``./mirror``),
    built once per test run (``built_once``): a copy of the project (``copy_tree``, with its mtimes)
    is a finished run on its own copy of the mirror, so a test can edit the copy's mirror without
    a full run first. Read-only: copy it."""

    def build(root: Path) -> None:
        project = make_repo(root / "project")
        write_layout(demo_dir, project / "mirror", "nested")
        use_source(project, "./mirror")
        proc = smk(project, "--cores", "2", "all")
        assert "recorded the pipeline's outputs in dvc.lock" in out(proc), out(proc)[-3000:]

    return built_once(tmp_path_factory, "sources-local-run", build) / "project"


def test_a_local_mirror_runs_end_to_end_and_both_tools_agree(local_run: Path) -> None:
    project = local_run
    assert UP_TO_DATE in dvc(project, "status").stdout
    assert not (project / "data" / "demo").exists()  # the demo is neither built nor read
    assert planned_jobs(out(smk(project, "-n", "all"))) == {}
    assert not dvc_ran_stage(out(dvc(project, "repro")))
    options = (project / "results/traces/random/language.jsonl").read_text()
    assert "A. A." not in options


def test_an_edited_split_refetches_only_that_split_in_snakemake(local_run: Path, tmp_path: Path) -> None:
    project = copy_tree(local_run, tmp_path / "p")  # with its own copy of the mirror, ./mirror
    assert planned_jobs(out(smk(project, "-n", "all"))) == {}
    edit_question(project / "mirror", "language")
    jobs = planned_jobs(out(smk(project, "-n", "all")))
    assert jobs.pop("fetch") == 1 and jobs.pop("predict") == 1 and jobs.pop("evaluate") == 1, jobs
    assert jobs.pop("intervals") == 1 and set(jobs) <= AGGREGATES, jobs
    log = out(smk(project, "--cores", "2", "all"))
    assert "--split language" in log and "--split context" not in log
    assert UP_TO_DATE in dvc(project, "status").stdout
    assert not dvc_ran_stage(out(dvc(project, "repro")))
    assert planned_jobs(out(smk(project, "-n", "all"))) == {}


def test_an_edited_split_is_refetched_by_dvc_repro_when_dvc_is_told(local_run: Path, tmp_path: Path) -> None:
    """DVC does not watch a local copy outside what dvc.yaml names (docs/orchestration.md says so):
    `dvc repro --force` runs Snakemake, which refetches exactly the edited split."""
    project = copy_tree(local_run, tmp_path / "p")  # with its own copy of the mirror, ./mirror
    edit_question(project / "mirror", "attribute")
    ran = jobs_run(out(dvc(project, "repro", "--force")))
    assert [(r, w.get("split")) for r, w in ran if r in ("fetch", "predict")] == [("fetch", "attribute"), ("predict", "attribute")]
    assert planned_jobs(out(smk(project, "-n", "all"))) == {}
    assert UP_TO_DATE in dvc(project, "status").stdout


@pytest.mark.parametrize("layout", [x for x in LAYOUTS if x != "nested"])
def test_every_layout_fetches(base: Path, demo_dir: Path, tmp_path: Path, layout: str) -> None:
    mirror = write_layout(demo_dir, tmp_path / "mirror", layout)
    project = copy_tree(base, tmp_path / "p")
    use_source(project, mirror)
    targets = ["data/parquet/context.parquet", "data/parquet/language.parquet"]
    smk(project, "--cores", "2", *targets)
    assert planned_jobs(out(smk(project, "-n", *targets))) == {}
    assert all((project / t).stat().st_size > 0 for t in targets)
