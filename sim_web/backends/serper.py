"""Serper (google.serper.dev): the real ``search`` and ``google_scholar`` backends.

Requests are Tongyi DeepResearch's (``inference/tool_search.py``, ``tool_scholar.py``): ``POST /search``
with ``{"q", "location", "gl", "hl"}`` (a query with a CJK character asks for China / cn / zh-cn) and
``POST /scholar`` with ``{"q"}``, the key in ``X-API-KEY``. Unlike upstream, the HTTP status is checked
(see :mod:`sim_web.backends.upstream`), so a 403 or a 429 is an error the executor handles, never a
silent "No results found"; so is Serper's error body under a 200 (``{"message", "statusCode"}``).
Raw replies are cached apart from parsed results, by request content, and only once they parsed: a
cached reply that no longer parses (cut, or of another shape) is a miss, fetched again and rewritten.
Text is made valid Unicode (a snippet cut mid-emoji carries a lone surrogate) before anything sees it.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from sim_web.backends.upstream import (
    EventSink,
    RawCache,
    UpstreamError,
    base_url_secret,
    cache_key,
    join_url,
    relative_to,
    request,
    status_error,
)
from sim_web.protocol.arguments import valid_unicode_value
from sim_web.protocol.results import EMPTY_SCHOLAR, EMPTY_SEARCH, ScholarResult, SearchResult, VisitResult
from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from simweb_core.secret import Secret

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)
R = TypeVar("R", SearchResult, ScholarResult)
KEY_VAR = "SERPER_KEY_ID"
BASE_URL_VAR = "SERPER_BASE_URL"
DEFAULT_BASE_URL = "https://google.serper.dev"
_CJK = re.compile("[\u4e00-\u9fff]")
#: Part of the results cache namespace: bump it when parsed results change meaning, so older rows are not read.
RESULT_SCHEMA = 2


@dataclass(frozen=True)
class SerperConfig:
    """Where and how to call Serper."""

    base_url: Secret = help_field(
        help=f"Serper's API root (default ${BASE_URL_VAR}, else {DEFAULT_BASE_URL}; a proxy's or a mock's URL).",
        default_factory=lambda: Secret.from_env(BASE_URL_VAR, DEFAULT_BASE_URL),
    )
    timeout_s: float = help_field(20.0, "HTTP timeout of one request, in seconds.")
    location: str = help_field("United States", "Serper `location` for queries without CJK characters.")
    gl: str = help_field("us", "Serper `gl` (country) for queries without CJK characters.")
    hl: str = help_field("en", "Serper `hl` (language) for queries without CJK characters.")
    raw_ttl_s: float | None = help_field(
        7 * 86400.0, "How long a raw reply stays valid in the persistent cache (None: forever)."
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", base_url_secret(self.base_url, BASE_URL_VAR, "SerperConfig.base_url"))
        if not self.timeout_s > 0:
            raise ConfigError(f"SerperConfig.timeout_s must be > 0 seconds, got {self.timeout_s}")


def request_body(query: str, config: SerperConfig) -> dict[str, str]:
    """Tongyi's search body: CJK queries search from China in Chinese, the rest with ``config``'s locale."""
    if _CJK.search(query):
        return {"q": query, "location": "China", "gl": "cn", "hl": "zh-cn"}
    return {"q": query, "location": config.location, "gl": config.gl, "hl": config.hl}


def _str(item: dict[str, Any], key: str) -> str | None:
    v = item.get(key)
    return None if v is None else str(v)


def _number_or_text(v: Any) -> int | str | None:
    """``year`` / ``citedBy`` as given (Tongyi prints ``str(value)``): an integer or a text stays one, the rest is its text."""
    return v if v is None or isinstance(v, (int, str)) else str(v)


def error_body(payload: Any) -> UpstreamError | None:
    """The error that Serper's error body (``{"message": "Unauthorized.", "statusCode": 403}``) stands for, or ``None``.

    Serper can answer HTTP 200 with it; read as a reply, it would be a silent "No results found".
    """
    if not isinstance(payload, dict) or "organic" in payload:
        return None
    status = payload.get("statusCode")
    if isinstance(status, bool) or not isinstance(status, int) or status < 400:
        return None
    return status_error("serper", KEY_VAR, status, str(payload.get("message", ""))[:300])


def _organic(payload: Any, what: str) -> list[Any] | None:
    """The ``organic`` list of a reply (``None``: no list at all; a wrong shape or an error body is an error)."""
    if not isinstance(payload, dict):
        raise UpstreamError(f"serper {what} reply is {type(payload).__name__}, expected a JSON object", retryable=True)
    error = error_body(payload)
    if error is not None:
        raise error
    organic = payload.get("organic")
    if organic is None:
        return None
    if not isinstance(organic, list):
        raise UpstreamError(
            f"serper {what} reply has organic of type {type(organic).__name__}, expected a list", retryable=True
        )
    return organic


def _items(organic: list[Any] | None, required: str) -> list[dict[str, Any]]:
    """The usable items of an ``organic`` list: objects with a ``required`` field."""
    return [o for o in organic or [] if isinstance(o, dict) and o.get(required)]


def parse_search(payload: Any, k: int) -> list[SearchResult]:
    """Serper ``/search`` JSON -> results (``title, link, snippet, date, source``), at most ``k``.

    No ``organic`` gives ``[]`` ("No results found"); an empty one ``[EMPTY_SEARCH]`` (Tongyi's 0-results header).

    Raises:
        UpstreamError: For a reply of the wrong shape (retryable) or Serper's error body (classified by its status).
    """
    organic = _organic(valid_unicode_value(payload), "search")
    if organic == []:
        return [EMPTY_SEARCH]
    return [
        SearchResult(
            title=str(o.get("title", "")),
            link=str(o["link"]),
            snippet=_str(o, "snippet"),
            date=_str(o, "date"),
            source=_str(o, "source"),
        )
        for o in _items(organic, "link")[:k]
    ]


def parse_scholar(payload: Any, k: int) -> list[ScholarResult]:
    """Serper ``/scholar`` JSON -> results (``title, pdfUrl, link, publicationInfo, year, citedBy, snippet``).

    No ``organic`` gives ``[]`` ("No results found"); an empty one ``[EMPTY_SCHOLAR]`` (Tongyi's 0-results header).

    Raises:
        UpstreamError: For a reply of the wrong shape (retryable) or Serper's error body (classified by its status).
    """
    organic = _organic(valid_unicode_value(payload), "scholar")
    if organic == []:
        return [EMPTY_SCHOLAR]
    return [
        ScholarResult(
            title=str(o["title"]),
            pdf_url=_str(o, "pdfUrl"),
            link=_str(o, "link"),
            publication_info=_str(o, "publicationInfo"),
            year=_number_or_text(o.get("year")),
            cited_by=_number_or_text(o.get("citedBy")),
            snippet=_str(o, "snippet"),
        )
        for o in _items(organic, "title")[:k]
    ]


def _json(text: str, path: str) -> Any:
    """The JSON of a reply to ``path``.

    Raises:
        UpstreamError: Retryable, when it is not JSON (a cut reply).
    """
    try:
        return json.loads(text)
    except ValueError:
        raise UpstreamError(f"serper {path} reply is not JSON: {text[:120]!r}", retryable=True) from None


class SerperBackend:
    """Serper as a backend for ``search`` and ``google_scholar`` (``visit`` is Jina's).

    Args:
        api_key: Serper key (``$SERPER_KEY_ID``).
        config: Endpoint, timeout and locale (default: ``SerperConfig()``, built now, so ``$SERPER_BASE_URL`` is read now).
        transport: An httpx transport (recording / replaying), or ``None`` for the network.
        raw_cache: Persistent store of raw replies (``None``: no raw cache).
    """

    name = "serper"
    tools = frozenset({"search", "scholar"})

    def __init__(
        self,
        api_key: str,
        config: SerperConfig | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        raw_cache: RawCache | None = None,
    ) -> None:
        import httpx  # lazily: gym.make in sim mode should not pay for it

        self.config = config = config or SerperConfig()
        self.raw_cache = raw_cache
        self._base = config.base_url.require("SerperConfig.base_url")  # read now, held in memory only
        self.cache_namespace = cache_key(
            "serper", RESULT_SCHEMA, config.base_url.shown(), config.location, config.gl, config.hl
        )
        self._client = httpx.Client(
            timeout=config.timeout_s,
            transport=relative_to(self._base, transport),
            headers={"X-API-KEY": api_key, "Content-Type": "application/json"},
        )
        self._events: EventSink = lambda _name: None

    def bind_events(self, sink: EventSink) -> None:
        """Report events (``serper.raw_cache_hits``, ``serper.raw_cache_bad_rows``, ``serper.http_requests``) to ``sink``."""
        self._events = sink

    def _post(self, path: str, body: dict[str, str], parse: Callable[[Any], list[R]]) -> list[R]:
        """``parse`` of the reply to ``POST path``: from the raw cache when a fresh row parses, else from Serper
        (cached only once it parsed, so a malformed reply or an error body is never kept)."""
        url = join_url(self._base, path)
        key = cache_key("serper-raw", self.config.base_url.shown().rstrip("/") + path, body)
        text = self.raw_cache.get(key, self.config.raw_ttl_s) if self.raw_cache is not None else None
        if text is not None:
            try:
                results = parse(_json(text, path))
                self._events("serper.raw_cache_hits")
                return results
            except UpstreamError as e:  # cut, or kept before replies were checked: a miss, rewritten below
                self._events("serper.raw_cache_bad_rows")
                log.warning(
                    "raw cache row of serper %s %r does not parse (%s): fetching it again", path, body.get("q"), e
                )
        self._events("serper.http_requests")
        text = request(self._client, "serper", KEY_VAR, "POST", url, content=json.dumps(body).encode()).text
        results = parse(_json(text, path))
        if self.raw_cache is not None:
            self.raw_cache.put(key, text)
        return results

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        """Google web results for ``query`` (Serper's default 10 per page, cut to ``k``).

        Raises:
            UpstreamError: On a failed request, a malformed reply or Serper's error body.
        """
        return self._post("/search", request_body(query, self.config), lambda payload: parse_search(payload, k))

    def scholar(self, query: str, k: int = 10) -> list[ScholarResult]:
        """Google Scholar results for ``query``.

        Raises:
            UpstreamError: On a failed request, a malformed reply or Serper's error body.
        """
        return self._post("/scholar", {"q": query}, lambda payload: parse_scholar(payload, k))

    def visit(self, url: str, goal: str) -> VisitResult:
        """Not served here (the executor routes ``visit`` to the Jina backend)."""
        raise UpstreamError("serper does not serve visit (configure the jina backend)", retryable=False)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()
