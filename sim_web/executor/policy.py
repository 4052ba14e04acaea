"""Per-backend policies: rate limit (token bucket), timeout, retries and backoff, circuit breaker, cache TTL.

Rate limiting is a small token bucket rather than a library: rates are fractional (``qps=0.5``),
waiting must block the calling thread only, and no background thread may run; pyrate-limiter 4 /
limits model integer windows with leak threads or non-blocking hits.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from simweb_core.errors import ConfigError
from simweb_core.fields import help_field


@dataclass(frozen=True)
class BackendPolicy:
    """How the executor treats one backend (one upstream): pace, patience, retries, breaker, cache TTL."""

    qps: float | None = help_field(None, "Rate limit in calls/s to this backend (None: unlimited).")
    burst: int | None = help_field(None, "Token-bucket capacity (None: max(1, ceil(qps))).")
    timeout_s: float | None = help_field(
        60.0, "Per-attempt timeout; the call runs in a worker thread (None: call inline, no timeout)."
    )
    max_retries: int = help_field(2, "Retries after a retryable error (timeout, 429, 5xx).")
    backoff_base_s: float = help_field(0.5, "First backoff; doubles per retry.")
    backoff_max_s: float = help_field(8.0, "Cap on the exponential part of the backoff.")
    jitter_s: float = help_field(0.25, "Uniform random extra backoff in [0, jitter_s] (seeded).")
    max_retry_after_s: float = help_field(
        60.0, "A Retry-After longer than this is not waited for: the call falls back at once."
    )
    breaker_failures: int | None = help_field(5, "Consecutive failed calls that open the circuit (None: no breaker).")
    breaker_reset_s: float = help_field(
        30.0, "Seconds an open circuit skips the backend before one probe call is let through."
    )
    cache_ttl_s: float | None = help_field(
        None, "Lifetime of this backend's results in the persistent cache (None: forever)."
    )

    def __post_init__(self) -> None:
        if self.qps is not None and not (self.qps > 0 and math.isfinite(self.qps)):
            raise ConfigError(f"qps must be a positive number or None (unlimited), got {self.qps}")
        if self.burst is not None and self.burst < 1:
            raise ConfigError(f"burst must be >= 1 or None, got {self.burst}")
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ConfigError(f"timeout_s must be > 0 or None (no timeout), got {self.timeout_s}")
        if self.max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, got {self.max_retries}")
        if min(self.backoff_base_s, self.backoff_max_s, self.jitter_s, self.max_retry_after_s) < 0:
            raise ConfigError(
                "backoff_base_s, backoff_max_s, jitter_s and max_retry_after_s must be >= 0, got "
                f"{self.backoff_base_s}, {self.backoff_max_s}, {self.jitter_s}, {self.max_retry_after_s}"
            )
        if self.breaker_failures is not None and self.breaker_failures < 1:
            raise ConfigError(f"breaker_failures must be >= 1 or None (no breaker), got {self.breaker_failures}")
        if not self.breaker_reset_s > 0:
            raise ConfigError(f"breaker_reset_s must be > 0, got {self.breaker_reset_s}")
        if self.cache_ttl_s is not None and not self.cache_ttl_s > 0:
            raise ConfigError(f"cache_ttl_s must be > 0 or None (forever), got {self.cache_ttl_s}")


class TokenBucket:
    """A blocking, thread-safe token bucket: ``rate`` tokens per second, at most ``capacity`` stored.

    Each :meth:`acquire` reserves one token; when none is left the caller sleeps until its
    reservation comes due, so concurrent callers are served in arrival order at ``rate``.

    Args:
        rate: Tokens per second.
        capacity: Burst size.
        clock: Monotonic clock (injectable for tests).
        sleep: Sleep function (injectable for tests).
    """

    def __init__(
        self,
        rate: float,
        capacity: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.rate, self.capacity = rate, capacity
        self._clock, self._sleep = clock, sleep
        self._tokens = float(capacity)
        self._last = clock()
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Take one token, sleeping as long as needed; returns the seconds waited."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
            self._last = now
            self._tokens -= 1.0
            wait = 0.0 if self._tokens >= 0 else -self._tokens / self.rate
        if wait > 0:
            self._sleep(wait)
        return wait


class CircuitBreaker:
    """Closed -> open after ``failures`` consecutive failed calls (or one that says every call would fail);
    open for ``reset_s``, then half-open: one probe call goes through, and its outcome closes or reopens it.

    Args:
        failures: Consecutive failures that open the circuit.
        reset_s: How long it stays open.
        clock: Monotonic clock (injectable for tests).
    """

    def __init__(self, failures: int, reset_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.failures, self.reset_s, self._clock = failures, reset_s, clock
        self._count = 0
        self._open_until: float | None = None
        self._probing = False
        self._lock = threading.Lock()

    @property
    def state(self) -> str:
        """``"closed"``, ``"open"`` or ``"half-open"``."""
        with self._lock:
            if self._open_until is None:
                return "closed"
            return "open" if self._clock() < self._open_until else "half-open"

    def allow(self) -> bool:
        """Whether a call may go to the backend now (in half-open state, only the first caller)."""
        with self._lock:
            if self._open_until is None:
                return True
            if self._clock() < self._open_until or self._probing:
                return False
            self._probing = True
            return True

    def success(self) -> None:
        """A call succeeded: close the circuit."""
        with self._lock:
            self._count, self._open_until, self._probing = 0, None, False

    def failure(self, trip: bool = False) -> bool:
        """A call failed; ``trip`` opens the circuit at once. Returns whether it (re)opened."""
        with self._lock:
            self._count += 1
            if trip or self._probing or self._count >= self.failures:
                self._open_until, self._probing = self._clock() + self.reset_s, False
                return True
            return False
