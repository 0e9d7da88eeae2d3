"""dvc.yaml mirrors the Snakemake workflow: the same (command, outputs) pairs for the current params."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from dvc_helpers import NEW_MODEL, make_repo, set_param_models
from project import ROOT

from sabre_prior import dvcsync
from sabre_prior.dvcsync import PlannedJob, normalize_command, outputs_agree, parity


@pytest.fixture(scope="module")
def root_plans() -> tuple[list[PlannedJob], list[PlannedJob]]:
    return dvcsync.snakemake_jobs(ROOT), dvcsync.dvc_jobs(ROOT)


def test_dvc_yaml_mirrors_every_snakemake_job(root_plans: tuple[list[PlannedJob], list[PlannedJob]]) -> None:
    smk, dvc = root_plans
    report = parity(ROOT, snakemake=smk, dvc=dvc)
    assert report.ok, report.describe()
    assert report.matched == len(smk) == len(dvc)
    rules = {j.name for j in smk}
    # every kind of artifact is covered, whatever later rules add
    assert {"demo_data", "fetch", "predict", "evaluate", "tables", "figures", "manifest", "plot_data"} <= rules


def test_stage_names_are_keyed_by_model_and_split(root_plans: tuple[list[PlannedJob], list[PlannedJob]]) -> None:
    import yaml

    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    names = {j.name for j in root_plans[1]}
    for model in params["models"]:
        assert f"evaluate@{model}" in names
        for split in params["splits"]:
            assert f"predict@{model}-{split}" in names
    for split in params["splits"]:
        assert f"fetch@{split}" in names
    assert not [n for n in names if re.search(r"@(model|split|item)\d|-(model|split|item)\d", n)]  # never by list index


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path}: {old!r} not found"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "project")


def test_a_changed_rule_command_breaks_parity(project: Path) -> None:
    _edit(project / "workflow/rules/report.smk", "sabre tables --metrics-dir", "sabre tables --verbose-flag --metrics-dir")
    report = parity(project)
    assert not report.ok
    assert {j.name for j in report.only_snakemake} == {"tables"}
    assert {j.name for j in report.only_dvc} == {"tables"}
    assert "only in Snakemake: rule tables" in report.describe()


def test_an_output_missing_from_dvc_yaml_breaks_parity(project: Path) -> None:
    _edit(project / "dvc.yaml", "      - results/tables/main_results_ci.csv\n", "")
    report = parity(project)
    assert [(s.name, d.name) for s, d in report.output_mismatch] == [("tables", "tables")]
    assert "outputs differ" in report.describe()


def test_adding_a_model_needs_no_edit_of_dvc_yaml(project: Path) -> None:
    before = (project / "dvc.yaml").read_bytes()
    set_param_models(project, NEW_MODEL)
    report = parity(project)
    assert report.ok, report.describe()
    names = {j.name for j in dvcsync.dvc_jobs(project)}
    assert {"evaluate@always_yes_again", "predict@always_yes_again-context", "intervals@always_yes_again"} <= names
    assert (project / "dvc.yaml").read_bytes() == before


def test_demo_stage_is_the_only_extra_for_a_non_demo_source(project: Path, tmp_path: Path) -> None:
    hub_copy = tmp_path / "hub-copy"
    hub_copy.mkdir()
    _edit(project / "params.yaml", "source: demo", f"source: {hub_copy}")
    smk = dvcsync.snakemake_jobs(project)
    assert "demo_data" not in {j.name for j in smk}
    assert parity(project, snakemake=smk).ok
    assert not parity(project, snakemake=smk, demo_source=True).ok  # the demo stage is then unmatched


# ---------------------------------------------------------------------------
# normalisation (pure)
# ---------------------------------------------------------------------------
def test_normalize_command_ignores_quoting_whitespace_mkdir_and_device_pinning() -> None:
    smk = "CUDA_VISIBLE_DEVICES=0,1 sabre  predict --model 'm'  --split context > results/logs/x.log 2>&1"
    dvc = ["mkdir -p results/logs", "sabre predict --model m --split context >\n results/logs/x.log 2>&1"]
    assert normalize_command(smk) == normalize_command(dvc)
    assert normalize_command("sabre a --x ''") != normalize_command("sabre a --x")
    assert normalize_command("sabre a --x 1") != normalize_command("sabre a --x 2")


@pytest.mark.parametrize(
    ("smk", "dvc", "agree"),
    [
        (["a/b.json"], ["a/b.json"], True),
        (["r/t/x.jsonl", "r/t/y.jsonl", "r/m.json"], ["r/t", "r/m.json"], True),  # directory out
        (["r/m.json"], ["r/m.json", "r/extra.json"], False),  # DVC declares an output nobody writes
        (["r/m.json", "r/n.json"], ["r/m.json"], False),  # a Snakemake output DVC does not track
        (["r/t/x.jsonl"], ["r/t", "r/t/x.jsonl"], False),  # tracked twice
    ],
)
def test_outputs_agree(smk: list[str], dvc: list[str], agree: bool) -> None:
    assert outputs_agree(smk, dvc) is agree
