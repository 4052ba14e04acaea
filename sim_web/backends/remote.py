"""A backend that calls a ``sim-web serve`` tool server over HTTP (many rollout workers, one index)."""

from __future__ import annotations

from typing import Any

from sim_web.protocol.errors import BackendError
from sim_web.protocol.results import ScholarResult, SearchResult, VisitResult
from simweb_core.secret import redact_url, scrub


class RemoteBackend:
    """The :class:`~sim_web.protocol.results.Backend` protocol over HTTP.

    Connection errors, timeouts, 429 and 5xx replies are retryable :class:`BackendError` s (the
    executor retries them and falls back); other 4xx replies are not.

    Args:
        base_url: e.g. ``"http://127.0.0.1:8000"``.
        timeout_s: Per-request timeout.
        token: The server's bearer token (``sim-web serve --token``; required when it binds a non-loopback address).
        client: An ``httpx.Client`` to send through instead of a new one (e.g. starlette's ``TestClient``).
    """

    name = "remote"

    def __init__(self, base_url: str, timeout_s: float = 30.0, token: str | None = None, client: Any = None) -> None:
        import httpx

        self.base_url = base_url.rstrip("/")
        self._shown = redact_url(self.base_url)  # messages: no user info, no query
        self._client = client or httpx.Client(
            base_url=self.base_url, timeout=timeout_s, limits=httpx.Limits(max_connections=64)
        )
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        import httpx

        try:
            r = self._client.post(path, json=body, headers=self._headers)
        except httpx.HTTPError as e:
            raise BackendError(f"tool server {self._shown}{path} unreachable: {scrub(str(e))}", retryable=True) from e
        if r.status_code == 429 or r.status_code >= 500:
            raise BackendError(
                f"tool server {self._shown}{path} answered {r.status_code}: {r.text[:200]}", retryable=True
            )
        if r.status_code == 401:
            raise BackendError(
                f"tool server {self._shown} refused the request (401): it needs its bearer token; pass "
                "RemoteBackend(..., token=...) with the token it was started with",
                retryable=False,
            )
        if r.status_code != 200:
            raise BackendError(
                f"tool server {self._shown}{path} rejected the request ({r.status_code}): {r.text[:500]}",
                retryable=False,
            )
        return r.json()

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        """Search through the server."""
        return [SearchResult(**d) for d in self._post("/backend/search", {"query": query, "k": k})["results"]]

    def scholar(self, query: str, k: int = 10) -> list[ScholarResult]:
        """Scholar search through the server."""
        return [ScholarResult(**d) for d in self._post("/backend/scholar", {"query": query, "k": k})["results"]]

    def visit(self, url: str, goal: str) -> VisitResult:
        """Visit a page through the server."""
        return VisitResult(**self._post("/backend/visit", {"url": url, "goal": goal}))

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()
