"""The bridge between Snakemake and DVC: both run the same jobs and agree on what is up to date.

``dvc.yaml`` mirrors the Snakemake rules stage for stage (same ``sabre`` command,
same outputs; :func:`parity` checks it).  What remains is bookkeeping, because the
two decide differently whether a job must run: DVC compares content hashes with
``dvc.lock``, Snakemake compares modification times and its own records in
``.snakemake/metadata``.

* :func:`align` runs when Snakemake builds its DAG (a hook in the Snakefile).  For
  each stage that DVC finds up to date (command, params, deps and outs all match
  ``dvc.lock`` by content), it moves output mtimes *forward* (never back) until the
  outputs are newer than their inputs, because ``dvc checkout``/``dvc pull``/``dvc
  repro`` write files with new mtimes in any order; and it drops Snakemake's record
  of an output that was rewritten outside Snakemake (the record describes an older
  version).  Files that do not match ``dvc.lock`` are left alone, so an edited
  prediction file is still newer than its scores and is re-scored.  For each stage
  that DVC finds changed in what Snakemake cannot see (package code, params in a
  clone without ``.snakemake/``, the command, any input content), it marks the job's
  outputs so that Snakemake re-runs it ("code changed"), as ``dvc repro`` would.
* :func:`commit` runs from Snakemake's ``onsuccess``/``onerror`` handlers: the jobs
  Snakemake vouches for are recorded in ``dvc.lock`` and the DVC cache (``dvc
  commit``), keeping their mtimes, so ``dvc status`` is clean after a run.
* :func:`snakemake_jobs`, :func:`dvc_jobs` and :func:`parity` compare the plans.

Everything is a no-op outside a DVC project, when DVC is not installed, in
Snakemake's job subprocesses, or with ``SABRE_DVC_SYNC=0``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from base64 import urlsafe_b64encode
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

ENV_SWITCH = "SABRE_DVC_SYNC"
#: Stage changes Snakemake cannot see by itself; such stages are re-run by both tools.
RUN_CHANGES = frozenset({"deps", "params", "command", "always", "checksum"})
#: Written into Snakemake's record of an output to make it re-run the job.
FORCE_MARK = "sabre-dvc-sync: DVC sees a change ({reason}); re-run as `dvc repro` would"
#: Snakemake's metadata record format this module reads and writes.
SNAKEMAKE_RECORD_VERSION = 6
#: mtime step between an input and an output moved forward (seconds).
EPS = 0.001
#: Names never looked at when taking the mtime of a dependency tree.
SKIP_NAMES = frozenset({"__pycache__", ".snakemake_timestamp"})
#: Stages DVC always has but Snakemake plans only for ``dataset.source: demo``.
DEMO_ONLY_STAGES = frozenset({"demo_data"})


def _say(message: str) -> None:
    print(f"sabre dvc-sync: {message}", file=sys.stderr)


# ---------------------------------------------------------------------------
# DVC's view
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class StageState:
    """One resolved stage of dvc.yaml and what ``dvc status`` says of it."""

    name: str
    cmd: tuple[str, ...]
    deps: tuple[str, ...]
    outs: tuple[str, ...]
    locked: bool
    changes: frozenset[str] = frozenset()

    @property
    def up_to_date(self) -> bool:
        return self.locked and not self.changes

    @property
    def needs_run(self) -> bool:
        """Recorded in dvc.lock, but its command, params or inputs changed since."""
        return self.locked and bool(self.changes & RUN_CHANGES)


def is_dvc_project(root: Path | str) -> bool:
    root = Path(root)
    return (root / ".dvc").is_dir() and (root / "dvc.yaml").is_file()


def dvc_importable() -> bool:
    try:
        import dvc.repo  # noqa: F401
    except ImportError:
        return False
    return True


def locked_stage_names(root: Path | str) -> set[str]:
    """Stage names recorded in ``dvc.lock`` (empty when there is none)."""
    import yaml

    path = Path(root) / "dvc.lock"
    if not path.is_file():
        return set()
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return set((data.get("stages") or {}).keys())


def _change_kinds(entries: Sequence[Any]) -> frozenset[str]:
    """``dvc status`` entries ("changed deps", "changed command", ...) -> {"deps", "command", ...}."""
    kinds: set[str] = set()
    for entry in entries:
        labels = entry.keys() if isinstance(entry, Mapping) else [entry]
        for label in labels:
            words = str(label).replace("changed", "").strip().split()
            kinds.add(words[0] if words else str(label))
    return frozenset(kinds)


def _stage_paths(stage: Any) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    from dvc.dependency.param import ParamsDependency

    cmd = stage.cmd if isinstance(stage.cmd, list) else [stage.cmd]
    deps = tuple(str(d.def_path) for d in stage.deps if not isinstance(d, ParamsDependency))
    outs = tuple(str(o.def_path) for o in stage.outs)
    return tuple(str(c) for c in cmd), deps, outs


def load_stages(root: Path | str = ".", *, with_status: bool = True) -> list[StageState]:
    """The pipeline stages of ``root/dvc.yaml`` (foreach/matrix expanded by DVC), with their status."""
    from dvc.repo import Repo
    from dvc.stage import PipelineStage

    root = Path(root)
    locked = locked_stage_names(root)
    repo = Repo(str(root))
    try:
        status = repo.status() if with_status else {}
        states = []
        for stage in repo.index.stages:
            if not isinstance(stage, PipelineStage):
                continue
            cmd, deps, outs = _stage_paths(stage)
            states.append(
                StageState(
                    name=stage.name,
                    cmd=cmd,
                    deps=deps,
                    outs=outs,
                    locked=stage.name in locked,
                    # status keys are addresses relative to the current directory
                    changes=_change_kinds(status.get(stage.addressing, [])),
                )
            )
        return states
    finally:
        repo.close()


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


def toposort(stages: Sequence[StageState]) -> list[StageState]:
    """Stages ordered so that each comes after the stages whose outputs it depends on."""
    producers = {s.name: [p.name for p in stages if p is not s and any(_overlaps(d, o) for d in s.deps for o in p.outs)] for s in stages}
    by_name = {s.name: s for s in stages}
    done: set[str] = set()
    order: list[StageState] = []

    def visit(name: str, seen: tuple[str, ...]) -> None:
        if name in done or name in seen:
            return
        for p in producers[name]:
            visit(p, seen + (name,))
        done.add(name)
        order.append(by_name[name])

    for s in stages:
        visit(s.name, ())
    return order


# ---------------------------------------------------------------------------
# Snakemake's view of files: mtimes and metadata records
# ---------------------------------------------------------------------------
def snakemake_mtime(path: Path) -> float:
    """The mtime Snakemake uses: a directory's ``.snakemake_timestamp`` if present, else the path's own."""
    if path.is_dir():
        stamp = path / ".snakemake_timestamp"
        if stamp.exists():
            return stamp.stat().st_mtime
    return path.stat().st_mtime


def _walk(path: Path) -> Iterator[Path]:
    """``path`` and everything below it (directories included), skipping caches."""
    yield path
    if path.is_dir() and not path.is_symlink():
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_NAMES)
            base = Path(dirpath)
            for d in dirnames:
                yield base / d
            for f in sorted(filenames):
                if f not in SKIP_NAMES and not f.endswith(".pyc"):
                    yield base / f


def tree_mtime(path: Path) -> float | None:
    """The newest mtime in a file tree (None if it does not exist)."""
    if not path.exists():
        return None
    return max(snakemake_mtime(p) if p == path else p.stat().st_mtime for p in _walk(path))


def _set_mtime(path: Path, mtime: float) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, int(mtime * 1e9)))
    stamp = path / ".snakemake_timestamp"
    if path.is_dir() and stamp.exists():
        os.utime(stamp, ns=(st.st_atime_ns, int(mtime * 1e9)))


class SnakemakeRecords:
    """Snakemake's file-based metadata (``.snakemake/metadata``, ``.snakemake/incomplete``)."""

    def __init__(self, snakemake_dir: Path) -> None:
        self.dir = snakemake_dir
        self.metadata = snakemake_dir / "metadata"
        self.incomplete = snakemake_dir / "incomplete"
        try:
            self.max_len = os.pathconf(self.dir.parent, "PC_NAME_MAX") or 255
        except (OSError, ValueError):
            self.max_len = 255

    def _path(self, subject: Path, key: str) -> Path:
        # as snakemake.persistence.file.FilePersistence._record_path
        max_len = self.max_len
        b64 = urlsafe_b64encode(key.encode()).decode()
        parts = [b64[i : i + max_len - 1] for i in range(0, len(b64), max_len - 1)]
        parts = ["@" + s for s in parts[:-1]] + [parts[-1]]
        return subject.joinpath(*parts)

    def read(self, key: str) -> dict[str, Any] | None:
        path = self._path(self.metadata, key)
        try:
            return json.loads(path.read_text(encoding="utf-8")) or None
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def write(self, key: str, record: Mapping[str, Any]) -> None:
        path = self._path(self.metadata, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".sabre-tmp")
        tmp.write_text(json.dumps(dict(record)), encoding="utf-8")
        os.replace(tmp, path)

    def delete(self, key: str) -> bool:
        removed = False
        for subject in (self.metadata, self.incomplete):
            try:
                self._path(subject, key).unlink()
                removed = removed or subject == self.metadata
            except FileNotFoundError:
                pass
        return removed

    def unmark_incomplete(self, key: str) -> None:
        try:
            self._path(self.incomplete, key).unlink()
        except FileNotFoundError:
            pass

    def locked(self) -> bool:
        """Another Snakemake process holds this working directory."""
        locks = self.dir / "locks"
        return locks.is_dir() and any(locks.iterdir())


def _record_matches(record: Mapping[str, Any] | None, mtime: float) -> bool:
    """The record was written for exactly this version of the file (Snakemake stores its mtime)."""
    if not record or record.get("endtime") is None or str(record.get("code") or "").startswith("sabre-dvc-sync"):
        return False
    return abs(float(record["endtime"]) - mtime) < 1e-3


# ---------------------------------------------------------------------------
# align: make Snakemake agree with dvc.lock before it plans
# ---------------------------------------------------------------------------
@dataclass
class AlignReport:
    moved: list[str] = field(default_factory=list)
    dropped_records: list[str] = field(default_factory=list)
    forced: list[str] = field(default_factory=list)
    skipped: str = ""

    def summary(self) -> str:
        if self.skipped:
            return f"skipped ({self.skipped})"
        parts = [
            f"{len(self.moved)} mtimes moved forward",
            f"{len(self.dropped_records)} stale Snakemake records dropped",
        ]
        if self.forced:
            parts.append(f"re-run for a change DVC sees: {', '.join(self.forced)}")
        return "; ".join(parts)


def align(
    root: Path | str = ".",
    *,
    snakemake_dir: str = ".snakemake",
    stages: Sequence[StageState] | None = None,
) -> AlignReport:
    """Bring Snakemake's view (mtimes, metadata) in line with ``dvc.lock``; see the module docstring."""
    root = Path(root).resolve()
    report = AlignReport()
    if not (root / "dvc.lock").is_file():
        report.skipped = "no dvc.lock"
        return report
    records = SnakemakeRecords(root / snakemake_dir)
    if records.locked():
        report.skipped = "another Snakemake process is running here"
        return report
    if stages is None:
        stages = load_stages(root)
    for stage in toposort(stages):
        if stage.up_to_date:
            _align_stage(root, stage, records, report)
        elif stage.needs_run and all((root / o).exists() for o in stage.outs):
            reason = ", ".join(sorted(stage.changes & RUN_CHANGES))
            for out in stage.outs:
                for path in _walk(root / out):
                    if path.is_dir() and path != root / out:
                        continue
                    key = path.relative_to(root).as_posix()
                    record = records.read(key) or {}
                    record.update(
                        record_format_version=SNAKEMAKE_RECORD_VERSION,
                        code=FORCE_MARK.format(reason=reason),
                        endtime=None,
                        incomplete=False,
                    )
                    records.write(key, record)
            report.forced.append(stage.name)
    return report


def _align_stage(root: Path, stage: StageState, records: SnakemakeRecords, report: AlignReport) -> None:
    times = [t for t in (tree_mtime(root / d) for d in stage.deps) if t is not None]
    newest_input = max(times) if times else None
    for out in stage.outs:
        for path in _walk(root / out):
            key = path.relative_to(root).as_posix()
            before = snakemake_mtime(path)
            record = records.read(key)
            valid = _record_matches(record, before)
            moved = newest_input is not None and before <= newest_input
            if moved:
                after = newest_input + EPS
                _set_mtime(path, after)
                report.moved.append(key)
            if record is not None:
                if valid and moved:
                    record["endtime"] = snakemake_mtime(path)
                    records.write(key, record)
                elif not valid:
                    records.delete(key)
                    report.dropped_records.append(key)
            records.unmark_incomplete(key)


# ---------------------------------------------------------------------------
# commit: record what Snakemake made in dvc.lock and the cache
# ---------------------------------------------------------------------------
def _covered(out: str, files: set[str]) -> set[str]:
    prefix = out.rstrip("/") + "/"
    return {f for f in files if f == out or f.startswith(prefix)}


def stages_to_commit(
    stages: Sequence[StageState],
    root: Path,
    outputs: Iterable[str],
    ran: Iterable[str],
    *,
    success: bool,
) -> list[StageState]:
    """The stages whose outputs Snakemake vouches for (see :func:`commit`)."""
    outputs, ran = set(outputs), set(ran)
    chosen = []
    for stage in stages:
        if stage.up_to_date or not stage.outs:
            continue
        if not all(_covered(o, outputs) for o in stage.outs):
            continue  # not (entirely) part of this Snakemake run
        if not all((root / o).exists() for o in stage.outs):
            continue
        made_now = all(_covered(o, outputs) <= ran and _covered(o, ran) for o in stage.outs)
        if made_now or (success and not stage.needs_run):
            chosen.append(stage)
    return chosen


def _snapshot(root: Path, outs: Iterable[str]) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for o in outs for p in _walk(root / o) if p.exists()} | {
        p / ".snakemake_timestamp": (p / ".snakemake_timestamp").stat().st_mtime_ns
        for o in outs
        for p in [root / o]
        if (p / ".snakemake_timestamp").exists()
    }


def _restore(snapshot: Mapping[Path, int]) -> None:
    for path, mtime_ns in snapshot.items():
        if path.exists():
            os.utime(path, ns=(path.stat().st_atime_ns, mtime_ns))


def commit(
    root: Path | str = ".",
    *,
    outputs: Iterable[str],
    ran: Iterable[str],
    success: bool,
    stages: Sequence[StageState] | None = None,
) -> list[str]:
    """``dvc commit`` the stages Snakemake vouches for; returns their names.

    ``outputs``: every output of the jobs in Snakemake's DAG; ``ran``: the outputs of
    the jobs that ran to completion in this invocation.  After a successful run a
    stage is committed when all its outputs belong to the DAG, unless DVC sees a
    change that Snakemake did not act on (then only if its job ran now).  After a
    failed run only the stages whose jobs completed are committed.  Output mtimes
    are kept, so Snakemake's records stay valid.
    """
    from dvc.repo import Repo

    root = Path(root).resolve()
    if stages is None:
        stages = load_stages(root)
    chosen = stages_to_commit(stages, root, outputs, ran, success=success)
    if not chosen:
        return []
    snap = _snapshot(root, [o for s in chosen for o in s.outs])
    repo = Repo(str(root))
    try:
        with repo.lock:
            _commit_stages(repo, [s.name for s in chosen])
    finally:
        repo.close()
        _restore(snap)
    return [s.name for s in chosen]


def _commit_stages(repo: Any, names: Sequence[str]) -> None:
    """``dvc commit --force`` of several stages, reading and writing dvc.lock once."""
    wanted = set(names)
    by_file: dict[Any, list[Any]] = {}
    for stage in repo.index.stages:
        if getattr(stage, "name", None) in wanted:
            stage.save()
            stage.commit(relink=False)
            by_file.setdefault(stage.dvcfile, []).append(stage)
    for dvcfile, stages in by_file.items():
        dvcfile.dump_stages(stages, update_pipeline=False)


# ---------------------------------------------------------------------------
# Snakefile hooks
# ---------------------------------------------------------------------------
def _enabled(workflow: Any) -> bool:
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return False
    if not getattr(workflow, "is_main_process", True):
        return False
    return is_dvc_project(Path.cwd()) and dvc_importable()


def on_start(workflow: Any) -> None:
    """Snakefile hook (DAG-build time): :func:`align`; never stops the workflow."""
    try:
        if not _enabled(workflow):
            return
        report = align(Path.cwd())
        if report.moved or report.dropped_records or report.forced:
            _say(report.summary())
    except Exception as exc:  # a broken sync must not break the pipeline
        _say(f"align skipped: {type(exc).__name__}: {exc}")


def _job_outputs(jobs: Iterable[Any]) -> set[str]:
    return {Path(str(f)).as_posix() for job in jobs for f in job.output}


def on_finish(workflow: Any, *, success: bool) -> None:
    """Snakefile hook (onsuccess/onerror): :func:`commit` what this run vouches for."""
    try:
        if not _enabled(workflow) or workflow.dag is None:
            return
        dag = workflow.dag
        outputs = _job_outputs(dag.jobs)
        ran = _job_outputs(j for j in dag.needrun_jobs(exclude_finished=False) if dag.finished(j))
        done = commit(Path.cwd(), outputs=outputs, ran=ran, success=success)
        if done:
            _say(f"recorded {len(done)} stages in dvc.lock (dvc commit)")
    except Exception as exc:
        _say(f"dvc commit skipped: {type(exc).__name__}: {exc}")


# ---------------------------------------------------------------------------
# Plans and parity
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class PlannedJob:
    """A job as one orchestrator plans it: a name, the command's words, the outputs."""

    name: str
    command: tuple[str, ...]
    outputs: tuple[str, ...]


def _is_mkdir(cmd: str) -> bool:
    words = shlex.split(cmd)
    return len(words) >= 3 and words[:2] == ["mkdir", "-p"]


def normalize_command(cmd: str | Sequence[str]) -> tuple[str, ...]:
    """The words of a command line, without quoting differences or whitespace.

    ``mkdir -p`` steps (DVC does not create log directories, Snakemake does) and
    leading ``VAR=value`` assignments (device pinning by Snakemake) are dropped.
    """
    parts = [cmd] if isinstance(cmd, str) else list(cmd)
    parts = [p for p in parts if p.strip() and not _is_mkdir(p)]
    words = shlex.split(" && ".join(parts))
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        words = words[1:]
    return tuple(words)


def dvc_jobs(root: Path | str = ".") -> list[PlannedJob]:
    """The stages of dvc.yaml as rendered by DVC itself, for the current params."""
    return [
        PlannedJob(name=s.name, command=normalize_command(s.cmd), outputs=tuple(sorted(s.outs)))
        for s in load_stages(root, with_status=False)
    ]


_PLAN_SCRIPT = r"""
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import DAGSettings, OutputSettings, ResourceSettings, Quietness

targets = set(sys.argv[1:]) or {"all"}
with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
    wf = api.workflow(resource_settings=ResourceSettings(cores=1), snakefile=Path("Snakefile").resolve(), workdir=Path.cwd())
    dag_api = wf.dag(dag_settings=DAGSettings(targets=targets, forceall=True))
    workflow = dag_api.workflow_api._workflow
    workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True, nolock=True)
    workflow._build_dag()
    jobs = [
        {"rule": j.rule.name, "shellcmd": j.shellcmd, "outputs": sorted(str(f) for f in j.output)}
        for j in workflow.dag.jobs
    ]
print("@@PLAN@@" + json.dumps(jobs))
"""


def snakemake_jobs(root: Path | str = ".", targets: Sequence[str] = ("all",)) -> list[PlannedJob]:
    """Every job Snakemake plans for ``targets`` (as with ``--forceall``), via its Python API."""
    env = dict(os.environ, **{ENV_SWITCH: "0"})
    proc = subprocess.run(
        [sys.executable, "-c", _PLAN_SCRIPT, *targets],
        cwd=str(root),
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    marker = [line for line in proc.stdout.splitlines() if line.startswith("@@PLAN@@")]
    if proc.returncode != 0 or not marker:
        raise RuntimeError(f"snakemake could not plan {list(targets)} in {root}:\n{proc.stderr[-4000:]}")
    jobs = json.loads(marker[-1][len("@@PLAN@@") :])
    return [
        PlannedJob(name=j["rule"], command=normalize_command(j["shellcmd"]), outputs=tuple(j["outputs"]))
        for j in jobs
        if j["shellcmd"]
    ]


@dataclass
class ParityReport:
    only_snakemake: list[PlannedJob] = field(default_factory=list)
    only_dvc: list[PlannedJob] = field(default_factory=list)
    output_mismatch: list[tuple[PlannedJob, PlannedJob]] = field(default_factory=list)
    matched: int = 0

    @property
    def ok(self) -> bool:
        return not (self.only_snakemake or self.only_dvc or self.output_mismatch)

    def describe(self) -> str:
        lines = [f"{self.matched} jobs agree"]
        for job in self.only_snakemake:
            lines.append(f"only in Snakemake: rule {job.name}: {shlex.join(job.command)} -> {', '.join(job.outputs)}")
        for job in self.only_dvc:
            lines.append(f"only in dvc.yaml: stage {job.name}: {shlex.join(job.command)} -> {', '.join(job.outputs)}")
        for smk, dvc in self.output_mismatch:
            lines.append(
                f"outputs differ for `{shlex.join(smk.command)}`: rule {smk.name} writes {list(smk.outputs)}, "
                f"stage {dvc.name} declares {list(dvc.outputs)}"
            )
        return "\n".join(lines)


def outputs_agree(snakemake_outputs: Iterable[str], dvc_outputs: Iterable[str]) -> bool:
    """Each Snakemake output lies in exactly one DVC out (the same path or a directory out), each DVC out holds one."""
    smk = {Path(p).as_posix() for p in snakemake_outputs}
    outs = [Path(p).as_posix() for p in dvc_outputs]
    counts = {f: sum(1 for o in outs if f in _covered(o, {f})) for f in smk}
    return all(c == 1 for c in counts.values()) and all(_covered(o, smk) for o in outs)


def parity(
    root: Path | str = ".",
    *,
    snakemake: Sequence[PlannedJob] | None = None,
    dvc: Sequence[PlannedJob] | None = None,
    demo_source: bool | None = None,
) -> ParityReport:
    """Compare the (command, outputs) pairs of both plans for the current params."""
    root = Path(root)
    smk_jobs = list(snakemake) if snakemake is not None else snakemake_jobs(root)
    dvc_list = list(dvc) if dvc is not None else dvc_jobs(root)
    if demo_source is None:
        import yaml

        params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
        demo_source = str(params["dataset"]["source"]) == "demo"
    report = ParityReport()
    by_cmd: dict[tuple[str, ...], list[PlannedJob]] = {}
    for job in dvc_list:
        by_cmd.setdefault(job.command, []).append(job)
    for job in smk_jobs:
        candidates = by_cmd.get(job.command) or []
        if not candidates:
            report.only_snakemake.append(job)
            continue
        match = candidates.pop(0)
        if outputs_agree(job.outputs, match.outputs):
            report.matched += 1
        else:
            report.output_mismatch.append((job, match))
    for rest in by_cmd.values():
        for job in rest:
            if not demo_source and job.name in DEMO_ONLY_STAGES:
                continue
            report.only_dvc.append(job)
    return report


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - thin CLI, see cli.py
    from .cli import main as cli_main

    return cli_main(["dvc-sync", *(argv if argv is not None else sys.argv[1:])])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
