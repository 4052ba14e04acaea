"""Jina Reader (r.jina.ai) plus a summariser: the real ``visit`` backend.

As Tongyi DeepResearch's ``inference/tool_visit.py``: ``GET {base}/{url}`` with ``Authorization:
Bearer $JINA_API_KEYS``, the page text cut to a token budget, then evidence + summary for the goal
from an OpenAI-compatible summariser. Without a summariser, or when it fails, the deterministic
extractor of :mod:`sim_web.backends.summarise` runs on the fetched text, so ``visit`` always answers
when the page could be read. Raw page text is cached apart from the extraction (which depends on
the goal and the model); the executor caches the extraction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sim_web.backends.summarise import DeterministicExtractor, SummariserError, cut_to_tokens, parse_jina_text, target_error
from sim_web.backends.upstream import EventSink, RawCache, UpstreamError, cache_key, request
from sim_web.protocol.results import ScholarResult, SearchResult, VisitResult
from wiki_index.errors import ConfigError

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)
KEY_VAR = "JINA_API_KEYS"
Extractor = Callable[[str, str, str], tuple[str, str]]


@dataclass(frozen=True)
class JinaConfig:
    """Where and how to read pages, and how much of each page the extractor sees."""

    base_url: str = field(default="https://r.jina.ai", metadata={
        "help": "Jina Reader's root (r.jinaai.cn where r.jina.ai is unreachable; a mock's URL in tests)."})
    timeout_s: float = field(default=50.0, metadata={"help": "HTTP timeout of one page fetch (Tongyi: 50 s)."})
    max_page_tokens: int = field(default=95_000, metadata={"help": "Page text is cut to this many tokens before extraction (Tongyi: 95,000)."})
    tokenizer: str = field(default="approx", metadata={
        "help": "'approx' (words + punctuation, offline) or 'tiktoken:cl100k_base' (Tongyi's; needs the encoding file)."})
    summary_temperature: float = field(default=0.0, metadata={"help": "Summariser temperature (Tongyi: 0.7; 0 makes cached summaries reproducible)."})
    summary_timeout_s: float = field(default=60.0, metadata={"help": "Timeout of one summariser request."})
    raw_ttl_s: float | None = field(default=7 * 86400.0, metadata={"help": "How long raw page text stays valid in the persistent cache (None: forever)."})

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"JinaConfig.base_url must start with http:// or https://, got {self.base_url!r}")
        if not (self.timeout_s > 0 and self.summary_timeout_s > 0):
            raise ConfigError(f"JinaConfig timeouts must be > 0 s, got {self.timeout_s} and {self.summary_timeout_s}")
        if self.max_page_tokens < 100:
            raise ConfigError(f"JinaConfig.max_page_tokens must be >= 100, got {self.max_page_tokens}")
        if self.tokenizer != "approx" and not self.tokenizer.startswith("tiktoken:"):
            raise ConfigError(f"JinaConfig.tokenizer must be 'approx' or 'tiktoken:<encoding>', got {self.tokenizer!r}")


class JinaBackend:
    """Jina Reader as a backend for ``visit`` (``search`` / ``google_scholar`` are Serper's).

    Args:
        api_key: Jina key (``$JINA_API_KEYS``).
        config: Endpoint, timeout, token budget.
        summariser: ``(title, content, goal) -> (evidence, summary)`` raising ``SummariserError``
            on failure (an :class:`~sim_web.backends.summarise.LLMSummariser`), or ``None``.
        summariser_id: What identifies the summariser in cache keys (e.g. its model name).
        extractor: The deterministic fallback extractor.
        transport: An httpx transport (recording / replaying), or ``None`` for the network.
        raw_cache: Persistent store of raw page text (``None``: no raw cache).
    """

    name = "jina"
    tools = frozenset({"visit"})

    def __init__(self, api_key: str, config: JinaConfig = JinaConfig(), *, summariser: Extractor | None = None,
                 summariser_id: str = "", extractor: Extractor | None = None, transport: httpx.BaseTransport | None = None,
                 raw_cache: RawCache | None = None) -> None:
        import httpx  # lazily: gym.make in sim mode should not pay for it

        if config.tokenizer != "approx":
            cut_to_tokens("probe", 1, config.tokenizer)  # a missing encoding fails now, not mid-episode
        self.config = config
        self.summariser = summariser
        self.extractor = extractor or DeterministicExtractor()
        self.raw_cache = raw_cache
        self.cache_namespace = cache_key("jina", config.base_url, config.max_page_tokens, config.tokenizer,
                                         summariser_id if summariser else "deterministic", config.summary_temperature,
                                         repr(self.extractor))
        self._client = httpx.Client(timeout=config.timeout_s, transport=transport, headers={"Authorization": f"Bearer {api_key}"})
        self._events: EventSink = lambda _name: None

    def bind_events(self, sink: EventSink) -> None:
        """Report events (``jina.raw_cache_hits``, ``jina.http_requests``, ``jina.summariser_*``) to ``sink``."""
        self._events = sink

    def fetch(self, url: str) -> str:
        """The Jina Reader text of ``url`` (from the raw cache when fresh).

        Raises:
            UpstreamError: On a failed request, or a page whose target answered an error.
        """
        key = cache_key("jina-raw", self.config.base_url, url)
        text = self.raw_cache.get(key, self.config.raw_ttl_s) if self.raw_cache is not None else None
        if text is not None:
            self._events("jina.raw_cache_hits")
            return text
        self._events("jina.http_requests")
        text = request(self._client, "jina", KEY_VAR, "GET", f"{self.config.base_url.rstrip('/')}/{url}").text
        warning = target_error(text)
        if warning:  # Jina answers 200 with a Warning line when the page itself failed (its 404, 500)
            raise UpstreamError(f"jina read {url} but the page failed: {warning}", retryable=False, page_error=True)
        if self.raw_cache is not None:
            self.raw_cache.put(key, text)
        return text

    def visit(self, url: str, goal: str) -> VisitResult:
        """Read ``url`` and extract evidence and a summary for ``goal``.

        An empty page gives ``ok=False`` (Tongyi's "could not be accessed" text).

        Raises:
            UpstreamError: When the page could not be fetched (the executor retries or falls back).
        """
        title, content = parse_jina_text(self.fetch(url))
        content = cut_to_tokens(content, self.config.max_page_tokens, self.config.tokenizer)
        if not content:
            return VisitResult(url=url, goal=goal, ok=False)
        if self.summariser is not None:
            try:
                evidence, summary = self.summariser(title, content, goal)
                self._events("jina.summariser_ok")
                return VisitResult(url=url, goal=goal, ok=True, evidence=evidence, summary=summary)
            except SummariserError as e:
                self._events("jina.summariser_failures")
                log.warning("visit %s: %s; using the deterministic extractor", url, e)
        evidence, summary = self.extractor(title, content, goal)
        return VisitResult(url=url, goal=goal, ok=bool(evidence), evidence=evidence, summary=summary)

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        """Not served here (the executor routes ``search`` to the Serper backend)."""
        raise UpstreamError("jina does not serve search (configure the serper backend)", retryable=False)

    def scholar(self, query: str, k: int = 10) -> list[ScholarResult]:
        """Not served here (the executor routes ``google_scholar`` to the Serper backend)."""
        raise UpstreamError("jina does not serve scholar (configure the serper backend)", retryable=False)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()
