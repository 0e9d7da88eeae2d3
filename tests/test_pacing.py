"""Pacing to the provider's limit (sabre_prior.inference.ratelimit).

The controller is tested as pure functions on a controlled clock (no timing); the
end-to-end cases run real ``sabre predict`` work against the fake server of
``tests/servers`` enforcing a request rate with the providers' documented headers,
and check counts (every question answered once, the 429 share, the shared
ceiling), never durations.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sabre_prior.inference import ratelimit as R
from tests.servers import FakeServer
from tests.servers.dataset import write_split
from tests.servers.fixtures import KEY, KEY_ENV, api_key, model_settings  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[1]
POLL = R.POLL_S


# -- the documented headers ------------------------------------------------------------------------
def test_rate_info_reads_openai_and_anthropic_headers() -> None:
    info = R.rate_info({"x-ratelimit-limit-requests": "600", "x-ratelimit-remaining-requests": "0",
                        "x-ratelimit-reset-requests": "250ms", "x-ratelimit-limit-tokens": "90000",
                        "x-ratelimit-remaining-tokens": "100", "x-ratelimit-reset-tokens": "1m0s"})  # fmt: skip
    assert info == R.RateInfo(600, 0, 0.25, 90000, 100, 60.0)
    a = R.rate_info({"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "49",
                     "anthropic-ratelimit-input-tokens-limit": "40000", "anthropic-ratelimit-output-tokens-limit": "8000",
                     "anthropic-ratelimit-output-tokens-remaining": "7000"})  # fmt: skip
    assert (a.limit_requests, a.remaining_requests, a.limit_tokens, a.remaining_tokens) == (50, 49, 8000, 7000)
    assert R.rate_info({"content-type": "application/json"}) is None and R.rate_info(None) is None


# -- the controller, on a controlled clock -------------------------------------------------------
def _drive(st: dict, seconds: float, ceiling: int, latency: float, *, server_rate: float | None, headers: bool) -> tuple[int, int]:
    """Simulate ``seconds`` of calls against a provider bucket of ``server_rate``/s (one second's burst);
    returns (answered, 429s).  Discrete time steps of 1 ms: no wall clock involved."""
    now, step = 1000.0, 0.001
    level, last = (max(1.0, server_rate) if server_rate else 0.0), now
    in_flight: list[tuple[float, str, R.RateInfo | None, float | None]] = []
    ok = limited = 0
    end = now + seconds
    while now < end:
        for done in [c for c in in_flight if c[0] <= now]:
            in_flight.remove(done)
            R.release(st, "p", now, ceiling, outcome=done[1], info=done[2], retry_after=done[3])
            ok += done[1] == "ok"
            limited += done[1] == "limited"
        while R.acquire(st, "p", now, ceiling) == 0:
            if server_rate:
                level = min(max(1.0, server_rate), level + (now - last) * server_rate)
                last = now
            info = R.RateInfo(server_rate * 60, max(0.0, level - 1)) if (server_rate and headers) else None
            if server_rate and level < 1:
                in_flight.append((now + 0.01, "limited", info, 1.0 / server_rate))
            else:
                level -= 1.0
                in_flight.append((now + latency, "ok", info, None))
        now += step
    return ok, limited


@pytest.mark.parametrize("rate", [2, 20, 200])
def test_paced_to_the_learned_limit_without_429s(rate: int) -> None:
    st = R.new_state(0.0)
    ok, limited = _drive(st, 20.0, ceiling=64, latency=0.2, server_rate=rate, headers=True)
    assert st["target"] == pytest.approx(rate)
    assert ok >= 0.9 * rate * 20 - 1 and limited <= 0.02 * ok, (ok, limited)


def test_one_request_probes_until_the_first_answer() -> None:
    st = R.new_state(0.0)
    assert R.acquire(st, "p", 0.0, 8) == 0
    assert R.acquire(st, "p", 0.0, 8) > 0, "nothing learned yet: one request alone"
    R.release(st, "p", 0.1, 8, outcome="ok", info=R.RateInfo(limit_requests=60000, remaining_requests=59999))
    assert all(R.acquire(st, "p", 0.1, 8) == 0 for _ in range(8)) and R.acquire(st, "p", 0.1, 8) > 0, "the ceiling holds"


def test_without_a_known_limit_the_window_starts_slowly() -> None:
    st = R.new_state(0.0)
    R.acquire(st, "p", 0.0, 8)
    R.release(st, "p", 0.1, 8, outcome="ok")  # an answer without rate-limit headers
    assert [R.acquire(st, "p", 0.1, 8) for _ in range(3)] == [0, 0, POLL] and st["slow_start"]
    R.release(st, "p", 0.2, 8, outcome="ok")
    R.release(st, "p", 0.2, 8, outcome="ok")
    assert st["window"] == 4.0, "one more in flight per answer"
    R.release(st, "p", 0.3, 8, outcome="limited", retry_after=0.1)
    assert not st["slow_start"] and st["window"] == 3.0


def test_429_episode_cuts_once_pauses_and_recovers() -> None:
    st = R.new_state(0.0)
    st["window"] = 16.0
    R.acquire(st, "p", 0.0, 16)
    R.release(st, "p", 0.05, 16, outcome="limited", retry_after=0.01)
    assert st["rate"] is None, "no answer yet: nothing to take a rate from"
    for i in range(8):  # eight answers in the next second
        R.acquire(st, "p", 0.1 + i / 10, 16)
        R.release(st, "p", 0.1 + i / 10, 16, outcome="ok")
    st["episode_until"] = 0.0
    st["window"] = 16.0
    R.acquire(st, "p", 1.0, 16)
    R.acquire(st, "p", 1.0, 16)
    R.release(st, "p", 1.1, 16, outcome="limited", retry_after=1.0)
    assert st["window"] == 12.0 and st["cool_until"] == pytest.approx(2.1)
    assert st["rate"] == pytest.approx(0.75 * 8, rel=0.3), "a quarter below the rate answers came at"
    rate = st["rate"]
    R.release(st, "p", 1.2, 16, outcome="limited", retry_after=1.0)  # the same burst: no second cut
    assert st["window"] == 12.0 and st["rate"] == rate
    assert R.acquire(st, "p", 1.5, 16) == pytest.approx(0.7), "new requests wait out the (longest) pause"
    for _ in range(500):
        R.release(st, "p", 3.0, 16, outcome="ok")
    assert st["window"] == 16.0 and st["rate"] > rate


def test_a_killed_process_leaks_no_slot(tmp_path: Path) -> None:
    path = tmp_path / "pacing.json"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    st = R.new_state(__import__("time").time())
    st["window"] = 2.0
    st["holders"] = {str(dead.pid): 2}  # a process killed with two calls in flight
    path.write_text(json.dumps(st))
    store = R.FileStore(path)
    try:
        assert store.update(lambda s, now: R.acquire(s, "me", now, 2)) == 0, "the dead pid's slots are gone"
        assert json.loads(path.read_text())["holders"] == {"me": 1}
    finally:
        store.close()


def test_limiter_waits_out_the_pause() -> None:
    async def go() -> float:
        limiter = R.RateLimiter(4)
        limiter.store.update(lambda st, now: st.update(window=4.0, cool_until=now + 0.3))
        t0 = asyncio.get_running_loop().time()
        async with limiter.slot() as ticket:
            ticket.done("ok")
        return asyncio.get_running_loop().time() - t0

    assert asyncio.run(go()) >= 0.29


# -- end to end against the rate-limited fake ----------------------------------------------------
@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_predict_paces_to_the_servers_limit(tmp_path: Path, backend: str, api_key: str) -> None:
    from sabre_prior.inference.predict import predict_split

    data = tmp_path / "context.parquet"
    write_split(data, "context", 40)
    with FakeServer(latency=0.05, rate_limit=20) as server:
        predict_split("m", model_settings(server, backend, concurrency=16, max_attempts=10), "context", data,
                      tmp_path / "pred.jsonl", progress=False, usage_output=tmp_path / "u.json",
                      run_log_output=tmp_path / "r.json", journal_dir=tmp_path / ".sabre" / "journal")  # fmt: skip
        limited = sum(1 for c in server.calls if c.status == 429)
        assert len(server.answers_per_key()) == 40 and set(server.answers_per_key().values()) == {1}
    assert limited <= 2, f"{limited} of {len(server.calls)} calls got a 429"
    (state,) = (tmp_path / ".sabre" / "pacing").iterdir()
    st = json.loads(state.read_text())
    assert st["target"] == pytest.approx(20) and st["holders"] == {}


def test_four_split_jobs_share_one_budget(tmp_path: Path) -> None:
    """Four `sabre predict` processes of one model at once: one ceiling, one pace, few 429s."""
    splits = ["context", "texture", "attribute", "language"]
    rows = {s: len(write_split(tmp_path / "data" / "parquet" / f"{s}.parquet", s, 30, seed=i)) for i, s in enumerate(splits)}
    with FakeServer(latency=0.1, rate_limit=20) as server:
        settings = model_settings(server, "openai", concurrency=6, max_attempts=10)
        (tmp_path / "params.yaml").write_text(yaml.safe_dump({"dataset": {"source": "demo"}, "splits": splits,
                                                              "models": {"m": settings}}))  # fmt: skip
        env = {**os.environ, KEY_ENV: KEY, "PYTHONPATH": str(ROOT / "src")}
        procs = [
            subprocess.Popen([sys.executable, "-m", "sabre_prior.cli", "predict", "--model", "m", "--split", s, "--no-progress"],
                             cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
            for s in splits
        ]
        outs = [p.communicate(timeout=300)[0] for p in procs]
        assert [p.returncode for p in procs] == [0] * 4, outs
        limited = sum(1 for c in server.calls if c.status == 429)
        assert set(server.answers_per_key().values()) == {1}, "no answer paid twice"
        for s in splits:
            assert len((tmp_path / "results" / "predictions" / "m" / f"{s}.jsonl").read_text().splitlines()) == rows[s]
        assert server.max_in_flight <= 6, "the four jobs share the ceiling of 6"
    assert limited <= 0.05 * sum(rows.values()), f"{limited} 429s"
    (state,) = (tmp_path / ".sabre" / "pacing").iterdir()
    assert json.loads(state.read_text())["holders"] == {}
