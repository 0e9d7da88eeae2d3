"""Timing helper shared by the DVC benchmarks: one command's wall and CPU seconds."""

from __future__ import annotations

import resource
import subprocess
import time
from pathlib import Path


def run(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall and CPU (user+sys of the child) seconds of one command, and its output; exits on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout + proc.stderr
