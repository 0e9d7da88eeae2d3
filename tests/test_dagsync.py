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


# ---------------------------------------------------------------------------
# a damaged dvc.lock, the job graph, the locks, hand runs (fast: no tool runs)
# ---------------------------------------------------------------------------
import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402

import pytest  # noqa: E402

from sabre_prior.repro import dagsync, jobrun, state  # noqa: E402
from sabre_prior.repro.runlock import Busy, RunLock, dvc_busy  # noqa: E402

WHOLE = """schema: '2.0'
stages:
  tables:
    cmd: sabre tables
    deps:
    - path: results/metrics
      hash: md5
      md5: 0123456789abcdef0123456789abcdef.dir
    outs:
    - path: results/tables/main_results.md
      hash: md5
      md5: 0123456789abcdef0123456789abcdef
"""


@pytest.mark.parametrize(
    "text, why",
    [
        ("", "empty"),
        ("schema: '2.0'\nstages:\n  tables:\n    cmd: [unclosed\n", "not valid YAML"),
        ("schema: '2.0'\n", "does not hold"),
        (WHOLE.rsplit("      md5:", 1)[0], "cut short"),  # a rewrite stopped inside the last entry
        (WHOLE.split("    outs:")[0].replace("    cmd: sabre tables\n", ""), "cut short"),
    ],
)
def test_a_damaged_lock_is_named_and_a_whole_one_is_not(tmp_path: Path, text: str, why: str) -> None:
    (tmp_path / "dvc.lock").write_text(WHOLE, encoding="utf-8")
    assert dagsync.lock_damage(tmp_path) is None
    (tmp_path / "dvc.lock").write_text(text, encoding="utf-8")
    assert why in (dagsync.lock_damage(tmp_path) or "")
    dest = dagsync.quarantine_lock(tmp_path, "damaged")
    assert dest.read_text(encoding="utf-8") == text and not (tmp_path / "dvc.lock").exists()


def test_downstream_follows_outputs_to_their_readers() -> None:
    all_jobs = jobs()
    names = dagsync.downstream(all_jobs, ["predict@a-context"])
    assert {"predict@a-context", "evaluate@a", "intervals@a", "tables", "html_report"} <= names
    assert not {"predict@b-context", "evaluate@b", "fetch@context"} & names


def test_the_run_lock_refuses_a_second_orchestrator_and_a_hand_run(tmp_path: Path) -> None:
    (tmp_path / ".dvc").mkdir()
    (tmp_path / ".sabre").mkdir()
    first = RunLock(tmp_path)
    first.acquire()
    try:
        assert dvc_busy(tmp_path)  # DVC's own lock is held for the run
        with pytest.raises(Busy, match="another Snakemake run"):
            RunLock(tmp_path).acquire()
        from sabre_prior.repro.runlock import refuse_hand_run_while_busy

        env = {k: os.environ.pop(k) for k in ("DVC_STAGE", "SABRE_RUN") if k in os.environ}
        try:
            with pytest.raises(Busy, match="in progress"):
                refuse_hand_run_while_busy(tmp_path, "sabre tables")
        finally:
            os.environ.update(env)
        first.lend_dvc()
        assert not dvc_busy(tmp_path)  # lent to our own dvc call
        first.hold_dvc()
    finally:
        first.release()
    assert not dvc_busy(tmp_path)
    RunLock(tmp_path).acquire()  # released: a later run may start (and the kernel frees it on exit)


def test_a_made_record_proves_a_job_until_an_input_output_or_recipe_changes(tmp_path: Path) -> None:
    pipeline = Pipeline(PARAMS, tmp_path)
    job = next(j for j in pipeline.jobs() if j.name == "evaluate@a")
    for rel in (*job.inputs, *job.outputs, job.stamp):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel, encoding="utf-8")
    recipe = state.recipe_digest(tmp_path, job)
    assert not state.verify(tmp_path, job, recipe).proven  # no record yet
    state.write_made(tmp_path, job, recipe)
    assert state.verify(tmp_path, job, recipe).proven
    out = tmp_path / job.outputs[0]
    os.utime(out, ns=(1, 1))  # a moved timestamp alone proves nothing wrong
    assert state.verify(tmp_path, job, recipe).proven
    out.write_text("edited", encoding="utf-8")
    assert "changed" in state.verify(tmp_path, job, recipe).why
    out.write_text(job.outputs[0], encoding="utf-8")
    assert state.verify(tmp_path, job, recipe).proven
    assert "recipe" in state.verify(tmp_path, job, "another").why


def test_write_recipes_rewrites_only_changes_and_prunes_removed_jobs(tmp_path: Path) -> None:
    pipeline = Pipeline(PARAMS, tmp_path)
    first = state.write_recipes(pipeline)
    assert len(first) == len(pipeline.jobs())
    assert state.write_recipes(pipeline) == []
    renamed = {**PARAMS, "models": {"a": {"backend": "baseline", "display_name": "A!"}, "b": {"backend": "baseline"}}}
    changed = state.write_recipes(Pipeline(renamed, tmp_path))
    assert changed and not [p for p in changed if "/predict/" in p or "/evaluate/" in p], changed  # display only
    fewer = {**PARAMS, "models": {"a": {"backend": "baseline"}}}
    state.write_recipes(Pipeline(fewer, tmp_path))
    left = {p.relative_to(tmp_path / ".sabre/recipes").as_posix() for p in (tmp_path / ".sabre/recipes").rglob("*.json")}
    assert left == {j.stamp.split(".sabre/recipes/")[1] for j in Pipeline(fewer, tmp_path).jobs()}
    assert "evaluate/b.json" not in left
    recipe = json.loads((tmp_path / ".sabre/recipes/predict/a/context.json").read_text(encoding="utf-8"))
    assert "src/sabre_prior/inference/models/baseline.py" in recipe["code"]
    assert not [p for p in recipe["code"] if p.endswith(("report/tables.py", "repro/dagsync.py"))]


def _tables_parser() -> argparse.ArgumentParser:
    from sabre_prior import cli

    return cli.build_parser(["report.commands"])


def test_a_hand_run_takes_the_rules_arguments_or_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    root = Path(__file__).resolve().parents[1]
    shutil.copy(root / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "Snakefile").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for k in ("DVC_STAGE", "SABRE_RUN"):
        monkeypatch.delenv(k, raising=False)
    parser = _tables_parser()
    args = parser.parse_args(["tables"])
    adopted = jobrun.adopt(parser, ["tables"], args)
    assert adopted is not None and adopted.job.name == "tables"
    rule = Pipeline(yaml.safe_load((tmp_path / "params.yaml").read_text()), tmp_path).job(
        next(s for s in __import__("sabre_prior.repro.pipeline", fromlist=["STAGES"]).STAGES if s.name == "tables"), {})
    declared = {k: v for k, v in vars(parser.parse_args(jobrun._argv_of(rule.command))).items() if k != "log"}
    assert vars(args) == {**vars(args), **declared}
    args = parser.parse_args(["tables", "--intervals-dir", "results/elsewhere"])
    with pytest.raises(jobrun.HandRunRefused, match="--intervals-dir results/intervals"):
        jobrun.adopt(parser, [], args)
    args = parser.parse_args(["tables", "--outdir", str(tmp_path / "mine"), "--intervals-dir", "x"])
    assert jobrun.adopt(parser, [], args) is None  # writes elsewhere: allowed, not a pipeline job
