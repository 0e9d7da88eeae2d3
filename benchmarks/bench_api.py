"""Benchmark (not a test): API inference CPU and wall time against a local server with injected latency.

For N questions and each concurrency C, runs ``sabre predict`` as a subprocess
(fresh journal, progress bar on, as a user would) against the fake OpenAI server
of ``tests/servers`` (aiohttp, asyncio: not a thread per request) answering
every request after L seconds, side by side with a bare client
(``benchmarks/bare_client.py``: aiohttp, the same Parquet file, the same request
bodies, the same concurrency, also a fresh process) on the same server, for
images of about 32 KB (440x295) and 300 KB (1400x939, the real data's size). Prints, for each:

* the **CPU seconds per call**: user + system time of the whole process tree (``sabre
  predict`` and its forked row reader; the bare client), from ``wait4`` of the child (a process's
  rusage includes its waited-for children), divided by N;
* the **wall time** from process start to the last answer, against the ideal N * L / C;
* the time from process start to the first request, and the peak RSS of ``sabre predict``
  (with its forked row reader) at N and at 4N (``--rss-n``; flat in N: images are streamed).

``--hog K`` (default 1) starts K bounded CPU hogs (busy loops, each killed at the end and
stopping on its own after ``--hog-s`` seconds) that run beside both clients, so that the figures
are those of a busy machine and reproducible on one. Each row has its own image bytes (a
distinct trailer after the JPEG's end marker), so Parquet cannot deduplicate them. Child
processes may write bytecode (an installed package has its .pyc files). Linux only (the peak
RSS is read from /proc).

    python benchmarks/bench_api.py                          # N=1000, L=0.2, C in 8 32 64, one hog
    python benchmarks/bench_api.py -n 300 --concurrency 32  # a short run
    python benchmarks/bench_api.py --hog 0                  # an idle machine
    python benchmarks/bench_api.py --image-sizes 64x48      # tiny images instead

Targets: CPU per call within 1.3x of the bare client's; wall time within 1.15x of the bare
client's, start-up included; the first request within 0.5 s of the process start.
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
from statistics import median
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import yaml  # noqa: E402

from tests.servers import FakeServer  # noqa: E402

KEY_ENV = "SABRE_BENCH_KEY"
RATIO_TARGET = 1.15  # wall time of sabre predict / the bare client's, process start included
CPU_TARGET = 1.3  # CPU seconds per call of sabre predict (its process tree) / the bare client's
FIRST_TARGET = 0.5  # seconds from process start to the first request


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
    """N attribute questions (distinct texts, distinct image bytes) over a pool of pictures; returns mean image KB."""
    images = [photo_like_jpeg(i, size) for i in range(pool)]
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = None
    writer = None
    try:
        for start in range(0, n, 200):  # written in pieces: the benchmark itself stays small
            rows = [
                {
                    "id": f"attribute_{i:05d}",
                    # bytes after the JPEG end marker are ignored by decoders; they make each image distinct
                    "image": {"bytes": images[i % pool] + f"row {i}".encode(), "path": f"img_{i}.jpg"},
                    "subset": "attribute",
                    "question": f"How many legs does animal number {i} have?",
                    "answer": "4",
                    "eval_type": "count_exact",
                }
                for i in range(start, min(n, start + 200))
            ]
            table = pa.Table.from_pylist(rows, schema=schema)
            if writer is None:
                schema = table.schema
                writer = pq.ParquetWriter(path, schema, use_dictionary=False)
            writer.write_table(table, row_group_size=64)
    finally:
        if writer is not None:
            writer.close()
    return sum(len(b) for b in images) / len(images) / 1024


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env[KEY_ENV] = "sk-bench"
    return env


def _tree_rss_kb(pid: int) -> int:
    """The summed VmRSS (kB) of ``pid`` and every process below it, from Linux's /proc."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                total += next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo += [int(c) for c in fh.read().split()]
        except (OSError, ValueError, StopIteration):
            continue  # gone meanwhile, or a zombie
    return total


def run_timed(cmd: list[str], cwd: Path, log_path: Path) -> tuple[float, float, int, float]:
    """(start monotonic, exit after s, peak RSS MB, CPU s) of one child process and the processes it starts.

    The CPU seconds are user + system of the child and of its waited-for children (``wait4``'s
    rusage, getrusage(2): RUSAGE_CHILDREN semantics for one child). The peak RSS is the largest sum of
    VmRSS over the process and its descendants (``sabre predict``'s forked row reader), sampled every
    50 ms: GNU time's ``%M`` would give the largest single process only, and this process's ``wait4``
    counts a child forked from this (large) benchmark process with the parent's pages until it execs.
    The sum counts the pages a forked child still shares with its parent twice: an upper bound.
    """
    with open(log_path, "w") as log:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=cwd, env=child_env(), stdout=log, stderr=log)
        peak = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, _tree_rss_kb(proc.pid))
            time.sleep(0.05)
        t_exit = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed; see {log_path}")
    return t0, t_exit, peak // 1024, usage.ru_utime + usage.ru_stime


def start_hogs(k: int, seconds: float) -> list[subprocess.Popen]:
    """K busy loops beside the clients, each ending on its own after ``seconds`` (bounded)."""
    code = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(k)]


def call_times(server: FakeServer, n: int, t0: float) -> tuple[float, float]:
    ok = server.ok_calls()
    if len(ok) != n or len(server.calls) != n:
        raise SystemExit(f"expected {n} calls, the server saw {len(server.calls)} ({len(ok)} answered)")
    return min(call.start for call in ok) - t0, max(call.end or 0.0 for call in ok) - t0


def run_bare(project: Path, server: FakeServer, n: int, c: int) -> dict[str, float]:
    server.clear()
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bare_client.py"), str(project / "data" / "parquet" / "attribute.parquet"),
           server.url("openai"), str(c)]  # fmt: skip
    t0, t_exit, rss, cpu = run_timed(cmd, project, project / f"bare_c{c}.log")
    first, last = call_times(server, n, t0)
    return {"last_answer": last, "first_request": first, "exit": t_exit, "rss_mb": rss, "cpu_ms": cpu / n * 1000}


def rule_settings(params: dict) -> str:
    """The ``--settings`` JSON that rule ``predict`` passes for model ``bench`` (workflow/rules/inference.smk:
    ``settings(*ANSWERING, "prompt.templates.0")``, with ANSWERING and NOT_ANSWERING read from
    workflow/rules/common.smk, so that the benchmark runs the rule's command, not a copy of it)."""
    import ast
    import re

    from sabre_prior import settings

    text = (ROOT / "workflow" / "rules" / "common.smk").read_text(encoding="utf-8")
    found = re.search(r"^NOT_ANSWERING = (\(.*?\))$", text, re.M)
    if found is None or 'ANSWERING = ("models.{model}", *(f"!models.{{model}}.{key}" for key in NOT_ANSWERING))' not in text:
        raise SystemExit("workflow/rules/common.smk no longer defines ANSWERING as this benchmark reads it: update rule_settings")
    keys = [["models", "bench"], *(["!", "models", "bench", k] for k in ast.literal_eval(found.group(1))), "prompt.templates.0"]
    return settings.encode(params, keys)


def run_once(project: Path, server: FakeServer, n: int, c: int, latency: float, form: str = "hand") -> dict[str, float]:
    params = {
        "dataset": {"source": "demo"},
        "splits": ["attribute"],
        "prompt": {"templates": ["screening_v1"]},  # the default, said: the rule's settings carry it
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
    sabre = str(Path(sys.executable).parent / "sabre")
    cmd = [sabre, "predict", "--model", "bench", "--split", "attribute"]
    if form == "rule":  # as Snakemake runs it: the rule's settings on the command line, validated by Snakemake
        cmd += ["--settings", rule_settings(params)]
    t0, t_exit, rss, cpu = run_timed(cmd, project, project / f"predict_{form}_c{c}.log")
    first, last = call_times(server, n, t0)
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
        "rss_mb": rss,
        "cpu_ms": cpu / n * 1000,
        "form": form,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--image-sizes", nargs="+", default=["440x295", "1400x939"],
                        help="WxH of the JPEGs (default: ~32 KB and ~300 KB, the real data's size)")  # fmt: skip
    parser.add_argument("--rss-n", type=int, default=4000, help="a second N for the peak-RSS comparison (0: skip)")
    parser.add_argument("--hog", type=int, default=1, help="CPU hogs running beside both clients (0: none)")
    parser.add_argument("--hog-s", type=float, default=900.0, help="each hog stops on its own after this long")
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs of each client per row, alternating; the table gives medians (of each round's "
                             "sabre/bare ratio for the ratios) and the ratios' range")  # fmt: skip
    parser.add_argument("--forms", nargs="+", choices=["hand", "rule"], default=["hand", "rule"],
                        help="how sabre predict is run: by hand (reads and validates params.yaml) and as rule "
                             "predict runs it (--settings, validated by Snakemake before the job)")  # fmt: skip
    parser.add_argument("--server-limit", type=float, default=1e5,
                        help="requests per second the server's rate-limit headers announce (0: no headers; "
                             "sabre then starts slowly, one more request in flight per answer)")  # fmt: skip
    args = parser.parse_args()
    rows, bare, rss = [], [], {}
    load = os.getloadavg()[0]
    hogs = start_hogs(args.hog, args.hog_s)
    try:
        with tempfile.TemporaryDirectory(prefix="sabre-bench-") as tmp:
            project = Path(tmp)
            data = project / "data" / "parquet" / "attribute.parquet"
            print(f"N={args.n} questions, L={args.latency * 1000:.0f} ms, {os.cpu_count()} CPUs, {args.hog} CPU hog(s), "
                  f"load average {load:.1f} at the start ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")
            # rate_limit: the server sends OpenAI's x-ratelimit-* headers with every answer, as OpenAI does
            # (tests/servers/protocols.py), at a limit far above what is sent (no 429 here: bench_pacing.py)
            with FakeServer(latency=args.latency, decode_images=False, rate_limit=args.server_limit or None) as server:
                for image_size in args.image_sizes:
                    size = tuple(int(v) for v in image_size.lower().split("x"))
                    kb = write_data(data, args.n, size)  # type: ignore[arg-type]
                    for c in args.concurrency:
                        rounds: list[tuple[dict[str, float], dict[str, dict[str, float]]]] = []
                        for i in range(args.rounds):  # alternating, so that a change of load falls on both
                            b = run_bare(project, server, args.n, c)
                            runs = {form: run_once(project, server, args.n, c, args.latency, form) for form in args.forms}
                            rounds.append((b, runs))
                            print(f"  {kb:.0f} KB, C={c}, round {i + 1}: " + "; ".join(
                                f"sabre ({f}) {r['last_answer']:.2f} s, {r['cpu_ms']:.2f} ms CPU a call" for f, r in runs.items())
                                + f"; bare client {b['last_answer']:.2f} s, {b['cpu_ms']:.2f} ms", flush=True)  # fmt: skip
                        bare.append({k: median([b[k] for b, _ in rounds]) for k in rounds[0][0]})
                        for form in args.forms:
                            runs_f = [(b, r[form]) for b, r in rounds]
                            row = {k: median([r[k] for _, r in runs_f]) for k in runs_f[0][1] if k != "form"}
                            cpu_ratios = [r["cpu_ms"] / b["cpu_ms"] for b, r in runs_f]
                            wall_ratios = [r["last_answer"] / b["last_answer"] for b, r in runs_f]
                            row.update(form=form, kb=kb, bare=bare[-1], cpu_ratio=median(cpu_ratios), wall_ratio=median(wall_ratios),
                                       cpu_range=(min(cpu_ratios), max(cpu_ratios)), wall_range=(min(wall_ratios), max(wall_ratios)))  # fmt: skip
                            rows.append(row)
                rss[args.n] = rows[-1]["rss_mb"]
                if args.rss_n:
                    write_data(data, args.rss_n, size)  # type: ignore[arg-type]
                    big = run_once(project, server, args.rss_n, args.concurrency[-1], args.latency)
                    rss[args.rss_n] = big["rss_mb"]
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
    print(f"medians of {args.rounds} round(s); a ratio is the median of each round's sabre/bare ratio [its range]")
    print(
        "| image | C | sabre run | CPU ms a call, sabre / bare | CPU ratio [range] | target | ideal N*L/C (s) | "
        "sabre: start -> last answer (s) | bare client (s) | wall ratio [range] | target | first request at (s), sabre / bare | "
        "max in flight | call latency p50 (ms) |"
    )
    print("|--:|--:|:--|--:|--:|:--|--:|--:|--:|--:|:--|--:|--:|--:|")
    for r in rows:
        b, ratio, cpu = r["bare"], r["wall_ratio"], r["cpu_ratio"]
        print(
            f"| {r['kb']:.0f} KB | {r['C']:.0f} | {'by hand' if r['form'] == 'hand' else 'as the rule runs it'} | "
            f"{r['cpu_ms']:.2f} / {b['cpu_ms']:.2f} | {cpu:.2f} [{r['cpu_range'][0]:.2f}-{r['cpu_range'][1]:.2f}] | "
            f"<= {CPU_TARGET}x {'ok' if cpu <= CPU_TARGET else 'MISSED'} | {r['ideal']:.2f} | {r['last_answer']:.2f} | "
            f"{b['last_answer']:.2f} | {ratio:.3f} [{r['wall_range'][0]:.3f}-{r['wall_range'][1]:.3f}] | "
            f"<= {RATIO_TARGET}x {'ok' if ratio <= RATIO_TARGET else 'MISSED'} | "
            f"{r['first_request']:.2f} / {b['first_request']:.2f} "
            f"({'ok' if r['first_request'] <= FIRST_TARGET else 'MISSED'} <= {FIRST_TARGET} s) | "
            f"{r['max_in_flight']:.0f} | {r['p50'] * 1000:.0f} |"
        )
    if rss:
        print()
        print("| N | peak RSS of sabre predict and its row reader (MB) | bare client at N (MB) |")
        print("|--:|--:|--:|")
        for n_, mb in rss.items():
            print(f"| {n_} | {mb} | {bare[-1]['rss_mb'] if n_ == args.n else '-'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
