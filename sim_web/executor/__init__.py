"""The one executor every tool call goes through: cache, rate limit, timeout, retry, fallback, degradation, stats."""

from sim_web.executor.executor import ExecutorConfig, ExecutorStats, LRUCache, TokenBucket, ToolExecutor

__all__ = ["ExecutorConfig", "ExecutorStats", "LRUCache", "TokenBucket", "ToolExecutor"]
