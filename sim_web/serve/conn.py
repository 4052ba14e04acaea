"""Connection limits of the tool server: a deadline for each request and a cap on open connections.

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive``, but it has no deadline for the headers
of a request: a connection that sends nothing, or half a request line, stays open for as long as the client
likes. Enough of them ("slowloris") use up the process's file descriptors, and then no health check or tool call
gets in. :func:`uvicorn_config` serves with a subclass of uvicorn's HTTP protocol that adds:

* a request deadline: from the moment a connection opens, and from the first byte of each later request, the
  request (its headers, and its body when it has one) must have arrived within ``header_timeout_s``, else the
  connection is closed (with a 408 when part of an unanswered request arrived);
* a connection cap: at ``max_connections`` open connections, a new one closes the connection that has waited
  longest on its client (for a request, or the rest of one; connections that never completed a request go
  first, then idle keep-alive ones), so that slow connections cannot lock out a health check; when every
  connection has a request being answered, the new one is answered 503 (``Retry-After: 1``) and closed;
* room for ``/health``: WebSocket connections (``/ws``) count towards the cap but may hold at most
  :attr:`ConnectionLimits.websocket_cap` of it, so that some connections are always left for plain HTTP (where
  the waiting ones can be closed to make room); a handshake past it is answered 503 before the upgrade;
* no proxy headers unless asked: uvicorn trusts ``X-Forwarded-For`` from 127.0.0.1 by default, which lets any local
  process pose as any client; here only the proxies named in ``trusted_proxies`` (``--trusted-proxies``) are.

uvicorn's own ``limit_concurrency`` is not used: it answers 503 to every request once the cap is reached, so a
few hundred slow connections would lock out everyone until they time out.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from dataclasses import dataclass
from typing import Any

from simweb_core.fields import help_field

log = logging.getLogger(__name__)
#: Idle keep-alive connections live this long (uvicorn's default is 5 s): a rollout worker pauses
#: for a whole LLM turn between two tool calls, and a closed connection costs it a new handshake
#: or, for clients that do not retry, an error.
KEEP_ALIVE_S = 120
#: A request must have arrived this long after a connection opens (or after the request's first byte):
#: generous for a slow link, short enough that a stalled connection soon gives its descriptor back.
HEADER_TIMEOUT_S = 20.0
_BUSY = b'{"detail":"server busy: too many open connections; retry later"}'
_WS_BUSY = b'{"detail":"server busy: too many WebSocket connections; retry later"}'


def _refusal(body: bytes) -> bytes:
    """A whole 503 answer (``Retry-After: 1``, connection closed) with the JSON ``body``."""
    return (
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
        b"connection: close\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


_REFUSED, _REFUSED_WS = _refusal(_BUSY), _refusal(_WS_BUSY)


def default_max_connections() -> int:
    """A quarter of this process's open-file limit (see :attr:`ConnectionLimits.backlog` for the rest)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 1 << 20 if soft == resource.RLIM_INFINITY else max(8, soft // 4)


@dataclass(frozen=True)
class ConnectionLimits:
    """How long connections may stall, and how many may be open, per worker process.

    Raises:
        ConfigError: A non-positive timeout or cap.
    """

    header_timeout_s: float = help_field(
        HEADER_TIMEOUT_S,
        (
            "seconds a connection has to send a whole request, headers and body (from opening, or from a "
            "request's first byte)"
        ),
    )
    keep_alive_s: int = help_field(
        KEEP_ALIVE_S, "seconds an idle keep-alive connection stays open between two requests"
    )
    max_connections: int = help_field(
        help=(
            "open connections per worker, by default a quarter of the open-file limit; past it the one that has "
            "waited longest on its client is closed"
        ),
        default_factory=default_max_connections,
    )

    def __post_init__(self) -> None:
        from simweb_core.errors import ConfigError

        if not self.header_timeout_s > 0 or self.keep_alive_s < 1 or self.max_connections < 1:
            raise ConfigError(
                f"connection limits need header_timeout_s > 0, keep_alive_s >= 1 and max_connections >= 1, "
                f"got {self.header_timeout_s}, {self.keep_alive_s}, {self.max_connections}; e.g. "
                f"{HEADER_TIMEOUT_S}, {KEEP_ALIVE_S} and {default_max_connections()}"
            )

    @property
    def websocket_cap(self) -> int:
        """WebSocket connections per worker: the cap less an eighth of it (at least 2) kept for plain HTTP."""
        return max(1, self.max_connections - max(2, self.max_connections // 8))

    @property
    def backlog(self) -> int:
        """The listen backlog, which is also how many connections asyncio accepts at once.

        Connections are counted against the cap only after they are accepted, so a burst can hold up to about
        three backlogs of descriptors beyond it before the oldest waiting ones are closed. Half the cap keeps
        the default cap plus a burst within the open-file limit: past it, asyncio logs an error for every
        accept it tries and stops accepting for a second.
        """
        return min(2048, max(16, self.max_connections // 2))


def uvicorn_config(
    app: Any, host: str, port: int, limits: ConnectionLimits, trusted_proxies: str = "", **options: Any
) -> Any:
    """A ``uvicorn.Config`` that serves ``app`` with the request deadline, the keep-alive and the connection cap.

    Args:
        app: The ASGI app, or an import string (with ``factory=True`` in ``options``).
        host: The bind address.
        port: The port (0: any free one).
        limits: The connection limits.
        trusted_proxies: Comma-separated addresses whose ``X-Forwarded-For`` names the client (``""``: none; the
            peer address is the client).
        **options: Other ``uvicorn.Config`` arguments (e.g. ``factory``).

    Returns:
        The config (run it with ``uvicorn.Server(config).run()``).
    """
    import uvicorn

    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        timeout_keep_alive=limits.keep_alive_s,
        backlog=limits.backlog,
        http=guarded_protocol(limits),
        proxy_headers=bool(trusted_proxies.strip()),
        forwarded_allow_ips=trusted_proxies.strip() or None,
        **options,
    )


def guarded_protocol(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools when installed, else h11) with ``limits`` enforced on every connection."""
    try:
        import httptools  # noqa: F401 - uvicorn's "auto" choice
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol as Base
    else:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base
    attrs = {
        "header_timeout_s": limits.header_timeout_s,
        "max_connections": limits.max_connections,
        "websocket_cap": limits.websocket_cap,
    }
    return type(f"Guarded{Base.__name__}", (_Guard, Base), attrs)


class _Guard:
    """Mixed into a uvicorn HTTP protocol class: the request deadline and the connection cap (module docstring)."""

    header_timeout_s: float
    max_connections: int
    websocket_cap: int
    # Set by uvicorn's protocol classes:
    connections: set[Any]
    cycle: Any
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport

    def connection_made(self, transport: asyncio.Transport) -> None:
        self._deadline: asyncio.TimerHandle | None = None
        self._partial, self._served = False, 0
        self._waiting_since = self.loop.time()
        room = self._make_room()
        super().connection_made(transport)  # type: ignore[misc]
        if not room:
            log.warning("refused a connection: %d open, every one in the middle of a request", len(self.connections))
            transport.write(_REFUSED)
            transport.close()
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]
        if not self.reading():  # the whole request is in: the app has it
            self._disarm()
        elif not self.transport.is_closing():  # part of a request: its deadline runs from its first byte
            self._partial = True
            self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._served += 1
        self._waiting_since = self.loop.time()

    def handle_websocket_upgrade(self, *args: Any) -> None:
        """Hand the connection to the WebSocket protocol, or answer 503 when WebSockets hold their share of the cap."""
        self._disarm()  # the request is in; from here the WebSocket protocol and the app time it
        sockets = sum(1 for c in self.connections if not isinstance(c, _Guard))
        if sockets >= self.websocket_cap:
            log.warning("refused a WebSocket: %d open, the cap keeps the rest for HTTP", sockets)
            self.transport.write(_REFUSED_WS)
            self.transport.close()
            return
        super().handle_websocket_upgrade(*args)  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)  # type: ignore[misc]

    def reading(self) -> bool:
        """Whether the connection waits on its client: for a request, or for the rest of one's body."""
        return self.cycle is None or self.cycle.response_complete or self.cycle.more_body

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(self.header_timeout_s, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self._partial = None, False

    def _too_slow(self) -> None:
        """The deadline passed with the request incomplete: close (with a 408 when part of one came, unanswered)."""
        self._deadline = None
        if self.transport.is_closing() or not self.reading():
            return
        if self._partial and (self.cycle is None or not self.cycle.response_started or not self.cycle.more_body):
            text = f"request not received in full within {self.header_timeout_s:g} s".encode()
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                b"connection: close\r\ncontent-length: " + str(len(text)).encode() + b"\r\n\r\n" + text
            )
        self.transport.close()

    def _make_room(self) -> bool:
        """Below the cap, or at it after closing the connection that waited longest on its client; False if none waits."""
        if len(self.connections) < self.max_connections:
            return True
        live = [c for c in self.connections if not c.transport.is_closing()]
        if len(live) < self.max_connections:
            return True
        waiting = [c for c in live if isinstance(c, _Guard) and c.reading()]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: (c._served > 0, c._waiting_since))
        log.info(
            "closing a connection idle for %.1f s: %d connections open",
            self.loop.time() - oldest._waiting_since,
            len(live),
        )
        oldest.transport.close()
        return True
