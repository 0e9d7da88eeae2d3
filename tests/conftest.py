"""Shared fixtures: the small demo benchmark and its Parquet splits (built once per session).

The session uses a private, temporary ``datasets`` cache and, unless the opt-in gated tests
run (``SABRE_TEST_GATED=1``), the Hugging Face offline mode: no test reaches the network
(tests that need a hub start their own fake one on 127.0.0.1 in a subprocess).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import pytest

# Set before anything imports `datasets` / `huggingface_hub` (they read these at import time).
_HF_TMP = Path(tempfile.mkdtemp(prefix="sabre-tests-hf-"))
os.environ["HF_DATASETS_CACHE"] = str(_HF_TMP / "datasets")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
if os.environ.get("SABRE_TEST_GATED") != "1":
    os.environ["HF_HUB_OFFLINE"] = "1"


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the background work of the selected tests that declare some (a ``start_early`` attribute:
    a slow, network-bound command such as tests/test_lock.py's pip resolution), so that it overlaps
    the rest of the run; each such test waits for its own result. Under pytest-xdist every worker
    collects every test, so none starts early: the test starts its work when it runs, and the
    other workers go on meanwhile."""
    if os.environ.get("PYTEST_XDIST_WORKER") is not None:
        return
    for item in session.items:
        start = getattr(getattr(item, "function", None), "start_early", None)
        if start is not None and not item.get_closest_marker("skip"):
            start()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers per core, at most 8. Much of the suite waits (fake servers' latency,
    Snakemake/DVC subprocesses, retry back-offs), so a second worker per core fills the waits: on
    a 2-core machine the fast tier took 167 s with 2 workers and 121 s with 4."""
    return min(8, 2 * (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)))


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_HF_TMP, ignore_errors=True)


def _built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """``build(dir)`` once per test run: under pytest-xdist the workers share one result (the
    pattern of pytest-xdist's docs, "Making session-scoped fixtures execute only once": a file
    lock in the directory all workers' base temp dirs share); without xdist, once per session.
    What is built is read-only for the tests (each copies what it changes)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        out = tmp_path_factory.mktemp(name)
        build(out)
        return out
    from filelock import FileLock

    out = tmp_path_factory.getbasetemp().parent / f"shared-{name}"
    with FileLock(f"{out}.lock"):
        if not (out / ".built").is_file():
            shutil.rmtree(out, ignore_errors=True)  # what a worker that failed half way left
            out.mkdir()
            build(out)
            (out / ".built").write_text("", encoding="utf-8")
    return out


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small demo (seed 0) in the hub repo layout. Shared: copy it before changing anything."""
    from sabre_prior.data.demo import generate

    return _built_once(tmp_path_factory, "demo-small", lambda d: generate(d / "demo", scale="small", seed=0)) / "demo"


@pytest.fixture(scope="session")
def demo_parquet_dir(demo_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``<split>.parquet`` for the four splits, fetched from :func:`demo_dir` by the real loader. Read-only."""
    from sabre_prior import contracts as C
    from sabre_prior.data.fetch import fetch_split

    def build(out: Path) -> None:
        for split in C.SPLITS:
            fetch_split(str(demo_dir), split, out / f"{split}.parquet")

    return _built_once(tmp_path_factory, "demo-parquet", build)


@pytest.fixture(scope="session")
def demo_repo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`snakemake --cores 2 all` on the demo in a git repo of the project (tests/dvc_helpers.py:
    secrets planted in its environment; its onsuccess handler records every output in dvc.lock),
    run once per session. Shared and read-only: a test that runs or changes anything works on
    :func:`demo_repo_run_copy` or its own copy (``dvc_helpers.copy_tree``)."""
    from dvc_helpers import make_repo, out, smk

    def build(root: Path) -> None:
        base = make_repo(root / "base")
        proc = smk(base, "--cores", "2", "all")
        assert "recorded" in out(proc) and "dvc.lock" in out(proc), out(proc)[-3000:]

    return _built_once(tmp_path_factory, "demo-run", build) / "base"


@pytest.fixture(scope="module")
def demo_repo_run_copy(demo_repo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of :func:`demo_repo_run` for one test module: the finished run with its mtimes,
    .snakemake/ and .dvc/cache, as if that module had run `snakemake --cores 2 all` itself."""
    from dvc_helpers import copy_tree

    return copy_tree(demo_repo_run, tmp_path_factory.mktemp("demo-run-copy") / "project")
