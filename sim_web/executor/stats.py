"""Per-episode executor counters (``info["tool_stats"]``).

Every executor call has exactly one outcome, so ``calls == successes + fallbacks + failures``:

* ``successes``: answered by the first backend serving the tool, or from the cache (``cache_hits``
  counts those served from the cache);
* ``fallbacks``: answered by a later backend of the chain (e.g. the sim index after Serper failed);
* ``failures``: no backend answered; the tool printed Tongyi's degradation text.

The rest explains how: ``retries``, ``timeouts``, ``backend_errors`` (a backend giving up on a call),
``short_circuits`` (a backend skipped because its circuit was open), and per backend (``backends``)
and per upstream event (``events``: raw-cache hits, HTTP requests, summariser failures).
"""

from __future__ import annotations

import copy
import threading
from typing import Any


class ExecutorStats:
    """Counters of one episode (reset them with :meth:`reset`; the cache is not affected)."""

    _COUNTERS = (
        "calls",
        "successes",
        "fallbacks",
        "failures",
        "cache_hits",
        "retries",
        "timeouts",
        "backend_errors",
        "short_circuits",
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Zero every counter."""
        with self._lock:
            self._counts = dict.fromkeys(self._COUNTERS, 0)
            self._rate_wait_s = 0.0
            self._tools: dict[str, list[float]] = {}  # tool -> [calls, cache_hits, total_ms, max_ms]
            self._backends: dict[str, dict[str, int]] = {}
            self._events: dict[str, int] = {}

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy({k: v for k, v in vars(self).items() if k != "_lock"})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def load(self, other: ExecutorStats) -> None:
        """Take over ``other``'s counters (an env restored mid-episode), keeping this object: the backends report to it."""
        state = other.__getstate__()
        with self._lock:
            self.__dict__.update(state)

    def add(self, counter: str, n: int = 1, backend: str | None = None) -> None:
        """Increment a counter of :attr:`_COUNTERS`, and the same counter of ``backend`` when given."""
        with self._lock:
            self._counts[counter] += n
            if backend is not None:
                per = self._backends.setdefault(backend, {})
                per[counter] = per.get(counter, 0) + n

    def event(self, name: str) -> None:
        """Count one upstream event (``"serper.raw_cache_hits"``, ``"jina.summariser_failures"``, ...)."""
        with self._lock:
            self._events[name] = self._events.get(name, 0) + 1

    def add_rate_wait(self, seconds: float) -> None:
        """Account time spent waiting for the rate limiter."""
        with self._lock:
            self._rate_wait_s += seconds

    def record(self, tool: str, ms: float, outcome: str, cache_hit: bool, backend: str | None) -> None:
        """Account one finished executor call of ``tool``.

        Args:
            tool: The tool.
            ms: Its latency.
            outcome: ``"successes"``, ``"fallbacks"`` or ``"failures"``.
            cache_hit: Whether the cache answered.
            backend: The backend that answered (``None``: none did, or the cache).
        """
        with self._lock:
            self._counts["calls"] += 1
            self._counts[outcome] += 1
            self._counts["cache_hits"] += int(cache_hit)
            if backend is not None:
                per = self._backends.setdefault(backend, {})
                per["answered"] = per.get("answered", 0) + 1
            t = self._tools.setdefault(tool, [0, 0, 0.0, 0.0])
            t[0] += 1
            t[1] += int(cache_hit)
            t[2] += ms
            t[3] = max(t[3], ms)

    def counts(self) -> dict[str, Any]:
        """The deterministic part: counters, per-tool calls / cache hits, per-backend counts, events (no timings)."""
        with self._lock:
            out: dict[str, Any] = dict(self._counts)
            out["tools"] = {
                name: {"calls": int(c), "cache_hits": int(h)} for name, (c, h, _, _) in sorted(self._tools.items())
            }
            out["backends"] = {name: dict(sorted(d.items())) for name, d in sorted(self._backends.items())}
            out["events"] = dict(sorted(self._events.items()))
            return out

    def timings(self) -> dict[str, Any]:
        """The wall-clock part: rate-limit waiting and per-tool latency (ms)."""
        with self._lock:
            return {
                "rate_limit_wait_ms": round(self._rate_wait_s * 1000, 3),
                "tools": {
                    name: {
                        "total_ms": round(tot, 3),
                        "mean_ms": round(tot / c, 3) if c else 0.0,
                        "max_ms": round(mx, 3),
                    }
                    for name, (c, _, tot, mx) in sorted(self._tools.items())
                },
            }

    def snapshot(self) -> dict[str, Any]:
        """Counters and timings together, as a JSON-ready dict (per-tool entries merged)."""
        out, t = self.counts(), self.timings()
        out["rate_limit_wait_ms"] = t["rate_limit_wait_ms"]
        for name, d in out["tools"].items():
            d.update(t["tools"][name])
        return out
