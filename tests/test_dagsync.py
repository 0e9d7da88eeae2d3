"""dag-sync's `dvc commit` targets: the fewest that name exactly the jobs a run finished (fast, no tools run)."""

from __future__ import annotations

from pathlib import Path

from sabre_prior.repro.dagsync import commit_targets
from sabre_prior.repro.pipeline import Pipeline

PARAMS = {
    "models": {"a": {"backend": "baseline"}, "b": {"backend": "baseline"}},
    "splits": ["context", "texture"],
    "dataset": {"source": "demo", "demo": {"scale": 1, "seed": 0}},
    "prompt": {"template": "t"},
    "analysis": {},
}


def jobs():
    return Pipeline(PARAMS, Path(__file__).resolve().parents[1]).jobs()


def test_every_job_is_one_call_without_targets_and_none_is_nothing() -> None:
    all_jobs = jobs()
    assert commit_targets(all_jobs, [j.name for j in all_jobs]) is None
    assert commit_targets(all_jobs, []) == []


def test_whole_groups_become_their_stage_name_and_the_rest_stay_instances() -> None:
    all_jobs = jobs()
    names = [j.name for j in all_jobs if j.stage.name == "predict"] + ["evaluate@a", "tables"]
    assert commit_targets(all_jobs, names) == ["predict", "evaluate@a", "tables"]


def test_a_group_of_one_instance_is_named_by_its_group() -> None:
    params = {**PARAMS, "models": {"a": {"backend": "baseline"}}}
    all_jobs = Pipeline(params, Path(__file__).resolve().parents[1]).jobs()
    assert commit_targets(all_jobs, ["evaluate@a", "intervals@a"]) == ["evaluate", "intervals"]
    assert commit_targets(all_jobs, []) == [] and commit_targets(all_jobs, ["fetch@context"]) == ["fetch@context"]
