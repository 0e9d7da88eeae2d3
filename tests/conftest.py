"""Shared fixtures: the small demo benchmark and its Parquet splits (built once per session).

The session uses a private, temporary ``datasets`` cache and, unless the opt-in gated tests
run (``SABRE_TEST_GATED=1``), the Hugging Face offline mode: no test reaches the network
(tests that need a hub start their own fake one on 127.0.0.1 in a subprocess).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from project import built_once

# Byte-code caching on for this run and every process it starts, even where the environment turns
# it off (PYTHONDONTWRITEBYTECODE=1, as on the CI machine): without it each of the ~1,500 `sabre`
# processes of the suite compiles the package again (~0.07 s each), and pytest rewrites the
# assertions of every test module again in each xdist worker (it caches the rewritten modules only
# where byte code may be written: 5-6 CPU-s per worker). __pycache__/ is in .gitignore.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

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


#: The longest tests (`--durations`): the SLURM run, the stateful sequences, dvc repro + pull, the
#: nine open-VLM families, gpu_check on CPU, the kill and the lock tests. A scheduling hint only (a
#: name that no longer matches loses its place, nothing else): see pytest_collection_modifyitems.
START_FIRST = (
    "tests/test_slurm.py::test_slurm_run_equals_local_run",
    "tests/test_stateful.py::test_any_sequence_of_edits_runs_and_kills_keeps_both_tools_honest",
    "tests/test_reproduce.py::test_dvc_repro_makes_the_same_bytes_and_a_colleague_pulls_them",
    "tests/models/test_transformers_families.py::test_family_through_snakemake",
    "tests/test_gpu_check.py::test_smoke_run_on_cpu",
    "tests/test_orchestration.py::test_a_killed_run_recovers_with_the_same_command",
    "tests/test_orchestration.py::test_one_run_at_a_time_each_tool_refuses_with_its_own_message",
    "tests/test_dvc.py::test_after_a_checkout_into_an_empty_tree_one_touch_adopts_the_outputs",
    "tests/test_documented_commands.py::test_every_documented_snakemake_command_parses",
    "tests/test_lock.py::test_gpu_lock_resolves_to_itself",
)


@pytest.hookimpl(trylast=True)  # after -m/-k deselection: the final list
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist's worksteal, worker j first gets the j-th of N contiguous slices of the
    list, and a worker that runs dry steals from the *end* of another's queue. So every slice
    starts with whole-pipeline tests and ends with quick ones: the :data:`START_FIRST` tests, then
    the other ``slow`` tests one module at a time (a module's tests stay together: they share its
    module fixtures), are dealt to the slices' heads in turn (0, 1, .., N-1, N-1, .., 0, ...);
    then the quick tests marked ``torch`` as one group, so that one worker imports torch (~4 CPU-s
    in each process that does, paid by every worker when they were spread); the other quick tests
    fill the rest of each slice in their usual order (the slice sizes of
    ``WorkStealingScheduling.check_schedule``), and are what idle workers steal at the end. Every
    worker collects and reorders alike (xdist checks the collections agree)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers < 2:
        return
    groups = [[it for it in items if it.nodeid == name or it.nodeid.startswith(name + "[")] for name in START_FIRST]
    groups = [g for g in groups if g]
    chosen = {id(it) for g in groups for it in g}
    by_module: dict[str, list[pytest.Item]] = {}
    for it in items:
        if id(it) not in chosen and it.get_closest_marker("slow") is not None:
            by_module.setdefault(it.nodeid.split("::")[0], []).append(it)
    groups += list(by_module.values())
    chosen |= {id(it) for g in by_module.values() for it in g}
    torch = [it for it in items if id(it) not in chosen and it.get_closest_marker("torch") is not None]
    groups += [torch] if torch else []
    chosen |= {id(it) for it in torch}
    rest = [it for it in items if id(it) not in chosen]
    heads: list[list[pytest.Item]] = [[] for _ in range(workers)]
    for n, group in enumerate(groups):
        lap, pos = divmod(n, workers)
        heads[pos if lap % 2 == 0 else workers - 1 - pos] += group
    out: list[pytest.Item] = []
    left = len(items)
    for j in range(workers):
        size = left // (workers - j)  # the slice xdist sends worker j
        left -= size
        take = max(0, size - len(heads[j]))
        out += heads[j] + rest[:take]
        rest = rest[take:]
    out += rest
    assert len(out) == len(items)
    items[:] = out


#: Seconds between two progress lines (see :func:`pytest_runtest_logreport`).
PROGRESS_EVERY = float(os.environ.get("SABRE_TEST_PROGRESS_EVERY", "60"))
_progress = {"start": 0.0, "last": 0.0, "done": 0, "failed": 0, "total": 0}


def pytest_sessionstart(session: pytest.Session) -> None:
    import time

    _progress["start"] = _progress["last"] = time.monotonic()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    if not _progress["total"]:
        _progress["total"] = len(ids)
        _say(f"{len(ids):,} tests collected; a progress line each minute")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A progress line every minute, beside pytest's dots: under xdist the dots come only as tests
    finish, and the longest tests run first (:data:`START_FIRST`), so a whole run (or a loaded
    machine) could print nothing for many minutes, and a log read line by line shows no partial
    line of dots (issue 33). Printed by the process that reports (the controller under xdist)."""
    import time

    if os.environ.get("PYTEST_XDIST_WORKER") is not None:
        return
    _progress["failed"] += report.failed
    if report.when != "teardown":
        return
    _progress["done"] += 1
    now = time.monotonic()
    if now - _progress["last"] >= PROGRESS_EVERY:
        _progress["last"] = now
        minutes, seconds = divmod(int(now - _progress["start"]), 60)
        total = f" of {_progress['total']:,}" if _progress["total"] else ""
        _say(f"[{minutes}:{seconds:02d}] {_progress['done']:,}{total} tests done, {_progress['failed']} failed")


def _say(line: str) -> None:
    if _REPORTER:  # on a line of its own (the dots leave the current line open)
        _REPORTER[0].write("\n")
        _REPORTER[0].write_line(line)


_REPORTER: list = []


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        _REPORTER[:] = [reporter]


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers per core, at most 8. Much of the suite waits (fake servers' latency,
    Snakemake/DVC subprocesses, retry back-offs), so a second worker per core fills the waits: on
    a 2-core machine the fast tier took 167 s with 2 workers and 121 s with 4."""
    return min(8, 2 * (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)))


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_HF_TMP, ignore_errors=True)
    # The interpreter's last garbage collections at exit scan every object left (a worker that
    # imported torch and transformers took 1.8-3.0 s to exit, and the controller waits for the last
    # worker); frozen objects are not scanned (https://docs.python.org/3/library/gc.html#gc.freeze).
    # Finalizers registered with atexit or weakref.finalize (temporary folders) still run.
    import gc

    gc.freeze()


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small demo (seed 0) in the hub repo layout. Shared: copy it before changing anything."""
    from sabre_prior.data.demo import generate

    return built_once(tmp_path_factory, "demo-small", lambda d: generate(d / "demo", scale="small", seed=0)) / "demo"


@pytest.fixture(scope="session")
def demo_parquet_dir(demo_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``<split>.parquet`` for the four splits, fetched from :func:`demo_dir` by the real loader. Read-only."""
    from sabre_prior import contracts as C
    from sabre_prior.data.fetch import fetch_split

    def build(out: Path) -> None:
        for split in C.SPLITS:
            fetch_split(str(demo_dir), split, out / f"{split}.parquet")

    return built_once(tmp_path_factory, "demo-parquet", build)


@pytest.fixture(scope="session")
def workflow_summary(demo_repo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, str]]:
    """Every output of the demo pipeline with its rule, inputs and shell command, from Snakemake's
    `--detailed-summary` of the session's finished run (the shell commands come from its records).
    Read-only."""
    import json

    from dvc_helpers import copy_tree
    from project import detailed_summary

    def build(root: Path) -> None:
        rows = detailed_summary(copy_tree(demo_repo_run, root / "project"))
        (root / "summary.json").write_text(json.dumps(rows), encoding="utf-8")

    return json.loads((built_once(tmp_path_factory, "workflow-summary", build) / "summary.json").read_text(encoding="utf-8"))


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
        assert "recorded the pipeline's outputs in dvc.lock" in out(proc), out(proc)[-3000:]

    return built_once(tmp_path_factory, "demo-run", build) / "base"


@pytest.fixture(scope="session")
def new_model_dvc_repro(demo_repo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of :func:`demo_repo_run` after adding a model to params.yaml (dvc_helpers.NEW_MODEL) and
    running `dvc repro`, once per session for the tests that start with that step (what DVC ran,
    then what either tool does next). The directory holds ``project/`` (the tree after the run),
    ``dvc_repro.out`` (the run's output) and ``dvc_repro.seconds``. Shared and read-only: copy it."""
    from dvc_helpers import BIN, NEW_MODEL, copy_tree, out, set_param_models, timed

    def build(root: Path) -> None:
        project = copy_tree(demo_repo_run, root / "project")
        set_param_models(project, NEW_MODEL)
        proc, seconds = timed([str(BIN / "dvc"), "repro"], project)
        (root / "dvc_repro.out").write_text(out(proc), encoding="utf-8")
        (root / "dvc_repro.seconds").write_text(f"{seconds:.1f}\n", encoding="utf-8")

    return built_once(tmp_path_factory, "new-model-dvc-repro", build)


@pytest.fixture(scope="module")
def demo_repo_run_copy(demo_repo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of :func:`demo_repo_run` for one test module: the finished run with its mtimes,
    .snakemake/ and .dvc/cache, as if that module had run `snakemake --cores 2 all` itself."""
    from dvc_helpers import copy_tree

    return copy_tree(demo_repo_run, tmp_path_factory.mktemp("demo-run-copy") / "project")


@pytest.fixture(scope="session")
def tiny_vlm_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished local `snakemake --cores 2 all` of the project with the demo models plus the tiny
    random VLM (tests/fixtures/tiny_vlm.py; one GPU asked for per job, as on a cluster), run once
    per session for the tests that need a finished tiny-VLM run (the transformers pipeline test,
    the SLURM run that must equal it). The directory holds ``model/`` (the checkpoint) and
    ``local/`` (the finished run).
    Shared and read-only: copy what you change."""
    pytest.importorskip("transformers", reason="the local-model stack (bash scripts/install.sh --local) is not installed")
    import importlib.util

    def build(root: Path) -> None:
        spec = importlib.util.spec_from_file_location("local_model_project", Path(__file__).parent / "fixtures" / "local_model_project.py")
        assert spec and spec.loader
        lmp = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(lmp)
        model = lmp.tiny_vlm_module().build_tiny_vlm(root / "model")
        lmp.make_project(root / "local", {"tiny": lmp.tiny_model_settings(model, gpus=1)})
        lmp.project_module().snakemake(["--cores", "2", "all"], root / "local", timeout=900)

    return built_once(tmp_path_factory, "tiny-vlm-run", build)
