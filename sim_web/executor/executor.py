"""The tool executor: every backend call goes through here.

Per call, in this order: a content-keyed cache (in-process LRU, plus an optional persistent SQLite
store shared across processes for backends that name a ``cache_namespace``), then the backends of
the tool's fallback chain (those whose ``tools`` include it, in the order given), each under its
:class:`~sim_web.executor.policy.BackendPolicy`: circuit breaker, rate limit (token bucket),
timeout (the call runs in a worker thread; a backend that declares ``inline = True``, such as the
deterministic in-process sim backend, runs in the calling thread unless ``config.policies`` names it),
retries with exponential backoff and seeded jitter on
retryable errors only (timeouts, 429 honouring ``Retry-After``, 5xx). When every backend has failed
it raises :class:`ToolUnavailableError`, which the tool layer prints as Tongyi's degradation text.
An error marked ``fatal`` (a request missing from a replayed recording) is raised as it is, with no
fallback: another backend's answer would be different data. A persistent row that does not decode
(cut, or of an older schema) is a miss, counted as the event ``cache.bad_rows`` and rewritten.
It is thread-safe: the HTTP server calls one executor from many threads, and concurrent identical
calls (a GRPO group's first query) reach the backends once when a cache is on. Clock and sleep are
injectable, so backoff, ``Retry-After`` and the breaker are tested without waiting.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

import tenacity

from sim_web.executor.cache import CacheRowError, LRUCache, SqliteCache, decode_result, encode_result
from sim_web.executor.checks import check_k, check_list
from sim_web.executor.config import ExecutorConfig
from sim_web.executor.policy import CircuitBreaker, TokenBucket
from sim_web.executor.stats import ExecutorStats
from sim_web.protocol.errors import BackendError, ToolUnavailableError
from sim_web.protocol.results import Backend, ScholarResult, SearchResult, VisitResult
from simweb_core.errors import ConfigError

log = logging.getLogger(__name__)
T = TypeVar("T")
_MISSING = object()


class ToolExecutor:
    """Runs backend calls with caching, circuit breaking, rate limiting, timeouts, retries and fallback.

    Args:
        backends: Backends in fallback order (names must be distinct: they key the cache and the
            policies). A backend with a ``tools`` attribute (e.g. ``{"search", "scholar"}``) is only
            asked for those tools; one with ``bind_events`` reports its own events to the stats; one
            with ``inline = True`` (in-process, never blocks on I/O) is called without a timeout thread,
            unless ``config.policies`` has an entry for it.
        config: Cache settings and policies.
        cache: An in-process cache to share with other executors (default: a private one when
            ``config.cache``). Keys hold the backend *name*, so share a cache only between
            executors whose same-named backends serve the same content (e.g. the same index).
        persistent: A persistent store to use instead of opening ``config.cache_dir``.
        clock: Monotonic clock for rate limits and breakers (injectable for tests).
        sleep: Sleep for backoff and rate limits (injectable for tests).

    Raises:
        ConfigError: With no backend or duplicate backend names.
    """

    def __init__(
        self,
        backends: Sequence[Backend],
        config: ExecutorConfig | None = None,
        *,
        cache: LRUCache | None = None,
        persistent: SqliteCache | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        cfg = config or ExecutorConfig()
        if not backends:
            raise ConfigError("ToolExecutor needs at least one backend, got none; pass e.g. [SimBackend(index)]")
        names = [b.name for b in backends]
        if len(set(names)) != len(names):
            raise ConfigError(f"ToolExecutor backends need distinct names (they key the cache), got {names}")
        self.backends = list(backends)
        self.config = cfg
        self.cache = (cache if cache is not None else LRUCache(cfg.cache_size)) if cfg.cache else None
        if persistent is None and cfg.cache and cfg.cache_dir:
            persistent = SqliteCache(f"{cfg.cache_dir}/results.sqlite")
        self.persistent = persistent if cfg.cache else None
        self.stats = ExecutorStats()
        self._sleep = sleep
        self.policies = {n: cfg.policy_for(n) for n in names}
        self._timeouts = {
            b.name: None
            if getattr(b, "inline", False) and b.name not in cfg.policies
            else self.policies[b.name].timeout_s
            for b in self.backends
        }
        self._buckets = {
            n: TokenBucket(p.qps, p.burst or max(1, math.ceil(p.qps)), clock=clock, sleep=sleep)
            for n, p in self.policies.items()
            if p.qps
        }
        self.breakers = {
            n: CircuitBreaker(p.breaker_failures, p.breaker_reset_s, clock=clock)
            for n, p in self.policies.items()
            if p.breaker_failures
        }
        for b in self.backends:
            bind = getattr(b, "bind_events", None)
            if callable(bind):
                bind(self.stats.event)
        self._rng = random.Random(cfg.seed)
        self._rng_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._in_flight: dict[tuple[str, tuple[Any, ...]], threading.Event] = {}  # single flight per (tool, args)
        self._flight_lock = threading.Lock()

    # -- public API -------------------------------------------------------------------------

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        """Web search through the first backend that answers.

        Raises:
            ToolUnavailableError: When every backend failed.
        """
        q, k = " ".join(query.split()), check_k(k)
        return list(
            self._run("search", (q, k), q, lambda b: check_list(b.search(q, k), SearchResult, f"{b.name}.search"))
        )

    def scholar(self, query: str, k: int = 10) -> list[ScholarResult]:
        """Scholar search through the first backend that answers.

        Raises:
            ToolUnavailableError: When every backend failed.
        """
        q, k = " ".join(query.split()), check_k(k)
        return list(
            self._run("scholar", (q, k), q, lambda b: check_list(b.scholar(q, k), ScholarResult, f"{b.name}.scholar"))
        )

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

    @property
    def inline(self) -> bool:
        """Whether every call runs in the calling thread and never waits on I/O or a rate limit: all backends
        are ``inline`` with no policy of their own (no timeout thread is started for them)."""
        return all(t is None for t in self._timeouts.values()) and not self._buckets

    def chain(self, tool: str) -> list[Backend]:
        """The backends asked for ``tool``, in fallback order."""
        return [b for b in self.backends if tool in getattr(b, "tools", (tool,))]

    def close(self, wait_s: float = 0.0) -> None:
        """Stop the worker threads (calls still running are abandoned).

        Args:
            wait_s: How long to wait for the idle threads to exit (a thread running an abandoned call
                exits when that call returns).
        """
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is None:
            return
        pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + wait_s
        for thread in list(getattr(pool, "_threads", ())):  # the pool's threads: the stdlib has no public accessor
            thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> ToolExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------

    def _run(self, tool: str, args: tuple[Any, ...], target: str, call: Callable[[Backend], T]) -> T:
        t0 = time.perf_counter()
        outcome, hit, by = "failures", False, None
        try:
            value, outcome, hit, by = self._first_success(tool, args, target, call)
            return value
        finally:
            self.stats.record(tool, (time.perf_counter() - t0) * 1000, outcome, hit, by)

    def _persist_key(self, backend: Backend, tool: str, args: tuple[Any, ...]) -> str | None:
        ns = getattr(backend, "cache_namespace", None)
        if self.persistent is None or not ns:
            return None
        return hashlib.sha256(json.dumps(["result", ns, tool, list(args)], ensure_ascii=False).encode()).hexdigest()

    def _cached(self, chain: list[Backend], tool: str, args: tuple[Any, ...]) -> Any:
        """Any backend's cached answer (so an outage does not re-pay retries), in memory first, then on disk."""
        for backend in chain:
            if self.cache is not None:
                value = self.cache.get((backend.name, tool, args), _MISSING)
                if value is not _MISSING:
                    return value
            key = self._persist_key(backend, tool, args)
            text = self.persistent.get(key, self.policies[backend.name].cache_ttl_s) if key else None
            if text is not None:
                try:
                    value = decode_result(tool, text)
                except CacheRowError as e:  # cut, or of an older schema: a miss, which the answer rewrites
                    self.stats.event("cache.bad_rows")
                    log.warning(
                        "persistent cache %s: a %s row of backend %s is read as a miss: %s",
                        self.persistent.path,
                        tool,
                        backend.name,
                        e,
                    )
                    continue
                if self.cache is not None:
                    self.cache.put((backend.name, tool, args), value)
                return value
        return _MISSING

    def _store(self, backend: Backend, tool: str, args: tuple[Any, ...], value: Any) -> None:
        if self.cache is not None:
            self.cache.put((backend.name, tool, args), value)
        key = self._persist_key(backend, tool, args)
        if key:
            self.persistent.put(key, encode_result(tool, value))

    def _first_success(
        self, tool: str, args: tuple[Any, ...], target: str, call: Callable[[Backend], T]
    ) -> tuple[T, str, bool, str | None]:
        """A cached answer, else the chain's; concurrent identical calls ask the chain once (single flight):
        the others wait for the first and take its cached answer, or ask themselves when it failed."""
        chain = self.chain(tool)
        cached = self._cached(chain, tool, args)
        if cached is not _MISSING:
            return cached, "successes", True, None
        if self.cache is None and self.persistent is None:
            return self._ask_chain(chain, tool, args, target, call)
        key = (tool, args)
        with self._flight_lock:
            leader = self._in_flight.get(key)
            if leader is None:
                self._in_flight[key] = done = threading.Event()
        if leader is not None:
            leader.wait()
            cached = self._cached(chain, tool, args)
            if cached is not _MISSING:
                return cached, "successes", True, None
            return self._ask_chain(chain, tool, args, target, call)
        try:
            return self._ask_chain(chain, tool, args, target, call)
        finally:
            with self._flight_lock:
                del self._in_flight[key]
            done.set()

    def _ask_chain(
        self, chain: list[Backend], tool: str, args: tuple[Any, ...], target: str, call: Callable[[Backend], T]
    ) -> tuple[T, str, bool, str | None]:
        causes: list[str] = []
        for i, backend in enumerate(chain):
            breaker = self.breakers.get(backend.name)
            if breaker is not None and not breaker.allow():
                self.stats.add("short_circuits", backend=backend.name)
                causes.append(f"{backend.name}: circuit open after repeated failures (skipped)")
                continue
            try:
                value = self._with_retries(backend, call)
            except Exception as e:  # a backend bug must not kill a rollout either: log it, fall back
                self._failed(backend, tool, target, e, causes)
                if getattr(e, "fatal", False):  # e.g. a replay miss: a fallback's answer would be different data
                    raise
                continue
            if breaker is not None:
                breaker.success()
            self._store(backend, tool, args, value)
            return value, "fallbacks" if i else "successes", False, backend.name
        if not chain:
            causes.append(f"no backend serves {tool}")
        raise ToolUnavailableError(tool, target, causes)

    def _failed(self, backend: Backend, tool: str, target: str, e: Exception, causes: list[str]) -> None:
        self.stats.add("backend_errors", backend=backend.name)
        if isinstance(e, BackendError):
            causes.append(f"{backend.name}: {e}")
            log.warning("%s %r failed on backend %s: %s", tool, target, backend.name, e)
        else:
            causes.append(f"{backend.name}: {type(e).__name__}: {e}")
            log.error("%s %r raised an unexpected error on backend %s", tool, target, backend.name, exc_info=e)
        breaker = self.breakers.get(backend.name)
        if getattr(e, "page_error", False):  # one page failed (unreadable, blocked): the upstream is fine
            if breaker is not None:
                breaker.success()
        elif breaker is not None and breaker.failure(trip=bool(getattr(e, "opens_circuit", False))):
            log.error("circuit of backend %s opened for %g s after: %s", backend.name, breaker.reset_s, e)

    def backoff_s(self, attempt: int, backend: str | None = None) -> float:
        """The sleep before retry number ``attempt`` (1-based): capped exponential plus seeded jitter.

        ``min(backoff_max_s, backoff_base_s * 2 ** (attempt - 1)) + uniform(0, jitter_s)`` with the
        backend's policy, the jitter drawn from the executor's own ``random.Random(config.seed)``.
        """
        p = self.policies.get(backend) if backend else None
        p = p or self.config.default_policy()
        base = min(p.backoff_max_s, p.backoff_base_s * 2 ** (attempt - 1))
        with self._rng_lock:
            return base + self._rng.uniform(0.0, p.jitter_s)

    def _wait(self, backend: str, attempt: int, e: BaseException | None) -> float:
        """Backoff before retry number ``attempt``, or the upstream's ``Retry-After`` when longer."""
        wait = self.backoff_s(attempt, backend)
        retry_after = getattr(e, "retry_after_s", None)
        return max(wait, retry_after) if retry_after is not None else wait

    def _retryable(self, backend: str, e: BaseException) -> bool:
        if not (isinstance(e, BackendError) and e.retryable):
            return False
        retry_after = getattr(e, "retry_after_s", None)
        return retry_after is None or retry_after <= self.policies[backend].max_retry_after_s

    def _with_retries(self, backend: Backend, call: Callable[[Backend], T]) -> T:
        """The first attempt runs bare (the common case pays nothing for retry machinery); after a
        retryable failure, tenacity runs the retries with backoff."""
        name = backend.name
        try:
            return self._attempt(backend, call)
        except Exception as e:
            if self.policies[name].max_retries < 1 or not self._retryable(name, e):
                raise
            self.stats.add("retries", backend=name)
            self._sleep(self._wait(name, 1, e))
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.policies[name].max_retries),
            wait=lambda state: self._wait(
                name, state.attempt_number + 1, state.outcome.exception() if state.outcome else None
            ),
            retry=tenacity.retry_if_exception(lambda e: self._retryable(name, e)),
            before_sleep=lambda _state: self.stats.add("retries", backend=name),
            sleep=self._sleep,
            reraise=True,
        )
        return retrying(self._attempt, backend, call)

    def _attempt(self, backend: Backend, call: Callable[[Backend], T]) -> T:
        bucket = self._buckets.get(backend.name)
        if bucket is not None:
            waited = bucket.acquire()
            if waited:
                self.stats.add_rate_wait(waited)
        timeout = self._timeouts[backend.name]
        future = None
        try:
            if timeout is None:
                return call(backend)
            future = self._workers().submit(call, backend)
            return future.result(timeout=timeout)
        except (FutureTimeout, TimeoutError) as e:  # ours, or the backend's own (e.g. a socket timeout)
            if future is not None and not future.done():
                future.cancel()
                reason = f"did not answer within {timeout:g} s"
            else:
                reason = f"timed out: {e}"
            self.stats.add("timeouts", backend=backend.name)
            raise BackendError(f"{backend.name} {reason}", retryable=True) from None
        except BackendError as e:
            if getattr(e, "is_timeout", False):  # an upstream's HTTP timeout
                self.stats.add("timeouts", backend=backend.name)
            raise

    def _workers(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.config.max_workers, thread_name_prefix="sim-web-tool")
            return self._pool
