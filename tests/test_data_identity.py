"""Outputs name the data they were computed from: the source, revision and per-split digests the
Parquet files record (written by the fetch step), never ``dataset.source`` in params.yaml.

The regression of issue 18: after the demo, params.yaml is pointed at another source that is never
fetched (the hub unreachable, a folder that does not exist); the tables, figures, report and manifest
made from the demo's Parquet files must still say the demo.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from sabre_prior import contracts as C
from sabre_prior.cli import main
from sabre_prior.data.parquet import DEMO_LABEL, SOURCE_KEY, data_identity, split_identity
from sabre_prior.errors import DataError
ROOT = Path(__file__).resolve().parents[1]
#: The rules that name the data (their outputs are compared after the params change).
NAMING = ("tables", "figures", "diagnose", "html_report", "manifest")


def _commands(rules: tuple[str, ...] | None = None) -> list[list[str]]:
    """The rules' commands for the project's params.yaml (every job of `all` but the demo and the fetch, in the
    order Snakemake would run them: `snakemake -n -p --forceall`), each without `sabre --log <log>`."""
    from project import snakemake

    text = snakemake(["-n", "-p", "--forceall", "all"], Path.cwd()).stdout
    jobs = re.findall(r"^(?:local)?rule (\w+):\n(?:    .*\n)+Shell command: (.+)$", text, re.M)
    assert jobs, text[-3000:]
    return [
        shlex.split(command)[shlex.split(command).index("sabre") + 3 :]
        for rule, command in jobs
        if rule not in ("all", "demo_data", "fetch") and "sabre" in command and (rules is None or rule in rules)
    ]


def _without_settings(argv: list[str]) -> list[str]:
    i = argv.index("--settings")
    return argv[:i] + argv[i + 2 :]


def _run(commands: list[list[str]]) -> None:
    for argv in commands:
        assert main(argv) == 0, argv


@pytest.fixture
def demo_project(demo_parquet_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict]:
    """A project whose data/parquet was fetched from the demo (the real fetch), every stage run once."""
    from project import copy_project

    root = copy_project(tmp_path / "proj")
    shutil.copytree(demo_parquet_dir, root / C.PARQUET_DIR)
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    params["models"] = {k: params["models"][k] for k in ("random", "prior")}  # two baselines: quick
    params["analysis"]["bootstrap_resamples"] = 200
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    monkeypatch.chdir(root)
    _run(_commands())
    return root, params


def _outputs(root: Path) -> dict[str, bytes]:
    names = [
        "results/manifest.json", "results/report/index.html", "results/analysis/diagnostics.json",
        *(f"results/tables/{t}" for t in ("main_results.md", "main_results.csv", "main_results.tex", "main_results_ci.csv",
                                          "failure_aware.md", "failure_aware.csv", "diagnostics.md")),
        *(f"results/figures/{f}.{e}" for f in ("split_accuracy", "probe_accuracy", "pair_outcomes") for e in ("png", "pdf")),
    ]  # fmt: skip
    missing = [n for n in names if not (root / n).is_file()]
    assert not missing, missing
    return {n: (root / n).read_bytes() for n in names}


def test_fetch_records_the_demo_as_the_source(demo_parquet_dir: Path, demo_dir: Path) -> None:
    identity = data_identity(demo_parquet_dir, C.SPLITS, digest=True)
    assert (identity.source, identity.kind, identity.revision) == (str(demo_dir), "demo", None)
    assert identity.label == DEMO_LABEL
    assert all(len(s.sha256 or "") == 64 for s in identity.splits)


@pytest.mark.parametrize("other_source", ["Zesearch/SABRE-Prior", "./mirror"])
@pytest.mark.slow  # runs every aggregate stage's command twice
def test_a_new_source_that_was_never_fetched_does_not_relabel_the_outputs(
    demo_project: tuple[Path, dict], other_source: str
) -> None:
    root, params = demo_project
    naming = [_without_settings(argv) for argv in _commands(NAMING)]  # as run by hand: they read params.yaml
    before = _outputs(root)
    assert any(n.endswith(".png") for n in before) and "results/report/index.html" in before
    md = (root / "results/tables/main_results.md").read_text()
    assert f"(data: {DEMO_LABEL})" in md
    # the params now name another source; the Parquet files are not fetched again
    params["dataset"]["source"] = other_source
    params["dataset"]["revision"] = "main"
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    _run(naming)
    after = _outputs(root)
    assert set(after) == set(before)
    manifest_name = "results/manifest.json"
    changed = sorted(n for n in before if before[n] != after[n] and n != manifest_name)
    assert not changed, f"relabelled by params.yaml: {changed}"
    name = other_source.encode()
    assert not [n for n, data in after.items() if name in data], "an output names the source that was never fetched"
    manifest = json.loads(after[manifest_name])
    assert manifest["dataset"] == {"source": str(Path(params_demo_dir(root))), "kind": "demo", "revision": None}
    old = json.loads(before[manifest_name])
    assert {k: v for k, v in manifest.items() if k != "params"} == {k: v for k, v in old.items() if k != "params"}
    html = after["results/report/index.html"].decode()
    data = json.loads(re.search(r'<script id="sabre-data" type="application/json">(.*?)</script>', html, re.S).group(1))
    assert data["data"]["label"] == DEMO_LABEL and data["data"]["kind"] == "demo"
    assert data["data"]["splits"]["context"]["sha256"] == manifest["data"]["context"]["sha256"]


def params_demo_dir(root: Path) -> str:
    """The demo folder the fetch read (what the Parquet files record)."""
    return split_identity(root / C.PARQUET_DIR / "context.parquet", "context").source


@pytest.mark.slow
def test_a_split_that_does_not_record_its_source_is_an_error(
    demo_project: tuple[Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = demo_project
    path = root / C.PARQUET_DIR / "texture.parquet"
    table = pq.read_table(path)
    meta = {k: v for k, v in (table.schema.metadata or {}).items() if k != SOURCE_KEY}
    pq.write_table(table.replace_schema_metadata(meta), path)
    with pytest.raises(DataError, match=r"texture\.parquet: the file does not record which source it was read from"):
        split_identity(path, "texture")
    before = (root / "results/tables/main_results.md").read_bytes()
    assert main(["tables", "--intervals-dir", C.INTERVALS_DIR]) != 0
    assert "texture.parquet: the file does not record which source" in capsys.readouterr().err
    assert (root / "results/tables/main_results.md").read_bytes() == before  # nothing written


def test_splits_from_different_sources_are_an_error(tmp_path: Path) -> None:
    from tests.identity import write_split_files

    write_split_files(tmp_path, ["context"], source="data/demo", kind="demo")
    write_split_files(tmp_path, ["texture"], source="./mirror", kind="local")
    with pytest.raises(DataError, match=r"fetched from different sources: context from data/demo, texture from \./mirror"):
        data_identity(tmp_path, ["context", "texture"])
    table = pa.table({"id": ["x"]})
    pq.write_table(table, tmp_path / "attribute.parquet")  # no metadata at all (not written by sabre fetch)
    with pytest.raises(DataError, match="attribute.parquet: the file does not record"):
        data_identity(tmp_path, ["attribute"])
