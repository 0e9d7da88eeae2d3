"""Benchmark: how the pipeline scales with the number of models (not a test; prints figures).

For each N (default 4 and 40) a temporary git repo of the project gets N offline models (baseline
strategies, no network) on the small demo, then times, side by side:

* the fresh run: ``snakemake --cores 2 all`` (it ends with the ``dvc commit`` that records it);
* a no-op ``snakemake -n all`` with the project's Snakefile, against Snakemake alone on the same
  rules (the Snakefile without this project's hooks: the params checks, the schema validation,
  the warning for unrecorded results; the rules and their settings/code helpers unchanged);
* a no-op ``dvc repro`` (must not run the stage) and ``dvc status``;
* with ``--grow A B``: adding B - A models to a finished A-model run, against a fresh B-model run.

    python benchmarks/bench_dag.py [--models 4 40] [--grow 4 40] [--repeat K] [--workdir DIR] [--keep]

Each no-op runs ``--repeat`` times (default 3), alternating the two Snakefiles, and the median is
printed with its CPU seconds (user + sys) in brackets and the 1-minute load average: on a shared
2-core machine compare ratios measured side by side, not seconds across runs.

Targets (issue 32, point 9): no-op ``snakemake -n all`` at 40 models within 1.2x of Snakemake
alone; no-op ``dvc repro`` at 40 models under 2 s; adding 36 models to a finished run no slower
than a fresh run of all 40. Figures: docs/scaling.md.
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

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
STRATEGIES = ("random", "always_yes", "always_no", "prior")
#: The Snakefile's own hooks, left out of the "Snakemake alone" Snakefile (one line each).
HOOKS = re.compile(r"^(RAW_PARAMS = |SAME_AS_PARAMS = |validate\(config|warn_unrecorded\(\))", re.M)


def project_copy(dest: Path) -> Path:
    """A git repo holding one commit of the project as a fresh clone sees it (tests/project.py's copy)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from project import copy_project

    copy_project(dest)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=dest, check=True)
    subprocess.run([*git, "add", "-A"], cwd=dest, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "bench"], cwd=dest, check=True)
    bare = "\n".join(
        line if not HOOKS.match(line)
        else ("SAME_AS_PARAMS = True  # " if line.startswith("SAME_AS_PARAMS") else "pass  # ") + line
        for line in (dest / "Snakefile").read_text().splitlines()
    )
    bare = re.split(r"^on(?:start|success):", bare, flags=re.M)[0].replace("RAW_PARAMS", "None")
    (dest / ".bench-Snakefile").write_text(bare + "\n", encoding="utf-8")
    return dest


def with_models(project: Path, n: int) -> None:
    params = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
    params["models"] = {
        f"m{i:03d}": {"backend": "baseline", "strategy": STRATEGIES[i % 4], "seed": i, "display_name": f"Model {i}"}
        for i in range(n)
    }
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    return run(cmd, cwd, env=dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"))


def noops(project: Path, repeat: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) of each no-op, the two Snakefiles alternating."""
    cmds = {
        "snakemake": [str(BIN / "snakemake"), "-n", "all"],
        "alone": [str(BIN / "snakemake"), "-s", ".bench-Snakefile", "-n", "all"],
        "dvc repro": [str(BIN / "dvc"), "repro"],
        "dvc status": [str(BIN / "dvc"), "status"],
    }
    checks = {"snakemake": "Nothing to be done", "alone": "Nothing to be done", "dvc repro": "didn't change",
              "dvc status": "up to date"}  # fmt: skip
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
    for _ in range(repeat):
        for key, cmd in cmds.items():
            wall, cpu, log = timed(cmd, project)
            if checks[key] not in log:
                raise SystemExit(f"{key} was not a no-op in {project}:\n{log[-3000:]}")
            got[key].append((wall, cpu))
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in got.items()}


def bench(n: int, workdir: Path, repeat: int) -> str:
    project = workdir / f"n{n}"
    shutil.rmtree(project, ignore_errors=True)
    project_copy(project)
    with_models(project, n)
    load_fresh = os.getloadavg()[0]
    fresh, fresh_cpu, log = timed([str(BIN / "snakemake"), "--cores", "2", "all"], project)
    match = re.search(r"(\d+) of (\d+) steps \(100%\) done", log)
    jobs = int(match.group(2)) - 1 if match else -1  # without the `all` target
    load_noop = os.getloadavg()[0]
    r = noops(project, repeat)

    def cell(key: str) -> str:
        return f"{r[key][0]:>6.2f}s ({r[key][1]:>5.2f})"

    ratio = r["snakemake"][0] / r["alone"][0]
    return (f"{n:>4} {jobs:>5} {fresh:>7.1f}s ({fresh_cpu:>6.1f}) {load_fresh:>5.1f} {cell('snakemake')} {cell('alone')}"
            f" {ratio:>5.2f}x {cell('dvc repro')} {cell('dvc status')} {load_noop:>5.1f}")  # fmt: skip


def grow(start: int, end: int, workdir: Path) -> str:
    """Adding ``end - start`` models to a finished ``start``-model run, against a fresh ``end``-model run."""
    project = workdir / f"grow{start}-{end}"
    fresh = workdir / f"fresh{end}"
    for p in (project, fresh):
        shutil.rmtree(p, ignore_errors=True)
    project_copy(project)
    with_models(project, start)
    timed([str(BIN / "snakemake"), "--cores", "2", "all"], project)
    with_models(project, end)
    before = os.getloadavg()[0]
    wall, cpu, _ = timed([str(BIN / "snakemake"), "--cores", "2", "all"], project)
    project_copy(fresh)
    with_models(fresh, end)
    fwall, fcpu, _ = timed([str(BIN / "snakemake"), "--cores", "2", "all"], fresh)
    return (f"adding {end - start} models to a finished {start}-model run: {wall:.1f}s ({cpu:.1f}); a fresh "
            f"{end}-model run: {fwall:.1f}s ({fcpu:.1f}); ratio {wall / fwall:.2f} (load {before:.1f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, nargs="+", default=[4, 40])
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each no-op (the median is printed)")
    ap.add_argument("--grow", type=int, nargs=2, metavar=("FROM", "TO"), default=None,
                    help="also time adding TO-FROM models to a finished FROM-model run against a fresh TO-model run")
    args = ap.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sabre-bench-dag-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"{'N':>4} {'jobs':>5} {'fresh run':>17} {'load':>5} {'snakemake -n':>15} {'Snakemake alone':>15} {'ratio':>6}"
          f" {'no-op dvc repro':>15} {'dvc status':>15} {'load':>5}   (wall s, CPU s in brackets; medians)", flush=True)
    try:
        for n in args.models:
            print(bench(n, workdir, args.repeat), flush=True)
        if args.grow:
            print(grow(args.grow[0], args.grow[1], workdir), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
