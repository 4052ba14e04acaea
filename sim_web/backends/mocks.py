"""Local stand-ins for Serper and Jina Reader that speak their real wire formats, with injectable faults.

Real loopback servers (threads, port 0), so the backends' real httpx path runs. They live in the package
(not only in the tests) because ``sim-web sim-to-real`` runs against them when ``SIM_TO_REAL_MOCK=1``, and
``benchmarks/bench_real.py`` measures the executor against them. Content comes from a backend over an
index (the sim backend), shaped as the real services shape it:

* :class:`MockSerper`: ``POST /search`` and ``POST /scholar`` with ``X-API-KEY``; a JSON reply with
  ``searchParameters``, ``organic[{title, link, snippet, position, date?}]``, ``credits``; a bad key
  gets ``403 {"message": "Unauthorized.", "statusCode": 403}`` as Serper answers.
* :class:`MockJina`: ``GET /{url}`` with ``Authorization: Bearer``; ``Title: ...\\n\\nURL Source: ...\\n\\n
  Markdown Content:\\n...`` for a page of the index, Jina's JSON error envelope otherwise (422); a bad
  key gets 401.

Faults are queued with :meth:`MockServer.inject` (one per request, in order) or made permanent with
:meth:`MockServer.always`: ``Fault(status=429, retry_after="2")``, ``Fault(status=503)``,
``Fault(delay_s=1.0)`` (a timeout for a client with a shorter one), ``Fault(body=...)`` (malformed
or truncated bodies), ``Fault(kind="empty")`` (no organic results), ``Fault(kind="warning")``
(Jina's 200 whose target page failed). Every request is logged in :attr:`MockServer.requests` with
its arrival time (``time.monotonic()``), the key it carried and the fault it got.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from wiki_index.types import url_to_title


@dataclass(frozen=True)
class Fault:
    """One injected misbehaviour.

    Attributes:
        status: Answer this HTTP status (with the service's error body unless ``body`` is given).
        retry_after: A ``Retry-After`` header value.
        delay_s: Sleep this long before answering (a timeout for a client with a shorter one).
        body: Send these bytes as the body (malformed / truncated JSON).
        kind: ``"empty"`` (Serper: no organic results) or ``"warning"`` (Jina: 200 with a target error).
    """

    status: int | None = None
    retry_after: str | None = None
    delay_s: float = 0.0
    body: bytes | None = None
    kind: str | None = None


ERROR_MESSAGES = {
    400: "Bad request.",
    401: "Unauthorized.",
    402: "Insufficient balance.",
    403: "Unauthorized.",
    422: "No content available.",
    429: "Too many requests.",
    451: "Domain blocked.",
    500: "Internal error.",
    502: "Bad gateway.",
    503: "Service unavailable.",
}


class MockServer:
    """The shared machinery: a threaded loopback server, request log, fault queue, key check.

    Args:
        content: A backend (search / scholar / visit-able sim backend) the replies are built from.
        key: The API key the server accepts, or several (any of them is accepted).
    """

    def __init__(self, content: Any, key: str | Iterable[str] = "test-key") -> None:
        self.content = content
        self.keys = frozenset([key] if isinstance(key, str) else key)
        self.key = next(iter(sorted(self.keys)))
        self.requests: list[dict[str, Any]] = []
        self._faults: list[Fault] = []
        self._always: Fault | None = None
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as two writes: without this, 40 ms delayed ACKs

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                server._handle(self, b"")

            def do_POST(self) -> None:  # noqa: N802
                server._handle(self, self.rfile.read(int(self.headers.get("Content-Length", 0))))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def inject(self, *faults: Fault) -> None:
        """Queue faults, one per coming request."""
        with self._lock:
            self._faults.extend(faults)

    def always(self, fault: Fault | None) -> None:
        """Apply ``fault`` to every request once the queue is empty (``None``: behave again)."""
        with self._lock:
            self._always = fault

    def count(self, path_prefix: str = "") -> int:
        """How many requests reached the server (whose path starts with ``path_prefix``)."""
        with self._lock:
            return sum(r["path"].startswith(path_prefix) for r in self.requests)

    def close(self) -> None:
        """Stop the server."""
        self._server.shutdown()
        self._server.server_close()

    def _handle(self, h: BaseHTTPRequestHandler, raw: bytes) -> None:
        with self._lock:
            fault = self._faults.pop(0) if self._faults else self._always
            self.requests.append(
                {
                    "method": h.command,
                    "path": h.path,
                    "headers": dict(h.headers),
                    "body": raw,
                    "t": time.monotonic(),
                    "key": self.presented_key(h),
                    "fault": fault,
                }
            )
        fault = fault or Fault()
        if fault.delay_s:
            time.sleep(fault.delay_s)
        if not self.authorised(h):
            status, ctype, body = self.error(401 if isinstance(self, MockJina) else 403)
        elif fault.status is not None:
            status, ctype, body = self.error(fault.status)
        else:
            status, ctype, body = self.answer(h.path, raw, fault)
        if fault.body is not None:
            body = fault.body
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        if fault.retry_after is not None:
            h.send_header("Retry-After", fault.retry_after)
        try:
            h.end_headers()
            h.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out and left: what a timeout test wants
            pass

    def authorised(self, h: BaseHTTPRequestHandler) -> bool:
        """Whether the request carries an accepted key."""
        return self.presented_key(h) in self.keys

    def presented_key(self, h: BaseHTTPRequestHandler) -> str | None:
        """The API key the request carries (``None``: none)."""
        raise NotImplementedError

    def error(self, status: int) -> tuple[int, str, bytes]:
        raise NotImplementedError

    def answer(self, path: str, raw: bytes, fault: Fault) -> tuple[int, str, bytes]:
        raise NotImplementedError


class MockSerper(MockServer):
    """``google.serper.dev``: ``/search`` and ``/scholar``."""

    def presented_key(self, h: BaseHTTPRequestHandler) -> str | None:
        """The ``X-API-KEY`` header."""
        return h.headers.get("X-API-KEY")

    def error(self, status: int) -> tuple[int, str, bytes]:
        return (
            status,
            "application/json",
            json.dumps({"message": ERROR_MESSAGES.get(status, "Error."), "statusCode": status}).encode(),
        )

    def answer(self, path: str, raw: bytes, fault: Fault) -> tuple[int, str, bytes]:
        body = json.loads(raw or b"{}")
        q = body.get("q", "")
        if path == "/search":
            items = (
                []
                if fault.kind == "empty"
                else [
                    {
                        "title": r.title,
                        "link": r.link,
                        "snippet": r.snippet,
                        "position": i,
                        **({"date": "Jan 1, 2024"} if i == 1 else {}),
                    }
                    for i, r in enumerate(self.content.search(q, 10), 1)
                ]
            )
            payload = {
                "searchParameters": {**body, "type": "search", "engine": "google"},
                "organic": items,
                "credits": 1,
            }
        elif path == "/scholar":
            items = (
                []
                if fault.kind == "empty"
                else [
                    {
                        "title": r.title,
                        "link": r.link,
                        "publicationInfo": r.publication_info,
                        "snippet": r.snippet,
                        "year": 2000 + i,
                        "citedBy": 10 * i,
                        **({"pdfUrl": r.link + ".pdf"} if i == 1 else {}),
                    }
                    for i, r in enumerate(self.content.scholar(q, 10), 1)
                ]
            )
            payload = {"searchParameters": {**body, "type": "scholar"}, "organic": items, "credits": 1}
        else:
            return self.error(404)
        return 200, "application/json", json.dumps(payload).encode()


class MockJina(MockServer):
    """``r.jina.ai``: ``GET /{url}`` (or ``POST /`` with the form body ``url=...``) in text mode."""

    def presented_key(self, h: BaseHTTPRequestHandler) -> str | None:
        """The bearer token of the ``Authorization`` header."""
        auth = h.headers.get("Authorization") or ""
        return auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None

    def error(self, status: int) -> tuple[int, str, bytes]:
        msg = ERROR_MESSAGES.get(status, "Error.")
        env = {
            "data": None,
            "code": status,
            "name": "MockError",
            "status": status * 100,
            "message": msg,
            "readableMessage": f"MockError: {msg}",
        }
        return status, "application/json", json.dumps(env).encode()

    def page(self, url: str) -> tuple[str, str] | None:
        """``(title, text)`` of the index page at ``url``, or ``None``."""
        title = url_to_title(url)
        store = self.content.index.store
        pid = store.resolve(title) if title else None
        if pid is None:
            return None
        passages = store.passages(pid)
        return passages[0].title, "\n\n".join(p.text for p in passages)

    def answer(self, path: str, raw: bytes, fault: Fault) -> tuple[int, str, bytes]:
        url = path[1:]
        if raw:  # POST /: the page in the form body (``url=...``), as the reader also accepts
            url = urllib.parse.parse_qs(raw.decode("utf-8", "replace")).get("url", [""])[0]
        if fault.kind == "warning":
            text = (
                f"Title: Not Found\n\nURL Source: {url}\n\nWarning: Target URL returned error 404: Not Found\n\n"
                "Markdown Content:\nNot Found"
            )
            return 200, "text/plain; charset=utf-8", text.encode()
        page = self.page(url)
        if page is None:
            return self.error(422)
        title, text = page
        return (
            200,
            "text/plain; charset=utf-8",
            f"Title: {title}\n\nURL Source: {url}\n\nMarkdown Content:\n{text}".encode(),
        )
