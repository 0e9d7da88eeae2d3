"""Client-side rate limiting with adaptive back-off (asyncio).

:class:`RateLimiter` combines

* two token buckets: requests per minute and (estimated) tokens per minute,
  each holding at most one second's worth of budget so that requests are
  spread out instead of sent in bursts;
* a concurrency window between 1 and the configured concurrency;
* adaptive back-off: a 429 halves the window and the bucket rates (at most once
  per cool-down) and pauses every new request until ``Retry-After`` has passed;
  each success then grows them back (additive increase).
"""

from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from typing import AsyncIterator, Callable

MIN_FACTOR = 1 / 16
RECOVERY_STEP = 1 / 32


class TokenBucket:
    """``rate_per_minute`` units per minute, burst capped at ``max(one second's worth, 1 request)``."""

    def __init__(self, rate_per_minute: float, clock: Callable[[], float] = time.monotonic) -> None:
        if rate_per_minute <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate_per_minute / 60.0  # per second at factor 1
        self.capacity = max(self.rate, 1.0)
        self.level = self.capacity
        self._clock = clock
        self._t = clock()

    def _refill(self, factor: float) -> None:
        now = self._clock()
        self.level = min(self.capacity, self.level + (now - self._t) * self.rate * factor)
        self._t = now

    def wait_time(self, amount: float, factor: float) -> float:
        """Seconds until ``amount`` is available (0 when it is now)."""
        self._refill(factor)
        need = min(amount, self.capacity)  # one request larger than the burst still goes, alone
        if self.level >= need:
            return 0.0
        return (need - self.level) / (self.rate * factor)

    def take(self, amount: float) -> None:
        self.level -= min(amount, self.capacity)

    def give_back(self, amount: float) -> None:
        """Correct an estimate (negative: the call used more than estimated)."""
        self.level = min(self.capacity, self.level + amount)


class RateLimiter:
    """Shared by all workers of one model/split run."""

    def __init__(
        self,
        concurrency: int,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_window = max(1, int(concurrency))
        self.window = float(self.max_window)
        self.factor = 1.0
        self.in_flight = 0
        self.cooldown_until = 0.0
        self.rate_limited = 0
        self._clock = clock
        self._rpm = TokenBucket(requests_per_minute, clock) if requests_per_minute else None
        self._tpm = TokenBucket(tokens_per_minute, clock) if tokens_per_minute else None
        self._gate = asyncio.Lock()
        self._slot_freed = asyncio.Condition()

    @asynccontextmanager
    async def slot(self, tokens: int = 0) -> AsyncIterator[None]:
        """Hold one request slot: waits for the window, the cool-down and both buckets."""
        async with self._slot_freed:
            await self._slot_freed.wait_for(lambda: self.in_flight < int(self.window))
            self.in_flight += 1
        try:
            await self._pass_gate(tokens)
            yield
        finally:
            async with self._slot_freed:
                self.in_flight -= 1
                self._slot_freed.notify_all()

    async def _pass_gate(self, tokens: int) -> None:
        if self._rpm is None and self._tpm is None and self.cooldown_until <= self._clock():
            return
        async with self._gate:  # FIFO: one waiter at a time consumes budget
            while True:
                wait = self.cooldown_until - self._clock()
                if self._rpm is not None:
                    wait = max(wait, self._rpm.wait_time(1, self.factor))
                if self._tpm is not None and tokens:
                    wait = max(wait, self._tpm.wait_time(tokens, self.factor))
                if wait <= 0:
                    break
                await asyncio.sleep(wait)
            if self._rpm is not None:
                self._rpm.take(1)
            if self._tpm is not None and tokens:
                self._tpm.take(tokens)

    def settle(self, estimated: int, actual: int | None) -> None:
        """After a call: correct the token bucket by the real usage."""
        if self._tpm is not None and actual is not None:
            self._tpm.give_back(estimated - actual)

    def on_rate_limited(self, retry_after: float | None) -> None:
        """A 429: pause new requests and shrink window and rates (once per cool-down)."""
        now = self._clock()
        self.rate_limited += 1
        pause = retry_after if retry_after is not None else 1.0
        if now >= self.cooldown_until:  # a new episode, not the rest of a burst of 429s
            self.window = max(1.0, self.window / 2)
            self.factor = max(MIN_FACTOR, self.factor / 2)
        self.cooldown_until = max(self.cooldown_until, now + pause)

    def on_success(self) -> None:
        """Additive increase back towards the configured limits."""
        if self.window < self.max_window:
            self.window = min(float(self.max_window), self.window + 1.0 / self.window)
            if int(self.window) > self.in_flight:
                self._wake()
        if self.factor < 1.0:
            self.factor = min(1.0, self.factor + RECOVERY_STEP)

    def _wake(self) -> None:
        async def notify() -> None:
            async with self._slot_freed:
                self._slot_freed.notify_all()

        try:
            asyncio.get_running_loop().create_task(notify())
        except RuntimeError:  # no loop: nobody waits
            pass
