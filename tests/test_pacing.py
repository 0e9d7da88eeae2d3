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


def _simulate(rate: float, n: int, *, ceiling: int = 64, latency: float = 0.1, lag: float = 0.001, headers: bool = False) -> dict:
    """``n`` questions through ``ceiling`` workers against the fake's request limit (tests/servers: a
    bucket of one second's worth, full at the first request; above it a 429 at once whose wait is the
    time to the next request, as Gemini's RetryInfo.retryDelay, seen by the client ``lag`` seconds
    after it was sent), each 429 retried after its wait as the engine does; in steps of 1 ms of a
    simulated clock.  Returns the answers per second between the first
    request and the last answer (over ``rate``), the 429s and their share, the most in flight."""
    import random

    rng, st, now, step = random.Random(0), R.new_state(0.0), 1000.0, 0.001
    cap, level, last = max(1.0, rate), max(1.0, rate), now
    workers = [{"state": "idle", "until": 0.0, "started": 0.0, "result": None} for _ in range(ceiling)]
    todo, ok, limited, first, last_end, most = n, 0, 0, None, now, 0
    while ok < n and now < 1000.0 + 20 * n / rate:
        for w in workers:
            if w["state"] == "fly" and w["until"] <= now:
                outcome, info, wait = w["result"]
                R.release(st, "p", now, ceiling, outcome=outcome, info=info, retry_after=wait, started=w["started"])
                if outcome == "ok":
                    ok, last_end, w["state"] = ok + 1, now, "idle"
                else:
                    limited += 1
                    w["state"], w["until"] = "back", now + wait + rng.random() * min(1.0, 0.1 * wait + 0.01)
            elif w["state"] == "back" and w["until"] <= now:
                w["state"] = "ready"
            if w["state"] == "idle" and todo:
                todo, w["state"] = todo - 1, "ready"
        in_flight = sum(w["state"] == "fly" for w in workers)
        for w in workers:
            if w["state"] != "ready":
                continue
            if R.acquire(st, "p", now, ceiling) > 0:
                break
            in_flight, most = in_flight + 1, max(most, in_flight + 1)
            level, last = min(cap, level + (now - last) * rate), now
            info = R.RateInfo(rate * 60, max(0.0, level - 1)) if headers else None
            if level >= 1:
                level -= 1
                first = now if first is None else first
                w.update(state="fly", until=now + latency, started=now, result=("ok", info, None))
            else:
                w.update(state="fly", until=now + lag, started=now, result=("limited", info, (1 - level) / rate))
        now += step
    return {"achieved": (ok - 1) / (last_end - first) / rate, "limited": limited, "share": limited / (ok + limited),
            "most": most, "answered": ok, "state": st}  # fmt: skip


@pytest.mark.parametrize("rate", [2, 5, 20, 50, 200])
@pytest.mark.parametrize("latency,lag", [(0.05, 0.001), (0.3, 0.001), (0.1, 0.04)])
def test_without_any_header_paced_to_the_limit_learned_from_429s(rate: int, latency: float, lag: float) -> None:
    """No rate-limit header (Gemini): >= 90 % of the limit, < 2 % of the calls 429 over 100 questions or
    ten seconds' worth, the ceiling held; the first 429 is the one unavoidable (nothing tells the limit
    before it), and the requests sent until it is back (``lag``) are refused with it."""
    r = _simulate(rate, max(100, 10 * rate), latency=latency, lag=lag)
    assert r["answered"] == max(100, 10 * rate) and r["most"] <= 64
    assert r["state"]["target"] is None
    if 64 / latency >= 2 * rate:  # the ceiling of 64 in flight is no limit itself
        assert r["achieved"] >= 0.9 and r["share"] < 0.02 and r["limited"] >= 1, r


def test_one_request_probes_until_the_first_answer() -> None:
    st = R.new_state(0.0)
    assert R.acquire(st, "p", 0.0, 8) == 0
    assert R.acquire(st, "p", 0.0, 8) > 0, "nothing learned yet: one request alone"
    R.release(st, "p", 0.1, 8, outcome="ok", info=R.RateInfo(limit_requests=60000, remaining_requests=59999))
    assert all(R.acquire(st, "p", 0.1, 8) == 0 for _ in range(8)) and R.acquire(st, "p", 0.1, 8) > 0, "the ceiling holds"


def test_without_a_known_limit_the_rate_starts_low_and_doubles() -> None:
    st = R.new_state(0.0)
    R.acquire(st, "p", 0.0, 8)
    assert R.acquire(st, "p", 0.0, 8) > 0, "nothing learned yet: one request alone"
    R.release(st, "p", 0.1, 8, outcome="ok", started=0.0)  # an answer without rate-limit headers
    assert st["slow_start"] and st["srtt"] == pytest.approx(0.1) and st["rate"] is None
    rate = R.START_RATE * 2 ** (0.1 / R.START_DOUBLING_S)
    first = max(rate, 2 / 0.1)  # at least the window (2, under START_WINDOW) each round trip of 0.1 s
    assert [R.acquire(st, "p", 0.1, 8) for _ in range(2)] == [0, pytest.approx(1 / first)], "one at once, then paced"
    t = 0.1 + 4 * R.START_DOUBLING_S  # four doublings later: 16 times the rate (above START_WINDOW a round trip)
    assert 16 * rate > R.START_WINDOW / 0.1
    R.release(st, "p", t, 8, outcome="ok", started=0.1)
    R.release(st, "p", t, 8, outcome="ok", started=0.1)
    assert st["window"] == 4.0, "the window: one more in flight per answer"
    st.update(level=0.0, t=t)  # the bucket just emptied
    assert R.acquire(st, "p", t, 8) == pytest.approx(1 / (16 * rate))


def test_the_first_429_sets_the_rate_from_what_the_provider_took() -> None:
    """Three requests taken (sent at 0, 0.1, 0.1), the one sent at 0.3 refused with a wait of 0.1 s: a
    bucket of one second's worth, full at 0, let 3 through by 0.3 and lets the fourth at 0.4: 4 / 1.4 s."""
    st = R.new_state(0.0)
    for t, started in ((0.1, 0.0), (0.2, 0.1), (0.2, 0.1)):
        R.acquire(st, "p", started, 8)
        R.release(st, "p", t, 8, outcome="ok", started=started)
    R.acquire(st, "p", 0.3, 8)
    R.release(st, "p", 0.3, 8, outcome="limited", retry_after=0.1, started=0.3)
    assert st["bad_rate"] == pytest.approx(4 / 1.4 / R.NEAR) and st["rate"] == pytest.approx(R.HEADROOM * 4 / 1.4)
    assert not st["slow_start"] and st["cool_until"] == pytest.approx(0.4)
    R.release(st, "p", 0.35, 8, outcome="ok", started=0.25)  # one more sent before the 429, answered after it
    assert st["bad_rate"] == pytest.approx(5 / 1.4 / R.NEAR), "it was taken too: the guess grows"
    assert st["rate"] == pytest.approx(R.HEADROOM * 5 / 1.4 * (1 + R.FAST_INCREASE)), "and back up to it fast"
    R.release(st, "p", 0.5, 8, outcome="ok", started=0.4)  # sent after it: no part of the guess
    assert st["bad_rate"] == pytest.approx(5 / 1.4 / R.NEAR)


def test_a_429_without_a_known_limit_cuts_once_per_episode_and_probes_back() -> None:
    st = R.new_state(0.0)
    st.update(window=16.0, rate=10.0, bad_rate=10.0, first_429=0.0, cut_at=0.0, first_t=0.0)
    for i in range(20):  # answers at the paced rate: the rate they came at is no lower
        R.release(st, "p", 0.9 + i / 20, 16, outcome="ok", started=0.8 + i / 20)
    rate = st["rate"]
    assert rate == pytest.approx(10.0 * (1 + R.PROBE_INCREASE) ** 20), "past the rate of the last 429: slowly"
    R.release(st, "p", 2.0, 16, outcome="limited", retry_after=0.2, started=1.99)
    assert st["bad_rate"] == pytest.approx(rate) and st["rate"] == pytest.approx(R.DECREASE_UNKNOWN * rate)
    assert st["window"] == 12.0 and st["cool_until"] == pytest.approx(2.2) and st["cut_at"] == 2.0
    R.release(st, "p", 2.01, 16, outcome="limited", retry_after=0.2, started=1.995)  # sent before the cut
    assert st["rate"] == pytest.approx(R.DECREASE_UNKNOWN * rate) and st["window"] == 12.0, "the same episode"
    assert R.acquire(st, "p", 2.1, 16) == pytest.approx(0.11), "new requests wait out the (longest) pause"
    cut = st["rate"]
    R.release(st, "p", 2.3, 16, outcome="ok", started=2.2)
    assert st["rate"] == pytest.approx(cut * (1 + R.FAST_INCREASE)), "below the refused rate: back fast"
    R.release(st, "p", 2.31, 16, outcome="limited", retry_after=0.2, started=2.25)  # sent after the cut: too fast still
    assert st["rate"] == pytest.approx(R.DECREASE_UNKNOWN * cut * (1 + R.FAST_INCREASE))


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


def test_a_large_state_is_read_whole(tmp_path: Path) -> None:
    """The state is read at its file's size: one larger than a megabyte (the fixed read of earlier
    code) comes back whole, and a shorter state written over it leaves no tail of the old one behind
    (padded, still JSON)."""
    path = tmp_path / "pacing.json"
    st = R.new_state(__import__("time").time())
    st["answers"] = [1.0 + i / 1e6 for i in range(150_000)]  # ~1.5 MB of JSON
    path.write_text(json.dumps(st))
    assert path.stat().st_size > 1 << 20
    store = R.FileStore(path)
    try:
        assert store.update(lambda s, now: len(s["answers"])) == len(st["answers"])
        store.update(lambda s, now: s.update(answers=[2.0]))
        assert store.update(lambda s, now: s["answers"]) == [2.0]
        assert json.loads(path.read_text())["answers"] == [2.0]
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


def test_predict_learns_geminis_limit_from_its_429s(tmp_path: Path, api_key: str) -> None:
    """No rate-limit header: the limit is learned from the 429s (RetryInfo), every question answered once."""
    from sabre_prior.inference.predict import predict_split

    data = tmp_path / "context.parquet"
    write_split(data, "context", 60)
    with FakeServer(latency=0.05, rate_limit=20) as server:
        predict_split("m", model_settings(server, "gemini", concurrency=16, max_attempts=10), "context", data,
                      tmp_path / "pred.jsonl", progress=False, usage_output=tmp_path / "u.json",
                      run_log_output=tmp_path / "r.json", journal_dir=tmp_path / ".sabre" / "journal")  # fmt: skip
        limited = sum(1 for c in server.calls if c.status == 429)
        assert len(server.answers_per_key()) == 60 and set(server.answers_per_key().values()) == {1}
    (state,) = (tmp_path / ".sabre" / "pacing").iterdir()
    st = json.loads(state.read_text())
    assert st["target"] is None and st["holders"] == {}
    if limited:  # the limit was reached (on a busy machine the client may stay below it)
        assert st["first_429"] is not None and 10 <= st["rate"] <= 30, st
    assert limited <= 6, f"{limited} of {len(server.calls)} calls got a 429"


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["openai", "gemini"])
def test_four_split_jobs_share_one_budget(tmp_path: Path, backend: str) -> None:
    """Four `sabre predict` processes of one model at once: one ceiling, one pace, few 429s (Gemini: no
    header tells the limit; the 429s of the first one to find it teach the others)."""
    splits = ["context", "texture", "attribute", "language"]
    rows = {s: len(write_split(tmp_path / "data" / "parquet" / f"{s}.parquet", s, 30, seed=i)) for i, s in enumerate(splits)}
    with FakeServer(latency=0.1, rate_limit=20) as server:
        settings = model_settings(server, backend, concurrency=6, max_attempts=10)
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


# -- a 429 naming the reset: nothing of the key before it, the refused questions soon after it ------
RESET_S = 2.0
TELL_S = 0.25


def _run_small_split(tmp_path: Path, server: FakeServer, backend: str) -> None:
    """A user's first run of a model: 12 questions, nothing learned, the paper presets' concurrency of 16."""
    from sabre_prior.inference.predict import predict_split

    data = tmp_path / "context.parquet"
    write_split(data, "context", 12)
    predict_split("m", model_settings(server, backend, concurrency=16, timeout_s=10, backoff_base_s=1.0,
                                      backoff_max_s=60.0), "context", data, tmp_path / "pred.jsonl",
                  progress=False, usage_output=tmp_path / "u.json", run_log_output=tmp_path / "r.json",
                  journal_dir=tmp_path / ".sabre" / "journal")  # fmt: skip
    assert len(server.answers_per_key()) == 12 and set(server.answers_per_key().values()) == {1}


def _nothing_before_a_named_reset(server: FakeServer) -> None:
    """Once a 429 naming a reset went back to the client, no request arrives before that reset; requests
    the client let go before reading the 429 may still arrive a moment later (TELL_S); an RFC 3339 time
    has milliseconds (10 ms)."""
    named = [(c.end, c.reset_at) for c in server.calls if c.reset_at is not None and c.end is not None]
    early = [(round(c.start, 3), round(reset, 3)) for c in server.calls for told, reset in named
             if told + TELL_S < c.start < reset - 0.01]  # fmt: skip
    assert named and not early, f"requests that arrived before a reset named to the client (at, reset): {early}"


@pytest.mark.parametrize("backend,flavour", [("openai", ""), ("anthropic", ""), ("openai", "compatible")])
def test_a_429_naming_the_reset_holds_the_key_until_it_and_no_longer(
    tmp_path: Path, backend: str, flavour: str, api_key: str
) -> None:
    """The third request exhausts the key's limit for RESET_S seconds, and every request until the reset
    gets a 429 whose documented headers name it (tests/servers/protocols.exhausted: OpenAI's
    x-ratelimit-reset-requests, Anthropic's anthropic-ratelimit-requests-reset and retry-after, an
    OpenAI-compatible server's retry-after and x-ratelimit-reset-tokens).  Once the first 429 is back, no
    request leaves before the reset; every refused question is answered within 2 s after it."""
    with FakeServer(latency=0.05, exhaust=(3, RESET_S), exhausted_flavour=flavour) as server:
        _run_small_split(tmp_path, server, backend)
        _nothing_before_a_named_reset(server)
        assert server.exhausted_window is not None
        _, reset = server.exhausted_window
        answered = {c.key: c.start for c in reversed(server.ok_calls())}  # the first answer of each key
        late = {k[:8]: round(answered[k] - reset, 2) for k in {c.key for c in server.calls if c.fault == "exhausted"}}
        assert all(0 <= d <= 2.0 for d in late.values()), f"refused questions answered (s after the reset): {late}"


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_a_first_answer_429_naming_the_reset_leaves_the_window_open(tmp_path: Path, backend: str, api_key: str) -> None:
    """Every question's first attempt gets a 429 naming a reset RESET_S ahead (the fake's 429_reset: OpenAI's
    x-ratelimit-reset-requests, Anthropic's anthropic-ratelimit-requests-reset), the first answer of the
    run included.  Its headers tell the limit: after the reset the questions go together, not one a reset
    (12 questions were 12 rounds of RESET_S, issue 35); the 429s come in three rounds (Anthropic's
    4,000 a minute paces the first burst over two; at most five on a loaded machine); every reset honoured."""
    with FakeServer(latency=0.05) as server:
        server.add_fault("429_reset", first_attempts=1, retry_after=RESET_S)
        _run_small_split(tmp_path, server, backend)
        _nothing_before_a_named_reset(server)
        told = sorted(c.end for c in server.calls if c.status == 429 and c.end is not None)
        rounds = 1 + sum(1 for a, b in zip(told, told[1:]) if b - a > RESET_S / 2)
        # three rounds on an idle machine; on a loaded one (load 5, the full suite beside it) a
        # round's 429s can arrive more than RESET_S / 2 apart and count as two: at most 5, where
        # the bug this guards against (one question a reset) made 12
        assert len(told) == 12 and rounds <= 5, f"{len(told)} 429s in {rounds} rounds: {told}"


@pytest.mark.slow
def test_main_run_template_run_and_audit_repeat_share_one_budget(tmp_path: Path) -> None:
    """A model's main predictions (`sabre predict`), a template run (`sabre prompt-run`) and an audit repeat
    (`sabre audit-run`) at once: one pacing state (.sabre/pacing/, none beside the template's or the
    audit's journal), one ceiling over the three, few 429s against the server's limit."""
    splits = ["context", "texture"]
    for i, s in enumerate(splits):
        write_split(tmp_path / "data" / "parquet" / f"{s}.parquet", s, 24, seed=i)
    with FakeServer(latency=0.1, rate_limit=20) as server:
        settings = model_settings(server, "openai", concurrency=6, max_attempts=10)
        params = {"dataset": {"source": "demo"}, "splits": splits, "models": {"m": settings},
                  "prompt": {"templates": ["screening_v1", "bare_v1"]}, "audit": {"repeats": 2, "questions": 12}}
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
        env = {**os.environ, KEY_ENV: KEY, "PYTHONPATH": str(ROOT / "src")}
        cli = [sys.executable, "-m", "sabre_prior.cli"]
        jobs = [[*cli, "predict", "--model", "m", "--split", "context", "--no-progress"],
                [*cli, "prompt-run", "--template", "bare_v1", "--model", "m", "--data", "data/parquet",
                 "--outdir", "results/prompts/bare_v1/m", "--no-progress"],
                [*cli, "audit-run", "--model", "m", "--repeat", "1", "--data", "data/parquet", "--no-progress"]]  # fmt: skip
        procs = [subprocess.Popen(j, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for j in jobs]  # fmt: skip
        outs = [p.communicate(timeout=300)[0] for p in procs]
        assert [p.returncode for p in procs] == [0] * 3, outs
        limited = sum(1 for c in server.calls if c.status == 429)
        answered = len(server.ok_calls())
        assert server.max_in_flight <= 6, "the three jobs share the ceiling of 6"
    assert answered == 24 + 48 + 24, answered  # context; both splits under bare_v1; 12 a split repeated
    assert limited <= 0.05 * answered, f"{limited} 429s"
    (state,) = (tmp_path / ".sabre" / "pacing").iterdir()
    assert json.loads(state.read_text())["holders"] == {}
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("pacing")) == [".sabre/pacing"]
