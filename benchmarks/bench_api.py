"""Benchmark (not a test): API inference wall time against a local server with injected latency.

For N questions and each concurrency C, runs ``sabre predict`` as a subprocess
(fresh journal, progress bar on, as a user would) against the fake OpenAI server
of ``tests/servers`` (aiohttp, asyncio: not a thread per request) answering
every request after L seconds, and compares the wall time from process start to
the last answer with the ideal N * L / C.

    python benchmarks/bench_api.py                      # N=1000, L=0.2, C in 8 32 64
    python benchmarks/bench_api.py --concurrency 1      # the 200 s run
    python benchmarks/bench_api.py --image-size 64x48   # tiny images instead of photo-sized ones

Targets on a 2-core machine at L = 200 ms: within 1.1x of ideal at C = 8 and
1.3x at C = 32, start-up included.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import yaml  # noqa: E402

from tests.servers import FakeServer  # noqa: E402

KEY_ENV = "SABRE_BENCH_KEY"
TARGETS = {8: 1.1, 32: 1.3}


def photo_like_jpeg(seed: int, size: tuple[int, int]) -> bytes:
    """A JPEG whose byte size is like a photo's (~300 KB at 1400 x 939, as the real images' 200-400 KB)."""
    from PIL import Image, ImageFilter

    rng = random.Random(seed)
    w, h = size
    noise = Image.frombytes("RGB", (w // 2, h // 2), rng.randbytes((w // 2) * (h // 2) * 3)).resize(size)
    img = noise.filter(ImageFilter.GaussianBlur(2.0))
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=88)
    return buf.getvalue()


def write_data(path: Path, n: int, size: tuple[int, int], pool: int = 25) -> float:
    """N attribute questions (distinct texts) over a pool of distinct images; returns mean image KB."""
    images = [photo_like_jpeg(i, size) for i in range(pool)]
    rows = [
        {
            "id": f"attribute_{i:04d}",
            "image": {"bytes": images[i % pool], "path": f"img_{i % pool}.jpg"},
            "subset": "attribute",
            "question": f"How many legs does animal number {i} have?",
            "answer": "4",
            "eval_type": "count_exact",
        }
        for i in range(n)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return sum(len(b) for b in images) / len(images) / 1024


def run_once(project: Path, server: FakeServer, n: int, c: int, latency: float) -> dict[str, float]:
    params = {
        "dataset": {"source": "demo"},
        "splits": ["attribute"],
        "models": {
            "bench": {
                "backend": "openai",
                "model_id": "bench-model",
                "api_key_env": KEY_ENV,
                "base_url": server.url("openai"),
                "concurrency": c,
                "timeout_s": 30,
            }
        },
    }
    (project / "params.yaml").write_text(yaml.safe_dump(params))
    shutil.rmtree(project / ".sabre", ignore_errors=True)
    shutil.rmtree(project / "results", ignore_errors=True)
    server.clear()
    env = {**os.environ, KEY_ENV: "sk-bench"}
    sabre = str(Path(sys.executable).parent / "sabre")
    with open(project / f"predict_c{c}.log", "w") as log:
        t0 = time.monotonic()
        proc = subprocess.run(
            [sabre, "predict", "--model", "bench", "--split", "attribute"], cwd=project, env=env, stdout=log, stderr=log
        )
        t_exit = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"sabre predict failed (C={c}); see {project / f'predict_c{c}.log'}")
    ok = server.ok_calls()
    if len(ok) != n or len(server.calls) != n:
        raise SystemExit(f"expected {n} calls, the server saw {len(server.calls)} ({len(ok)} answered)")
    first = min(call.start for call in ok) - t0
    last = max(call.end or 0.0 for call in ok) - t0
    ideal = n * latency / c
    run_log = json.loads((project / "results" / "logs" / "usage" / "bench" / "attribute.json").read_text())
    return {
        "p50": run_log["latency_s"]["p50"],
        "C": c,
        "ideal": ideal,
        "last_answer": last,
        "ratio": last / ideal,
        "first_request": first,
        "exit": t_exit,
        "max_in_flight": server.max_in_flight,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--image-size", default="1400x939", help="WxH of the JPEGs (default: the real data's size)")
    args = parser.parse_args()
    size = tuple(int(v) for v in args.image_size.lower().split("x"))
    with tempfile.TemporaryDirectory(prefix="sabre-bench-") as tmp:
        project = Path(tmp)
        kb = write_data(project / "data" / "parquet" / "attribute.parquet", args.n, size)  # type: ignore[arg-type]
        print(f"N={args.n} questions, L={args.latency * 1000:.0f} ms, images {args.image_size} JPEG (~{kb:.0f} KB), "
              f"{os.cpu_count()} CPUs")
        rows = []
        with FakeServer(latency=args.latency, decode_images=False) as server:
            for c in args.concurrency:
                rows.append(run_once(project, server, args.n, c, args.latency))
                r = rows[-1]
                print(f"  C={c}: {r['last_answer']:.2f} s to the last answer (ideal {r['ideal']:.2f} s)", flush=True)
    print()
    print(
        "| C | ideal N*L/C (s) | process start -> last answer (s) | ratio | target | first request at (s) "
        "| process exit (s) | max in flight | call latency p50 (ms) |"
    )
    print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        target = TARGETS.get(int(r["C"]))
        mark = "" if target is None else (f"<= {target}x " + ("ok" if r["ratio"] <= target else "MISSED"))
        print(
            f"| {r['C']} | {r['ideal']:.2f} | {r['last_answer']:.2f} | {r['ratio']:.3f} | {mark} | "
            f"{r['first_request']:.2f} | {r['exit']:.2f} | {r['max_in_flight']} | {r['p50'] * 1000:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
