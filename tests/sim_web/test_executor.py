"""The tool executor: cache, retries with backoff, timeouts, fallback, rate limit, stats, threads.

The backends below are small real implementations of the Backend protocol (test fixtures for
the executor): deterministic, flaky, slow, broken, buggy.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from sim_web.executor import (
    BackendPolicy,
    CircuitBreaker,
    ExecutorConfig,
    LRUCache,
    SqliteCache,
    TokenBucket,
    ToolExecutor,
)
from sim_web.protocol.errors import BackendError, ToolUnavailableError
from sim_web.protocol.results import Backend, ScholarResult, SearchResult, VisitResult
from simweb_core.errors import ConfigError

FAST = dict(backoff_base_s=0.001, backoff_max_s=0.002, jitter_s=0.001)


class Good:
    """Deterministic results derived from the arguments; counts calls."""

    def __init__(self, name: str = "good") -> None:
        self.name = name
        self.calls: list[tuple] = []
        self._lock = threading.Lock()

    def _log(self, *args: object) -> None:
        with self._lock:
            self.calls.append(args)

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        self._log("search", query, k)
        return [SearchResult(title=f"{self.name}:{query}:{i}", link=f"https://x/{i}") for i in range(k)]

    def scholar(self, query: str, k: int = 10) -> list[ScholarResult]:
        self._log("scholar", query, k)
        return [ScholarResult(title=f"{self.name}:{query}")]

    def visit(self, url: str, goal: str) -> VisitResult:
        self._log("visit", url, goal)
        return VisitResult(url=url, goal=goal, ok=url.startswith("https://"), evidence=self.name, summary=goal)


class Flaky(Good):
    """Fails the first ``n`` calls with a retryable (or not) BackendError."""

    def __init__(self, n: int, retryable: bool = True, name: str = "flaky") -> None:
        super().__init__(name)
        self.n, self.retryable = n, retryable

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        self._log("search", query, k)
        if len(self.calls) <= self.n:
            raise BackendError(f"{self.name} failure #{len(self.calls)}", retryable=self.retryable)
        return [SearchResult(title=f"{self.name}:{query}", link="https://x")]


class Slow(Good):
    """Sleeps past any short timeout."""

    def __init__(self, sleep_s: float, name: str = "slow") -> None:
        super().__init__(name)
        self.sleep_s = sleep_s

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        self._log("search", query, k)
        time.sleep(self.sleep_s)
        return [SearchResult(title="late", link="https://late")]


class Buggy(Good):
    """A backend with a bug (raises a non-BackendError) or one returning the wrong type."""

    def __init__(self, mode: str, name: str = "buggy") -> None:
        super().__init__(name)
        self.mode = mode

    def search(self, query: str, k: int = 10):  # type: ignore[override]
        self._log("search", query, k)
        if self.mode == "raise":
            raise KeyError("missing column")
        if self.mode == "timeout":
            raise TimeoutError("socket read timed out")
        return None


def cfg(**kw: object) -> ExecutorConfig:
    return ExecutorConfig(**{"timeout_s": None, **FAST, **kw})  # type: ignore[arg-type]


def test_fixtures_satisfy_the_protocol() -> None:
    for b in (Good(), Flaky(1), Slow(0.0), Buggy("raise")):
        assert isinstance(b, Backend)


def test_cache_hits_identical_and_whitespace_equivalent_calls() -> None:
    b = Good()
    ex = ToolExecutor([b], cfg())
    first = ex.search("capital  of France", 3)
    assert ex.search(" capital of France ", 3) == first
    assert ex.search("capital of France", 5) != first  # k is part of the key
    assert b.calls == [("search", "capital of France", 3), ("search", "capital of France", 5)]
    ex.visit("https://a", "goal"), ex.visit("https://a", "goal")
    ex.scholar("q"), ex.scholar("q")
    s = ex.stats.snapshot()
    assert (s["calls"], s["cache_hits"]) == (7, 3)
    assert s["tools"]["search"]["calls"] == 3 and s["tools"]["search"]["cache_hits"] == 1
    assert s["tools"]["visit"]["cache_hits"] == 1 and s["tools"]["scholar"]["cache_hits"] == 1
    assert s["tools"]["search"]["max_ms"] >= s["tools"]["search"]["mean_ms"] >= 0


def test_cache_off_and_lru_eviction() -> None:
    b = Good()
    ToolExecutor([b], cfg(cache=False)).search("q", 1)
    ex = ToolExecutor([b], cfg(cache=False))
    ex.search("q", 1), ex.search("q", 1)
    assert len(b.calls) == 3 and ex.stats.snapshot()["cache_hits"] == 0
    b2 = Good()
    ex2 = ToolExecutor([b2], cfg(cache_size=2))
    for q in ("a", "b", "a", "c", "a", "b"):  # "b" is evicted by "c", "a" stays (recently used)
        ex2.search(q, 1)
    assert [c[1] for c in b2.calls] == ["a", "b", "c", "b"]


def test_stats_reset_keeps_the_cache() -> None:
    b = Good()
    ex = ToolExecutor([b], cfg())
    ex.search("q", 1)
    ex.stats.reset()
    assert ex.stats.snapshot()["calls"] == 0 and ex.stats.snapshot()["tools"] == {}
    ex.search("q", 1)
    assert len(b.calls) == 1 and ex.stats.snapshot()["cache_hits"] == 1


def test_shared_cache_between_executors() -> None:
    cache, b = LRUCache(100), Good()
    ToolExecutor([b], cfg(), cache=cache).search("q", 2)
    ToolExecutor([b], cfg(), cache=cache).search("q", 2)
    assert len(b.calls) == 1


def test_retries_then_success() -> None:
    b = Flaky(2)
    ex = ToolExecutor([b], cfg(max_retries=2))
    assert ex.search("q", 1)[0].title == "flaky:q"
    s = ex.stats.snapshot()
    assert (
        len(b.calls) == 3 and s["retries"] == 2 and s["failures"] == 0 and s["fallbacks"] == 0 and s["successes"] == 1
    )


def test_retries_exhausted_fall_back_to_next_backend() -> None:
    flaky, good = Flaky(5), Good()
    ex = ToolExecutor([flaky, good], cfg(max_retries=1))
    assert ex.search("q", 1)[0].title == "good:q:0"
    s = ex.stats.snapshot()
    assert len(flaky.calls) == 2 and s["retries"] == 1 and s["backend_errors"] == 1 and s["fallbacks"] == 1
    assert s["failures"] == 0 and s["successes"] == 0 and s["backends"]["flaky"] == {"backend_errors": 1, "retries": 1}


def test_fallback_answers_are_cached_so_an_outage_is_paid_once() -> None:
    broken, good = Flaky(100, retryable=False), Good()
    ex = ToolExecutor([broken, good], cfg())
    assert ex.search("q", 1) == ex.search("q", 1)
    assert len(broken.calls) == 1 and len(good.calls) == 1 and ex.stats.snapshot()["cache_hits"] == 1


def test_non_retryable_error_falls_back_at_once() -> None:
    broken, good = Flaky(100, retryable=False), Good()
    ex = ToolExecutor([broken, good], cfg(max_retries=3))
    assert ex.search("q", 1)[0].title == "good:q:0"
    assert len(broken.calls) == 1 and ex.stats.snapshot()["retries"] == 0


def test_every_backend_fails() -> None:
    ex = ToolExecutor([Flaky(100, name="a"), Flaky(100, retryable=False, name="b")], cfg(max_retries=1))
    with pytest.raises(ToolUnavailableError) as e:
        ex.search("q", 1)
    assert e.value.tool == "search" and e.value.target == "q"
    assert [c.split(":")[0] for c in e.value.causes] == ["a", "b"]
    assert ex.stats.snapshot()["failures"] == 1
    assert len(ex.cache) == 0  # failures are not cached


def test_timeout_then_fallback() -> None:
    slow, good = Slow(1.0), Good()
    ex = ToolExecutor([slow, good], cfg(timeout_s=0.05, max_retries=1))
    assert ex.search("q", 1)[0].title == "good:q:0"  # without the timeout this would wait 1 s twice
    s = ex.stats.snapshot()
    assert s["timeouts"] == 2 and s["retries"] == 1 and s["fallbacks"] == 1
    ex.close()


class ThreadSpy(Good):
    """Records the thread each search runs in."""

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        self._log("thread", threading.get_ident())
        return super().search(query, k)


def test_inline_backends_run_in_the_calling_thread_unless_a_policy_names_them() -> None:
    plain, inline = ThreadSpy("plain"), ThreadSpy("inline")
    inline.inline = True
    ex = ToolExecutor([inline, plain], cfg(timeout_s=5.0))
    ex.search("q", 1)
    assert inline.calls[0] == ("thread", threading.get_ident())  # no timeout thread for in-process backends
    assert ex.inline is False  # the fallback may block: the server keeps this executor's calls on its pool
    assert ToolExecutor([inline], cfg(timeout_s=5.0)).inline is True
    ex = ToolExecutor([plain], cfg(timeout_s=5.0))
    ex.search("q", 1)
    assert plain.calls[0] != ("thread", threading.get_ident())  # a remote-like backend keeps its timeout
    ex.close()
    named = ThreadSpy("inline")
    named.inline = True
    ex = ToolExecutor([named], cfg(policies={"inline": BackendPolicy(timeout_s=5.0)}))
    ex.search("q", 1)
    assert named.calls[0] != ("thread", threading.get_ident())  # an explicit policy brings the timeout back
    assert ex.inline is False
    ex.close()


def test_backend_timeout_error_is_retryable_inline() -> None:
    ex = ToolExecutor([Buggy("timeout"), Good()], cfg(max_retries=2))
    assert ex.search("q", 1)[0].title == "good:q:0"
    assert ex.stats.snapshot()["timeouts"] == 3 and ex.stats.snapshot()["retries"] == 2


@pytest.mark.parametrize("mode", ["raise", "wrong_type"])
def test_buggy_backend_is_logged_and_skipped(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    ex = ToolExecutor([Buggy(mode), Good()], cfg())
    with caplog.at_level(logging.WARNING, logger="sim_web.executor"):
        assert ex.search("q", 1)[0].title == "good:q:0"
    assert "buggy" in caplog.text
    with pytest.raises(ToolUnavailableError, match="buggy"):
        ToolExecutor([Buggy(mode)], cfg()).search("q", 1)


def test_backoff_is_seeded_capped_and_jittered() -> None:
    c = ExecutorConfig(backoff_base_s=0.5, backoff_max_s=2.0, jitter_s=0.25, seed=7)
    a, b = ToolExecutor([Good()], c), ToolExecutor([Good()], c)
    seq_a = [a.backoff_s(n) for n in range(1, 7)]
    assert seq_a == [b.backoff_s(n) for n in range(1, 7)]
    other = ToolExecutor([Good()], ExecutorConfig(backoff_base_s=0.5, backoff_max_s=2.0, jitter_s=0.25, seed=8))
    assert seq_a != [other.backoff_s(n) for n in range(1, 7)]
    for n, w in enumerate(seq_a, 1):
        base = min(2.0, 0.5 * 2 ** (n - 1))
        assert base <= w <= base + 0.25


def test_token_bucket_with_a_fake_clock() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    bucket = TokenBucket(rate=2.0, capacity=2, clock=lambda: now[0], sleep=sleep)
    waits = [bucket.acquire() for _ in range(5)]
    assert waits[:2] == [0.0, 0.0] and waits[2:] == pytest.approx([0.5, 0.5, 0.5])
    now[0] += 10  # idle refills only up to the capacity
    assert [bucket.acquire() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.5])


def test_thread_safety_under_concurrent_calls() -> None:
    b = Good()
    ex = ToolExecutor([b], cfg(timeout_s=5.0))
    queries = [f"q{i % 20}" for i in range(1600)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda q: ex.search(q, 2), queries))
    assert all(r[0].title == f"good:{q}:0" for r, q in zip(results, queries))
    s = ex.stats.snapshot()
    assert s["calls"] == 1600 and s["cache_hits"] + len(b.calls) == 1600
    assert 20 <= len(b.calls) <= 20 * 8  # concurrent first misses may each reach the backend
    ex.close()


def test_config_and_argument_errors_name_the_fix() -> None:
    with pytest.raises(ConfigError, match="use cache=False"):
        ExecutorConfig(cache_size=0)
    with pytest.raises(ConfigError, match="qps must be a positive number or None"):
        ExecutorConfig(qps=0)
    with pytest.raises(ConfigError, match="timeout_s must be > 0 or None"):
        ExecutorConfig(timeout_s=0)
    with pytest.raises(ConfigError, match="max_retries must be >= 0"):
        ExecutorConfig(max_retries=-1)
    with pytest.raises(ConfigError, match="at least one backend"):
        ToolExecutor([], ExecutorConfig())
    with pytest.raises(ConfigError, match="distinct names"):
        ToolExecutor([Good("x"), Good("x")], ExecutorConfig())
    with pytest.raises(ValueError, match="k must be a positive int"):
        ToolExecutor([Good()], ExecutorConfig()).search("q", 0)
    for f in ExecutorConfig.__dataclass_fields__.values():
        assert f.metadata.get("help"), f"ExecutorConfig.{f.name} needs a help text"


def test_benchmark_quick_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.bench_executor import main

    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "ratio vs baseline" in out and "executor, cache hit" in out


# -- per-backend policies: routing, Retry-After, circuit breaker, persistent cache ---------------------------


class Upstream(Good):
    """Serves only ``tools``; fails with the errors queued in ``errors`` (one per call), then answers."""

    def __init__(self, name: str, tools: set[str], errors: list[BackendError] | None = None) -> None:
        super().__init__(name)
        self.tools = frozenset(tools)
        self.errors = list(errors or [])
        self.cache_namespace = f"ns-{name}"

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        self._log("search", query, k)
        if self.errors:
            raise self.errors.pop(0)
        return [SearchResult(title=f"{self.name}:{query}", link="https://x")]


def error(retryable: bool, retry_after_s: float | None = None, opens_circuit: bool = False) -> BackendError:
    e = BackendError("upstream says no", retryable=retryable)
    e.retry_after_s, e.opens_circuit = retry_after_s, opens_circuit  # the attributes UpstreamError carries
    return e


class FakeTime:
    def __init__(self) -> None:
        self.now, self.slept = 0.0, []

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


def test_backends_serve_only_their_tools_and_count_reconciles() -> None:
    serper, jina, sim = Upstream("serper", {"search", "scholar"}), Upstream("jina", {"visit"}), Good("sim")
    ex = ToolExecutor([serper, jina, sim], cfg())
    assert ex.search("q", 1)[0].title == "serper:q"
    assert ex.visit("https://a", "g").evidence == "jina"
    assert [b.name for b in ex.chain("visit")] == ["jina", "sim"] and not serper.calls[1:]
    s = ex.stats.counts()
    assert s["calls"] == s["successes"] + s["fallbacks"] + s["failures"] == 2 and s["fallbacks"] == 0
    assert s["backends"] == {"jina": {"answered": 1}, "serper": {"answered": 1}}


def test_retry_after_is_honoured_with_an_injected_sleep() -> None:
    t = FakeTime()
    up = Upstream("serper", {"search"}, [error(True, retry_after_s=7.0), error(True)])
    ex = ToolExecutor(
        [up], cfg(backoff_base_s=1.0, backoff_max_s=8.0, jitter_s=0.0, max_retries=3), sleep=t.sleep, clock=t.clock
    )
    assert ex.search("q", 1)[0].title == "serper:q"
    assert t.slept == [7.0, 2.0]  # Retry-After beats the 1 s backoff, then the plain 2 s backoff
    assert ex.stats.counts()["retries"] == 2


def test_a_retry_after_beyond_the_cap_falls_back_at_once() -> None:
    t = FakeTime()
    up = Upstream("serper", {"search"}, [error(True, retry_after_s=3600.0)])
    ex = ToolExecutor([up, Good("sim")], cfg(max_retries=5, max_retry_after_s=60.0), sleep=t.sleep, clock=t.clock)
    assert ex.search("q", 1)[0].title == "sim:q:0"
    assert t.slept == [] and len(up.calls) == 1 and ex.stats.counts()["fallbacks"] == 1


def test_non_retryable_errors_never_retry() -> None:
    t = FakeTime()
    up = Upstream("serper", {"search"}, [error(False)] * 3)
    ex = ToolExecutor([up], cfg(max_retries=5), sleep=t.sleep, clock=t.clock)
    with pytest.raises(ToolUnavailableError, match="upstream says no"):
        ex.search("q", 1)
    assert len(up.calls) == 1 and t.slept == [] and ex.stats.counts()["failures"] == 1


def test_circuit_opens_after_failures_then_probes_and_closes() -> None:
    t = FakeTime()
    up = Upstream("serper", {"search"}, [error(False)] * 3)
    policy = BackendPolicy(timeout_s=None, max_retries=0, breaker_failures=2, breaker_reset_s=30.0)
    ex = ToolExecutor([up, Good("sim")], cfg(cache=False, policies={"serper": policy}), sleep=t.sleep, clock=t.clock)
    for i in range(4):
        ex.search(f"q{i}", 1)
    assert len(up.calls) == 2 and ex.breakers["serper"].state == "open"  # calls 3 and 4 skipped the upstream
    s = ex.stats.counts()
    assert (
        s["short_circuits"] == 2
        and s["fallbacks"] == 4
        and s["calls"] == s["successes"] + s["fallbacks"] + s["failures"]
    )
    t.now += 31  # half-open: one probe, which fails (error #3) and reopens
    ex.search("probe1", 1)
    assert len(up.calls) == 3 and ex.breakers["serper"].state == "open"
    t.now += 31  # the next probe succeeds and closes the circuit
    assert ex.search("probe2", 1)[0].title == "serper:probe2" and ex.breakers["serper"].state == "closed"


def test_an_auth_error_opens_the_circuit_at_once() -> None:
    up = Upstream("serper", {"search"}, [error(False, opens_circuit=True)])
    ex = ToolExecutor([up, Good("sim")], cfg(breaker_failures=5))
    ex.search("a", 1), ex.search("b", 1)
    assert len(up.calls) == 1 and ex.stats.counts()["short_circuits"] == 1


def test_breaker_half_open_lets_one_caller_through() -> None:
    t = FakeTime()
    b = CircuitBreaker(1, 10.0, clock=t.clock)
    assert b.failure() and not b.allow()
    t.now = 10.0
    assert b.allow() and not b.allow()  # only the first caller probes
    b.success()
    assert b.allow() and b.state == "closed"


def test_persistent_cache_is_shared_across_executors_and_expires(tmp_path) -> None:
    now = [1000.0]
    store = SqliteCache(tmp_path / "results.sqlite", clock=lambda: now[0])
    policy = BackendPolicy(timeout_s=None, cache_ttl_s=60.0)
    up = Upstream("serper", {"search"})
    ToolExecutor([up], cfg(policies={"serper": policy}), persistent=store).search("q", 1)
    other = ToolExecutor(
        [up],
        cfg(policies={"serper": policy}),
        persistent=SqliteCache(tmp_path / "results.sqlite", clock=lambda: now[0]),
    )
    assert other.search("q", 1)[0].title == "serper:q" and len(up.calls) == 1  # a fresh executor: the disk answers
    assert other.stats.counts()["cache_hits"] == 1
    now[0] += 61  # past the TTL: asked again
    ToolExecutor([up], cfg(policies={"serper": policy}), persistent=store).search("q", 1)
    assert len(up.calls) == 2
    plain = Good("sim")  # no cache_namespace: never persisted
    ToolExecutor([plain], cfg(), persistent=store).search("q", 1)
    ToolExecutor([plain], cfg(), persistent=store).search("q", 1)
    assert len(plain.calls) == 2


def test_policies_must_be_backend_policies() -> None:
    with pytest.raises(ConfigError, match="policies values must be BackendPolicy"):
        ExecutorConfig(policies={"serper": {"qps": 1}})  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="breaker_failures must be >= 1"):
        BackendPolicy(breaker_failures=0)
    assert ExecutorConfig(max_retries=4).policy_for("anything").max_retries == 4
    assert ExecutorConfig(policies={"x": BackendPolicy(max_retries=1)}).policy_for("x").max_retries == 1
    for f in BackendPolicy.__dataclass_fields__.values():
        assert f.metadata.get("help"), f"BackendPolicy.{f.name} needs a help text"


def test_rate_limit_applies_per_backend_call() -> None:
    t = FakeTime()
    a, b = Upstream("serper", {"search"}), Upstream("jina", {"visit"})
    ex = ToolExecutor(
        [a, b],
        cfg(cache=False, policies={"serper": BackendPolicy(qps=40.0, burst=1, timeout_s=None)}),
        clock=t.clock,
        sleep=t.sleep,
    )
    for i in range(9):
        ex.search(f"q{i}", 1)
    assert t.slept == pytest.approx([1 / 40] * 8)  # the first call is free, then one per 25 ms
    for i in range(5):
        ex.visit(f"https://x/{i}", "g")  # jina has no limit: its own bucket (none), not serper's
    assert len(t.slept) == 8 and ex.stats.snapshot()["rate_limit_wait_ms"] == pytest.approx(200.0)


class Gated(Good):
    """Blocks every search until ``gate`` is set (to hold concurrent identical calls in flight together)."""

    def __init__(self, fail_first: bool = False) -> None:
        super().__init__("gated")
        self.gate, self.entered, self.fail_first = threading.Event(), threading.Event(), fail_first

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        self._log("search", query, k)
        self.entered.set()
        assert self.gate.wait(30), "the test never opened the gate"
        if self.fail_first and len(self.calls) == 1:
            raise BackendError("the first call fails", retryable=False)
        return [SearchResult(title=f"gated:{query}", link="https://x")]


@pytest.mark.parametrize("fail_first", [False, True])
def test_concurrent_identical_calls_reach_the_backend_once(fail_first):
    backend = Gated(fail_first)
    ex = ToolExecutor(
        [backend], ExecutorConfig(policies={"gated": BackendPolicy(max_retries=0, breaker_failures=None)})
    )
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(ex.search, "same query", 3)
        assert backend.entered.wait(30)
        others = [pool.submit(ex.search, "same query", 3) for _ in range(3)]
        flight = ex._in_flight[("search", ("same query", 3))]  # the leader registered before it entered the backend
        deadline = time.monotonic() + 30
        while len(flight._cond._waiters) < 3 and time.monotonic() < deadline:  # all three wait on the leader
            time.sleep(0.001)
        assert len(flight._cond._waiters) == 3
        backend.gate.set()
        results = [f.exception() or f.result() for f in [first, *others]]
    if fail_first:  # the leader failed: the waiters asked the backend themselves, and all of them succeeded
        assert isinstance(results[0], ToolUnavailableError) and all(
            r[0].title == "gated:same query" for r in results[1:]
        )
        assert len(backend.calls) >= 2
    else:
        assert all(r == results[0] for r in results) and len(backend.calls) == 1
        assert ex.stats.counts()["cache_hits"] == 3 and ex.stats.counts()["calls"] == 4
    assert ex._in_flight == {}


def test_many_envs_opening_one_new_cache_file_at_once_all_succeed(tmp_path):
    """Switching a new SQLite file to WAL ignores the busy timeout; every opener must still get a working cache
    (the eval harness's worker threads open one file together; once this failed an episode in 1 of 30 tries)."""
    errors: list[BaseException] = []

    def open_and_use(path, i):
        try:
            cache = SqliteCache(path)
            cache.put(f"k{i}", "v")
            assert cache.get(f"k{i}") == "v"
        except BaseException as e:  # noqa: BLE001 - collected and reported below
            errors.append(e)

    for trial in range(30):
        path = tmp_path / f"new-{trial}.sqlite"
        threads = [threading.Thread(target=open_and_use, args=(path, i)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(SqliteCache(path)) == 8
    assert not errors, errors[:3]
