"""Adding a prompt template or audit repeats re-runs only the new jobs, under Snakemake and DVC (issue 21).

Real runs of both tools on the demo (tests/conftest.py builds it once per session); each scenario
works on its own copy of the finished tree. The robustness demo's run (configs/robustness.yaml) is
made once and shared by the two tests that start from it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from dvc_helpers import copy_tree, dvc, dvc_ran_stage, jobs_run, out, planned_jobs, smk, timed
from project import BIN, built_once

pytestmark = pytest.mark.slow

UP_TO_DATE = "Data and pipelines are up to date."


@pytest.fixture
def work(demo_repo_run: Path, tmp_path: Path) -> Path:
    return copy_tree(demo_repo_run, tmp_path / "project")


@pytest.fixture(scope="session")
def robustness_run(demo_repo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the finished demo run with configs/robustness.yaml as params.yaml after
    `snakemake --cores 2 all`, once per test run for the tests that start there. The directory
    holds ``project/`` (the tree after the run) and ``dvc_status.out`` (`dvc status` right after
    it). Shared and read-only: copy it."""

    def build(root: Path) -> None:
        project = copy_tree(demo_repo_run, root / "project")
        (project / "params.yaml").write_text((project / "configs/robustness.yaml").read_text())
        smk(project, "--cores", "2", "all")
        (root / "dvc_status.out").write_text(dvc(project, "status").stdout)

    return built_once(tmp_path_factory, "robustness-run", build)


def _models(project: Path) -> list[str]:
    return list(yaml.safe_load((project / "params.yaml").read_text())["models"])


def _edit(project: Path, old: str, new: str) -> None:
    text = (project / "params.yaml").read_text()
    assert old in text, old
    (project / "params.yaml").write_text(text.replace(old, new, 1))


ADD_TEMPLATE = ("  templates: [screening_v1]", "  templates: [screening_v1, format_v1]")
ADD_REPEATS = ("  repeats: 1\n", "  repeats: 2\n")


def test_snakemake_after_adding_a_template_runs_only_its_jobs(work: Path) -> None:
    _edit(work, *ADD_TEMPLATE)
    jobs = planned_jobs(out(smk(work, "-n", "all")))
    # stability also writes cost.csv, which splits the cost by template
    expected = {"prompt_run": len(_models(work)), "prompt_sensitivity": 1, "stability": 1, "html_report": 1, "dvc_lock": 1}
    assert jobs == expected, jobs
    smk(work, "--cores", "2", "all")
    assert UP_TO_DATE in dvc(work, "status").stdout
    table = (work / "results/tables/prompt_sensitivity.csv").read_text().splitlines()
    assert len(table) == 1 + 2 * len(_models(work))  # header + models x templates
    assert sum(",format_v1," in row for row in table) == len(_models(work))


def test_dvc_repro_after_adding_a_template_runs_only_its_jobs(work: Path) -> None:
    _edit(work, *ADD_TEMPLATE)
    proc, seconds = timed([str(BIN / "dvc"), "repro"], work)
    ran = jobs_run(out(proc))
    print(f"\ndvc repro after adding a template: {len(ran)} jobs in {seconds:.1f} s")
    assert dvc_ran_stage(out(proc))
    assert sorted((r, w.get("template", "")) for r, w in ran) == sorted(
        [*(("prompt_run", "format_v1") for _ in _models(work)), ("prompt_sensitivity", ""), ("stability", ""),
         ("html_report", "")]  # fmt: skip
    )
    assert planned_jobs(out(smk(work, "-n", "all"))) == {}  # Snakemake agrees afterwards


def _repeats_planned(output: str) -> set[str]:
    """The (model, repeat) of every audit_run job in a Snakemake dry run ("wildcards: model=m, repeat=r")."""
    return {f"{m}-{r}" for m, r in re.findall(r"rule audit_run:.*?wildcards: model=(\w+), repeat=(\d+)", output, re.S)}


def test_snakemake_after_raising_repeats_runs_only_the_new_repeats_jobs(work: Path) -> None:
    """Repeat r is a job of its own (audit_run, wildcard `repeat`): 1 -> 2 -> 3 adds one job per model each time."""
    models = _models(work)
    _edit(work, *ADD_REPEATS)
    dry = out(smk(work, "-n", "all"))
    assert planned_jobs(dry) == {"audit_run": len(models), "audit": len(models), "stability": 1, "html_report": 1, "dvc_lock": 1}
    assert _repeats_planned(dry) == {f"{m}-1" for m in models}
    assert _repeats_planned(out(smk(work, "--cores", "2", "all"))) == {f"{m}-1" for m in models}
    first = {m: (work / f"results/audit/{m}/r1.json").read_bytes() for m in models}
    _edit(work, "  repeats: 2\n", "  repeats: 3\n")
    dry = out(smk(work, "-n", "all"))
    # only repeat 2's jobs and what reads them; repeat 1's jobs do not read audit.repeats
    assert planned_jobs(dry) == {"audit_run": len(models), "audit": len(models), "stability": 1, "html_report": 1, "dvc_lock": 1}
    assert _repeats_planned(dry) == {f"{m}-2" for m in models}
    assert _repeats_planned(out(smk(work, "--cores", "2", "all"))) == {f"{m}-2" for m in models}  # what ran
    assert {m: (work / f"results/audit/{m}/r1.json").read_bytes() for m in models} == first
    audit = json.loads((work / "results/audit/random.json").read_text())
    assert audit["enabled"] and audit["repeats"] == 3 and set(audit["usage"]) == {"r1", "r2"}
    assert all(len(v) == 3 for v in audit["answers"].values())
    assert re.search(r"\| Random \| 3 x \d+ \|", (work / "results/tables/stability.md").read_text())
    assert UP_TO_DATE in dvc(work, "status").stdout  # the run recorded itself in dvc.lock


def test_dvc_repro_after_raising_repeats_runs_only_the_new_repeats_jobs(work: Path) -> None:
    """dvc.yaml needs no change for another audit.repeats: DVC sees the setting changed, Snakemake
    runs the new repeat's jobs and what reads them."""
    models = _models(work)
    _edit(work, *ADD_REPEATS)
    assert "audit.repeats" in dvc(work, "status").stdout
    proc = dvc(work, "repro")
    assert _repeats_planned(out(proc)) == {f"{m}-1" for m in models}
    _edit(work, "  repeats: 2\n", "  repeats: 3\n")
    proc, seconds = timed([str(BIN / "dvc"), "repro"], work)
    ran = jobs_run(out(proc))
    print(f"\ndvc repro after raising audit.repeats 2 -> 3: {len(ran)} jobs in {seconds:.1f} s")
    assert sorted(r for r, _ in ran) == sorted(["audit_run"] * len(models) + ["audit"] * len(models) + ["stability", "html_report"])
    assert _repeats_planned(out(proc)) == {f"{m}-2" for m in models}
    assert json.loads((work / "results/audit/random.json").read_text())["repeats"] == 3
    assert planned_jobs(out(smk(work, "-n", "all"))) == {}  # Snakemake agrees afterwards


def test_main_table_is_the_same_with_the_robustness_demo(demo_repo_run: Path, robustness_run: Path) -> None:
    """configs/robustness.yaml (three templates, three repeats) leaves the main table as it was."""
    before = (demo_repo_run / "results/tables/main_results.csv").read_text()
    work = robustness_run / "project"
    assert (work / "results/tables/main_results.csv").read_text() == before
    sens = (work / "results/tables/prompt_sensitivity.csv").read_text()
    assert ",bare_v1," in sens and ",format_v1," in sens
    assert "true" in [row.split(",")[-1] for row in sens.splitlines()[1:]]  # bare_v1 draws unparseable answers: flagged
    flips = [json.loads((work / f"results/audit/{m}.json").read_text())["flipped"] for m in _models(work)]
    assert flips[_models(work).index("random")] > 0 and flips[_models(work).index("prior")] == 0
    assert UP_TO_DATE in (robustness_run / "dvc_status.out").read_text()


def _documented_sabre_commands() -> list[str]:
    """The `sabre ...` lines of the bash blocks of issue 21's docs."""
    from project import ROOT

    found = []
    for doc in ("docs/prompts.md", "docs/outcomes.md", "docs/stability.md"):
        in_block = False
        for line in (ROOT / doc).read_text(encoding="utf-8").splitlines():
            if line.startswith("```"):
                in_block = not in_block
                continue
            if in_block and line.startswith("sabre "):
                found.append(line)
    return found


def test_documented_sabre_commands_run_on_the_robustness_demo(robustness_run: Path, tmp_path: Path) -> None:
    import shlex

    from project import run

    commands = _documented_sabre_commands()
    assert len(commands) >= 7
    work = copy_tree(robustness_run / "project", tmp_path / "project")
    for command in commands:
        argv = shlex.split(command)
        run([str(BIN / argv[0]), *argv[1:]], work)
