"""Benchmark (not a test): a model's split jobs under Snakemake, against one provider limit.

Copies the project into a temporary folder, points its dataset at a local copy holding four
splits of N questions each (``tests.servers.dataset.write_mirror``), and asks ``snakemake`` for
the four prediction files of one hosted model (the OpenAI protocol, ceiling ``--concurrency``)
against the fake server of ``tests/servers`` enforcing R requests per second with OpenAI's
rate-limit headers (a token bucket of one second's worth). ``dvc repro`` runs the same jobs
through Snakemake (its one stage's command is ``snakemake``), so this is what either tool does.
Prints, per split, when its first request and its last answer came (seconds from the first
request of the run: the jobs at once or one after another), and for the run the answers a second
over R, the share of 429s and the most requests in flight (the model's one ceiling).

    python benchmarks/bench_split_jobs.py                 # 4 splits x 100 questions, R = 20, one CPU hog
    python benchmarks/bench_split_jobs.py --rate 100 -n 300

Targets: the four jobs overlap (run at once), together >= 90 % of R with < 2 % 429s, the ceiling
held (one budget per model: docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import yaml  # noqa: E402
from bench_api import start_hogs  # noqa: E402

from tests.project import copy_project, snakemake  # noqa: E402
from tests.servers import FakeServer  # noqa: E402
from tests.servers.dataset import write_mirror  # noqa: E402
from tests.servers.fixtures import expected_answers  # noqa: E402

SPLITS = ("context", "texture", "attribute", "language")
KEY_ENV = "SABRE_BENCH_KEY"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=100, help="questions per split")
    parser.add_argument("--rate", type=float, default=20.0, help="the server's limit R, requests per second")
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=16, help="the model's ceiling (configs/paper.yaml's)")
    parser.add_argument("--hog", type=int, default=1, help="CPU hogs running beside (0: none)")
    parser.add_argument("--hog-s", type=float, default=900.0, help="each hog stops on its own after this long")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    hogs = start_hogs(args.hog, args.hog_s)
    try:
        with tempfile.TemporaryDirectory(prefix="sabre-splits-") as tmp, FakeServer(latency=args.latency) as server:
            project = copy_project(Path(tmp) / "project")
            shards = write_mirror(project, {s: args.n for s in SPLITS})
            split_of = {key: s for s, path in shards.items() for key, _ in expected_answers(path, s).values()}
            server.rate_limit = args.rate
            params = yaml.safe_load((project / "params.yaml").read_text())
            params["splits"] = list(SPLITS)
            params["models"] = {"m": {"backend": "openai", "model_id": "bench-model", "api_key_env": KEY_ENV,
                                      "base_url": server.url("openai"), "concurrency": args.concurrency,
                                      "timeout_s": 30, "max_attempts": 20}}  # fmt: skip
            (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
            # the data first (the fetch job), then the four prediction jobs alone: their calls are what is timed
            snakemake([*(f"data/parquet/{s}.parquet" for s in SPLITS), "--cores", "4"], project, check=True, timeout=900)
            server.clear()
            os.environ[KEY_ENV] = "sk-bench"
            t0 = time.monotonic()
            proc = snakemake([*(f"results/predictions/m/{s}.jsonl" for s in SPLITS), "--cores", "4",
                              "--resources", "api_jobs=4"], project, check=False, timeout=900)  # fmt: skip
            wall = time.monotonic() - t0
            if proc.returncode != 0:
                raise SystemExit(proc.stdout[-3000:] + proc.stderr[-3000:])
            ok = server.ok_calls()
            limited = sum(1 for c in server.calls if c.status == 429)
            start = min(c.start for c in server.calls)
            span = max(c.end or 0.0 for c in ok) - min(c.start for c in ok)
            per_split = {s: [c for c in ok if split_of.get(c.key) == s] for s in SPLITS}
            most = server.max_in_flight
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    achieved = (len(ok) - 1) / span
    share = limited / len(server.calls)
    print(f"4 splits x {args.n} questions, R = {args.rate:g}/s, latency {args.latency * 1000:.0f} ms, ceiling "
          f"{args.concurrency}, {os.cpu_count()} CPUs, {args.hog} CPU hog(s), load average {load:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}); "
          f"snakemake {wall:.1f} s")  # fmt: skip
    print("| split | answers | first request (s) | last answer (s) |")
    print("|:--|--:|--:|--:|")
    for s, calls in per_split.items():
        print(f"| {s} | {len(calls)} | {min(c.start for c in calls) - start:.2f} | "
              f"{max(c.end or 0.0 for c in calls) - start:.2f} |")  # fmt: skip
    overlap = min(max(c.end or 0.0 for c in calls) for calls in per_split.values()) > max(
        min(c.start for c in calls) for calls in per_split.values()
    )
    good = overlap and achieved >= 0.9 * args.rate and share < 0.02 and most <= args.concurrency
    print(f"\nall four at once: {'yes' if overlap else 'no'}; together {achieved:.2f}/s = {achieved / args.rate:.3f} of R, "
          f"{limited} of {len(server.calls)} calls 429 ({share:.2%}), at most {most} in flight: "
          f"{'ok' if good else 'MISSED'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
