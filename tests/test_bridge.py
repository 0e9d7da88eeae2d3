"""Snakemake and DVC as one system (issue 18): the fixed regression sequences, run for real.

Each test works on a copy of the session's finished demo run (tests/conftest.py) and checks,
after its sequence, that `snakemake -n all` has nothing to do exactly when `dvc status` is clean
and that the outputs are byte-identical to that clean run (same params.yaml at the end).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from bridge_helpers import assert_agree, digests, dvc_changed, smk_todo, temp_files
from dvc_helpers import BIN, NEW_MODEL, PLANTED, copy_tree, dvc, dvc_ran, out, run, smk
from project import env

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def clean(demo_repo_run: Path) -> dict[str, str]:
    return digests(demo_repo_run)


@pytest.fixture
def work(demo_repo_run: Path, tmp_path: Path) -> Path:
    return copy_tree(demo_repo_run, tmp_path / "work")


def _sabre(project: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run([str(BIN / "sabre"), *args], project, check=check)


def _rename(project: Path, old: str, new: str) -> None:
    path = project / "params.yaml"
    text = path.read_text(encoding="utf-8")
    assert f"display_name: {old}\n" in text
    path.write_text(text.replace(f"display_name: {old}\n", f"display_name: {new}\n", 1), encoding="utf-8")


def test_the_finished_run_agrees_and_a_second_run_of_either_tool_does_nothing(work: Path) -> None:
    assert assert_agree(work)
    assert "Nothing to be done" in out(smk(work, "--cores", "2", "all"))
    assert dvc_ran(out(dvc(work, "repro"))) == []


def test_add_a_model_dvc_repro_remove_it_snakemake_lists_only_params_models(
    demo_repo_run: Path, new_model_dvc_repro: Path, clean: dict[str, str], tmp_path: Path
) -> None:
    """A model added and `dvc repro` run (the session's run of that step, tests/conftest.py), then
    the model removed from params.yaml: Snakemake's run shows only the models params.yaml lists."""
    work = copy_tree(new_model_dvc_repro / "project", tmp_path / "work")
    original = (demo_repo_run / "params.yaml").read_text(encoding="utf-8")
    assert NEW_MODEL in (work / "params.yaml").read_text(encoding="utf-8") and NEW_MODEL not in original
    assert "Always yes (again)" in (work / "results/tables/main_results.md").read_text(encoding="utf-8")
    (work / "params.yaml").write_text(original, encoding="utf-8")
    proc = smk(work, "--cores", "2", "all")
    assert "Nothing to be done" not in out(proc)
    for table in ("main_results.md", "model_comparison.md", "paper_comparison.md"):
        assert "again" not in (work / "results/tables" / table).read_text(encoding="utf-8")
    assert "always_yes_again" not in (work / "results/report/index.html").read_text(encoding="utf-8")
    assert assert_agree(work) and dvc_changed(work) == set()
    assert digests(work) == clean


DATA_AND_MODEL_STAGES = {"predict", "evaluate", "intervals", "fetch", "demo_data"}


def test_going_back_to_a_state_snakemake_saw_after_dvc_built_another(work: Path, clean: dict[str, str]) -> None:
    """Display names changed back and forth under both tools. Each change reruns only what shows
    the name (no prediction, score, interval or data job) under either tool, and going back to a
    state Snakemake built after DVC built another is seen by both."""
    _rename(work, "Random", "Random A")
    todo = smk_todo(work)
    assert todo and not DATA_AND_MODEL_STAGES & set(todo), todo
    smk(work, "--cores", "2", "all")
    _rename(work, "Random A", "Random B")
    ran = dvc_ran(out(dvc(work, "repro")))
    assert ran and not [s for s in ran if s.split("@")[0] in DATA_AND_MODEL_STAGES], ran
    assert assert_agree(work)
    _rename(work, "Random B", "Random A")
    assert not assert_agree(work)  # both must see the change back to A
    smk(work, "--cores", "2", "all")
    assert "Random A" in (work / "results/report/index.html").read_text(encoding="utf-8")
    assert "Random B" not in (work / "results/tables/main_results.md").read_text(encoding="utf-8")
    _rename(work, "Random A", "Random")
    dvc(work, "repro")
    assert assert_agree(work)
    assert digests(work) == clean


def test_hand_runs_write_the_rules_bytes_or_refuse(work: Path, clean: dict[str, str]) -> None:
    for cmd in (["tables"], ["figures"], ["report"], ["evaluate", "--model", "random"]):
        if cmd[0] == "evaluate":  # evaluate names its model by its paths
            cmd = ["evaluate", "--predictions", "results/predictions/random"]
        _sabre(work, *cmd)
    assert digests(work) == clean
    assert assert_agree(work)
    refused = _sabre(work, "tables", "--intervals-dir", "results/nowhere", check=False)
    assert refused.returncode != 0 and "--intervals-dir results/intervals" in refused.stderr
    assert digests(work) == clean
    elsewhere = _sabre(work, "tables", "--outdir", str(work.parent / "mine"))
    assert elsewhere.returncode == 0 and (work.parent / "mine" / "main_results.md").is_file()


@pytest.mark.parametrize("source", ["Zesearch/SABRE-Prior", "./mirror-that-does-not-exist"])
def test_an_unresolvable_source_stops_and_names_it(work: Path, clean: dict[str, str], source: str) -> None:
    params = yaml.safe_load((work / "params.yaml").read_text(encoding="utf-8"))
    params["dataset"]["source"] = source
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    # the hub: HF_HUB_OFFLINE=1 in the tests, and no network: resolving the revision must fail
    before = (work / "dvc.yaml").read_bytes()
    proc = smk(work, "--cores", "2", "all", check=False)
    assert proc.returncode != 0
    assert source in out(proc) and "keeping" not in out(proc)
    assert digests(work, list(clean)) == clean  # nothing relabelled, nothing touched
    assert (work / "dvc.yaml").read_bytes() == before
    proc = dvc(work, "repro", check=False)  # DVC's stage `recipes` resolves the source and stops
    assert proc.returncode != 0 and source in out(proc)
    assert digests(work, list(clean)) == clean


def test_a_damaged_lock_is_repaired_by_sabre_recover(work: Path, clean: dict[str, str]) -> None:
    good = yaml.safe_load((work / "dvc.lock").read_text(encoding="utf-8"))
    (work / "dvc.lock").write_text("", encoding="utf-8")  # what a kill during DVC's rewrite leaves
    assert dvc(work, "status", check=False).returncode != 0
    proc = _sabre(work, "recover")
    assert "set aside" in out(proc)
    assert yaml.safe_load((work / "dvc.lock").read_text(encoding="utf-8")) == good
    assert assert_agree(work)
    assert digests(work) == clean


def _dvc_commit_running(project: Path) -> bool:
    """A `dvc commit` process working in ``project`` (the bridge's, after Snakemake's jobs)."""
    for proc_dir in Path("/proc").iterdir():
        if not proc_dir.name.isdigit():
            continue
        try:
            argv = (proc_dir / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(proc_dir / "cwd")
        except OSError:
            continue
        if b"commit" in argv and any(a.endswith(b"dvc") for a in argv) and cwd == str(project):
            return True
    return False


def test_a_kill_inside_dvc_commit_recovers_and_dvc_push_pushes_everything(
    work: Path, clean: dict[str, str], tmp_path: Path
) -> None:
    """SIGKILL of Snakemake and the bridge's `dvc commit` child while DVC copies outputs into its
    cache; after `sabre recover` the lock is a clean run's and a push to an empty remote carries
    every tracked output: a colleague's cache-less copy pulls them all, byte-identical."""
    _rename(work, "Random", "Random K")
    proc = subprocess.Popen(
        [str(BIN / "snakemake"), "--cores", "2", "all"], cwd=work, env={**env(), **PLANTED},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.monotonic() + 600
    while not _dvc_commit_running(work) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "the run ended before its dvc commit could be caught"
    os.killpg(proc.pid, signal.SIGKILL)  # Snakemake and its `dvc commit` child together
    proc.wait()
    assert temp_files(work) == []
    _sabre(work, "recover")
    assert assert_agree(work) and temp_files(work) == []
    renamed = digests(work)

    remote = tmp_path / "remote"
    remote.mkdir()
    dvc(work, "remote", "add", "-d", "empty", str(remote))
    dvc(work, "push")
    assert "in sync" in out(dvc(work, "status", "--cloud"))
    # a copy without the cache or any tracked output gets everything back from the remote alone
    other = copy_tree(work, tmp_path / "other")
    subprocess.run(["rm", "-rf", str(other / ".dvc/cache")], check=True)
    for rel in renamed:
        (other / rel).unlink()
    dvc(other, "pull")
    assert digests(other) == renamed and assert_agree(other)
    _rename(work, "Random K", "Random")
    smk(work, "--cores", "2", "all")
    assert assert_agree(work) and digests(work) == clean


def test_one_run_at_a_time_whichever_tool_started_first(work: Path) -> None:
    from sabre_prior.repro.runlock import RunLock

    # DVC holds its lock (as during `dvc repro`): Snakemake refuses at once
    import fcntl

    fd = os.open(work / ".dvc/tmp/lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        start = time.monotonic()
        proc = smk(work, "-n", "all", check=False)
        assert proc.returncode != 0 and "dvc repro" in out(proc), out(proc)[-2000:]
        assert time.monotonic() - start < 30
        hand = _sabre(work, "tables", check=False)
        assert hand.returncode != 0 and "running" in hand.stderr
    finally:
        os.close(fd)
    # a Snakemake run holds the run lock and DVC's lock: `dvc repro` refuses
    lock = RunLock(work)
    lock.acquire()
    try:
        proc = dvc(work, "repro", check=False)
        assert proc.returncode != 0 and "lock" in out(proc).lower()
        proc = smk(work, "-n", "all", check=False)
        assert proc.returncode != 0 and "another Snakemake run" in out(proc)
    finally:
        lock.release()
    assert assert_agree(work)


def test_editing_a_module_no_command_imports_reruns_no_job(work: Path, clean: dict[str, str]) -> None:
    """Only the bookkeeping job `recipes` runs (DVC's stage depends on the package folder); no job's
    recipe changes, so no job runs, under either tool."""
    (work / "src/sabre_prior/unused_helper.py").write_text('"""Nothing imports this."""\n', encoding="utf-8")
    assert smk_todo(work) == {"recipes": 1} and dvc_changed(work) == {"recipes"}
    log = out(smk(work, "--cores", "2", "all"))
    assert "localrule recipes" in log and "localrule tables" not in log
    assert assert_agree(work)
    (work / "src/sabre_prior/unused_helper.py").write_text('"""Still nothing imports this."""\n', encoding="utf-8")
    assert dvc_ran(out(dvc(work, "repro"))) == ["recipes"]
    assert assert_agree(work) and digests(work) == clean


def test_a_code_edit_reruns_only_the_jobs_that_import_it(work: Path, clean: dict[str, str]) -> None:
    path = work / "src/sabre_prior/report/figures.py"
    path.write_text(path.read_text(encoding="utf-8") + "\n# an edit that changes no output\n", encoding="utf-8")
    todo = smk_todo(work)
    assert "figures" in todo and not {"predict", "evaluate", "fetch"} & set(todo), todo
    smk(work, "--cores", "2", "all")
    assert assert_agree(work) and digests(work) == clean
