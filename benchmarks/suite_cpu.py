"""Where the test suite's CPU goes: per program and per test (issue 32, point 9: the test tiers' time).

Runs pytest with a `sitecustomize` on PYTHONPATH that, in every Python process the suite starts
(pytest's workers, snakemake, dvc, each job's `sabre` command), appends the process's own CPU
(`resource.getrusage(RUSAGE_SELF)`) and the test that started it (pytest sets PYTEST_CURRENT_TEST
in the worker's environment, and child processes inherit it) to a JSON-lines log when it exits.
Processes ended by a signal or `os._exit` (forked helpers) are not counted, and nor are programs
that are not Python (git, uv): the totals are a lower bound.

    python benchmarks/suite_cpu.py -- -m "not slow"       # the developer loop
    python benchmarks/suite_cpu.py                        # the whole suite
    python benchmarks/suite_cpu.py -- tests/test_cli.py   # any pytest arguments, after --
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SITECUSTOMIZE = '''
import atexit, json, os, resource, sys
def _sabre_cpu_log(path=os.environ["SABRE_CPU_LOG"]):
    r = resource.getrusage(resource.RUSAGE_SELF)
    rec = {"argv": sys.argv[:4], "cpu": r.ru_utime + r.ru_stime, "test": os.environ.get("PYTEST_CURRENT_TEST", "")}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\\n")
atexit.register(_sabre_cpu_log)
'''


def program(argv: list[str]) -> str:
    """A short name for a process: the script's name, and the subcommand of `sabre`."""
    if not argv:
        return "?"
    name = Path(argv[0]).name
    if name == "sabre":  # `sabre --log FILE <command> ...` as the rules run it, or `sabre <command>`
        rest = argv[3:] if len(argv) > 3 and argv[1] == "--log" else argv[1:]
        return f"sabre {rest[0]}" if rest else name
    return name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=15, help="rows in each table (default 15)")
    parser.add_argument("pytest_args", nargs="*", help="pytest's arguments, after -- (default: the whole suite)")
    args = parser.parse_args()
    pytest_args = args.pytest_args
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        log = Path(tmp) / "cpu.jsonl"
        env = dict(os.environ, SABRE_CPU_LOG=str(log))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (tmp, env.get("PYTHONPATH", "")) if p)
        t0 = time.monotonic()
        rc = subprocess.run([sys.executable, "-m", "pytest", "-q", *pytest_args], cwd=ROOT, env=env).returncode
        wall = time.monotonic() - t0
        records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    by_program: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    by_test: collections.Counter[str] = collections.Counter()
    for rec in records:
        by_program[program(rec["argv"])] += rec["cpu"]
        count[program(rec["argv"])] += 1
        by_test[rec["test"].rsplit(" (", 1)[0] or "(outside a test: workers, session fixtures)"] += rec["cpu"]
    total = sum(by_program.values())
    print(f"\npytest exit {rc}; wall {wall:.0f} s; {len(records)} Python processes, {total:.0f} CPU-s in all")
    print(f"\n| CPU-s | processes | CPU-s each | program |\n|--:|--:|--:|:--|")
    for name, cpu in by_program.most_common(args.top):
        print(f"| {cpu:.1f} | {count[name]} | {cpu / count[name]:.2f} | {name} |")
    print(f"\n| CPU-s | test (its own processes and those it started) |\n|--:|:--|")
    for name, cpu in by_test.most_common(args.top):
        print(f"| {cpu:.1f} | {name} |")
    return rc


if __name__ == "__main__":
    sys.exit(main())
