"""Each setting re-runs exactly what it changes (issue 32, point 1).

A rule passes its command exactly the settings it declares (sabre_prior.settings): a command cannot
read another (the view raises, checked below), so no output can go stale behind Snakemake's
`params` trigger. The other direction is checked by running: on a finished two-model demo run,
every leaf of params.yaml is changed in turn and `snakemake all` is run. Every job re-run because a
setting it declares changed (Snakemake's reason "Params have changed", not only "Input files
updated": Snakemake re-runs what reads a re-made file even when its bytes came out the same) must
change one of its outputs, but for the few whose output does not depend on that setting in the
demo's configuration, each named in ``NOT_USED_HERE`` with why; afterwards neither tool has
anything to do.

Leaves left out, with why: `dataset.source` (another source is a whole new run: tests/test_sources.py),
`dataset.demo.scale` (full size: minutes), `dataset.revision` of the demo (unused by a demo fetch,
kept declared for the hub: tests/test_hub.py pins it), `splits` and `prompt.templates` (lists: adding
or removing one is tests/test_parity.py's and tests/test_robustness_pipeline.py's), `models.<m>.backend`
(another backend's required settings).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
import yaml
from dvc_helpers import AGGREGATES, copy_tree, dvc, jobs_run, make_repo, out, planned_jobs, smk
from project import built_once

from sabre_prior.settings import Settings, UndeclaredSetting, decode, encode

UP_TO_DATE = "Data and pipelines are up to date."

#: (leaf, new value): every leaf of the shipped params.yaml but those the module docstring names.
LEAVES = [
    ("dataset.demo.seed", 1),
    ("audit.repeats", 2),
    ("audit.questions", 5),
    ("audit.seed", 4),
    ("analysis.bootstrap_resamples", 300),
    ("analysis.seed", 5),
    ("analysis.confidence", 0.9),
    ("analysis.report.thumbnail_px", 96),
    ("analysis.report.max_nonanswer_rate", 1.0),
    ("models.random.strategy", "always_no"),
    ("models.random.seed", 3),
    ("models.random.display_name", "Coin flip"),
    ("models.random.batch_audit", False),
]


#: rule -> why its output may not change when a setting it declares does, in the demo's configuration
NOT_USED_HERE = {
    "demo_data": "its output is temporary (removed once fetched): what it changes shows in the Parquet files",
    "parity": "no two demo models serve one checkpoint: the bootstrap settings shape nothing it shows",
    "paper_compare": "no demo model names one of the paper's models: the comparison is empty",
    "audit": "the audit is off (audit.repeats: 1): the bootstrap settings shape its intervals only when it repeats",
    "manifest": "it shows each model's backend, id and decoding, not a baseline's seed or strategy",
    "stability": "the audit is off: the audit's settings shape nothing it shows",
}


def _params_jobs(output: str) -> set[str]:
    """The rules of the jobs Snakemake re-ran only because their declared settings changed."""
    rules = set()
    for match in re.finditer(r"^(?:local)?rule (\w+):\n((?:    .*\n?)+)", output, re.M):
        reason = re.search(r"^    reason: (.*)$", match.group(2), re.M)
        if reason and "Params have changed" in reason.group(1) and "Input files updated" not in reason.group(1):
            rules.add(match.group(1))
    return rules


def _outputs_by_rule(output: str) -> dict[str, str]:
    """Output file -> rule, for the jobs of a run (each job block's `output:` line): a file the run
    changed was made by one of them (what `snakemake --summary` lists, without a run of its own)."""
    made_by = {}
    for match in re.finditer(r"^(?:local)?rule (\w+):\n((?:    .*\n?)+)", output, re.M):
        files = re.search(r"^    output: (.*)$", match.group(2), re.M)
        for path in files.group(1).split(", ") if files else []:
            made_by[path] = match.group(1)
    return made_by


def _set(params: dict, leaf: str, value: object) -> None:
    *path, last = leaf.split(".")
    node = params
    for key in path:
        node = node.setdefault(key, {})
    node[last] = value


def test_the_leaves_cover_the_shipped_params() -> None:
    from project import ROOT

    shipped = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))

    def leaves(node: object, prefix: str) -> list[str]:
        if isinstance(node, dict):
            return [leaf for k, v in node.items() for leaf in leaves(v, f"{prefix}{k}.")]
        return [prefix.rstrip(".")]

    left_out = {"dataset.source", "dataset.revision", "dataset.demo.scale", "splits", "prompt.templates"}
    names = {leaf for leaf, _ in LEAVES}
    for leaf in leaves(shipped, ""):
        generic = leaf if not leaf.startswith("models.") else "models.random." + leaf.split(".", 2)[2]
        assert leaf in left_out or generic in names or leaf.endswith(".backend"), leaf


def test_a_command_cannot_read_a_setting_its_rule_does_not_declare() -> None:
    params = {"analysis": {"seed": 0, "confidence": 0.95, "report": {"max_nonanswer_rate": 0.05}},
              "models": {"m": {"backend": "baseline", "display_name": "M"}}, "splits": ["context"]}  # fmt: skip
    view = decode(encode(params, ["analysis.seed", "models.m", "!models.m.display_name"]))
    assert view["analysis"]["seed"] == 0 and view["models"]["m"]["backend"] == "baseline"
    for read in (
        lambda: view["analysis"]["confidence"],
        lambda: view["analysis"].get("report", {}),
        lambda: "splits" in view,
        lambda: view["models"]["m"].get("display_name"),
    ):
        with pytest.raises(UndeclaredSetting, match="not declared by the rule"):
            read()
    assert view["models"]["m"].get("seed", 7) == 7  # declared, absent from params.yaml: its default
    assert isinstance(Settings(params)["analysis"], Settings)  # by hand: everything readable
    assert Settings(params)["analysis"]["report"]["max_nonanswer_rate"] == 0.05


def _digests(project: Path) -> dict[str, str]:
    return {
        str(p.relative_to(project)): hashlib.sha256(p.read_bytes()).hexdigest()
        for d in ("data/parquet", "results")
        for p in (project / d).rglob("*")
        if p.is_file() and "logs" not in p.relative_to(project).parts
    }


@pytest.fixture(scope="module")
def two_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished `snakemake all` of the demo with two models, in a git repo: random, and always_yes,
    whose unparseable answers on attribute and language are flagged (so the threshold shows)."""

    def build(root: Path) -> None:
        project = make_repo(root / "project")
        params = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
        params["models"] = {k: params["models"][k] for k in ("random", "always_yes")}
        params["analysis"]["bootstrap_resamples"] = 200
        (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
        smk(project, "--cores", "2", "all")

    return built_once(tmp_path_factory, "two-models-run", build) / "project"


@pytest.mark.slow
@pytest.mark.parametrize(("leaf", "value"), LEAVES, ids=[leaf for leaf, _ in LEAVES])
def test_changing_a_setting_reruns_exactly_the_jobs_whose_outputs_change(
    two_models: Path, tmp_path: Path, leaf: str, value: object
) -> None:
    work = copy_tree(two_models, tmp_path / "work")
    before = _digests(work)
    params = yaml.safe_load((work / "params.yaml").read_text(encoding="utf-8"))
    _set(params, leaf, value)
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    proc = smk(work, "--cores", "2", "all")
    assert jobs_run(out(proc)), f"changing {leaf} re-ran nothing"
    after = _digests(work)
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    made_by = _outputs_by_rule(out(proc))
    # the rule of each changed file (a file a job made, or a file in a folder a job made)
    rules_changed = {made_by[q] for p in changed for q in (p, *map(str, Path(p).parents)) if q in made_by}
    # the aggregates read every model's whole entry (`models`): a model setting they do not show re-runs them
    coarse = AGGREGATES if leaf.startswith("models.") else set()
    unchanged = sorted(_params_jobs(out(proc)) - rules_changed - set(NOT_USED_HERE) - coarse)
    assert not unchanged, f"changing {leaf} re-ran {unchanged} for it, whose outputs came out the same"
    assert planned_jobs(out(smk(work, "-n", "all"))) == {} and UP_TO_DATE in dvc(work, "status").stdout
