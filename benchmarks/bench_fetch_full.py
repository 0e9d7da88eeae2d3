"""Benchmark: generate the full-scale demo (600 images, 1,000 questions) and fetch all splits.

Each step runs in its own Python process so that its peak RSS is its own. Prints wall time,
output size and peak RSS per step (and the RSS of a bare ``import datasets`` for reference).

    python benchmarks/bench_fetch_full.py [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from sabre_prior import contracts as C

# Runs in the child: one step, then reports its wall time and peak RSS as JSON.
_CHILD = """
import json, resource, sys, time
step, args = sys.argv[1], sys.argv[2:]
t0 = time.perf_counter()
if step == "import":
    import datasets  # noqa: F401
    summary = "import datasets"
elif step == "generate":
    from pathlib import Path
    from sabre_prior.data.demo import generate
    summary = generate(Path(args[0]), scale="full", seed=0)
else:
    from pathlib import Path
    from sabre_prior.data.fetch import fetch_split
    summary = fetch_split(args[1], args[0], Path(args[2]))
wall = time.perf_counter() - t0
rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
print(json.dumps({"summary": summary, "wall_s": wall, "peak_rss_mb": rss_kb / 1024}))
"""


def _run(step: str, *args: str, env: dict[str, str]) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, step, *args], capture_output=True, text=True, env=env, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"step {step} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _size_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 1e6
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, help="where to write (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="sabre-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    import os

    env = dict(os.environ, HF_DATASETS_CACHE=str(work / "hf-cache"), HF_HUB_OFFLINE="1")
    demo_dir, parquet_dir = work / "demo", work / "parquet"
    try:
        rows = [("import datasets", _run("import", env=env), None)]
        rows.append(("generate (full)", _run("generate", str(demo_dir), env=env), demo_dir))
        total = 0.0
        for split in C.SPLITS:
            out = parquet_dir / f"{split}.parquet"
            res = _run("fetch", split, str(demo_dir), str(out), env=env)
            rows.append((f"fetch {split}", res, out))
            total += float(res["wall_s"])  # type: ignore[arg-type]
        print(f"{'step':<18}{'wall s':>9}{'size MB':>10}{'peak RSS MB':>13}")
        for name, res, path in rows:
            size = f"{_size_mb(path):10.1f}" if path is not None else f"{'':>10}"
            print(f"{name:<18}{float(res['wall_s']):9.2f}{size}{float(res['peak_rss_mb']):13.0f}")  # type: ignore[arg-type]
        print(f"{'fetch, 4 splits':<18}{total:9.2f}{_size_mb(parquet_dir):10.1f}")
        for _, res, _ in rows[1:]:
            print(f"  {res['summary']}")
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
