"""The tool server's bounded thread pool, shared fairly between clients.

Every tool call of every route (``/tools/{name}``, ``/backend/*``, ``/retrieve``) runs here, never on the event loop,
so ``/health`` is answered however busy the tools are. Three bounds:

* at most ``threads`` calls run at once; the others wait in one queue per client, and a thread that comes free
  takes the next call of the client after the one it last served (round robin), so a client with many calls
  waiting cannot keep every thread while another client's call waits;
* past ``max_in_progress`` calls in progress (running or waiting; by default ``4 x threads``) the server answers 503
  with ``Retry-After`` (retryable: every Search-R1-family client retries it);
* with ``per_client`` set, past that many calls in progress from one client the server answers 429, so one
  caller cannot fill the admission window either.

A client is the peer address of the connection, never a header: uvicorn rewrites the peer from ``X-Forwarded-For``
only for the proxies ``sim-web serve --trusted-proxies`` names (:func:`~sim_web.serve.conn.uvicorn_config`). Every
loopback address is one client (anyone on this machine can send from any of 127.0.0.0/8), and an IPv4 address
mapped into IPv6 is that IPv4 address. Behind a load balancer that is not named, all calls are one client: leave
``per_client`` off and cap clients at the balancer, or name it.
"""

from __future__ import annotations

import asyncio
import functools
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from fastapi import HTTPException

_T = TypeVar("_T")
THREAD_PREFIX = "sim-web-tool"  #: the name prefix of the pool's threads (tests check where a call ran)
#: Request bodies up to this size are decoded on the event loop; larger ones on the pool (:func:`decode_body`).
INLINE_DECODE_BYTES = 64 * 1024


LOOPBACK_CLIENT = "loopback"  #: the key of every loopback peer (127.0.0.0/8, ::1)


def client_key(scope: Mapping[str, Any]) -> str:
    """Who sends a request (an ASGI scope, HTTP or WebSocket), for the per-client shares of calls and sessions.

    Returns:
        The peer address; :data:`LOOPBACK_CLIENT` for any loopback one; ``""`` when the server does not know it.
    """
    peer = scope.get("client")
    return peer_key(str(peer[0])) if peer else ""


@functools.lru_cache(maxsize=4096)
def peer_key(host: str) -> str:
    """The client key of a peer address (see :func:`client_key`); a name that is no address is kept as it is."""
    import ipaddress

    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return LOOPBACK_CLIENT if address.is_loopback else str(address)


async def decode_body(
    run: Callable[..., Awaitable[Any]], decoder: Callable[[Any], _T], raw: bytes | str, client: str
) -> _T:
    """``decoder(raw)``: on the event loop for a small body, else on the tool threads as ``client``.

    A C decoder still takes time in proportion to a body's items (a 1 MiB JSON body of empty arrays is hundreds of
    thousands of lists), and the event loop answers ``/health``: a large body is decoded where a tool call would run,
    under the same per-client share.

    Args:
        run: The pool's :meth:`ToolPool.run`.
        decoder: ``json.loads`` or another ``bytes -> value``.
        raw: The body (or a WebSocket message's text).
        client: Who sent it.

    Raises:
        HTTPException: 503 or 429 from the pool; whatever ``decoder`` raises.
    """
    if len(raw) <= INLINE_DECODE_BYTES:
        return decoder(raw)
    return await run(decoder, raw, client=client)  # type: ignore[no-any-return]


class ToolPool:
    """Tool calls on threads of their own, off the event loop, in round robin over clients.

    Only the event loop's thread touches the counters and queues (no locks).

    Args:
        threads: Calls that run at once.
        per_client: Calls one client may have in progress (running or waiting); 0: no cap.
        max_in_progress: Calls running or waiting, all clients together, past which calls get 503 (``None``:
            ``4 x threads``).

    Attributes:
        in_progress: Calls running or waiting, all clients together.
        running: Calls running on a thread.
    """

    def __init__(self, threads: int, per_client: int = 0, max_in_progress: int | None = None) -> None:
        self.threads, self.per_client = threads, per_client
        self.max_in_progress = 4 * threads if max_in_progress is None else max_in_progress
        self.in_progress = self.running = 0
        self._by_client: dict[str, int] = {}
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix=THREAD_PREFIX)

    async def run(self, fn: Callable[..., _T], *args: Any, client: str = "") -> _T:
        """Run ``fn(*args)`` on a tool thread when ``client``'s turn comes.

        Args:
            fn: The call.
            *args: Its arguments.
            client: Who asks (the peer address); calls of one client are served in order.

        Raises:
            HTTPException: 503 (``Retry-After``) when ``max_in_progress`` calls are in progress; 429 when ``client``
                has ``per_client`` calls in progress.
        """
        self._admit(client)
        self.in_progress += 1
        self._by_client[client] = self._by_client.get(client, 0) + 1
        try:
            await self._turn(client)
            try:
                return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)
            finally:
                self._release()
        finally:
            self.in_progress -= 1
            left = self._by_client[client] - 1
            if left:
                self._by_client[client] = left
            else:
                del self._by_client[client]

    def _admit(self, client: str) -> None:
        if self.in_progress >= self.max_in_progress:
            raise HTTPException(
                503,
                f"server busy: {self.in_progress} tool calls in progress; retry later",
                headers={"Retry-After": "1"},
            )
        mine = self._by_client.get(client, 0)
        if self.per_client and mine >= self.per_client:
            raise HTTPException(
                429,
                f"too many calls from this client: {mine} in progress, the server allows {self.per_client} per "
                f"client (sim-web serve --max-calls-per-client); wait for an answer before sending more",
                headers={"Retry-After": "1"},
            )

    async def _turn(self, client: str) -> None:
        """Return when a thread is ours: at once if one is free and nobody waits, else in round robin."""
        if self.running < self.threads and not self._waiting:
            self.running += 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(client, deque()).append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # the thread was handed to us: hand it on
                self._release()
            raise  # a cancelled turn left in its queue is skipped by _release

    def _release(self) -> None:
        """Hand the thread to the next client's oldest waiting call, or free it."""
        while self._waiting:
            client, queue = next(iter(self._waiting.items()))
            turn = queue.popleft()
            if queue:
                self._waiting.move_to_end(client)  # this client's next call waits for the others' turns
            else:
                del self._waiting[client]
            if not turn.done():
                turn.set_result(None)  # ``running`` unchanged: the thread passes on
                return
        self.running -= 1

    def shutdown(self) -> None:
        """Stop the threads (queued calls are cancelled)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
