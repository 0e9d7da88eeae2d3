"""Timing helper shared by the DAG and DVC benchmarks: one command's wall and CPU seconds."""

from __future__ import annotations

import resource
import subprocess
import time
from pathlib import Path
from typing import Mapping


def run(cmd: list[str], cwd: Path, env: Mapping[str, str] | None = None) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + sys of the child and its subprocesses) of one command, and its
    output; exits on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout + proc.stderr
