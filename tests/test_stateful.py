"""Neither tool says "up to date" while an output is stale, and a dry run changes nothing: a stateful
property test (issue 32, points 3, 4 and 6).

Hypothesis drives random sequences of {add a model, remove it, change a model's setting, rename a
model, change the non-answer threshold, `snakemake all`, `dvc repro`, a rule's command run by hand,
SIGKILL of either tool at a random moment followed by the documented recovery (the same command
again; `snakemake --unlock` first where Snakemake says a killed run left its lock)} on a copy of the
finished demo run. After every step: `snakemake -n all` and `dvc status` write no file of the
project; when either tool has nothing to do, every tracked output is byte-identical to a fresh
clone's run on the same params.yaml; after every completed run both have nothing to do. Bounded for
CI (SABRE_STATEFUL_EXAMPLES, default 2 sequences of up to SABRE_STATEFUL_STEPS=5 steps).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from dvc_helpers import BIN, PLANTED, copy_tree, digests, dvc, make_repo, out, planned_jobs, run, smk
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test
from project import env

pytestmark = pytest.mark.slow

EXTRA = {"backend": "baseline", "strategy": "always_yes", "display_name": "Always yes (again)"}
UP_TO_DATE = "Data and pipelines are up to date."
_REFERENCES: dict[str, dict[str, str]] = {}
LOCKED = "Directory cannot be locked"


def tree_state(project: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file of the project: what a dry run must not touch. Left out: git's own
    folder; DVC's scratch folder `.dvc/tmp`, where every DVC command, `dvc status` too, writes its
    repository lock files (`lock`, `rwlock`: DVC's own locking, git-ignored by `.dvc/.gitignore`); and
    Snakemake's `.snakemake/iocache/latest.pkl`, the file inventory every dry run of Snakemake 9 saves
    for a later `--trust-io-cache` (`dag.py`: "The iocache is now up-to-date and can be persisted")."""
    return {
        str(p.relative_to(project)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in project.rglob("*")
        if p.is_file() and p.relative_to(project).parts[:1] != (".git",)
        and p.relative_to(project).parts[:2] not in ((".dvc", "tmp"), (".snakemake", "iocache"))
    }


def _reference(scratch: Path, params_text: str) -> dict[str, str]:
    """The digests a fresh clone's `snakemake all` gives for this params.yaml (cached per params)."""
    if params_text not in _REFERENCES:
        fresh = make_repo(scratch / f"fresh{len(_REFERENCES)}")
        (fresh / "params.yaml").write_text(params_text, encoding="utf-8")
        smk(fresh, "--cores", "2", "all")
        _REFERENCES[params_text] = digests(fresh)
    return _REFERENCES[params_text]


def temp_files(project: Path) -> list[str]:
    return [str(p.relative_to(project)) for d in ("data", "results") for p in (project / d).rglob(".sabre-tmp.*")]


class Pipelines(RuleBasedStateMachine):
    base: Path
    scratch: Path
    counter = 0

    @initialize()
    def start(self) -> None:
        Pipelines.counter += 1
        self.work = copy_tree(self.base, self.scratch / f"run{Pipelines.counter}")
        self.params = yaml.safe_load((self.work / "params.yaml").read_text(encoding="utf-8"))
        self.complete = True  # the outputs are a finished run's

    # -- edits -------------------------------------------------------------------
    def _write(self) -> None:
        (self.work / "params.yaml").write_text(yaml.safe_dump(self.params, sort_keys=False), encoding="utf-8")
        self.complete = False

    @rule()
    def add_model(self) -> None:
        self.params["models"]["always_yes_again"] = dict(EXTRA)
        self._write()

    @rule()
    def remove_model(self) -> None:
        self.params["models"].pop("always_yes_again", None)
        self._write()

    @rule(seed=st.sampled_from([0, 7]))
    def change_setting(self, seed: int) -> None:
        self.params["models"]["random"]["seed"] = seed
        self._write()

    @rule(name=st.sampled_from(["Random", "Random guess"]))
    def rename(self, name: str) -> None:
        self.params["models"]["random"]["display_name"] = name
        self._write()

    @rule(rate=st.sampled_from([0.05, 1.0]))
    def change_threshold(self, rate: float) -> None:
        """The setting issue 32 found a stale table for: every command that reads it re-runs."""
        self.params["analysis"]["report"]["max_nonanswer_rate"] = rate
        self._write()

    # -- runs --------------------------------------------------------------------
    def _again(self, cmd: list[str]) -> None:
        """The documented recovery: the same command again; `snakemake --unlock` first when Snakemake
        says a killed run left its lock (Snakemake's own advice in that message)."""
        proc = run(cmd, self.work, check=False)
        if proc.returncode != 0 and LOCKED in out(proc):
            smk(self.work, "--unlock")
            proc = run(cmd, self.work, check=False)
        assert proc.returncode == 0, out(proc)[-3000:]

    @rule()
    def snakemake_all(self) -> None:
        self._again([str(BIN / "snakemake"), "--cores", "2", "all"])
        self.complete = True

    @rule()
    def dvc_repro(self) -> None:
        self._again([str(BIN / "dvc"), "repro"])
        self.complete = True

    @rule(command=st.sampled_from(["tables", "compare"]))
    def hand_run(self, command: str) -> None:
        """A rule's command by hand, without the settings the rule passes: it reads params.yaml."""
        args = {
            "tables": ["--metrics-dir", "results/metrics", "--intervals-dir", "results/intervals", "--data", "data/parquet",
                       "--outdir", "results/tables"],
            "compare": ["--traces-dir", "results/traces", "--outdir", "results/tables"],
        }[command]  # fmt: skip
        proc = run([str(BIN / "sabre"), command, *args], self.work, check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]

    @rule(tool=st.sampled_from(["snakemake", "dvc"]), delay=st.floats(0.2, 12.0))
    def kill_and_recover(self, tool: str, delay: float) -> None:
        cmd = [str(BIN / "snakemake"), "--cores", "2", "all"] if tool == "snakemake" else [str(BIN / "dvc"), "repro"]
        proc = subprocess.Popen(cmd, cwd=self.work, env={**env(), **PLANTED}, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        time.sleep(delay)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the tool and every job it started
        proc.wait()
        self._again(cmd)
        assert temp_files(self.work) == []
        self.complete = True

    # -- what must hold ------------------------------------------------------------
    @invariant()
    def dry_runs_change_nothing_and_up_to_date_means_fresh(self) -> None:
        if not hasattr(self, "work"):
            return
        before = tree_state(self.work)
        todo = planned_jobs(out(smk(self.work, "-n", "all")))
        clean = UP_TO_DATE in dvc(self.work, "status").stdout
        assert tree_state(self.work) == before, "a dry run wrote to the project"
        if self.complete:
            assert not todo and clean, f"a finished run left work: snakemake {todo}, dvc clean: {clean}"
        if not todo or clean:
            text = (self.work / "params.yaml").read_text(encoding="utf-8")
            assert digests(self.work) == _reference(self.scratch, text), "a tool says up to date over a stale output"


def test_any_sequence_of_edits_runs_and_kills_keeps_both_tools_honest(demo_repo_run: Path, tmp_path: Path) -> None:
    Pipelines.base = demo_repo_run
    Pipelines.scratch = tmp_path
    _REFERENCES[(demo_repo_run / "params.yaml").read_text(encoding="utf-8")] = digests(demo_repo_run)
    run_state_machine_as_test(
        Pipelines,
        settings=settings(
            max_examples=int(os.environ.get("SABRE_STATEFUL_EXAMPLES", "2")),
            stateful_step_count=int(os.environ.get("SABRE_STATEFUL_STEPS", "5")),
            deadline=None,
            derandomize=True,  # the same sequences in every CI run
            suppress_health_check=list(HealthCheck),
            database=None,
        ),
    )
