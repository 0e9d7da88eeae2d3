"""Benchmark: DVC's own cost per stage in a no-op ``dvc repro`` / ``dvc status`` (prints figures).

What is the fastest a no-op ``dvc repro`` can be with as many stages as the pipeline has at N models
(counted from the pipeline's declaration: its jobs for N models plus DVC's ``recipes`` stage)? For each
N a throw-away DVC project gets that many *trivial* stages (one ``foreach``: one small file dep,
one small file out, a one-line command), recorded with one ``dvc commit --force`` (no command runs).
Two variants:

* ``bare``: no params;
* ``params``: each stage also reads one key of a params.yaml holding N model entries shaped like
  ours (DVC parses the whole params file once per stage that has params: O(N^2) in all).

Then the median of ``--repeat`` no-op ``dvc repro`` and ``dvc status`` (wall and CPU seconds),
with the 1-minute load average. Nothing of the project's code runs: this is DVC alone.

    python benchmarks/bench_dvc_floor.py [--models 40 100] [--repeat 3]

Figures (1 December 2026, 2 cores, DVC 3.67.1, ruamel.yaml 0.19.1 with ruamel.yaml.clib; wall s,
CPU s in brackets, median of 3, 1-minute load average):

       N  stages  variant   no-op dvc repro      dvc status  load
      40     253     bare       3.8s ( 3.6)     2.2s ( 2.1)   0.2
      40     253   params       8.9s ( 8.5)     5.7s ( 5.6)   0.5
     100     613     bare       9.0s ( 8.2)     3.1s ( 3.0)   0.8
     100     613   params      29.5s (28.5)    27.0s (26.6)   1.0

So DVC itself needs ~12 ms per stage in a no-op ``dvc repro`` (its per-stage rwlock, the hash
look-ups, the stage's entry in dvc.lock), and ~20 ms (N = 40) to ~33 ms (N = 100) more per stage
that reads params: the issue-9 targets (5 s at N = 40, 10 s at N = 100) are out of reach for
6 N + 13 stages with params, whatever the stages do.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import run  # noqa: E402

BIN = Path(sys.executable).parent


def pipeline_stages(models: int) -> int:
    """DVC stages of the pipeline at ``models`` offline models: its declaration's jobs plus ``recipes``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from sabre_prior.repro.pipeline import Pipeline

    params = yaml.safe_load((Path(__file__).resolve().parents[1] / "params.yaml").read_text(encoding="utf-8"))
    params["models"] = {f"m{i:03d}": {"backend": "baseline", "strategy": "random"} for i in range(models)}
    return len(Pipeline(params, Path(__file__).resolve().parents[1]).jobs()) + 1


def project(root: Path, models: int, with_params: bool, stages: int | None = None) -> tuple[Path, int]:
    stages = pipeline_stages(models) if stages is None else stages
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([str(BIN / "dvc"), "init", "-q"], cwd=root, check=True)
    subprocess.run([str(BIN / "dvc"), "config", "core.analytics", "false"], cwd=root, check=True)
    items = [f"s{i:04d}" for i in range(stages)]
    params = {
        "items": items,
        "models": {f"m{i:03d}": {"backend": "baseline", "strategy": "random", "seed": i, "display_name": f"Model {i}"}
                   for i in range(models)},
    }
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    (root / "input.txt").write_text("input\n", encoding="utf-8")
    body: dict[str, object] = {"cmd": "mkdir -p out && echo ${item} > out/${item}.txt", "deps": ["input.txt"],
                               "outs": ["out/${item}.txt"]}
    if with_params:
        body["params"] = ["models.m000"]
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"work": {"foreach": "${items}", "do": body}}},
                                                  sort_keys=False), encoding="utf-8")
    (root / "out").mkdir()
    for item in items:
        (root / "out" / f"{item}.txt").write_text(f"{item}\n", encoding="utf-8")
    run([str(BIN / "dvc"), "commit", "--force", "-q"], root)
    return root, stages


def median(cmd: list[str], root: Path, repeat: int) -> tuple[float, float]:
    runs = []
    for _ in range(repeat):
        wall, cpu, log = run(cmd, root)
        if "Running stage" in log or "changed" in log:
            raise SystemExit(f"{' '.join(cmd)} was not a no-op in {root}:\n{log[-2000:]}")
        runs.append((wall, cpu))
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, nargs="+", default=[40, 100])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="sabre-bench-dvc-floor-"))
    print(f"{'N':>4} {'stages':>7} {'variant':>8} {'no-op dvc repro':>17} {'dvc status':>15} {'load':>5}"
          "   (wall s, CPU s in brackets)")
    try:
        for n in args.models:
            for with_params in (False, True):
                variant = "params" if with_params else "bare"
                root, stages = project(workdir / f"n{n}-{variant}", n, with_params)
                load = os.getloadavg()[0]
                repro = median([str(BIN / "dvc"), "repro"], root, args.repeat)
                status = median([str(BIN / "dvc"), "status"], root, args.repeat)
                print(f"{n:>4} {stages:>7} {variant:>8} {repro[0]:>9.1f}s ({repro[1]:>4.1f}) {status[0]:>7.1f}s ({status[1]:>4.1f})"
                      f" {load:>5.1f}", flush=True)
                shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
