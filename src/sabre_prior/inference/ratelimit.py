"""Pacing calls to the provider's limit: one budget per model, shared by every process.

What a provider limits is an organisation's requests and tokens per minute for one
model, not one job; every job of a model therefore shares one *pacing state*, a small JSON
file ``.sabre/pacing/<provider>+<model>+<endpoint hash>.json`` read and written under an
``fcntl`` lock: its split jobs, which run at once (``snakemake`` runs them in parallel, and
``dvc repro`` runs the pipeline through Snakemake too: one stage whose command is
``snakemake``), and its template runs (``sabre prompt-run``), audit repeats (``sabre
audit-run``) and the synchronous retries of a provider batch, whose journals lie elsewhere
(``inference.predict.pacing_path``).  A job started later, or the next run, finds what the
earlier ones learned (until the state is :data:`STALE_S` old).  It holds

* the **window**: how many requests may be in flight for the model, over all its
  processes, between 1 and the configured ``concurrency`` (the ceiling).  Each
  success grows it by ``1/window`` (one per window of successes), a 429 episode
  multiplies it by :data:`DECREASE` (AIMD);
* the **rate**: requests per second, paced by a token bucket with a small burst.
  Its target is learned from the documented rate-limit headers every response
  carries (the requests-per-minute limit, and the tokens-per-minute limit divided
  by the tokens a request uses), else from ``rate_limits.requests_per_minute``;
  the rate is paced at :data:`HEADROOM` of the target.  A 429 multiplies the rate by
  :data:`DECREASE` (once per episode) and pauses new requests for its wait; each
  success adds back a little (additive increase).  Without any header (Gemini) the
  rate starts unpaced and is set from the rate actually achieved at the first 429;
* ``remaining`` headers: a response saying no request (or no token) is left stops
  new requests until the documented reset; a 429 stops them for its wait (``Retry-After``,
  else the reset its headers name, :func:`outcomes.retry_after_from_headers`), and no
  longer: the refused requests are retried first when it is over (``RateLimiter.slot(retry=True)``);
* the **holders**: requests in flight per process id.  A killed process's slots are
  dropped by the next process that finds its pid gone, so nothing leaks.

Until the first response of a model arrives (nothing learned yet, no state file),
one request goes alone: its headers tell the limit before a burst can overrun it.

Header names and meanings:

* OpenAI ``x-ratelimit-limit-requests`` / ``-tokens`` (per minute),
  ``x-ratelimit-remaining-requests`` / ``-tokens``, ``x-ratelimit-reset-requests`` /
  ``-tokens`` (a duration such as ``1s`` or ``6m0s``: until the limit is back to full)
  (https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers);
* Anthropic ``anthropic-ratelimit-requests-limit`` / ``-remaining`` / ``-reset`` and the same
  for ``tokens``, ``input-tokens``, ``output-tokens`` (reset: an RFC 3339 time), plus
  ``retry-after`` on a 429; the limits are a token bucket replenished continuously
  (https://docs.anthropic.com/en/api/rate-limits#response-headers).

Both document that a per-minute limit may be enforced over shorter periods (60 RPM as
1 request per second), hence pacing instead of bursts.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

log = logging.getLogger(__name__)

#: pace at this share of the learned limit (room for the jitter of arrival times)
HEADROOM = 0.95
#: multiplicative decrease of window and rate on a 429 episode
DECREASE = 0.75
#: additive increase of the rate per success, as a share of the target (header or configured limit)
INCREASE_SHARE = 0.01
#: without a known limit (no header says it), the first 429 sets the rate to this share of the rate
#: answers came at over the last second (that rate still holds the provider's first burst)
#: ... and later 429s cut the paced rate by this factor (once per episode: the requests sent after the cut)
DECREASE_UNKNOWN = 0.9
#: without a known limit the rate grows by this share per answer while below NEAR of the rate the last
#: 429 came at, and by PROBE_INCREASE above it: about PROBE_INCREASE**-1 answers per probe past it
FAST_INCREASE = 0.02
PROBE_INCREASE = 0.0005
NEAR = 0.95
#: ... and by at most this share a second past it (at r answers a second, PROBE_PER_S / r per answer)
PROBE_PER_S = 0.02
#: the answers the measured rate is taken over (the last second of them)
MEASURE_WINDOW_S = 1.0
MEASURE_ANSWERS = 64
#: the send times of the requests taken before the first 429, kept for the guess made from it: counts
#: per bin of START_BIN_S seconds, the last START_BINS bins
START_BIN_S = 0.05
START_BINS = 200
#: burst of the pacing bucket, in seconds of the rate (at least one request)
BURST_S = 0.1
#: no limit known yet (no header says it, no 429 yet): the rate starts at START_RATE a second and
#: doubles every START_DOUBLING_S, each request spread (a burst of SPREAD_BURST_S).  Against a limit
#: of R a second with a burst of one second's worth, the first 429 comes when the rate is about
#: (1 + t) / (START_DOUBLING_S / ln 2) x R, not much above R: only the requests sent until that 429
#: is back are refused with it (a window doubling every round trip instead would be sending at 5-10 R)
START_RATE = 10.0
START_DOUBLING_S = 0.5
START_WINDOW = 4
SPREAD_BURST_S = 0.01
#: the slowest pace set from a 429 (requests per second; 3 per minute)
MIN_RATE = 0.05
#: a state file older than this is started afresh (limits change, tiers move)
STALE_S = 600.0
#: how often a process blocked on the shared window looks again (its own releases wake it at once)
POLL_S = 0.02
#: how often the slots of processes gone are looked for (a killed process's slots are free after this)
PRUNE_S = 0.25
#: the longest pause taken from one header or 429 (the engine caps Retry-After on its own)
MAX_PAUSE_S = 60.0


# ---------------------------------------------------------------------------------------
# The documented headers
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RateInfo:
    """What one response's headers say about the limits (None: not said)."""

    limit_requests: float | None = None  # per minute
    remaining_requests: float | None = None
    reset_requests_s: float | None = None
    limit_tokens: float | None = None  # per minute
    remaining_tokens: float | None = None
    reset_tokens_s: float | None = None


def _num(headers: Mapping[str, str], name: str) -> float | None:
    v = headers.get(name)
    if v is None:
        return None
    try:
        return float(v)
    except ValueError:
        return None


def rate_info(headers: Mapping[str, str] | None) -> RateInfo | None:
    """The OpenAI or Anthropic rate-limit headers of a response (None when it has none)."""
    if not headers:
        return None
    from .outcomes import _until, parse_duration

    get = headers.get
    if get("x-ratelimit-limit-requests") is not None or get("x-ratelimit-remaining-requests") is not None:
        reset_r, reset_t = get("x-ratelimit-reset-requests"), get("x-ratelimit-reset-tokens")
        return RateInfo(
            _num(headers, "x-ratelimit-limit-requests"),
            _num(headers, "x-ratelimit-remaining-requests"),
            parse_duration(reset_r) if reset_r else None,
            _num(headers, "x-ratelimit-limit-tokens"),
            _num(headers, "x-ratelimit-remaining-tokens"),
            parse_duration(reset_t) if reset_t else None,
        )
    if get("anthropic-ratelimit-requests-limit") is not None or get("anthropic-ratelimit-requests-remaining") is not None:
        reset_r = get("anthropic-ratelimit-requests-reset")
        # tokens: the tightest of the combined, input and output token limits given
        fams = [f for f in ("tokens", "input-tokens", "output-tokens") if get(f"anthropic-ratelimit-{f}-limit") is not None]
        limit_t = min((_num(headers, f"anthropic-ratelimit-{f}-limit") or float("inf")) for f in fams) if fams else None
        rem = [_num(headers, f"anthropic-ratelimit-{f}-remaining") for f in fams]
        rem_t = min((r for r in rem if r is not None), default=None)
        resets = [get(f"anthropic-ratelimit-{f}-reset") for f in fams]
        reset_t = max((_until(r) or 0.0 for r in resets if r), default=None)
        return RateInfo(
            _num(headers, "anthropic-ratelimit-requests-limit"),
            _num(headers, "anthropic-ratelimit-requests-remaining"),
            _until(reset_r) if reset_r else None,
            None if limit_t in (None, float("inf")) else limit_t,
            rem_t,
            reset_t,
        )
    return None


# ---------------------------------------------------------------------------------------
# The controller: pure functions on the state (a JSON-able dict) and a clock reading
# ---------------------------------------------------------------------------------------
def new_state(now: float) -> dict[str, Any]:
    return {
        "window": None,  # None: nothing learned yet (one request probes)
        "slow_start": False,  # no limit known after the first answer: the window grows by one per answer
        "rate": None,  # requests per second paced now (None: unpaced)
        "target": None,  # the limit learned from headers, requests per second
        "tokens_per_request": None,
        "level": 1.0,
        "t": now,
        "cool_until": 0.0,
        "episode_until": 0.0,
        "holders": {},
        "answers": [],  # times of the last answers (the rate they came at, when no limit is known)
        "limited": 0,
        "first_t": None,  # the first request of this state (the start of the model's run)
        "bad_rate": None,  # no limit known: the rate the last 429 came at
        "cut_at": 0.0,  # no limit known: when the rate was last cut
        "first_429": None,  # no limit known: when the first 429 came (the end of the slow start)
        "start_bins": [],  # no limit known: when the requests taken before it were sent
        "first_wait": None,  # no limit known: the wait that 429 asked for
        "srtt": None,  # smoothed time of an answer (seconds)
        "updated": now,
    }


def _target(st: Mapping[str, Any], configured: float | None) -> float | None:
    learned = st.get("target")
    if learned is None:
        return configured
    return learned if configured is None else min(learned, configured)


def acquire(st: dict[str, Any], me: str, now: float, ceiling: int, configured_rate: float | None = None) -> float:
    """Take one slot for process ``me`` (returns 0) or say how long to wait (> 0)."""
    in_flight = sum(st["holders"].values())
    window = 1 if st["window"] is None else max(1, min(ceiling, int(st["window"])))
    if in_flight >= window:
        return POLL_S
    if now < st["cool_until"]:
        return st["cool_until"] - now
    rate = st["rate"]
    target = _target(st, configured_rate)
    if target is not None:
        rate = target * HEADROOM if rate is None else min(rate, target * HEADROOM)
    burst = BURST_S
    if rate is None and target is None and st["window"] is not None:  # no limit known yet: a rate doubling
        rate = START_RATE * 2.0 ** min(40.0, max(0.0, now - _since(st, now)) / START_DOUBLING_S)
        if st.get("srtt"):  # and at least START_WINDOW requests a round trip (a small run is not held back)
            rate = max(rate, min(START_WINDOW, window) / max(st["srtt"], 1e-3))
        burst = SPREAD_BURST_S  # every START_DOUBLING_S, each request a little apart
    if rate is not None:
        cap = max(1.0, rate * burst)
        st["level"] = min(cap, st["level"] + max(0.0, now - st["t"]) * rate)
        st["t"] = now
        if st["level"] < 1.0:
            return (1.0 - st["level"]) / rate
        st["level"] -= 1.0
    st["holders"][me] = st["holders"].get(me, 0) + 1
    if st.get("first_t") is None:
        st["first_t"] = now
    st["updated"] = now
    return 0.0


def _since(st: Mapping[str, Any], now: float) -> float:
    """When the state's first request went (now when none has)."""
    first = st.get("first_t")
    return now if first is None else float(first)


def _count_answer(st: dict[str, Any], now: float) -> None:
    times = st["answers"]
    times.append(round(now, 4))
    cut = now - MEASURE_WINDOW_S
    drop = 0
    while drop < len(times) and times[drop] < cut:
        drop += 1
    if drop or len(times) > MEASURE_ANSWERS:
        del times[: max(drop, len(times) - MEASURE_ANSWERS)]


def _measured_rate(st: Mapping[str, Any], now: float, accepted: int = 0) -> float | None:
    """Answers per second over the last second, or over the last MEASURE_ANSWERS answers when they came
    in less (None: none yet); ``accepted`` more still in flight."""
    times = [t for t in st["answers"] if now - t <= MEASURE_WINDOW_S]
    if not times and not accepted:
        return None
    span = min(MEASURE_WINDOW_S, max(now - _since(st, now), 1e-3))
    if len(times) >= MEASURE_ANSWERS:
        span = max(now - times[0], 1e-3)
    return (len(times) + accepted) / span


def _first_estimate(st: Mapping[str, Any]) -> float | None:
    """The limit guessed from a model's first 429 when nothing says it.

    The provider took the requests sent at the times counted in ``st["start_bins"]`` (``[start of a
    bin of START_BIN_S, requests]``) and refused one sent at
    ``t`` (the answers still coming of requests sent before it count too), and allows the next ``d``
    seconds after the refusal (its wait: Retry-After, or Gemini's ``RetryInfo.retryDelay``, documented
    as the time to wait before retrying).  Both OpenAI and Anthropic document that a per-minute limit
    may be enforced over shorter periods (60 RPM as one request a second), i.e. a token bucket holding
    about one second's worth: from the last time ``x`` it was full, it let through the ``k(x)`` requests
    sent since and one more ``d`` after ``t``, so ``R = (k(x) + 1) / (t + d - x + 1 s)``; since no
    earlier or later ``x`` gives more, the guess is the largest of these over the send times (``k(x) /
    (t - x + 1 s)`` when the 429 says no wait).  A smaller burst makes it low (the rate is probed up
    from it), a larger one high (the next 429s cut it)."""
    bins, t = st.get("start_bins"), st.get("first_429")
    if not bins or t is None:
        return None
    d = st.get("first_wait")
    best, k = 0.0, 0
    for x, n in sorted(bins, reverse=True):  # x: the start of a bin of the send times (a little early: a low guess)
        k += n
        best = max(best, k / (t - x + MEASURE_WINDOW_S) if not d else (k + 1) / (t + d - x + MEASURE_WINDOW_S))
    return best


def release(
    st: dict[str, Any],
    me: str,
    now: float,
    ceiling: int,
    *,
    outcome: str,
    info: RateInfo | None = None,
    retry_after: float | None = None,
    tokens: int | None = None,
    configured_rate: float | None = None,
    started: float | None = None,
) -> None:
    """Give back a slot; learn from the outcome (``ok``, ``limited`` or ``other``) and the headers.

    ``started``: when the request was let go (by this state's clock); a 429 of a request sent before the
    last cut is the rest of that episode, not a sign the cut was too small."""
    held = st["holders"].get(me, 0)
    if held <= 1:
        st["holders"].pop(me, None)
    else:
        st["holders"][me] = held - 1
    if info is not None:
        _learn(st, info, now, tokens)
    known = _target(st, configured_rate) is not None
    if outcome == "ok":
        if started is not None:
            rtt = max(0.0, now - started)
            st["srtt"] = rtt if st.get("srtt") is None else 0.875 * st["srtt"] + 0.125 * rtt
        if not known:  # the rate answers come at is needed only while no limit is known
            _count_answer(st, now)
            first_429 = st.get("first_429")
            if first_429 is None or (started is not None and started <= first_429):
                bins = st.setdefault("start_bins", [])  # taken before the first 429: the start's estimate
                x = round(((now if started is None else started) // START_BIN_S) * START_BIN_S, 3)
                if bins and bins[-1][0] == x:
                    bins[-1][1] += 1
                else:
                    bins.append([x, 1])
                    bins.sort()
                    if len(bins) > START_BINS:
                        del bins[0]
                if first_429 is not None and st.get("cut_at") == first_429 and st["rate"] is not None:
                    est = _first_estimate(st)  # an answer of the start still coming in: the guess grows
                    st["bad_rate"] = est / NEAR  # a guess, not a rate refused: back to it fast
                    st["rate"] = max(st["rate"], est * HEADROOM)  # type: ignore[operator]
        elif st["answers"]:
            st["answers"] = []
        if st["window"] is None:  # the first answer: open at once when a limit is known, else slow start
            st["window"] = float(ceiling) if known else min(float(ceiling), 2.0)
            st["slow_start"] = not known and ceiling > 2
        elif st.get("slow_start"):  # one more per answer: the window doubles every round trip
            st["window"] = min(float(ceiling), st["window"] + 1.0)
            st["slow_start"] = st["window"] < ceiling and not known
            if known:
                st["window"] = float(ceiling)
        else:
            st["window"] = min(float(ceiling), st["window"] + 1.0 / max(1.0, st["window"]))
        if st["rate"] is not None:
            target = _target(st, configured_rate)
            if target is not None:
                st["rate"] = st["rate"] + target * INCREASE_SHARE
                if st["rate"] >= target * HEADROOM:
                    st["rate"] = None  # back at the target: paced by the target alone
            else:  # fast back to near the rate the last 429 came at, then probe past it slowly
                near = st["rate"] < NEAR * float(st.get("bad_rate") or 0.0)
                probe = min(PROBE_INCREASE, PROBE_PER_S / st["rate"])  # per answer, and at most PROBE_PER_S a second
                st["rate"] = st["rate"] * (1.0 + (FAST_INCREASE if near else probe))
    elif outcome == "limited":
        st["limited"] += 1
        st["slow_start"] = False
        if st["window"] is None:  # the first answer is a 429: its headers may tell the limit all the same
            st["window"] = float(ceiling) if known else 1.0
        if known:
            _limited_known(st, now, configured_rate)
        else:
            _limited_unknown(st, now, started, retry_after)
        pause = min(MAX_PAUSE_S, retry_after if retry_after is not None else 1.0)
        if now >= st["episode_until"]:  # the episode lasts the pause and half a second; later 429s do not extend it
            st["episode_until"] = now + pause + 0.5
        st["cool_until"] = max(st["cool_until"], now + pause)
    elif st["window"] is None and info is not None:
        st["window"] = float(ceiling)  # an error answer still told the limits
    st["updated"] = now


def _limited_known(st: dict[str, Any], now: float, configured_rate: float | None) -> None:
    """A 429 with the limit known (headers, or the configured rate): cut window and rate once per episode."""
    if now < st["episode_until"]:  # the rest of a burst of 429s
        return
    st["window"] = max(1.0, st["window"] * DECREASE)
    target = _target(st, configured_rate)
    base = st["rate"] if st["rate"] is not None else target * HEADROOM  # type: ignore[operator]
    st["rate"] = max(MIN_RATE, base * DECREASE)
    st["level"] = min(st["level"], 0.0)


def _limited_unknown(st: dict[str, Any], now: float, started: float | None, wait: float | None) -> None:
    """A 429 with no limit known (no header says it): the rate is learned from the 429s alone.

    The first one ends the slow start: the rate is set from the requests the provider took until then
    (:func:`_first_estimate`).  Later ones, of requests sent after the last cut, cut the paced rate by
    :data:`DECREASE_UNKNOWN` and remember it as the rate the provider refused (``bad_rate``): the rate
    grows back fast to near it and probes past it slowly."""
    in_flight = sum(st["holders"].values())
    if st.get("first_429") is None:
        st["first_429"], st["first_wait"] = now, wait
        est = _first_estimate(st)
        if est is None:  # nothing answered yet: the window and the pause only
            st["first_429"] = None
            return
        st["rate"] = max(MIN_RATE, est * HEADROOM)
        st["bad_rate"] = est / NEAR  # a guess, not a rate refused: back to it fast
    elif st["rate"] is None:
        return
    else:
        if started is not None and started < float(st.get("cut_at") or 0.0):
            return  # sent before the last cut: the same episode
        rate = st["rate"]
        measured = _measured_rate(st, now, in_flight)
        if measured is not None and measured < rate:  # the window, not the rate, held the requests back
            rate = measured
        st["bad_rate"] = rate
        st["rate"] = max(MIN_RATE, rate * DECREASE_UNKNOWN)
        st["start_bins"] = []  # the start's guess is past
        st["window"] = max(1.0, st["window"] * DECREASE)
    st["cut_at"] = now
    st["level"] = min(st["level"], 0.0)
    log.debug("no limit known: a 429 %.3f s in, paced now at %.2f/s (refused at %.2f/s), window %.1f",
              now - _since(st, now), st["rate"], st["bad_rate"], st["window"])  # fmt: skip


def _learn(st: dict[str, Any], info: RateInfo, now: float, tokens: int | None) -> None:
    if tokens:
        tpr = st.get("tokens_per_request")
        st["tokens_per_request"] = float(tokens) if tpr is None else 0.9 * tpr + 0.1 * tokens
    targets = []
    if info.limit_requests:
        targets.append(info.limit_requests / 60.0)
    if info.limit_tokens and st.get("tokens_per_request"):
        targets.append(info.limit_tokens / 60.0 / st["tokens_per_request"])
    if targets:
        st["target"] = min(targets)
    if info.remaining_requests is not None and info.remaining_requests < 1:
        st["level"] = min(st["level"], 0.0)  # the provider's bucket is empty: wait for the next token
    if info.remaining_tokens is not None and info.remaining_tokens <= 0 and info.reset_tokens_s:
        st["cool_until"] = max(st["cool_until"], now + min(MAX_PAUSE_S, info.reset_tokens_s))


# ---------------------------------------------------------------------------------------
# Where the state lives: a locked file (shared by processes) or memory
# ---------------------------------------------------------------------------------------
class MemoryStore:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.state = new_state(clock())

    def update(self, fn: Callable[[dict[str, Any], float], Any]) -> Any:
        return fn(self.state, self.clock())

    def close(self) -> None:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


#: the state's encoder, made once (``json.dumps`` with options builds one per call)
_STATE_JSON = json.JSONEncoder(separators=(",", ":"))


class FileStore:
    """The state in ``path``, read-modify-written under an exclusive ``fcntl`` lock."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        #: the bytes this store last wrote and the state they encode: read back unchanged (no other
        #: process wrote since), the state is taken as it is instead of parsed again
        self._written: tuple[bytes, dict[str, Any]] | None = None
        self.update(lambda st, now: st["holders"].pop(str(os.getpid()), None))  # a reused pid's leftovers

    def update(self, fn: Callable[[dict[str, Any], float], Any]) -> Any:
        import fcntl

        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            now = self.clock()
            # the file's size, read at once (a fixed 1 MiB read allocated and page-faulted a megabyte per
            # call: an update took 28-41 us with it and takes 15-18 us now, measured side by side)
            raw = os.pread(self._fd, os.fstat(self._fd).st_size, 0)
            st: dict[str, Any] | None = None
            written, self._written = self._written, None  # set again once the state is written whole
            if written is not None and raw == written[0]:
                st = written[1]  # what json.loads(raw) gives: this store's own state, as it wrote it
            elif raw:
                try:
                    st = json.loads(raw)
                except ValueError:  # a process killed mid-write: start afresh (only pacing is lost)
                    log.warning("%s: unreadable pacing state, starting afresh", self.path)
            if not isinstance(st, dict) or now - float(st.get("updated", 0)) > STALE_S or float(st.get("updated", 0)) > now + 5:
                holders = st.get("holders", {}) if isinstance(st, dict) else {}
                st = new_state(now)
                st["holders"] = holders
            if now - float(st.get("pruned", 0.0)) >= PRUNE_S:  # drop the slots of processes gone (killed)
                mine = str(os.getpid())
                st["holders"] = {p: n for p, n in st["holders"].items() if p == mine or not p.isdigit() or _alive(int(p))}
                st["pruned"] = now
            result = fn(st, now)
            # padded with spaces (JSON allows them) to the length read: no truncation per call
            data = _STATE_JSON.encode(st).encode().ljust(len(raw))
            if os.pwrite(self._fd, data, 0) == len(data):
                self._written = (data, st)
            return result
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        os.close(self._fd)


def state_path(root: Path, provider: str, model_id: str, endpoint: str | None) -> Path:
    """``<root>/<provider>+<model>+<hash of the endpoint>.json`` (a file name safe for any model id)."""
    safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in f"{provider}+{model_id}")[:120]
    tag = hashlib.sha256((endpoint or "").encode()).hexdigest()[:8]
    return root / f"{safe}+{tag}.json"


# ---------------------------------------------------------------------------------------
# The asyncio side: one per engine run
# ---------------------------------------------------------------------------------------
class TokenBucket:
    """``rate_per_minute`` units per minute, burst capped at ``max(one second's worth, 1 request)``."""

    def __init__(self, rate_per_minute: float, clock: Callable[[], float] = time.monotonic) -> None:
        if rate_per_minute <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate_per_minute / 60.0
        self.capacity = max(self.rate, 1.0)
        self.level = self.capacity
        self._clock = clock
        self._t = clock()

    def wait_time(self, amount: float) -> float:
        now = self._clock()
        self.level = min(self.capacity, self.level + (now - self._t) * self.rate)
        self._t = now
        need = min(amount, self.capacity)  # one request larger than the burst still goes, alone
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def take(self, amount: float) -> None:
        self.level -= min(amount, self.capacity)

    def give_back(self, amount: float) -> None:
        self.level = min(self.capacity, self.level + amount)


class Ticket:
    """One held slot; the caller says how the call went before leaving the slot."""

    __slots__ = ("outcome", "headers", "retry_after", "tokens")

    def __init__(self) -> None:
        self.outcome = "other"
        self.headers: Mapping[str, str] | None = None
        self.retry_after: float | None = None
        self.tokens: int | None = None

    def done(self, outcome: str, headers: Mapping[str, str] | None = None, retry_after: float | None = None,
             tokens: int | None = None) -> None:  # fmt: skip
        self.outcome, self.headers, self.retry_after, self.tokens = outcome, headers, retry_after, tokens


class _NoTurn:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


_no_turn = _NoTurn()


class _Slot:
    """``RateLimiter.slot``'s context: a class, not ``@asynccontextmanager`` (its generator and
    wrapper were a few microseconds of every call)."""

    __slots__ = ("_limiter", "_tokens", "_retry", "_ticket", "_started")

    def __init__(self, limiter: "RateLimiter", tokens: int, retry: bool) -> None:
        self._limiter, self._tokens, self._retry = limiter, tokens, retry

    async def __aenter__(self) -> Ticket:
        self._started = await self._limiter._take(self._tokens, self._retry)
        self._ticket = Ticket()
        return self._ticket

    async def __aexit__(self, *exc: object) -> None:  # the body's error, if any, goes on
        self._limiter._give_back(self._ticket, self._started)


class RateLimiter:
    """The pacing of one engine run (its workers), on a shared or an in-memory state."""

    def __init__(
        self,
        concurrency: int,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        store: MemoryStore | FileStore | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ceiling = max(1, int(concurrency))
        self.configured_rate = requests_per_minute / 60.0 if requests_per_minute else None
        self.store = store if store is not None else MemoryStore()
        self.me = str(os.getpid())
        self.rate_limited = 0
        self._tpm = TokenBucket(tokens_per_minute, clock) if tokens_per_minute else None
        self._turn = asyncio.Lock()  # one worker at a time asks the shared state
        self._released = asyncio.Event()
        #: answers not yet given back to the shared state: the next acquire gives them back under the
        #: same lock (one read-modify-write of the state a call, not two), else a timer POLL_S later
        self._pending: list[Callable[[dict[str, Any]], None]] = []
        self._pending_since = 0.0  # when the oldest of them was added (the event loop's clock)
        self._flush_at: asyncio.TimerHandle | None = None

    def _update(self, fn: Callable[[dict[str, Any], float], Any]) -> Any:
        """``fn`` on the shared state, after the answers pending."""
        pending, self._pending = self._pending, []

        def both(st: dict[str, Any], now: float) -> Any:
            for give_back in pending:
                give_back(st)
            return fn(st, now)

        return self.store.update(both)

    def flush(self) -> None:
        """Give back the answers pending now."""
        if self._pending:
            self._update(lambda st, now: None)

    def slot(self, tokens: int = 0, *, retry: bool = False) -> "_Slot":
        """Hold one request slot of the model's shared window, paced; say how it went on the ticket
        (``async with limiter.slot(...) as ticket``).

        New requests ask the shared state one at a time, in turn; a ``retry`` (its wait over: a 429's
        reset, a back-off) goes past that queue, so that a refused question is sent again as soon as the
        limit allows, not behind every question read since."""
        return _Slot(self, tokens, retry)

    async def _take(self, tokens: int, retry: bool) -> float:
        """Wait for a slot (and the configured token budget); returns when it was taken (store clock)."""
        async with self._turn if not retry else _no_turn:
            while True:
                wait, started = self._update(
                    lambda st, now: (acquire(st, self.me, now, self.ceiling, self.configured_rate), now)
                )
                if wait <= 0:
                    break
                self._released.clear()
                if wait <= POLL_S:  # the window is full: a release here wakes us, one elsewhere is polled
                    try:
                        async with asyncio.timeout(wait):
                            await self._released.wait()
                    except TimeoutError:
                        pass
                else:
                    await asyncio.sleep(wait)
            while self._tpm is not None and tokens:
                wait = self._tpm.wait_time(tokens)
                if wait <= 0:
                    self._tpm.take(tokens)
                    break
                await asyncio.sleep(wait)
        return started

    def _give_back(self, ticket: Ticket, started: float) -> None:
        """Leave the slot: the ticket's outcome goes to the shared state with the next acquire, or
        within POLL_S, or at once for anything but an answer."""
        if ticket.outcome == "limited":
            self.rate_limited += 1
        info, at = rate_info(ticket.headers), self.store.clock()

        def give_back(st: dict[str, Any]) -> None:
            release(st, self.me, at, self.ceiling, outcome=ticket.outcome, info=info, retry_after=ticket.retry_after,
                    tokens=ticket.tokens, configured_rate=self.configured_rate, started=started)  # fmt: skip

        if not self._pending:
            self._pending_since = asyncio.get_running_loop().time()
        self._pending.append(give_back)
        if ticket.outcome != "ok":  # a 429 (its pause) or an error: at once
            self.flush()
        elif self._flush_at is None:  # one timer at a time, not one per call (a timer made and cancelled
            # for every call cost more than the read-modify-write it saved): see _flush_due
            self._flush_at = asyncio.get_running_loop().call_at(self._pending_since + POLL_S, self._flush_due)
        self._released.set()

    def settle(self, estimated: int, actual: int | None) -> None:
        """After a call: correct the configured token bucket by the real usage."""
        if self._tpm is not None and actual is not None:
            self._tpm.give_back(estimated - actual)

    def _flush_due(self) -> None:
        """The timer: give back what has waited POLL_S; what came since the last acquire took the rest
        waits for the next acquire, or for this timer again when its POLL_S is up."""
        self._flush_at = None
        if not self._pending:
            return
        loop = asyncio.get_running_loop()
        if loop.time() >= self._pending_since + POLL_S:
            self.flush()
        else:
            self._flush_at = loop.call_at(self._pending_since + POLL_S, self._flush_due)

    def close(self) -> None:
        if self._flush_at is not None:
            self._flush_at.cancel()
            self._flush_at = None
        self.flush()
        self.store.close()
