"""Benchmark: how the DAG scales with the number of models (not a test; prints figures).

For each N (default 4, 40, 100) a temporary git repo of the project gets N offline models
(baseline strategies, no network) on the small demo, then times:

* the fresh run: ``snakemake --cores 2 all`` (and its ``dvc commit``);
* a no-op ``snakemake --cores 2 all`` (must print "Nothing to be done");
* a no-op ``dvc repro`` (must run no stage);
* ``dvc status`` for reference.

    python benchmarks/bench_dag.py [--models 4 40 100] [--workdir DIR] [--keep]

Targets (issue 9): both no-ops under 5 s at N = 40 and under 10 s at N = 100 on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

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


def timed(cmd: list[str], cwd: Path) -> tuple[float, str]:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return seconds, proc.stdout + proc.stderr


def bench(n: int, workdir: Path) -> dict[str, float | int]:
    project = project_copy(workdir / f"n{n}")
    with_models(project, n)
    fresh, log = timed([str(BIN / "snakemake"), "--cores", "2", "all"], project)
    match = re.search(r"(\d+) of (\d+) steps \(100%\) done", log)
    jobs = int(match.group(2)) - 1 if match else -1  # without the `all` target
    noop_smk, log = timed([str(BIN / "snakemake"), "--cores", "2", "all"], project)
    assert "Nothing to be done" in log, log[-2000:]
    noop_dvc, log = timed([str(BIN / "dvc"), "repro"], project)
    assert "Running stage" not in log, log[-2000:]
    status, log = timed([str(BIN / "dvc"), "status"], project)
    assert "up to date" in log, log[-2000:]
    return {"N": n, "jobs": jobs, "fresh": fresh, "noop_smk": noop_smk, "noop_dvc": noop_dvc, "status": status}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, nargs="+", default=[4, 40, 100])
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sabre-bench-dag-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"{'N':>4} {'jobs':>5} {'fresh run':>10} {'no-op snakemake':>16} {'no-op dvc repro':>16} {'dvc status':>11}")
    try:
        for n in args.models:
            r = bench(n, workdir)
            print(
                f"{r['N']:>4} {r['jobs']:>5} {r['fresh']:>9.1f}s {r['noop_smk']:>15.1f}s {r['noop_dvc']:>15.1f}s"
                f" {r['status']:>10.1f}s",
                flush=True,
            )
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
