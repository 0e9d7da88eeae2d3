"""A hub id end to end: real Snakemake and DVC reading a fake Hugging Face Hub on 127.0.0.1.

The fake hub (tests/servers/hub.py) serves ``Zesearch/SABRE-Prior`` as the real hub does, gated,
to the token planted in every pipeline run; its files are a copy of the real dataset as far as
the official count check can tell (200/400, 200/400, 100/100, 100/100 with tiny images, the
card's configs pointing at ``data/<split>/**``). So the fetch is the real path: ``HfApi`` resolves
the branch, ``datasets.load_dataset(repo, split, revision=<commit>)`` downloads through
``huggingface_hub``, the rows pass the official counts. ``dataset.revision`` stays unset (the
default branch): a push to it is the revision bump.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from dvc_helpers import PLANTED, copy_tree, dvc, dvc_ran_stage, jobs_run, make_repo, out, planned_jobs, run, smk
from layouts import write_official_size_mirror
from servers.hub import FakeHub
from test_sources import AGGREGATES, UP_TO_DATE, edit_question, use_source

from sabre_prior import contracts as C

pytestmark = pytest.mark.slow

REPO = C.HUB_REPO_ID


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeHub, Path, str]]:
    """The fake hub with one commit on ``main``, and the environment that points the pipeline at it."""
    root = tmp_path_factory.mktemp("hub")
    mirror = write_official_size_mirror(root / "mirror")
    fake = FakeHub(granted=frozenset({PLANTED["HF_TOKEN"]})).start()
    first = fake.commit(REPO, FakeHub.snapshot(mirror), gated=True)
    with pytest.MonkeyPatch.context() as mp:  # what every subprocess of these tests sees
        mp.setenv("HF_ENDPOINT", fake.url)
        mp.setenv("HF_HOME", str(root / "hf-home"))
        mp.setenv("HF_DATASETS_CACHE", str(root / "hf-home" / "datasets"))
        mp.setenv("NO_PROXY", "127.0.0.1")
        mp.delenv("HF_HUB_OFFLINE", raising=False)
        mp.delenv("HF_DATASETS_OFFLINE", raising=False)
        try:
            yield fake, mirror, first
        finally:
            fake.stop()


@pytest.fixture(scope="module")
def hub_run(hub: tuple[FakeHub, Path, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = make_repo(tmp_path_factory.mktemp("hub-run") / "project")
    use_source(project, REPO)  # type: ignore[arg-type]
    proc = smk(project, "--cores", "2", "all")
    assert "recorded the pipeline's outputs in dvc.lock" in out(proc), out(proc)[-3000:]
    return project


def manifest_revisions(project: Path) -> dict[str, str]:
    data = json.loads((project / "results" / "manifest.json").read_text(encoding="utf-8"))["data"]
    return {split: entry.get("hub_revision") for split, entry in data.items()}


def parquet_bytes(project: Path) -> dict[str, bytes]:
    return {s: (project / "data" / "parquet" / f"{s}.parquet").read_bytes() for s in C.SPLITS}


def test_a_hub_id_runs_end_to_end_and_the_same_revision_never_refetches(
    hub: tuple[FakeHub, Path, str], hub_run: Path
) -> None:
    fake, _, first = hub
    project = hub_run
    assert manifest_revisions(project) == dict.fromkeys(C.SPLITS, first)  # the resolved commit
    for split in C.SPLITS:
        assert pq.read_schema(project / "data" / "parquet" / f"{split}.parquet").metadata[b"sabre_hub_revision"] == first.encode()
        assert pq.read_metadata(project / "data" / "parquet" / f"{split}.parquet").num_rows == C.OFFICIAL_COUNTS[split][1]
    files = [p for p in fake.repos[REPO].commits[first] if p.startswith("data/")]
    assert sorted(set(fake.downloads("data/"))) == sorted(files)  # every data file, through the gate
    tokens = {r.token for r in fake.requests if "/resolve/" in r.path}
    assert tokens == {PLANTED["HF_TOKEN"]}  # sent by the libraries themselves ...
    for path in (project / ".dvc", project / ".sabre", project / "results", project / "dvc.lock"):
        for f in [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]:
            assert PLANTED["HF_TOKEN"].encode() not in f.read_bytes(), f  # ... and never written
    n = len(fake.requests)
    assert planned_jobs(out(smk(project, "--cores", "2", "all"))) == {}
    assert fake.downloads(since=n) == [] and fake.requests[n:], "planning asks the hub, and downloads nothing"
    before = parquet_bytes(project)
    assert UP_TO_DATE in dvc(project, "status").stdout
    assert not dvc_ran_stage(out(dvc(project, "repro")))
    assert parquet_bytes(project) == before


def test_a_new_commit_refetches_and_rescores_exactly_the_split_it_changed(
    hub: tuple[FakeHub, Path, str], hub_run: Path, tmp_path: Path
) -> None:
    fake, mirror, first = hub
    project = copy_tree(hub_run, tmp_path / "p")
    bumped = copy_tree(mirror, tmp_path / "m")
    edit_question(bumped, "language")
    second = fake.commit(REPO, FakeHub.snapshot(bumped))  # main moves on
    try:
        before = parquet_bytes(project)
        n = len(fake.requests)
        log = out(smk(project, "--cores", "2", "all"))
        jobs = planned_jobs(log)  # the run's own plan
        assert jobs.pop("fetch") == 1 and jobs.pop("predict") == 1 and jobs.pop("evaluate") == 1, jobs
        assert jobs.pop("intervals") == 1 and set(jobs) <= AGGREGATES, jobs
        assert "--split language" in log and "--split context" not in log
        assert fake.downloads(since=n) == ["data/language/metadata.jsonl"]  # the one changed file
        after = parquet_bytes(project)
        assert [s for s in C.SPLITS if after[s] != before[s]] == ["language"]
        assert manifest_revisions(project) == {**dict.fromkeys(C.SPLITS, first), "language": second}
        assert planned_jobs(out(smk(project, "--cores", "2", "all"))) == {}  # the same revision again
        assert UP_TO_DATE in dvc(project, "status").stdout  # the run recorded itself
        assert parquet_bytes(project) == after  # context etc. keep the commit they were read at
    finally:
        fake.repos[REPO].branches["main"] = first  # the other tests see the first commit


def test_a_pinned_commit_leaves_both_tools_clean(hub: tuple[FakeHub, Path, str], hub_run: Path, tmp_path: Path) -> None:
    """Pinning the commit already read, DVC first: DVC names the setting, Snakemake fetches again (the
    same bytes) and re-runs what reads the Parquet files (CPU only); then both agree."""

    _, _, first = hub
    project = copy_tree(hub_run, tmp_path / "p")
    params = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
    params["dataset"]["revision"] = first
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    assert "dataset.revision" in dvc(project, "status").stdout
    before = parquet_bytes(project)
    proc = dvc(project, "repro")
    assert sorted(w["split"] for r, w in jobs_run(out(proc)) if r == "fetch") == sorted(C.SPLITS)
    assert parquet_bytes(project) == before  # the same commit, the same bytes
    assert UP_TO_DATE in dvc(project, "status").stdout
    assert not dvc_ran_stage(out(dvc(project, "repro")))
    assert planned_jobs(out(smk(project, "-n", "all"))) == {}


# ---------------------------------------------------------------------------
# The pieces: per-split stamps, and the commit a split keeps
# ---------------------------------------------------------------------------
def test_a_new_commit_changes_the_fetch_setting_of_exactly_the_splits_whose_files_changed(
    demo_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fetch rule's `hub_files` param (sabre_prior.data.fetch.hub_digests): per split, a digest
    of its files at the commit the hub serves; Snakemake re-runs a fetch whose digest changed."""
    import huggingface_hub.constants as hc

    from sabre_prior.data.fetch import hub_digests

    mirror = copy_tree(demo_dir, tmp_path / "mirror")
    with FakeHub() as fake:
        first = fake.commit(REPO, FakeHub.snapshot(mirror))
        monkeypatch.setattr(hc, "ENDPOINT", fake.url)  # read when HfApi is made (constants.py: HF_ENDPOINT)
        monkeypatch.setattr(hc, "HF_HUB_OFFLINE", False)
        params = {"dataset": {"source": REPO, "revision": None}, "splits": ["context", "language"],
                  "models": {"random": {"backend": "baseline", "strategy": "random"}}}  # fmt: skip
        start = hub_digests(params)
        assert set(start) == {"context", "language"}
        assert hub_digests(params) == start  # the same commit
        fake.commit(REPO, {**FakeHub.snapshot(mirror), "docs/notes.md": b"a file no split reads\n"})
        assert hub_digests(params) == start  # a new commit, the splits' files unchanged
        edit_question(mirror, "language")
        fake.commit(REPO, FakeHub.snapshot(mirror))
        moved = hub_digests(params)
        assert moved["context"] == start["context"] and moved["language"] != start["language"]
        fake.repos[REPO].branches["main"] = first
        assert hub_digests(params) == start  # back
    assert hub_digests({**params, "dataset": {"source": "demo"}}) == {}


_FETCHES = """
import sys
from sabre_prior import cli
for split in sys.argv[1:]:
    assert cli.main(["fetch", "--split", split, "--source", "%s", "--output", f"out/{split}.parquet"]) == 0
""" % REPO


def test_a_split_a_new_commit_left_alone_keeps_its_bytes_and_recorded_commit(
    hub: tuple[FakeHub, Path, str], tmp_path: Path
) -> None:
    import sys


    fake, mirror, first = hub
    bumped = copy_tree(mirror, tmp_path / "m")
    edit_question(bumped, "language")
    try:
        run([sys.executable, "-c", _FETCHES, "attribute", "language"], tmp_path)
        before = {s: (tmp_path / "out" / f"{s}.parquet").read_bytes() for s in ("attribute", "language")}
        second = fake.commit(REPO, FakeHub.snapshot(bumped))
        proc = run([sys.executable, "-c", _FETCHES, "attribute", "language"], tmp_path)
    finally:
        fake.repos[REPO].branches["main"] = first
    assert f"(commit {second}); its files are those of commit {first}, which stays recorded" in proc.stdout
    assert (tmp_path / "out" / "attribute.parquet").read_bytes() == before["attribute"]
    assert pq.read_schema(tmp_path / "out" / "language.parquet").metadata[b"sabre_hub_revision"] == second.encode()
    assert (tmp_path / "out" / "language.parquet").read_bytes() != before["language"]
