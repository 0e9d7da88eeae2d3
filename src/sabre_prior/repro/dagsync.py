"""Snakemake and DVC as one system: one plan from what every output was made from.

Both tools run the jobs of one declaration (:mod:`sabre_prior.repro.pipeline`) and every job
records what it made its outputs from (:mod:`sabre_prior.repro.state`: recipes, made records).
The Snakefile calls :func:`before_planning` when it is parsed (main process only):

1. takes the run lock and DVC's repository lock for the whole run (:mod:`.runlock`; a second
   orchestrator refuses at once);
2. resolves the data source (a hub revision, a local folder): an unresolvable source stops the
   run with an error naming it and the fix, never a fallback to earlier data;
3. writes each job's recipe whose content changed, removes stray temp files, sets a damaged
   ``dvc.lock`` aside (``.sabre/damaged/``; it is rebuilt below from what can be proven);
4. finds the *proven* jobs: made record = current recipe, inputs and outputs unchanged. When
   ``dvc.lock`` changed since this bridge last wrote it (``dvc repro``, ``dvc pull``, a checkout),
   ``dvc status`` is asked once: a job DVC finds up to date is proven too (its made record is
   written), a proven job DVC finds changed is recorded after the run;
5. gives Snakemake, through the rules' input functions (:meth:`Plan.job_inputs`), the inputs of a
   proven job wrapped in ``ancient()`` (Snakemake's documented flag: "ignore the timestamp of
   this input", https://snakemake.readthedocs.io/en/stable/snakefiles/rules.html#ignoring-timestamps)
   and, to every other job and everything downstream of it, a gate file (``.sabre/gates/``)
   touched now: with ``rerun-triggers: [mtime]`` (the profile; "--rerun-triggers", Snakemake's
   CLI reference) an input newer than the outputs re-runs the job.

So Snakemake runs exactly the jobs whose recipe or data changed, whatever tool made the outputs
and in whatever order, and never consults its own ``.snakemake/`` records for that.
:func:`after_run` (``onsuccess``/``onerror``, not called for a dry run) records the jobs this run
made, and those pending, with one ``dvc commit --force`` (DVC's documented way to "record changes
to files or directories tracked by DVC ... of stages", https://dvc.org/doc/command-reference/commit).
A kill before that commit finishes leaves a pending list that the next run (or ``sabre recover``)
commits again; a kill while DVC rewrites ``dvc.lock`` leaves a damaged lock that step 3 repairs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import SabreError
from ..io_utils import write_json
from . import state
from .pipeline import PACKAGE_DIR, STAMP_DIR, Job, Pipeline, pinned, write_dvc_yaml
from .runlock import RUN_ENV, RunLock

ENV_SWITCH = "SABRE_DVC_SYNC"
GATE_DIR = ".sabre/gates"
SYNC_FILE = ".sabre/state/sync.json"
PENDING_FILE = ".sabre/state/pending.json"
DAMAGED_DIR = ".sabre/damaged"
#: The Snakemake rule `recipes` writes this marker: it runs when DVC's stage `recipes` would.
RECIPES_DONE = ".sabre/state/recipes.done"


@dataclass(frozen=True)
class RecipesJob:
    """DVC's ``recipes`` stage as a job of its own (what it reads and writes; its made record)."""

    name: str = "recipes"
    inputs: tuple[str, ...] = ("params.yaml", PACKAGE_DIR)
    outputs: tuple[str, ...] = (STAMP_DIR,)


RECIPES = RecipesJob()


def say(message: str) -> None:
    print(f"sabre: {message}", file=sys.stderr)


def is_dvc_project(root: Path) -> bool:
    return (root / ".dvc").is_dir() and (root / "dvc.yaml").is_file()


def dvc_command() -> list[str] | None:
    """The ``dvc`` executable next to this interpreter, else on PATH."""
    here = Path(sys.executable).parent / "dvc"
    if here.is_file():
        return [str(here)]
    found = shutil.which("dvc")
    return [found] if found else None


def _in_scm(root: Path) -> bool:
    """DVC needs a git repository (or ``core.no_scm``) to record anything."""
    if (root / ".git").exists():
        return True
    config = root / ".dvc" / "config"
    return config.is_file() and "no_scm = true" in config.read_text(encoding="utf-8").lower()


def enabled(root: Path) -> bool:
    return (
        os.environ.get(ENV_SWITCH, "1") != "0" and is_dvc_project(root) and _in_scm(root) and dvc_command() is not None
    )


def run_dvc(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = dvc_command()
    assert cmd is not None
    return subprocess.run([*cmd, *args], cwd=root, capture_output=True, text=True, check=False)


def _why(proc: subprocess.CompletedProcess[str]) -> str:
    text = (proc.stderr.strip() + "\n" + proc.stdout.strip()).strip()
    return text[-2000:] or f"exit {proc.returncode}, no output"


# ---------------------------------------------------------------------------
# the source
# ---------------------------------------------------------------------------
def resolve_hub(pipeline: Pipeline) -> dict[str, str] | None:
    """Per split, the digest of its files at the commit the hub serves (None: not a hub source).
    An unresolvable source (hub unreachable, no access, unknown revision, a missing local folder)
    raises :class:`~sabre_prior.errors.SourceError` naming it and the fix
    (:func:`sabre_prior.data.fetch.resolve_source`); nothing falls back to earlier data."""
    if pipeline.kind == "demo":
        return None
    from ..data.fetch import resolve_source

    resolved = resolve_source(pipeline.params, pipeline.splits)
    return dict(resolved.files) if pipeline.kind == "hub" else None


# ---------------------------------------------------------------------------
# dvc.lock
# ---------------------------------------------------------------------------
def lock_damage(root: Path) -> str | None:
    """Why ``dvc.lock`` is unusable (empty, not YAML, not DVC's layout), or None."""
    import yaml

    path = root / "dvc.lock"
    if not path.exists():
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    if not text.strip():
        return "dvc.lock is empty"
    try:  # libyaml's parser where PyYAML has it (the pure-Python one takes seconds at 40 models)
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        return f"dvc.lock is not valid YAML ({str(exc).splitlines()[0]})"
    if not isinstance(data, dict) or not isinstance(data.get("stages"), dict):
        return "dvc.lock does not hold DVC's stages"
    # a rewrite cut short can still be YAML: every entry must be whole (DVC's lock layout,
    # https://dvc.org/doc/user-guide/project-structure/dvcyaml-files#dvclock-file)
    for name, entry in data["stages"].items():
        if not isinstance(entry, dict) or "cmd" not in entry:
            return f"dvc.lock's entry for {name} is cut short"
        for kind in ("deps", "outs"):
            items = entry.get(kind, [])
            if not isinstance(items, list) or any(not isinstance(i, dict) or "path" not in i or "md5" not in i for i in items):
                return f"dvc.lock's {kind} of {name} are cut short"
    return None


def quarantine_lock(root: Path, why: str) -> Path:
    dest = root / DAMAGED_DIR / f"dvc.lock.{time.strftime('%Y%m%dT%H%M%S')}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(root / "dvc.lock", dest)
    say(f"{why}: set aside as {dest.relative_to(root)}; it is rebuilt from the jobs whose outputs can be proven")
    return dest


def _lock_token(root: Path) -> str | None:
    try:
        return hashlib.sha256((root / "dvc.lock").read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def dvc_status(root: Path) -> dict[str, Any]:
    """``dvc status --json``: the changed stages (empty: up to date)."""
    proc = run_dvc(root, "status", "--json")
    if proc.returncode != 0:
        raise SabreError(f"dvc status failed: {_why(proc)}")
    out = proc.stdout.strip()
    return json.loads(out[out.index("{"):]) if "{" in out else {}


def commit_targets(jobs: Sequence[Job], names: Iterable[str]) -> list[str] | None:
    """The fewest ``dvc commit`` targets naming exactly ``names``: None (no targets: every stage)
    when they are every job, a foreach/matrix group's name for all its instances, else instances.
    ``dvc commit`` rewrites dvc.lock once per target (dvc/commands/commit.py), so fewer is faster."""
    wanted = set(names)
    by_stage: dict[str, list[str]] = {}
    for job in jobs:
        by_stage.setdefault(job.stage.name, []).append(job.name)
    if wanted and wanted >= {j.name for j in jobs}:
        return None
    targets: list[str] = []
    for stage, members in by_stage.items():
        chosen = [m for m in members if m in wanted]
        if len(chosen) == len(members) and (len(members) > 1 or members[0] != stage):
            targets.append(stage)
        else:
            targets += chosen
    return targets


# ---------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------
@dataclass
class Plan:
    pipeline: Pipeline
    active: bool = False
    proven: set[str] = field(default_factory=set)
    must_run: dict[str, str] = field(default_factory=dict)  # job -> why
    to_commit: set[str] = field(default_factory=set)
    recipes_pending: bool = False
    lock: RunLock | None = None
    _by_key: dict[tuple[str, tuple[tuple[str, str], ...]], Job] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.pipeline.root

    def all_outputs(self) -> list[str]:
        return self.pipeline.all_outputs()

    def job(self, stage: str, wildcards: Mapping[str, str]) -> Job:
        if not self._by_key:
            self._by_key = {(j.stage.name, j.item): j for j in self.pipeline.jobs()}
        from .pipeline import BY_NAME

        item = tuple((k, str(wildcards[k])) for k in BY_NAME[stage].over)
        return self._by_key[(stage, item)]

    def job_inputs(self, stage: str, wildcards: Mapping[str, str], ancient: Callable[[Any], Any]) -> list[Any]:
        """The rule's inputs for one job: see the module doc (step 5)."""
        job = self.job(stage, wildcards)
        files = [*job.inputs, job.stamp]
        if not self.active:
            return files
        if job.name in self.must_run:
            return [*files, gate_path(job.name)]
        return [ancient(f) for f in files]

    def recipes_inputs(self, ancient: Callable[[Any], Any]) -> list[Any]:
        """The rule ``recipes``: a gate when DVC's stage ``recipes`` is not up to date (code or
        params.yaml edited with no job's recipe changing), else nothing."""
        return [GATE_DIR + "/recipes"] if self.active and self.recipes_pending else []

    def summary(self) -> str:
        if not self.must_run:
            return "every job is up to date"
        return f"{len(self.must_run)} of {len(self.pipeline.jobs())} jobs to run"


def gate_path(job_name: str) -> str:
    return f"{GATE_DIR}/{job_name}"


def _touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"{time.time_ns()}\n")


def downstream(jobs: Sequence[Job], start: Iterable[str]) -> set[str]:
    """``start`` and every job that reads an output of one of them (transitively)."""
    producer = {out: j.name for j in jobs for out in j.outputs}
    readers: dict[str, set[str]] = {}
    for j in jobs:
        for inp in j.inputs:  # inputs and outputs are the same expanded paths (Snakemake's view)
            if inp in producer:
                readers.setdefault(producer[inp], set()).add(j.name)
    todo, seen = list(start), set(start)
    while todo:
        for nxt in readers.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def plan(pipeline: Pipeline, *, use_dvc: bool, lock: RunLock | None = None, hub: Mapping[str, str] | None = None) -> Plan:
    """Steps 2-4 of the module doc; gates touched for the jobs to run."""
    root = pipeline.root
    result = Plan(pipeline, active=True, lock=lock)
    hub = resolve_hub(pipeline) if hub is None else hub
    state.remove_temp_files(root)
    written = state.write_recipes(pipeline, hub)
    jobs = pipeline.jobs()
    # a dvc.lock with the very bytes the bridge recorded after its last commit is whole: only
    # another writer (DVC itself, a kill during its rewrite) can have damaged it
    token = _lock_token(root) if use_dvc else None
    synced = _read_json(root / SYNC_FILE).get("lock") if use_dvc else None
    damaged = lock_damage(root) if use_dvc and token != synced else None
    if damaged:
        quarantine_lock(root, damaged)
        token = None  # set aside: there is no dvc.lock now
    verdicts = {j.name: state.verify(root, j, state.recipe_digest(root, j)) for j in jobs}
    pending = _read_pending(root)
    recipes_ok = state.verify(root, RECIPES, "-").proven  # type: ignore[arg-type]
    if use_dvc:
        if pipeline.kind == "hub" and not pinned(pipeline.params["dataset"].get("revision")):
            result.to_commit.add("recipes")  # DVC's stage is always_changed: the branch may move
        if written or pending or not recipes_ok:
            result.to_commit.add("recipes")
        if damaged or token is None:
            result.to_commit |= {n for n, v in verdicts.items() if v.proven} | {"recipes"}
        elif token != synced or pending:
            if lock is not None:
                lock.lend_dvc()
            try:
                changed = dvc_status(root)
            finally:
                if lock is not None:
                    lock.hold_dvc()
            for job in jobs:
                v = verdicts[job.name]
                if job.name in changed and v.proven:
                    result.to_commit.add(job.name)
                elif job.name not in changed and not v.proven and all((root / o).exists() for o in job.outputs):
                    state.write_made(root, job, state.recipe_digest(root, job))  # DVC vouches for it
                    verdicts[job.name] = state.Verdict(True)
            if "recipes" in changed:
                result.to_commit.add("recipes")
            elif not recipes_ok and not written:
                state.write_made(root, RECIPES, "-")  # type: ignore[arg-type]
                result.to_commit.discard("recipes")
    result.proven = {n for n, v in verdicts.items() if v.proven}
    unproven = [n for n, v in verdicts.items() if not v.proven]
    for name in downstream(jobs, unproven):
        v = verdicts[name]
        result.must_run[name] = v.why if not v.proven else "an input is made again"
    for name in result.must_run:
        _touch(root / gate_path(name))
    result.recipes_pending = use_dvc and "recipes" in result.to_commit
    if result.recipes_pending:
        _touch(root / GATE_DIR / "recipes")
    elif not (root / RECIPES_DONE).exists():
        _touch(root / RECIPES_DONE)
    return result


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (FileNotFoundError, ValueError):
        return {}


def _read_pending(root: Path) -> list[str]:
    return list(_read_json(root / PENDING_FILE).get("jobs", []))


def record(pipeline: Pipeline, names: Iterable[str], lock: RunLock | None = None) -> str:
    """``dvc commit --force`` the proven jobs among ``names`` (re-verified now); a pending list
    guards the commit against a kill. Returns a one-line summary."""
    root = pipeline.root
    jobs = pipeline.jobs()
    by_name = {j.name: j for j in jobs}
    wanted = set(names)
    chosen = [
        n for n in sorted(wanted - {"recipes"})
        if n in by_name and state.verify(root, by_name[n], state.recipe_digest(root, by_name[n])).proven
    ]
    pending = sorted(set(chosen) | ({"recipes"} & wanted))
    if not pending:
        return "nothing to record in dvc.lock"
    write_json(root / PENDING_FILE, {"jobs": pending})
    # `dvc commit` parses and rewrites dvc.lock once per target (dvc/commands/commit.py): when every
    # job of the pipeline is proven (the usual end of a run), one call without targets records them
    # all, linear in the number of jobs; otherwise exactly the proven ones are named
    chosen_set = set(chosen)
    everything = all(
        n in chosen_set or state.verify(root, j, state.recipe_digest(root, j)).proven for n, j in by_name.items()
    )
    targets = [] if everything else [*(["recipes"] if "recipes" in wanted else []), *(commit_targets(jobs, chosen) or [])]
    if lock is not None:
        lock.lend_dvc()
    proc = run_dvc(root, "commit", "--force", *targets)
    if proc.returncode != 0:
        raise SabreError(f"dvc commit failed: {_why(proc)}")
    if "recipes" in pending:
        state.write_made(root, RECIPES, "-")  # type: ignore[arg-type]
    (root / PENDING_FILE).unlink(missing_ok=True)
    write_json(root / SYNC_FILE, {"lock": _lock_token(root)})
    return f"recorded {len(chosen)} jobs in dvc.lock (dvc commit)"


# ---------------------------------------------------------------------------
# Snakefile hooks
# ---------------------------------------------------------------------------
#: Snakemake invocations that run no job: no plan, no lock (``sabre recover`` runs ``--unlock``).
_NO_PLAN = ("--target-jobs", "--mode", "--unlock", "--lint", "--list-rules", "-l", "--cleanup-metadata")


def _main_process() -> bool:
    """Not a job step re-parsing the Snakefile (cluster executors run `snakemake --target-jobs ...`)
    and not a command that runs no job."""
    return not any(flag in sys.argv for flag in _NO_PLAN)


def before_planning(params: Mapping[str, Any], root: Path | None = None) -> Plan:
    """Snakefile hook at DAG-build time; returns the plan the rules' input functions read."""
    pipeline = Pipeline(params, root or Path.cwd())
    if not _main_process():
        return Plan(pipeline)
    lock = RunLock(pipeline.root)
    try:
        lock.acquire()
        os.environ[RUN_ENV] = "1"  # Snakemake's jobs inherit it: they are jobs, not hand runs
        use_dvc = enabled(pipeline.root)
        hub = resolve_hub(pipeline)  # an unresolvable source stops here, before anything is written
        if use_dvc:
            write_dvc_yaml(pipeline)
        result = plan(pipeline, use_dvc=use_dvc, lock=lock, hub=hub)
    except SabreError as exc:
        lock.release()
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
    if result.must_run:
        say(result.summary())
    return result


def after_run(result: Plan, success: bool = True) -> None:
    """Snakefile hook (onsuccess/onerror): record in dvc.lock what this run made and what was pending."""
    try:
        if not result.active or not enabled(result.root):
            return
        names = {*result.must_run, *result.to_commit}
        if names:
            say(record(result.pipeline, names, result.lock))
    except SabreError as exc:
        say(f"{exc}\n  the outputs are kept; run `sabre recover` to record them")
    finally:
        if result.lock is not None:
            result.lock.release()


# ---------------------------------------------------------------------------
# recover and status (sabre recover / sabre status)
# ---------------------------------------------------------------------------
def recover(pipeline: Pipeline) -> list[str]:
    """After a kill anywhere: temp files removed, a damaged dvc.lock rebuilt, every proven job
    recorded (so the cache is complete for `dvc push`). Unproven jobs are left for the next run."""
    root = pipeline.root
    lines = []
    lock = RunLock(root)
    lock.acquire()
    try:
        if any((root / ".snakemake" / "locks").glob("*")):
            # a killed Snakemake leaves its working-directory lock; no Snakemake runs now (we hold
            # the run lock), so remove it the documented way ("--unlock", Snakemake's CLI reference)
            exe = Path(sys.executable).parent / "snakemake"
            subprocess.run([str(exe) if exe.is_file() else "snakemake", "--unlock"], cwd=root,
                           capture_output=True, text=True, check=False)
            lines.append("removed the lock a killed Snakemake left (snakemake --unlock)")
        gone = state.remove_temp_files(root)
        if gone:
            lines.append(f"removed {len(gone)} temp files left by a kill")
        result = plan(pipeline, use_dvc=enabled(root), lock=lock)
        if enabled(root):
            proven = set(result.proven) | {"recipes"}
            lines.append(record(pipeline, proven, lock))
        if result.must_run:
            lines.append(f"{len(result.must_run)} jobs still to run: `snakemake --cores 8 all` or `dvc repro`")
        else:
            lines.append("every job is up to date")
    finally:
        lock.release()
    return lines
