"""Benchmark: what a stage's code deps cost DVC, as many file deps or as one folder dep (prints figures).

Two throw-away DVC projects with the same ``foreach`` stage over ``--stages`` items and the same
code (``--files`` small modules): in one each stage depends on every module file, in the other on
their folder. The outputs are written directly and recorded with one ``dvc commit --force`` (no
stage command runs: only DVC's own work is timed). For each: that commit, the size of dvc.lock,
and a no-op ``dvc status``
(wall and CPU seconds, median of ``--repeat``), with the 1-minute load average.

    python benchmarks/bench_dvc_deps.py [--stages 100] [--files 20] [--repeat 3]
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


def project(root: Path, stages: int, files: int, folder: bool) -> Path:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([str(BIN / "dvc"), "init", "-q"], cwd=root, check=True)
    subprocess.run([str(BIN / "dvc"), "config", "core.analytics", "false"], cwd=root, check=True)
    code = root / "code"
    code.mkdir()
    for i in range(files):
        (code / f"mod{i:02d}.py").write_text(f"# module {i}\n" + "x = 1\n" * 200, encoding="utf-8")
    (root / "params.yaml").write_text(yaml.safe_dump({"items": [f"s{i:03d}" for i in range(stages)]}), encoding="utf-8")
    deps = ["code"] if folder else [f"code/mod{i:02d}.py" for i in range(files)]
    stage = {"foreach": "${items}", "do": {"cmd": "mkdir -p out && echo ${item} > out/${item}.txt", "deps": deps,
                                           "outs": ["out/${item}.txt"]}}
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"work": stage}}, sort_keys=False), encoding="utf-8")
    (root / "out").mkdir()
    for i in range(stages):
        (root / "out" / f"s{i:03d}.txt").write_text(f"s{i:03d}\n", encoding="utf-8")
    return root


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stages", type=int, default=100)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="sabre-bench-dvc-deps-"))
    print(f"{'deps':>8} {'stages':>7} {'dvc commit':>12} {'dvc.lock':>10} {'status wall':>12} {'status cpu':>11} {'load':>5}")
    try:
        for folder in (False, True):
            root = project(workdir / ("folder" if folder else "files"), args.stages, args.files, folder)
            fresh, _, _ = run([str(BIN / "dvc"), "commit", "--force", "-q"], root)
            load = os.getloadavg()[0]
            runs = [run([str(BIN / "dvc"), "status", "-q"], root)[:2] for _ in range(args.repeat)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            kind = "1 folder" if folder else f"{args.files} files"
            size = (root / "dvc.lock").stat().st_size
            print(f"{kind:>8} {args.stages:>7} {fresh:>11.1f}s {size / 1024:>8.0f}KB {wall:>11.1f}s {cpu:>10.1f}s {load:>5.1f}",
                  flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
