"""Snakemake and DVC agree on what is up to date, through their public interfaces only.

Both run the jobs of one declaration (:mod:`sabre_prior.repro.pipeline`). Snakemake decides by
modification times alone (``rerun-triggers: [mtime]`` in the workflow profile); everything
DVC compares that is not a file is made a file Snakemake sees: each job's code files are
inputs of its rule, and a small *stamp* per job (``.sabre/stamps/``, git-ignored) holds its
command, the values of the params keys it reads and, for a hub source, a digest of the files the
split reads at the resolved revision (a new commit re-fetches exactly the splits whose files changed).

:func:`before_planning` (the Snakefile, at DAG-build time, main process only):

1. regenerates ``dvc.yaml`` when the source's kind changed (demo, local directory, hub);
2. rewrites each stamp whose content changed (only then: its mtime tells Snakemake "re-run");
3. checks, with stat calls only, that every job's outputs are newer than its inputs. Only when
   some are not (after ``dvc pull``/``dvc checkout``/``dvc repro``, a git checkout, a stamp just
   rewritten) it asks DVC (``dvc status --json``) and moves the outputs of the stages DVC finds
   up to date forward in time (never back), producers first. A stage DVC finds changed is left
   alone, so Snakemake re-runs it as ``dvc repro`` would.

:func:`after_run` (``onsuccess``/``onerror``): the jobs whose outputs were all written during
this run are recorded with ``dvc commit --force --no-relink <stages>``, output mtimes kept.

Nothing reads or writes Snakemake's ``.snakemake/`` records or calls private methods. All of it
is skipped outside a DVC project or with ``SABRE_DVC_SYNC=0`` (stamps are still written).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .pipeline import Job, Pipeline, write_dvc_yaml

ENV_SWITCH = "SABRE_DVC_SYNC"
#: When this Snakemake invocation built its DAG (outputs written later were made by it).
_STARTED_NS = 0
#: Outputs moved forward land this far after their newest input (nanoseconds).
EPS_NS = 1_000_000


def say(message: str) -> None:
    print(f"sabre dag-sync: {message}", file=sys.stderr)


def is_dvc_project(root: Path) -> bool:
    return (root / ".dvc").is_dir() and (root / "dvc.yaml").is_file()


def enabled(root: Path) -> bool:
    return os.environ.get(ENV_SWITCH, "1") != "0" and is_dvc_project(root) and dvc_command() is not None


def dvc_command() -> list[str] | None:
    """The ``dvc`` executable next to this interpreter, else on PATH."""
    here = Path(sys.executable).parent / "dvc"
    if here.is_file():
        return [str(here)]
    found = shutil.which("dvc")
    return [found] if found else None


def run_dvc(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = dvc_command()
    assert cmd is not None
    return subprocess.run([*cmd, *args], cwd=root, capture_output=True, text=True, check=False)


# ---------------------------------------------------------------------------
# mtimes as Snakemake reads them
# ---------------------------------------------------------------------------
def mtime_ns(path: Path) -> int | None:
    """A file's mtime; for a folder the newest mtime in it (what Snakemake compares); None if missing."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    if path.is_symlink():  # Snakemake may date a link by the link itself (lstat): take the later of both
        return max(st.st_mtime_ns, path.lstat().st_mtime_ns)
    if not path.is_dir():
        return st.st_mtime_ns
    newest = st.st_mtime_ns
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            try:
                newest = max(newest, os.stat(os.path.join(dirpath, name)).st_mtime_ns)
            except FileNotFoundError:
                pass
    return newest


def _set_mtime(path: Path, ns: int) -> None:
    """Move ``path`` (and, for a folder, everything in it) to ``ns``; never backwards."""
    targets = [path]
    if path.is_dir():
        targets += [Path(d) / n for d, dirs, files in os.walk(path) for n in [*dirs, *files]]
    for p in sorted(targets, key=lambda q: len(q.parts), reverse=True):
        st = p.stat()
        if st.st_mtime_ns < ns:
            os.utime(p, ns=(st.st_atime_ns, ns), follow_symlinks=False)


@dataclass
class JobTimes:
    newest_input: int | None
    oldest_output: int | None
    outputs_exist: bool

    @property
    def consistent(self) -> bool:
        """Snakemake would find nothing to do for this job (taken alone)."""
        if not self.outputs_exist:
            return True  # missing outputs: Snakemake runs the job, nothing to align
        return self.newest_input is None or (self.oldest_output or 0) > self.newest_input

    @property
    def up_to_date(self) -> bool:
        """Every output exists and is newer than every input."""
        return self.outputs_exist and self.consistent


def job_times(root: Path, job: Job, cache: dict[str, int | None] | None = None) -> JobTimes:
    """The job's newest input and oldest output; ``cache`` shares stat results between jobs of one check."""

    def stat(rel: str) -> int | None:
        if cache is None:
            return mtime_ns(root / rel)
        if rel not in cache:
            cache[rel] = mtime_ns(root / rel)
        return cache[rel]

    ins = [stat(p) for p in (*job.inputs, job.stamp)]
    outs = [stat(p) for p in job.outputs]
    present = [t for t in ins if t is not None]
    return JobTimes(
        newest_input=max(present) if present else None,
        oldest_output=min(t for t in outs if t is not None) if any(t is not None for t in outs) else None,
        outputs_exist=all(t is not None for t in outs),
    )


# ---------------------------------------------------------------------------
# stamps
# ---------------------------------------------------------------------------
def resolve_hub_files(repo: str, revision: str | None, splits: Sequence[str]) -> dict[str, str] | None:
    """Per split, a digest of the files it reads at the commit the hub serves for ``revision``
    (:func:`sabre_prior.data.fetch.hub_files`); None when the hub cannot be asked."""
    try:
        from ..data.fetch import hub_files

        return hub_files(repo, revision, splits)[1]
    except Exception as exc:  # noqa: BLE001 - offline or no access: the fetch itself will say why
        say(f"could not resolve {repo}@{revision or 'default branch'} ({type(exc).__name__}); keeping the last stamp")
        return None


def write_stamps(pipeline: Pipeline, jobs: Sequence[Job]) -> list[str]:
    """Rewrite the stamps whose content changed; returns their paths."""
    root = pipeline.root
    resolved: dict[str, str] | None = None
    if pipeline.kind == "hub" and any(j.stage.name == "fetch" for j in jobs):
        splits = [dict(j.item)["split"] for j in jobs if j.stage.name == "fetch"]
        resolved = resolve_hub_files(pipeline.source, pipeline.params["dataset"].get("revision"), splits)
    changed = []
    for job in jobs:
        content = job.stamp_content
        path = root / job.stamp
        if job.stage.name == "fetch" and pipeline.kind == "hub":
            if resolved is None and path.is_file():
                continue  # offline: the last known revision stands
            data = json.loads(content)
            data["hub_files"] = resolved[dict(job.item)["split"]] if resolved else None
            content = json.dumps(data, sort_keys=True, indent=1) + "\n"
        try:
            if path.read_text(encoding="utf-8") == content:
                continue
        except FileNotFoundError:
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(content, encoding="utf-8")
        os.replace(tmp, path)
        changed.append(job.stamp)
    return changed


# ---------------------------------------------------------------------------
# DVC's view, through its command line
# ---------------------------------------------------------------------------
def dvc_status(root: Path) -> dict[str, list[Any]]:
    """``dvc status --json``: stage name -> its changes (a stage up to date is absent)."""
    proc = run_dvc(root, "status", "--json")
    if proc.returncode != 0:
        raise RuntimeError(f"dvc status failed: {proc.stderr.strip()[-2000:]}")
    text = proc.stdout.strip()
    data = json.loads(text) if text else {}
    return {str(k).rsplit(":", 1)[-1]: v for k, v in data.items()}


@dataclass
class AlignReport:
    stamps: list[str] = field(default_factory=list)
    asked_dvc: bool = False
    moved: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)  # changed in DVC's view: Snakemake re-runs them
    dvc_yaml_written: bool = False

    def summary(self) -> str:
        parts = [f"{len(self.stamps)} stamps rewritten"]
        if self.dvc_yaml_written:
            parts.append("dvc.yaml regenerated for the dataset source")
        if self.asked_dvc:
            parts.append(f"{len(self.moved)} up-to-date stages' outputs moved forward")
            if self.left:
                parts.append(f"{len(self.left)} stages changed for DVC too")
        return "; ".join(parts)


def align(pipeline: Pipeline, jobs: Sequence[Job] | None = None, *, use_dvc: bool = True) -> AlignReport:
    """Stamps, then the mtime check (and DVC's status only when something is inconsistent)."""
    root = pipeline.root
    jobs = list(jobs if jobs is not None else pipeline.jobs())
    # a stamp created next to existing outputs says nothing yet: DVC decides below; without DVC the
    # outputs are trusted, as Snakemake trusts outputs it has no record of (the stamp is dated 1970)
    # (a job whose outputs are missing runs when needed anyway; a brand-new stamp must not make
    # Snakemake schedule it when nothing needs it, so its stamp is dated 1970 too)
    created = [j for j in jobs if not (root / j.stamp).exists()]
    fresh = [j for j in created if all((root / o).exists() for o in j.outputs)]
    report = AlignReport(stamps=write_stamps(pipeline, jobs))
    for job in created:
        if job not in fresh and (root / job.stamp).exists():
            os.utime(root / job.stamp, ns=(0, 0))
    cache: dict[str, int | None] = {}  # code files are inputs of many jobs: stat each once
    inconsistent = [j for j in jobs if not job_times(root, j, cache).consistent]
    status = None
    if inconsistent and use_dvc:
        try:
            status = dvc_status(root)
        except RuntimeError as exc:
            say(f"DVC cannot tell what is up to date ({str(exc).splitlines()[0][:200]})")
    if status is None:
        for job in fresh:
            os.utime(root / job.stamp, ns=(0, 0))
        return report
    report.asked_dvc = True
    for job in jobs:  # producers first: a moved output can make its consumer inconsistent
        times = job_times(root, job)
        if times.consistent:
            continue
        if job.name in status:
            report.left.append(job.name)
            continue
        assert times.newest_input is not None
        for out in job.outputs:
            _set_mtime(root / out, times.newest_input + EPS_NS)
        report.moved.append(job.name)
    return report


def commit_targets(jobs: Sequence[Job], names: Iterable[str]) -> list[str] | None:
    """The fewest ``dvc commit`` targets naming exactly the jobs ``names``: None (no targets: every
    stage) when they are every job of the pipeline, a stage's name for all the instances of its
    foreach/matrix (DVC takes a group's name as a target), else the instance names.

    ``dvc commit`` parses and rewrites dvc.lock once per target (dvc/commands/commit.py loops over
    them), so the cost is targets x lock size: with 4 models, 37 instance targets took about 115 s
    and one call without targets 7 s (benchmarks/bench_dag.py)."""
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
            targets.append(stage)  # a foreach/matrix group
        else:
            targets += chosen
    return targets


def commit(root: Path, names: Sequence[str], jobs: Sequence[Job]) -> subprocess.CompletedProcess[str] | None:
    """``dvc commit --force --no-relink`` of the jobs ``names`` (of ``jobs``, every job of the
    pipeline), keeping the outputs' mtimes; the fewest targets, see :func:`commit_targets`."""
    if not names:
        return None
    return run_dvc(root, "commit", "--force", "--no-relink", "--quiet", *(commit_targets(jobs, names) or []))


def finished_jobs(pipeline: Pipeline, since_ns: int, jobs: Iterable[Job] | None = None) -> list[Job]:
    """Jobs whose outputs were all (re)written at or after ``since_ns``."""
    root = pipeline.root
    out = []
    for job in jobs if jobs is not None else pipeline.jobs():
        times = [mtime_ns(root / p) for p in job.outputs]
        if times and all(t is not None and t >= since_ns for t in times):
            out.append(job)
    return out


# ---------------------------------------------------------------------------
# Snakefile hooks
# ---------------------------------------------------------------------------
def _main_process() -> bool:
    """Not a job step re-parsing the Snakefile (cluster executors run `snakemake --target-jobs ...`)."""
    return "--target-jobs" not in sys.argv and "--mode" not in sys.argv


def before_planning(params: Mapping[str, Any], root: Path | None = None) -> Pipeline:
    """Snakefile hook at DAG-build time; returns the pipeline for the rules. Never stops the workflow."""
    global _STARTED_NS
    pipeline = Pipeline(params, root or Path.cwd())
    _STARTED_NS = time.time_ns()
    if not _main_process():
        return pipeline
    try:
        written = False
        dvc_on = enabled(pipeline.root)
        if dvc_on:
            written = write_dvc_yaml(pipeline)
        report = align(pipeline, use_dvc=dvc_on)
        report.dvc_yaml_written = written
        if report.stamps or report.asked_dvc or written:
            say(report.summary())
    except Exception as exc:  # a broken sync must not break the pipeline
        say(f"alignment skipped: {type(exc).__name__}: {exc}")
    return pipeline


def vouched_jobs(pipeline: Pipeline, jobs: Sequence[Job], status: Mapping[str, Any]) -> list[Job]:
    """Jobs DVC finds changed that Snakemake finds up to date (outputs newer than every input):
    after a successful run Snakemake vouches for them (e.g. a prediction edited by hand, now re-scored)."""
    return [j for j in jobs if j.name in status and job_times(pipeline.root, j).up_to_date]


def after_run(pipeline: Pipeline, success: bool = True) -> None:
    """Snakefile hook (onsuccess/onerror): ``dvc commit`` the jobs this run completed
    (after a successful run that did something, also the jobs it vouches for)."""
    try:
        if not _main_process() or not enabled(pipeline.root):
            return
        jobs = pipeline.jobs()
        finished = finished_jobs(pipeline, _STARTED_NS, jobs)
        names = [j.name for j in finished]
        if success and finished and len(finished) < len(jobs):  # (all finished: none left to vouch for)
            names += [j.name for j in vouched_jobs(pipeline, jobs, dvc_status(pipeline.root)) if j.name not in names]
        proc = commit(pipeline.root, names, jobs)
        if proc is None:
            return
        if proc.returncode == 0:
            say(f"recorded {len(names)} stages in dvc.lock (dvc commit)")
        else:
            say(f"dvc commit failed: {proc.stderr.strip()[-2000:]}")
    except Exception as exc:
        say(f"dvc commit skipped: {type(exc).__name__}: {exc}")


# ---------------------------------------------------------------------------
# Checks (sabre dag check)
# ---------------------------------------------------------------------------
def snakemake_rules(root: Path) -> list[str]:
    """``snakemake --list-rules`` (the documented command line)."""
    exe = Path(sys.executable).parent / "snakemake"
    proc = subprocess.run(
        [str(exe) if exe.is_file() else "snakemake", "--list-rules"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ, **{ENV_SWITCH: "0"}),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"snakemake --list-rules failed in {root}:\n{proc.stderr[-3000:]}")
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()]


def dvc_stage_names(root: Path) -> list[str]:
    """Stage names as DVC renders dvc.yaml for the current params (``dvc stage list --name-only``)."""
    proc = run_dvc(root, "stage", "list", "--name-only")
    if proc.returncode != 0:
        raise RuntimeError(f"dvc stage list failed in {root}:\n{proc.stderr[-3000:]}")
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()]


def check(root: Path) -> list[str]:
    """Problems that make the two tools disagree (empty: they agree)."""
    import yaml

    from .pipeline import STAGES, dvc_yaml_is_fresh

    params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    pipeline = Pipeline(params, root)
    problems = []
    if not dvc_yaml_is_fresh(pipeline):
        problems.append("dvc.yaml differs from the declaration: regenerate it with `sabre dvc-yaml`")
    rules = set(snakemake_rules(root)) - {"all", "predict_local"}
    declared = {s.name for s in pipeline.stages}
    for name in sorted(rules - {s.name for s in STAGES}):
        problems.append(f"rule {name} is not in the declaration (sabre_prior.repro.pipeline.STAGES)")
    for name in sorted(declared - rules):
        problems.append(f"stage {name} has no Snakemake rule")
    if is_dvc_project(root) and dvc_command() is not None:
        expected = {j.name for j in pipeline.jobs()}
        rendered = set(dvc_stage_names(root))
        for name in sorted(expected - rendered):
            problems.append(f"job {name} is not a stage DVC renders")
        for name in sorted(rendered - expected):
            problems.append(f"DVC stage {name} is not a job of the declaration")
    return problems
