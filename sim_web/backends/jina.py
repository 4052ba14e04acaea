"""Jina Reader (r.jina.ai) plus a summariser: the real ``visit`` backend.

As Tongyi DeepResearch's ``inference/tool_visit.py``: ``GET {base}/{url}`` with ``Authorization:
Bearer $JINA_API_KEYS``, the page text cut to a token budget, then evidence + summary for the goal
from an OpenAI-compatible summariser. ``JINA_API_KEYS`` may hold several keys separated by commas
(:class:`KeyRing`): Jina's rate limit and credit are per key, so a 401, 402 or 429 moves on to the
next key at once (a refused or empty key is retired, a rate-limited one stays in the ring); the
error reaches the executor only when every key was tried (``tool_stats["events"]["jina.key_rotations"]``
counts the moves). Without a summariser, or when it fails, the deterministic extractor of
:mod:`sim_web.backends.summarise` runs on the fetched text, so ``visit`` always answers when the
page could be read. Raw page text is cached apart from the extraction (which depends on
the goal and the model); the executor caches the extraction.

A query in the base URL (``JINA_BASE_URL=https://proxy/?key=...``) is a credential of that host: it is never
joined to a page URL (where ``GET {base}/{url}`` would hand it to the reader as part of the page's address, and
so to every site visited). With such a base each page is asked for as ``POST {base}`` with the form body
``url=<page>`` (Jina Reader's own POST form), the base URL's query untouched; its values are registered with the
log scrubber and masked in any text before it is cached.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sim_web.backends.summarise import (
    DeterministicExtractor,
    SummariserError,
    cut_to_tokens,
    parse_jina_text,
    target_error,
)
from sim_web.backends.upstream import (
    EventSink,
    RawCache,
    UpstreamError,
    base_url_secret,
    cache_key,
    join_url,
    relative_to,
    request,
)
from sim_web.protocol.arguments import valid_unicode
from sim_web.protocol.results import ScholarResult, SearchResult, VisitResult
from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from simweb_core.secret import MASK, Secret, register, url_credentials

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)
KEY_VAR = "JINA_API_KEYS"
BASE_URL_VAR = "JINA_BASE_URL"
DEFAULT_BASE_URL = "https://r.jina.ai"
#: Statuses that concern the key rather than the page or the service: try the next key of the ring.
ROTATE_ON = frozenset({401, 402, 429})
Extractor = Callable[[str, str, str], tuple[str, str]]


@dataclass(frozen=True)
class JinaConfig:
    """Where and how to read pages, and how much of each page the extractor sees."""

    base_url: Secret = help_field(
        help=(
            f"Jina Reader's root (default ${BASE_URL_VAR}, else {DEFAULT_BASE_URL}; https://r.jinaai.cn where "
            "r.jina.ai is unreachable; a proxy's or a mock's URL)."
        ),
        default_factory=lambda: Secret.from_env(BASE_URL_VAR, DEFAULT_BASE_URL),
    )
    timeout_s: float = help_field(50.0, "HTTP timeout of one page fetch (Tongyi: 50 s).")
    max_page_tokens: int = help_field(
        95_000, "Page text is cut to this many tokens before extraction (Tongyi: 95,000)."
    )
    tokenizer: str = help_field(
        "approx",
        "'approx' (words + punctuation, offline) or 'tiktoken:cl100k_base' (Tongyi's; needs the encoding file).",
    )
    summary_temperature: float = help_field(
        0.0, "Summariser temperature (Tongyi: 0.7; 0 makes cached summaries reproducible)."
    )
    summary_timeout_s: float = help_field(60.0, "Timeout of one summariser request.")
    raw_ttl_s: float | None = help_field(
        7 * 86400.0, "How long raw page text stays valid in the persistent cache (None: forever)."
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", base_url_secret(self.base_url, BASE_URL_VAR, "JinaConfig.base_url"))
        if not (self.timeout_s > 0 and self.summary_timeout_s > 0):
            raise ConfigError(f"JinaConfig timeouts must be > 0 s, got {self.timeout_s} and {self.summary_timeout_s}")
        if self.max_page_tokens < 100:
            raise ConfigError(f"JinaConfig.max_page_tokens must be >= 100, got {self.max_page_tokens}")
        if self.tokenizer != "approx" and not self.tokenizer.startswith("tiktoken:"):
            raise ConfigError(f"JinaConfig.tokenizer must be 'approx' or 'tiktoken:<encoding>', got {self.tokenizer!r}")


class KeyRing:
    """Jina keys in rotation (``$JINA_API_KEYS``: one key, or several separated by commas).

    One key is current at a time. :meth:`rotate` moves past a key that failed: one refused (401) or
    out of credit (402) is retired for the life of the ring; one rate-limited (429) stays in the ring
    (Jina's limits are per key and refill). Thread-safe: when several threads see the same key fail,
    the ring moves on once.

    Args:
        keys: The keys, or the variable's value (split on commas; blanks and repeats dropped).

    Raises:
        ConfigError: When no key is given.
    """

    def __init__(self, keys: str | Sequence[str]) -> None:
        parts = keys.split(",") if isinstance(keys, str) else list(keys)
        self._live = list(dict.fromkeys(k.strip() for k in parts if k.strip()))
        register(*self._live)  # scrubbed from logs and printed errors from now on
        if not self._live:
            raise ConfigError(f"{KEY_VAR} holds no key: set it to a Jina key, or to several separated by commas")
        self.size = len(self._live)
        self._i = 0
        self._lock = threading.Lock()

    @property
    def live(self) -> int:
        """How many keys are not retired."""
        with self._lock:
            return len(self._live)

    def current(self) -> str:
        """The key to use now."""
        with self._lock:
            return self._live[self._i]

    def rotate(self, key: str, retire: bool) -> str | None:
        """Move past ``key`` after it failed; returns the next key to try, or ``None`` when no other key is left.

        The last live key is never retired: with one key left, the executor's circuit breaker paces the
        probes, so a key topped up with credit is used again.

        Args:
            key: The key that failed.
            retire: Drop it for good (401 refused, 402 out of credit) rather than only moving on (429).
        """
        with self._lock:
            if key not in self._live:  # retired by another thread already: the ring has moved on
                return self._live[self._i]
            at = self._live.index(key)
            if retire and len(self._live) > 1:
                self._live.pop(at)
                self._i = at % len(self._live)
            elif self._live[self._i] == key:
                self._i = (at + 1) % len(self._live)
            nxt = self._live[self._i]
            return None if nxt == key else nxt


class JinaBackend:
    """Jina Reader as a backend for ``visit`` (``search`` / ``google_scholar`` are Serper's).

    Args:
        api_key: Jina key (``$JINA_API_KEYS``), or several separated by commas (or a :class:`KeyRing`).
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

    def __init__(
        self,
        api_key: str | KeyRing,
        config: JinaConfig | None = None,
        *,
        summariser: Extractor | None = None,
        summariser_id: str = "",
        extractor: Extractor | None = None,
        transport: httpx.BaseTransport | None = None,
        raw_cache: RawCache | None = None,
    ) -> None:
        import httpx  # lazily: gym.make in sim mode should not pay for it

        config = config or JinaConfig()
        if config.tokenizer != "approx":
            cut_to_tokens("probe", 1, config.tokenizer)  # a missing encoding fails now, not mid-episode
        self.config = config
        self.summariser = summariser
        self.extractor = extractor or DeterministicExtractor()
        self.raw_cache = raw_cache
        self._base = config.base_url.require("JinaConfig.base_url")  # read now, held in memory only
        self._credentials = sorted(url_credentials(self._base), key=len, reverse=True)
        register(*self._credentials)
        self._post = "?" in self._base  # a query of the base URL is the base host's: never part of a page's URL
        self.cache_namespace = cache_key(
            "jina",
            config.base_url.shown(),
            config.max_page_tokens,
            config.tokenizer,
            summariser_id if summariser else "deterministic",
            config.summary_temperature,
            repr(self.extractor),
        )
        self.keys = api_key if isinstance(api_key, KeyRing) else KeyRing(api_key)
        self._client = httpx.Client(timeout=config.timeout_s, transport=relative_to(self._base, transport))
        self._events: EventSink = lambda _name: None

    def bind_events(self, sink: EventSink) -> None:
        """Report events (``jina.raw_cache_hits``, ``jina.http_requests``, ``jina.key_rotations``, ``jina.summariser_*``) to ``sink``."""
        self._events = sink

    def fetch(self, url: str) -> str:
        """The Jina Reader text of ``url`` (from the raw cache when fresh).

        Raises:
            UpstreamError: On a failed request, or a page whose target answered an error.
        """
        key = cache_key("jina-raw", self.config.base_url.shown(), url)
        text = self.raw_cache.get(key, self.config.raw_ttl_s) if self.raw_cache is not None else None
        if text is not None:
            self._events("jina.raw_cache_hits")
            return text
        if self._post:
            text = self._get(self._base, method="POST", data={"url": url})
        else:
            text = self._get(join_url(self._base, f"/{url}"))
        text = self._masked(text)
        warning = target_error(text)
        if warning:  # Jina answers 200 with a Warning line when the page itself failed (its 404, 500)
            raise UpstreamError(f"jina read {url} but the page failed: {warning}", retryable=False, page_error=True)
        if self.raw_cache is not None:
            self.raw_cache.put(key, text)
        return text

    def _masked(self, text: str) -> str:
        """``text`` without the base URL's credentials (a reader or proxy that echoes its request).

        Values under 8 characters stay (``?format=json``): masking them would change ordinary words of the page.
        """
        for value in self._credentials:
            if len(value) >= 8:
                text = text.replace(value, MASK)
        return text

    def _get(self, target: str, method: str = "GET", **kw: object) -> str:
        """``method target`` with the current key, moving through the key ring on 401 / 402 / 429 (each key once).

        Raises:
            UpstreamError: An error not about the key; or, once every live key was tried, the rate-limit error of
                the key the ring came back to (retryable), or the last key's own error (401 / 402 on the last
                live key: not retryable, opens the circuit).
        """
        tried: dict[str, UpstreamError] = {}
        key = self.keys.current()
        while True:
            self._events("jina.http_requests")
            try:
                return request(
                    self._client, "jina", KEY_VAR, method, target, headers={"Authorization": f"Bearer {key}"}, **kw
                ).text
            except UpstreamError as e:
                tried[key] = e
                nxt = self.keys.rotate(key, retire=e.status in (401, 402)) if e.status in ROTATE_ON else None
                if nxt is None:
                    raise
                if nxt in tried:  # every live key was tried: its own (rate-limit) error lets the executor back off
                    raise tried[nxt] from None
                self._events("jina.key_rotations")
                log.warning(
                    "jina answered %s to key %d of %d; trying the next key of %s",
                    e.status,
                    len(tried),
                    self.keys.size,
                    KEY_VAR,
                )
                key = nxt

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
                evidence, summary = map(valid_unicode, self.summariser(title, content, goal))  # no lone surrogates
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
        """Close the HTTP connection pool, and the summariser's when it has one."""
        self._client.close()
        close = getattr(self.summariser, "close", None)
        if callable(close):
            close()
