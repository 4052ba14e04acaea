"""The tool executor: every backend call goes through here.

It adds, in this order per call: a content-keyed LRU cache (identical calls are served once),
a per-backend rate limit (token bucket), a timeout (the call runs in a worker thread), retries
with exponential backoff and seeded jitter on retryable errors (tenacity), and fallback to the
next backend. When every backend has failed it raises :class:`ToolUnavailableError`, which the
tool layer prints as Tongyi's degradation text. It is thread-safe: the HTTP server calls one
executor from many threads.

Rate limiting is a small token bucket rather than a library: rates are fractional
(``qps=0.5``), waiting must block the calling thread only, and no background thread may run;
pyrate-limiter 4 / limits model integer windows with leak threads or non-blocking hits.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, TypeVar

import tenacity

from sim_web.protocol.errors import BackendError, ToolUnavailableError
from sim_web.protocol.results import Backend, ScholarResult, SearchResult, VisitResult
from wiki_index.errors import ConfigError

log = logging.getLogger(__name__)
T = TypeVar("T")
_MISSING = object()


@dataclass(frozen=True)
class ExecutorConfig:
    """Cache, rate-limit, timeout, retry and fallback settings of a :class:`ToolExecutor`."""

    cache: bool = field(default=True, metadata={"help": "Cache results by content (backend, tool, normalised arguments)."})
    cache_size: int = field(default=10_000, metadata={"help": "LRU cache capacity in entries (one query / URL each)."})
    qps: float | None = field(default=None, metadata={"help": "Per-backend rate limit in calls/s (None: unlimited)."})
    burst: int | None = field(default=None, metadata={"help": "Token-bucket capacity (None: max(1, ceil(qps)))."})
    timeout_s: float | None = field(default=60.0, metadata={
        "help": "Per-attempt timeout; the call runs in a worker thread (None: call inline, no timeout)."})
    max_retries: int = field(default=2, metadata={"help": "Retries per backend after a retryable error or a timeout."})
    backoff_base_s: float = field(default=0.5, metadata={"help": "First backoff; doubles per retry."})
    backoff_max_s: float = field(default=8.0, metadata={"help": "Cap on the exponential part of the backoff."})
    jitter_s: float = field(default=0.25, metadata={"help": "Uniform random extra backoff in [0, jitter_s] (seeded)."})
    seed: int = field(default=0, metadata={"help": "Seed of the jitter RNG (the executor's only randomness)."})
    max_workers: int = field(default=16, metadata={"help": "Worker threads for timed calls (a timed-out call keeps its thread until it returns)."})

    def __post_init__(self) -> None:
        if self.cache_size < 1:
            raise ConfigError(f"ExecutorConfig.cache_size must be >= 1, got {self.cache_size}; use cache=False to disable caching")
        if self.qps is not None and not (self.qps > 0 and math.isfinite(self.qps)):
            raise ConfigError(f"ExecutorConfig.qps must be a positive number or None (unlimited), got {self.qps}")
        if self.burst is not None and self.burst < 1:
            raise ConfigError(f"ExecutorConfig.burst must be >= 1 or None, got {self.burst}")
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ConfigError(f"ExecutorConfig.timeout_s must be > 0 or None (no timeout), got {self.timeout_s}")
        if self.max_retries < 0:
            raise ConfigError(f"ExecutorConfig.max_retries must be >= 0, got {self.max_retries}")
        if min(self.backoff_base_s, self.backoff_max_s, self.jitter_s) < 0:
            raise ConfigError("ExecutorConfig.backoff_base_s, backoff_max_s and jitter_s must be >= 0, got "
                              f"{self.backoff_base_s}, {self.backoff_max_s}, {self.jitter_s}")
        if self.max_workers < 1:
            raise ConfigError(f"ExecutorConfig.max_workers must be >= 1, got {self.max_workers}")


class LRUCache:
    """A thread-safe least-recently-used map; shareable between executors of one process.

    Args:
        maxsize: Capacity in entries.
    """

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value of ``key`` (now most recently used), or ``default``."""
        with self._lock:
            if key not in self._data:
                return default
            self._data.move_to_end(key)
            return self._data[key]

    def put(self, key: Hashable, value: Any) -> None:
        """Store ``value``, evicting the least recently used entry when full."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


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

    def __init__(self, rate: float, capacity: int, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
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


class ExecutorStats:
    """Counters of one episode (reset them with :meth:`reset`; the cache is not affected)."""

    _COUNTERS = ("calls", "cache_hits", "retries", "timeouts", "failures", "fallbacks", "unavailable")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Zero every counter."""
        with self._lock:
            self._counts = dict.fromkeys(self._COUNTERS, 0)
            self._rate_wait_s = 0.0
            self._tools: dict[str, list[float]] = {}  # tool -> [calls, cache_hits, total_ms, max_ms]

    def add(self, counter: str, n: int = 1) -> None:
        """Increment one of ``calls, cache_hits, retries, timeouts, failures, fallbacks, unavailable``."""
        with self._lock:
            self._counts[counter] += n

    def add_rate_wait(self, seconds: float) -> None:
        """Account time spent waiting for the rate limiter."""
        with self._lock:
            self._rate_wait_s += seconds

    def record(self, tool: str, ms: float, cache_hit: bool) -> None:
        """Account one finished executor call of ``tool`` (successful or not)."""
        with self._lock:
            self._counts["calls"] += 1
            self._counts["cache_hits"] += int(cache_hit)
            t = self._tools.setdefault(tool, [0, 0, 0.0, 0.0])
            t[0] += 1
            t[1] += int(cache_hit)
            t[2] += ms
            t[3] = max(t[3], ms)

    def counts(self) -> dict[str, Any]:
        """The deterministic part: counters and per-tool calls / cache hits (no timings)."""
        with self._lock:
            out: dict[str, Any] = dict(self._counts)
            out["tools"] = {name: {"calls": int(c), "cache_hits": int(h)} for name, (c, h, _, _) in sorted(self._tools.items())}
            return out

    def timings(self) -> dict[str, Any]:
        """The wall-clock part: rate-limit waiting and per-tool latency (ms)."""
        with self._lock:
            return {"rate_limit_wait_ms": round(self._rate_wait_s * 1000, 3),
                    "tools": {name: {"total_ms": round(tot, 3), "mean_ms": round(tot / c, 3) if c else 0.0, "max_ms": round(mx, 3)}
                              for name, (c, _, tot, mx) in sorted(self._tools.items())}}

    def snapshot(self) -> dict[str, Any]:
        """Counters and timings together, as a JSON-ready dict (per-tool entries merged)."""
        out, t = self.counts(), self.timings()
        out["rate_limit_wait_ms"] = t["rate_limit_wait_ms"]
        for name, d in out["tools"].items():
            d.update(t["tools"][name])
        return out


def _retryable(e: BaseException) -> bool:
    return isinstance(e, BackendError) and e.retryable


def _check_list(value: Any, kind: type, who: str) -> tuple[Any, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, kind) for v in value):
        raise BackendError(f"{who} returned {type(value).__name__}, expected list[{kind.__name__}]", retryable=False)
    return tuple(value)


class ToolExecutor:
    """Runs backend calls with caching, rate limiting, timeouts, retries and fallback.

    Args:
        backends: Backends in fallback order (names must be distinct: they key the cache).
        config: Executor settings.
        cache: A cache to share with other executors (default: a private one when
            ``config.cache``). Keys hold the backend *name*, so share a cache only between
            executors whose same-named backends serve the same content (e.g. the same index).

    Raises:
        ConfigError: With no backend or duplicate backend names.
    """

    def __init__(self, backends: Sequence[Backend], config: ExecutorConfig | None = None, *,
                 cache: LRUCache | None = None) -> None:
        cfg = config or ExecutorConfig()
        if not backends:
            raise ConfigError("ToolExecutor needs at least one backend, got none; pass e.g. [SimBackend(index)]")
        names = [b.name for b in backends]
        if len(set(names)) != len(names):
            raise ConfigError(f"ToolExecutor backends need distinct names (they key the cache), got {names}")
        self.backends = list(backends)
        self.config = cfg
        self.cache = (cache if cache is not None else LRUCache(cfg.cache_size)) if cfg.cache else None
        self.stats = ExecutorStats()
        capacity = cfg.burst or max(1, math.ceil(cfg.qps or 1))
        self._buckets = {n: TokenBucket(cfg.qps, capacity) for n in names} if cfg.qps else {}
        self._rng = random.Random(cfg.seed)
        self._rng_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    # -- public API -------------------------------------------------------------------------

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        """Web search through the first backend that answers.

        Raises:
            ToolUnavailableError: When every backend failed.
        """
        q, k = " ".join(query.split()), _check_k(k)
        return list(self._run("search", (q, k), q, lambda b: _check_list(b.search(q, k), SearchResult, f"{b.name}.search")))

    def scholar(self, query: str, k: int = 10) -> list[ScholarResult]:
        """Scholar search through the first backend that answers.

        Raises:
            ToolUnavailableError: When every backend failed.
        """
        q, k = " ".join(query.split()), _check_k(k)
        return list(self._run("scholar", (q, k), q, lambda b: _check_list(b.scholar(q, k), ScholarResult, f"{b.name}.scholar")))

    def visit(self, url: str, goal: str) -> VisitResult:
        """Visit a page through the first backend that answers (``ok=False`` is an answer).

        Raises:
            ToolUnavailableError: When every backend failed.
        """
        u, g = url.strip(), " ".join(goal.split())

        def call(b: Backend) -> VisitResult:
            r = b.visit(u, g)
            if not isinstance(r, VisitResult):
                raise BackendError(f"{b.name}.visit returned {type(r).__name__}, expected VisitResult", retryable=False)
            return r

        return self._run("visit", (u, g), u, call)

    def close(self) -> None:
        """Stop the worker threads (calls still running are abandoned)."""
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None

    def __enter__(self) -> ToolExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------

    def _run(self, tool: str, args: tuple[Any, ...], target: str, call: Callable[[Backend], T]) -> T:
        t0 = time.perf_counter()
        hit = False
        try:
            value, hit = self._first_success(tool, args, target, call)
            return value
        finally:
            self.stats.record(tool, (time.perf_counter() - t0) * 1000, hit)

    def _first_success(self, tool: str, args: tuple[Any, ...], target: str, call: Callable[[Backend], T]) -> tuple[T, bool]:
        if self.cache is not None:  # any backend's answer counts, so an outage does not re-pay retries
            for backend in self.backends:
                cached = self.cache.get((backend.name, tool, args), _MISSING)
                if cached is not _MISSING:
                    return cached, True
        causes: list[str] = []
        for i, backend in enumerate(self.backends):
            if i:
                self.stats.add("fallbacks")
            try:
                value = self._with_retries(backend, call)
            except BackendError as e:
                causes.append(f"{backend.name}: {e}")
                log.warning("%s %r failed on backend %s: %s", tool, target, backend.name, e)
            except Exception as e:  # a backend bug must not kill a rollout: log it loudly, fall back
                causes.append(f"{backend.name}: {type(e).__name__}: {e}")
                log.error("%s %r raised an unexpected error on backend %s", tool, target, backend.name, exc_info=True)
            else:
                if self.cache is not None:
                    self.cache.put((backend.name, tool, args), value)
                return value, False
            self.stats.add("failures")
        self.stats.add("unavailable")
        raise ToolUnavailableError(tool, target, causes)

    def backoff_s(self, attempt: int) -> float:
        """The sleep before retry number ``attempt`` (1-based): capped exponential plus seeded jitter.

        ``min(backoff_max_s, backoff_base_s * 2 ** (attempt - 1)) + uniform(0, jitter_s)``, the
        jitter drawn from the executor's own ``random.Random(config.seed)``.
        """
        cfg = self.config
        base = min(cfg.backoff_max_s, cfg.backoff_base_s * 2 ** (attempt - 1))
        with self._rng_lock:
            return base + self._rng.uniform(0.0, cfg.jitter_s)

    def _with_retries(self, backend: Backend, call: Callable[[Backend], T]) -> T:
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.config.max_retries + 1),
            wait=lambda state: self.backoff_s(state.attempt_number),
            retry=tenacity.retry_if_exception(_retryable),
            before_sleep=lambda _state: self.stats.add("retries"),
            reraise=True,
        )
        return retrying(self._attempt, backend, call)

    def _attempt(self, backend: Backend, call: Callable[[Backend], T]) -> T:
        bucket = self._buckets.get(backend.name)
        if bucket is not None:
            waited = bucket.acquire()
            if waited:
                self.stats.add_rate_wait(waited)
        future = None
        try:
            if self.config.timeout_s is None:
                return call(backend)
            future = self._workers().submit(call, backend)
            return future.result(timeout=self.config.timeout_s)
        except (FutureTimeout, TimeoutError) as e:  # ours, or the backend's own (e.g. a socket timeout)
            if future is not None and not future.done():
                future.cancel()
                reason = f"did not answer within {self.config.timeout_s:g} s"
            else:
                reason = f"timed out: {e}"
            self.stats.add("timeouts")
            raise BackendError(f"{backend.name} {reason}", retryable=True) from None

    def _workers(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.config.max_workers, thread_name_prefix="sim-web-tool")
            return self._pool


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int (results wanted), got {k!r}")
    return k
