"""``ExecutorConfig``: the executor's cache settings and the default :class:`BackendPolicy`, with per-backend overrides."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from sim_web.executor.policy import BackendPolicy
from simweb_core.errors import ConfigError
from simweb_core.fields import help_field

_POLICY_FIELDS = tuple(f.name for f in fields(BackendPolicy))


@dataclass(frozen=True)
class ExecutorConfig:
    """Cache settings, and the default :class:`BackendPolicy` (the flat fields) with per-backend overrides."""

    cache: bool = help_field(True, "Cache results by content (backend, tool, normalised arguments).")
    cache_size: int = help_field(10_000, "LRU cache capacity in entries (one query / URL each).")
    cache_dir: str | None = help_field(
        None,
        (
            "Directory of the persistent cache shared across processes (None: in-process only). Only backends with a "
            "cache_namespace (serper, jina) are persisted; TTL per backend: BackendPolicy.cache_ttl_s."
        ),
    )
    qps: float | None = help_field(None, "Default per-backend rate limit in calls/s (None: unlimited).")
    burst: int | None = help_field(None, "Default token-bucket capacity (None: max(1, ceil(qps))).")
    timeout_s: float | None = help_field(
        60.0, "Default per-attempt timeout; the call runs in a worker thread (None: call inline, no timeout)."
    )
    max_retries: int = help_field(2, "Default retries per backend after a retryable error or a timeout.")
    backoff_base_s: float = help_field(0.5, "First backoff; doubles per retry.")
    backoff_max_s: float = help_field(8.0, "Cap on the exponential part of the backoff.")
    jitter_s: float = help_field(0.25, "Uniform random extra backoff in [0, jitter_s] (seeded).")
    max_retry_after_s: float = help_field(60.0, "A longer Retry-After is not waited for: fall back at once.")
    breaker_failures: int | None = help_field(
        5, "Consecutive failed calls that open a backend's circuit (None: no breaker)."
    )
    breaker_reset_s: float = help_field(30.0, "Seconds an open circuit skips its backend before a probe.")
    cache_ttl_s: float | None = help_field(None, "Default lifetime of persisted results (None: forever).")
    policies: Mapping[str, BackendPolicy] = help_field(
        help="Per-backend policies by backend name (e.g. {'serper': BackendPolicy(qps=10)}); others use the flat fields.",
        default_factory=dict,
    )
    seed: int = help_field(0, "Seed of the jitter RNG (the executor's only randomness).")
    max_workers: int = help_field(
        16, "Worker threads for timed calls (a timed-out call keeps its thread until it returns)."
    )

    def __post_init__(self) -> None:
        if self.cache_size < 1:
            raise ConfigError(
                f"ExecutorConfig.cache_size must be >= 1, got {self.cache_size}; use cache=False to disable caching"
            )
        try:
            self.default_policy()
        except ConfigError as e:
            raise ConfigError(f"ExecutorConfig.{e}") from None
        bad = {k: type(v).__name__ for k, v in self.policies.items() if not isinstance(v, BackendPolicy)}
        if bad:
            raise ConfigError(f"ExecutorConfig.policies values must be BackendPolicy, got {bad}")
        if self.max_workers < 1:
            raise ConfigError(f"ExecutorConfig.max_workers must be >= 1, got {self.max_workers}")

    def default_policy(self) -> BackendPolicy:
        """The policy of a backend without an entry in :attr:`policies` (the flat fields)."""
        return BackendPolicy(**{name: getattr(self, name) for name in _POLICY_FIELDS})

    def policy_for(self, backend: str) -> BackendPolicy:
        """The policy of the backend called ``backend``."""
        return self.policies.get(backend) or self.default_policy()
