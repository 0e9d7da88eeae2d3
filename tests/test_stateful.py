"""Both tools always agree, and agree with a clean run (issue 18, point 3): a stateful property test.

Hypothesis drives random sequences of {add a model, remove it, change a model's setting, rename a
model, `snakemake all`, `dvc repro`, a `sabre` command by hand, SIGKILL of either tool at a random
moment followed by the README's recovery step `sabre recover`} on a copy of the finished demo run.
After every step `snakemake -n all` must have nothing to do exactly when `dvc status` is clean;
after every completed run both must be clean and every tracked output byte-identical to a fresh
clone's run on the same params.yaml. Bounded for CI (SABRE_STATEFUL_EXAMPLES, default 2 sequences
of up to 5 steps); tests/test_bridge.py holds the issue's sequences as fixed regression cases.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from bridge_helpers import assert_agree, digests, temp_files
from dvc_helpers import BIN, PLANTED, copy_tree, dvc, make_repo, run, smk
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test
from project import env

pytestmark = pytest.mark.slow

EXTRA = {"backend": "baseline", "strategy": "always_yes", "display_name": "Always yes (again)"}
_REFERENCES: dict[str, dict[str, str]] = {}


def _reference(base: Path, scratch: Path, params_text: str) -> dict[str, str]:
    """The digests a fresh clone's `snakemake all` gives for this params.yaml (cached per params)."""
    if params_text not in _REFERENCES:
        fresh = make_repo(scratch / f"fresh{len(_REFERENCES)}")
        (fresh / "params.yaml").write_text(params_text, encoding="utf-8")
        smk(fresh, "--cores", "2", "all")
        _REFERENCES[params_text] = digests(fresh)
    return _REFERENCES[params_text]


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

    # -- runs --------------------------------------------------------------------
    @rule()
    def snakemake_all(self) -> None:
        smk(self.work, "--cores", "2", "all")
        self.complete = True

    @rule()
    def dvc_repro(self) -> None:
        dvc(self.work, "repro")
        self.complete = True

    @rule(command=st.sampled_from(["tables", "figures", "report", "compare"]))
    def hand_run(self, command: str) -> None:
        proc = run([str(BIN / "sabre"), command], self.work, check=False)
        # with the rule's arguments it runs (and writes the rule's bytes from the inputs on disk)
        assert proc.returncode == 0, proc.stderr[-2000:]

    @rule(tool=st.sampled_from(["snakemake", "dvc"]), delay=st.floats(0.2, 12.0))
    def kill_and_recover(self, tool: str, delay: float) -> None:
        cmd = [str(BIN / "snakemake"), "--cores", "2", "all"] if tool == "snakemake" else [str(BIN / "dvc"), "repro"]
        proc = subprocess.Popen(cmd, cwd=self.work, env={**env(), **PLANTED}, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(delay)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the tool and every job it started
        proc.wait()
        run([str(BIN / "sabre"), "recover"], self.work)  # the README's one recovery step
        assert temp_files(self.work) == []
        self.complete = False

    # -- what must hold ------------------------------------------------------------
    @invariant()
    def tools_agree(self) -> None:
        if not hasattr(self, "work"):
            return
        clean = assert_agree(self.work)
        if self.complete:
            assert clean, "a finished run left work for one of the tools"
            text = (self.work / "params.yaml").read_text(encoding="utf-8")
            assert digests(self.work) == _reference(self.base, self.scratch, text)


def test_any_sequence_of_edits_runs_and_kills_keeps_both_tools_in_step(demo_repo_run: Path, tmp_path: Path) -> None:
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
