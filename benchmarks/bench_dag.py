"""Benchmark: how the DAG scales with the number of models (not a test; prints figures).

For each N (default 4, 40, 100) a temporary git repo of the project gets N offline models
(baseline strategies, no network) on the small demo, then times:

* the fresh run: ``snakemake --cores 2 all`` (and its ``dvc commit``);
* a no-op ``snakemake --cores 2 all`` (must print "Nothing to be done");
* a no-op ``dvc repro`` (must run no stage);
* ``dvc status`` for reference.

    python benchmarks/bench_dag.py [--models 4 40 100] [--workdir DIR] [--keep] [--reuse] [--repeat K]

``--reuse`` times only the no-ops in a workdir kept (``--keep``) by an earlier run (its fresh run
is then reported as not run). Each no-op is run ``--repeat`` times (default 3) and the median is
printed. Every row also gives the 1-minute load average before its fresh run and before its no-ops
(``os.getloadavg``): on a shared 2-core machine a figure means little without it.

Targets (issue 9): both no-ops under 5 s at N = 40 and under 10 s at N = 100 on a 2-core machine.

Figures (1 December 2026, 2 cores, 1-minute load average beside each; wall seconds, CPU seconds
in brackets; no-ops are the median of 3). With ruamel.yaml.clib (a dependency since then):

    N  jobs        fresh run   load  no-op snakemake  no-op dvc repro       dvc status   load
    4    37    37.2s ( 44.4)    0.5     2.4s (  2.5)     3.0s (  2.9)     2.0s (  2.0)    1.4
   40   253   174.2s (281.6)    1.5     4.4s (  4.5)    15.2s ( 14.8)    11.7s ( 11.6)    2.4
  100   613   444.2s (766.0)    1.3     5.2s (  5.3)    43.8s ( 42.6)    33.9s ( 33.5)    1.4

Before (main a019c34, ruamel.yaml in pure Python):

    4    37    25.8s ( 39.8)    0.9     2.5s (  2.6)     4.0s (  3.9)     2.3s (  2.3)    1.3
   40   253   186.8s (303.2)    1.2     3.6s (  3.7)    27.5s ( 26.9)    19.2s ( 19.0)    1.7
  100   613   550.2s (871.6)    0.6     7.1s (  7.2)    95.8s ( 94.5)    78.5s ( 78.1)    1.1

No-op snakemake meets the targets; no-op dvc repro does not, and cannot with one DVC stage per
model and split that reads its params keys: ``benchmarks/bench_dvc_floor.py`` times DVC alone on
as many *trivial* stages (one file dep, one file out), 3.8 s at N = 40 and 9.0 s at N = 100
without params, 8.9 s and 29.5 s when each stage reads one params key (DVC parses the whole
params.yaml again for every stage that has params: O(N^2)). Before the one-call ``dvc commit``
the N = 4 fresh run took 155 s at load 0.3 (N = 100 under load: 3484 s, of which the commit
1135 s).

Where the time goes (cProfile, ``dvc --cprofile-dump``): a fresh run spent most of its time in
``dvc commit <254 targets>`` (DVC parses and rewrites dvc.lock once per target: 37 targets took
~115 s at N = 4); now one call. A no-op ``dvc repro``/``dvc status`` was mostly YAML parsing in
pure Python (ruamel.yaml without its C extension): dvc.lock (728 KB at N = 40) twice and
params.yaml once per stage with params, about 75 % of the time; ``ruamel.yaml.clib`` halves it.
What remains at N = 40 (profile of a no-op ``dvc repro``): params.yaml parsed 252 times ~20 %,
hashing the ~17 deps and outs of each stage (state look-ups; 12 of a stage's deps are code files)
~25 %, DVC's per-stage read/write lock (``.dvc/tmp/rwlock``, JSON rewritten 16 times per stage)
~20 %, loading dvc.yaml and dvc.lock ~15 %. ``benchmarks/bench_dvc_deps.py``: 60 stages on 20
module files each vs on their folder: dvc.lock 131 KB vs 17 KB, ``dvc status`` 2.8 vs 1.5 CPU s.
A no-op ``snakemake all`` is mostly Snakemake's own start (its plugins: the SLURM executor plugin
imports pandas; its persistence imports SQLAlchemy/SQLModel); the Snakefile hooks cost ~0.6 CPU s
at N = 40 (params validation with jsonschema 0.3, the bridge 0.13).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
STRATEGIES = ("random", "always_yes", "always_no", "prior")


def project_copy(dest: Path) -> Path:
    """A git repo holding one commit of the project as a fresh clone sees it (tests/project.py's copy)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from project import copy_project

    copy_project(dest)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=dest, check=True)
    subprocess.run([*git, "add", "-A"], cwd=dest, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "bench"], cwd=dest, check=True)
    return dest


def with_models(project: Path, n: int) -> None:
    params = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
    params["models"] = {
        f"m{i:03d}": {"backend": "baseline", "strategy": STRATEGIES[i % 4], "seed": i, "display_name": f"Model {i}"}
        for i in range(n)
    }
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds and output of one command, with this interpreter's bin/ first on PATH."""
    return run(cmd, cwd, env=dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"))


def load() -> float:
    return os.getloadavg()[0]


def median_of(cmd: list[str], cwd: Path, repeat: int, check: Callable[[str], bool], what: str) -> tuple[float, float]:
    """Median wall and CPU seconds of ``repeat`` runs, each checked to be a no-op."""
    times, cpus = [], []
    for _ in range(repeat):
        seconds, cpu, log = timed(cmd, cwd)
        if not check(log):
            raise SystemExit(f"{what} was not a no-op in {cwd}:\n{log[-3000:]}")
        times.append(seconds)
        cpus.append(cpu)
    return statistics.median(times), statistics.median(cpus)


def bench(n: int, workdir: Path, reuse: bool = False, repeat: int = 3) -> dict[str, float | int | None]:
    project = workdir / f"n{n}"
    fresh: float | None = None
    fresh_cpu: float | None = None
    load_fresh: float | None = None
    if reuse and (project / "dvc.lock").is_file():
        jobs = len(subprocess.run([str(BIN / "dvc"), "stage", "list", "--name-only"], cwd=project,
                                  capture_output=True, text=True, check=True).stdout.split())
    else:
        if project.exists():
            shutil.rmtree(project)
        project_copy(project)
        with_models(project, n)
        load_fresh = load()
        fresh, fresh_cpu, log = timed([str(BIN / "snakemake"), "--cores", "2", "all"], project)
        match = re.search(r"(\d+) of (\d+) steps \(100%\) done", log)
        jobs = int(match.group(2)) - 1 if match else -1  # without the `all` target
    load_noop = load()
    smk = [str(BIN / "snakemake"), "--cores", "2", "all"]
    noop_smk = median_of(smk, project, repeat, lambda log: "Nothing to be done" in log, "snakemake all")
    noop_dvc = median_of([str(BIN / "dvc"), "repro"], project, repeat, lambda log: "Running stage" not in log, "dvc repro")
    status = median_of([str(BIN / "dvc"), "status"], project, repeat, lambda log: "up to date" in log, "dvc status")
    # DVC's own floor for as many trivial stages (benchmarks/bench_dvc_floor.py), measured now
    from bench_dvc_floor import median as floor_median, project as floor_project

    stages = len(subprocess.run([str(BIN / "dvc"), "stage", "list", "--name-only"], cwd=project,
                                capture_output=True, text=True, check=True).stdout.split())
    floor_root, _ = floor_project(workdir / f"floor{n}", n, False, stages)
    floor = floor_median([str(BIN / "dvc"), "repro"], floor_root, repeat)
    shutil.rmtree(floor_root, ignore_errors=True)
    return {"N": n, "jobs": jobs, "fresh": fresh, "fresh_cpu": fresh_cpu, "load_fresh": load_fresh, "noop_smk": noop_smk,
            "noop_dvc": noop_dvc, "status": status, "load_noop": load_noop, "floor": floor}


def grow(start: int, end: int, workdir: Path) -> str:
    """Adding ``end - start`` models to a finished ``start``-model run, against a fresh ``end``-model run."""
    project = workdir / f"grow{start}-{end}"
    if project.exists():
        shutil.rmtree(project)
    project_copy(project)
    with_models(project, start)
    timed([str(BIN / "snakemake"), "--cores", "2", "all"], project)
    with_models(project, end)
    before = load()
    wall, cpu, log = timed([str(BIN / "snakemake"), "--cores", "2", "all"], project)
    commit = re.search(r"recorded (\d+) jobs", log)
    fresh = workdir / f"fresh{end}"
    if fresh.exists():
        shutil.rmtree(fresh)
    project_copy(fresh)
    with_models(fresh, end)
    fwall, fcpu, _ = timed([str(BIN / "snakemake"), "--cores", "2", "all"], fresh)
    shutil.rmtree(project, ignore_errors=True)
    shutil.rmtree(fresh, ignore_errors=True)
    return (f"adding {end - start} models to a finished {start}-model run: {wall:.1f}s ({cpu:.1f}) "
            f"[{commit.group(1) if commit else '?'} jobs recorded], a fresh {end}-model run: {fwall:.1f}s ({fcpu:.1f}); "
            f"ratio {wall / fwall:.2f} (load {before:.1f})")


def row(r: Mapping[str, Any]) -> str:
    """Wall seconds, with the CPU seconds (user + sys) in brackets: CPU time hardly moves with load."""
    fresh = f"{r['fresh']:>7.1f}s ({r['fresh_cpu']:>5.1f})" if r["fresh"] is not None else f"{'not run':>16}"
    lf = f"{r['load_fresh']:>6.1f}" if r["load_fresh"] is not None else f"{'-':>6}"

    def cell(key: str) -> str:
        wall, cpu = r[key]
        return f"{wall:>7.1f}s ({cpu:>5.1f})"

    ratio = r["noop_dvc"][0] / r["floor"][0]
    return (
        f"{r['N']:>4} {r['jobs']:>5} {fresh} {lf} {cell('noop_smk'):>16} {cell('noop_dvc'):>16}"
        f" {cell('floor'):>16} {ratio:>6.2f}x {cell('status'):>16} {r['load_noop']:>6.1f}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, nargs="+", default=[4, 40, 100])
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--reuse", action="store_true", help="time only the no-ops in a kept workdir")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each no-op (the median is printed)")
    ap.add_argument("--grow", type=int, nargs=2, metavar=("FROM", "TO"), default=None,
                    help="also time adding TO-FROM models to a finished FROM-model run against a fresh TO-model run")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sabre-bench-dag-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(
        f"{'N':>4} {'jobs':>5} {'fresh run':>16} {'load':>6} {'no-op snakemake':>16} {'no-op dvc repro':>16}"
        f" {'DVC floor':>16} {'ratio':>7} {'dvc status':>16} {'load':>6}   (wall s, CPU s in brackets)",
        flush=True,
    )
    try:
        for n in args.models:
            print(row(bench(n, workdir, args.reuse, args.repeat)), flush=True)
        if args.grow:
            print(grow(args.grow[0], args.grow[1], workdir), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
