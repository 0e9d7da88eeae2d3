"""Benchmark (not a test): pacing to a provider's request limit.

For each limit R (requests per second), runs ``sabre predict`` as a subprocess against
the fake server of ``tests/servers`` enforcing R requests per second (a token bucket of
one second's worth; above it a 429 with the protocol's documented rate-limit headers,
which every answer carries too) and prints the achieved throughput (answers per second
between the first request and the last answer) and the share of calls that got a 429.

    python benchmarks/bench_pacing.py                          # R in 2 20 100 200, OpenAI headers, one CPU hog
    python benchmarks/bench_pacing.py --protocol anthropic     # anthropic-ratelimit-* and retry-after
    python benchmarks/bench_pacing.py --protocol gemini        # no rate-limit header: 429s with RetryInfo only

Targets: achieved >= 90% of R and < 2% of the calls answered 429, the configured
concurrency (the ceiling) never exceeded, with ``--hog K`` (default 1) bounded CPU hogs running
beside (benchmarks/bench_api.py's): the figures of a busy machine.  Each run is the first of its model (nothing
learned before), with R x ``--seconds`` questions but at least ``--min-calls``: without
any header nothing tells the limit before the first 429, so one 429 is the price of
learning it, and a share of 2 % needs at least 50 calls to be measured at all.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import yaml  # noqa: E402

from bench_api import start_hogs  # noqa: E402
from tests.servers import FakeServer  # noqa: E402
from tests.servers.dataset import write_split  # noqa: E402

KEY_ENV = "SABRE_BENCH_KEY"


def run(project: Path, server: FakeServer, protocol: str, n: int, ceiling: int) -> dict[str, float]:
    params = {"dataset": {"source": "demo"}, "splits": ["attribute"],
              "models": {"bench": {"backend": protocol, "model_id": "bench-model", "api_key_env": KEY_ENV,
                                   "base_url": server.url(protocol), "concurrency": ceiling, "timeout_s": 30,
                                   "max_attempts": 20}}}  # fmt: skip
    (project / "params.yaml").write_text(yaml.safe_dump(params))
    shutil.rmtree(project / ".sabre", ignore_errors=True)  # nothing learned before: the first run of a model
    shutil.rmtree(project / "results", ignore_errors=True)
    server.clear()
    env = {**os.environ, KEY_ENV: "sk-bench"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.run([sys.executable, "-m", "sabre_prior.cli", "predict", "--model", "bench", "--split", "attribute",
                           "--no-progress"], cwd=project, env=env, capture_output=True, text=True)  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(proc.stdout + proc.stderr)
    ok = server.ok_calls()
    limited = sum(1 for c in server.calls if c.status == 429)
    span = max(c.end or 0.0 for c in ok) - min(c.start for c in ok)
    return {"answered": len(ok), "calls": len(server.calls), "limited": limited, "achieved": (len(ok) - 1) / span,
            "max_in_flight": server.max_in_flight}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", type=float, nargs="+", default=[2, 20, 100, 200])
    parser.add_argument("--seconds", type=float, default=10.0, help="questions per run: R x this")
    parser.add_argument("--min-calls", type=int, default=100, help="questions per run at least")
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=64, help="the configured ceiling")
    parser.add_argument("--protocol", default="openai", choices=["openai", "anthropic", "gemini"])
    parser.add_argument("--hog", type=int, default=1, help="CPU hogs running beside (0: none)")
    parser.add_argument("--hog-s", type=float, default=900.0, help="each hog stops on its own after this long")
    args = parser.parse_args()
    rows = []
    load_start = os.getloadavg()[0]
    hogs = start_hogs(args.hog, args.hog_s)
    try:
        _runs(args, rows)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    print()
    print(f"{args.protocol} headers, call latency {args.latency * 1000:.0f} ms, ceiling {args.concurrency}, {os.cpu_count()} CPUs, "
          f"{args.hog} CPU hog(s), load average {load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end "
          f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")
    print("| R (req/s) | N | achieved (req/s) | achieved / R | 429 share | max in flight | targets |")
    print("|--:|--:|--:|--:|--:|--:|:--|")
    for r in rows:
        share = r["limited"] / r["calls"]
        ok = r["achieved"] >= 0.9 * r["R"] and share < 0.02 and r["max_in_flight"] <= args.concurrency
        print(f"| {r['R']:g} | {r['N']} | {r['achieved']:.2f} | {r['achieved'] / r['R']:.3f} | {share:.2%} | "
              f"{r['max_in_flight']} | {'ok' if ok else 'MISSED'} |")
    return 0


def _runs(args: argparse.Namespace, rows: list[dict[str, float]]) -> None:
    with tempfile.TemporaryDirectory(prefix="sabre-pacing-") as tmp, FakeServer(latency=args.latency) as server:
        project = Path(tmp)
        for rate in args.rates:
            n = max(args.min_calls, int(rate * args.seconds))
            write_split(project / "data" / "parquet" / "attribute.parquet", "attribute", n, seed=int(rate))
            server.rate_limit = rate
            t0 = time.monotonic()
            r = run(project, server, args.protocol, n, args.concurrency)
            r.update(R=rate, N=n, wall=time.monotonic() - t0)
            rows.append(r)
            print(f"  R={rate:g}/s: {r['achieved']:.2f}/s achieved, {r['limited']} of {r['calls']} calls 429", flush=True)


if __name__ == "__main__":
    sys.exit(main())
