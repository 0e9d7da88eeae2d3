"""Each tool in its own idiom (docs/orchestration.md): one run at a time under Snakemake's lock,
recovery after a kill by the same command, `dvc exp run`, a failed run that deletes nothing, and
the one repair this repository adds (`sabre recover`, for a dvc.lock cut short by a kill).
Real Snakemake and DVC runs on copies of the session's finished demo run."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from dvc_helpers import BIN, NEW_MODEL, PLANTED, copy_tree, digests, dvc, dvc_ran_stage, git, out, planned_jobs, run, smk, set_param_models
from project import env

pytestmark = pytest.mark.slow

UP_TO_DATE = "Data and pipelines are up to date."
LOCKED = "Directory cannot be locked"


@pytest.fixture
def work(demo_repo_run: Path, tmp_path: Path) -> Path:
    return copy_tree(demo_repo_run, tmp_path / "work")


def _start(cmd: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(cmd, cwd=cwd, env={**env(), **PLANTED}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)  # fmt: skip


def _wait_for_lock(project: Path, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    """Until Snakemake holds its lock on the project (a file under .snakemake/locks/)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if any((project / ".snakemake" / "locks").glob("*")):
            return
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        time.sleep(0.05)
    raise AssertionError("Snakemake took no lock")


def test_one_run_at_a_time_each_tool_refuses_with_its_own_message(work: Path) -> None:
    """While `dvc repro` runs (its Snakemake holds the lock), a second `snakemake` refuses with
    Snakemake's message and a second `dvc repro` with DVC's; the first run finishes untroubled."""
    set_param_models(work, NEW_MODEL)  # some work for the first run
    first = _start([str(BIN / "dvc"), "repro"], work)
    try:
        _wait_for_lock(work, first)
        second = smk(work, "--cores", "1", "all", check=False)
        assert second.returncode != 0 and LOCKED in out(second), out(second)[-2000:]
        third = dvc(work, "repro", check=False)
        # DVC's own refusal: its repository lock, or (while a stage runs) the stage's files are busy
        assert third.returncode != 0 and re.search(r"Unable to acquire lock|is busy, it is being blocked by", out(third)), out(third)[-2000:]
    finally:
        text, _ = first.communicate(timeout=600)
    assert first.returncode == 0, text[-3000:]
    assert UP_TO_DATE in dvc(work, "status").stdout and planned_jobs(out(smk(work, "-n", "all"))) == {}


def test_a_killed_run_recovers_with_the_same_command(work: Path, tmp_path: Path) -> None:
    """SIGKILL of Snakemake and every job while a model's jobs run: Snakemake says its lock is left
    and how to remove it (`--unlock`, as it documents); then the same command finishes: no temp file
    left, outputs byte-identical to an uninterrupted run, dvc.lock valid, the DVC cache complete."""
    set_param_models(work, NEW_MODEL)
    reference = copy_tree(work, tmp_path / "reference")
    smk(reference, "--cores", "2", "all")
    proc = _start([str(BIN / "snakemake"), "--cores", "2", "all"], work)
    _wait_for_lock(work, proc)
    time.sleep(3.0)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    again = smk(work, "--cores", "2", "all", check=False)
    if again.returncode != 0:  # the lock a SIGKILL leaves
        assert LOCKED in out(again) and "--unlock" in out(again), out(again)[-2000:]
        smk(work, "--unlock")
        again = smk(work, "--cores", "2", "all")
    assert "recorded the pipeline's outputs in dvc.lock" in out(again)
    assert [p for p in (work / "results").rglob(".sabre-tmp.*")] == []
    assert digests(work) == digests(reference)
    assert UP_TO_DATE in dvc(work, "status").stdout and planned_jobs(out(smk(work, "-n", "all"))) == {}
    remote = tmp_path / "remote"
    remote.mkdir()
    dvc(work, "remote", "add", "-d", "r", str(remote))
    dvc(work, "push")  # fails on a cache entry dvc.lock names but the cache lacks
    assert "in sync" in dvc(work, "status", "--cloud").stdout


def test_a_dvc_lock_cut_short_is_set_aside_by_sabre_recover(work: Path) -> None:
    """The gap DVC leaves (it writes dvc.lock in place): a file cut short in the middle of a value is
    not YAML, and DVC stops; `sabre recover` sets it aside, and the next run records the stage again.
    (A cut at a line's end is YAML DVC reads: it then reports the stage changed, and a run records it.)"""
    lock = work / "dvc.lock"
    lock.write_text(lock.read_text()[:200] + "\n  - path: [results/pre", encoding="utf-8")
    broken = dvc(work, "status", check=False)
    assert broken.returncode != 0 and "line" in out(broken), out(broken)
    proc = run([str(BIN / "sabre"), "recover"], work)
    assert "set aside the damaged dvc.lock" in proc.stdout and (work / ".sabre/damaged/dvc.lock").is_file()
    smk(work, "--cores", "2", "all")
    assert UP_TO_DATE in dvc(work, "status").stdout
    assert "set aside" not in run([str(BIN / "sabre"), "recover"], work).stdout  # a readable lock stays


def test_dvc_exp_run_sets_a_parameter_and_runs_what_it_touches(work: Path) -> None:
    git(work, "add", "dvc.lock")
    git(work, "commit", "-q", "-m", "results")
    proc = dvc(work, "exp", "run", "-S", "analysis.seed=3")
    assert dvc_ran_stage(out(proc))
    assert yaml.safe_load((work / "params.yaml").read_text())["analysis"]["seed"] == 3
    jobs = planned_jobs(out(proc))
    assert jobs["intervals"] == len(yaml.safe_load((work / "params.yaml").read_text())["models"]) and "predict" not in jobs
    assert UP_TO_DATE in dvc(work, "status").stdout
    assert planned_jobs(out(smk(work, "-n", "all"))) == {}


def test_a_failed_run_deletes_nothing(work: Path) -> None:
    """A bad setting stops both tools before any job: every file stays, both tools answer as before."""
    before = {p: p.stat().st_mtime_ns for p in (work / "results").rglob("*") if p.is_file()}
    status = dvc(work, "status").stdout
    text = (work / "params.yaml").read_text()
    (work / "params.yaml").write_text(text.replace("  source: demo\n", "  source: ./no-such-mirror\n", 1))
    for cmd in ([str(BIN / "snakemake"), "--cores", "2", "all"], [str(BIN / "dvc"), "repro"]):
        proc = run(cmd, work, check=False)
        assert proc.returncode != 0 and "no-such-mirror" in out(proc)
    assert {p: p.stat().st_mtime_ns for p in (work / "results").rglob("*") if p.is_file()} == before
    (work / "params.yaml").write_text(text)
    assert dvc(work, "status").stdout == status and planned_jobs(out(smk(work, "-n", "all"))) == {}


def test_a_run_with_other_settings_removes_no_result_of_params_yaml(work: Path) -> None:
    """`snakemake all --config 'splits=["context"]'`: the run on other settings says that it records
    nothing in dvc.lock and leaves every other split's results as they were (only a run on
    params.yaml's settings removes what its pipeline does not make; before, the other splits'
    predictions, usage and traces of every model were removed when such a run ended)."""
    before = digests(work)
    others = {p: d for p, d in before.items() if re.search(r"/(texture|attribute|language)\.(jsonl|json)$", p)}
    assert len(others) >= 3 * 3 * 4, sorted(others)  # predictions, usage and traces of 3 splits, 4+ models
    proc = smk(work, "--cores", "2", "all", "--config", 'splits=["context"]')
    assert "these results are not recorded in dvc.lock" in out(proc), out(proc)[-2000:]
    after = digests(work)
    assert {p: after.get(p) for p in others} == others
