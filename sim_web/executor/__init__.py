"""The one executor every tool call goes through: cache, rate limit, timeout, retry, circuit breaker, fallback, stats."""

from sim_web.executor.cache import LRUCache, SqliteCache
from sim_web.executor.config import ExecutorConfig
from sim_web.executor.executor import ToolExecutor
from sim_web.executor.policy import BackendPolicy, CircuitBreaker, TokenBucket
from sim_web.executor.stats import ExecutorStats

__all__ = [
    "BackendPolicy",
    "CircuitBreaker",
    "ExecutorConfig",
    "ExecutorStats",
    "LRUCache",
    "SqliteCache",
    "TokenBucket",
    "ToolExecutor",
]
