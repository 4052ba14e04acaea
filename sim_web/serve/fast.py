"""The tool server's hot routes without FastAPI's per-request layers: same status codes, same response bytes.

``POST /tools/{name}``, ``POST /backend/{search,scholar,visit}`` and ``POST /retrieve`` are what rollout workers
call thousands of times a second. Profiled under load (``benchmarks/bench_server.py``), FastAPI's
routing, dependency solving, request-model validation and response-model serialisation held the GIL longer than
the search itself did, on a machine where two worker processes share two cores. :class:`HotRoutes` is an ASGI
middleware, the outermost one of the app, that answers a *well-formed* call on those routes directly: the body is
read (only when a ``Content-Length`` within the limit is declared), parsed with :func:`json.loads` as FastAPI
parses it, checked against the same rules as the pydantic request models of :mod:`sim_web.serve.http_models` and
:mod:`sim_web.serve.retrieve`, run on the same bounded :class:`~sim_web.serve.guards.ToolPool`, and encoded with
pydantic-core's JSON encoder, the one FastAPI's response models use.

Every call runs on the pool, whatever the executor (an in-process index included): a search holds the GIL for
most of its time, but on the event loop it also holds the loop, and 32 clients searching then pushed ``/health``
past a second (issue 38). On the pool, the loop only parses, hands over and sends, and the pool shares its threads
between clients in round robin (:mod:`sim_web.serve.pool`).

Everything else goes to the FastAPI app unchanged, with the body read here replayed to it, so every error
answer (401, 404, 413, 422 and their texts) comes from the one place that made it before: a missing or wrong
token, an unknown tool, a body that is not a JSON object of the expected types, a chunked or oversized body,
any other route. Errors raised while a call runs (503 busy, 422 for a bad backend argument, 503 for an unavailable
tool, 500) are answered here as the app's handlers answer them. An agent mistake in a tool call (a missing or
ill-typed argument, a query or goal over its limit) is no HTTP error: the answer is 200 with the text the env
prints for it (:func:`tool_text`), on both paths.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from fastapi import HTTPException
from pydantic_core import to_json

from sim_web.protocol.arguments import valid_unicode
from sim_web.serve.guards import GOAL_MAX, K_MAX, QUERY_MAX, URL_MAX, ToolPool, action_detail, short, token_matches
from sim_web.serve.pool import client_key, decode_body

if TYPE_CHECKING:
    from sim_web.protocol.errors import ActionError
    from sim_web.serve.retrieve import Retriever
    from sim_web.tools import Toolbox

log = logging.getLogger(__name__)
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def tool_args(body: Any) -> tuple[dict[str, Any], str | None] | None:
    """``(arguments, code)`` of a ``ToolRequest`` body that the model would accept as is, else ``None``."""
    if type(body) is not dict or not body.keys() <= {"arguments", "code"}:
        return None
    arguments, code = body.get("arguments", {}), body.get("code")
    if type(arguments) is not dict or (code is not None and type(code) is not str):
        return None
    return arguments, code


def query_args(body: Any) -> tuple[str, int] | None:
    """``(query, k)`` of a ``QueryRequest`` body that the model would accept as is, else ``None``."""
    if type(body) is not dict or not body.keys() <= {"query", "k"}:
        return None
    query, k = body.get("query"), body.get("k", 10)
    if type(query) is not str or type(k) is not int or not 1 <= k <= K_MAX:
        return None
    query = valid_unicode(query)
    return (query, k) if 1 <= len(query) <= QUERY_MAX else None


def visit_args(body: Any) -> tuple[str, str] | None:
    """``(url, goal)`` of a ``VisitRequest`` body that the model would accept as is, else ``None``."""
    if type(body) is not dict or not body.keys() <= {"url", "goal"}:
        return None
    url, goal = body.get("url"), body.get("goal", "")
    if type(url) is not str or type(goal) is not str:
        return None
    url, goal = valid_unicode(url), valid_unicode(goal)
    return (url, goal) if 1 <= len(url) <= URL_MAX and len(goal) <= GOAL_MAX else None


class HotRoutes:
    """ASGI middleware: the hot routes answered here when well-formed; every other request to ``app``.

    Args:
        app: The rest of the ASGI stack (the FastAPI app's middlewares and router).
        toolbox: The served tools (its executor serves the ``/backend`` routes).
        pool: The tool threads (the same pool as the app's routes, so ``/health`` counts these calls too).
        names: The tools served on ``/tools/{name}``.
        max_body_bytes: Larger declared bodies go to the app (whose ``BodyLimit`` answers 413).
        token: The bearer token, or ``None``; a request without the right one goes to the app (401).
        retriever: What answers ``/retrieve`` (``None``: that route goes to the app).
    """

    def __init__(
        self,
        app: Any,
        *,
        toolbox: Toolbox,
        pool: ToolPool,
        names: list[str],
        max_body_bytes: int,
        token: str | None,
        retriever: Retriever | None = None,
    ) -> None:
        self.app, self.pool, self.max_body_bytes, self.token = app, pool, max_body_bytes, token
        self.toolbox, self.executor = toolbox, toolbox.executor
        self.routes: dict[str, Callable[[Any], Any]] = {f"/tools/{n}": self._tool_route(n) for n in names}
        self.routes.update(
            {
                "/backend/search": self._search_route,
                "/backend/scholar": self._query_route(self.executor.scholar),
                "/backend/visit": self._visit_route,
            }
        )
        if retriever is not None:
            self.routes["/retrieve"] = self._retrieve_route(retriever)

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        route = self.routes.get(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if route is None or not self._plain_json(scope.get("headers") or []):
            return await self.app(scope, receive, send)
        body = await _read_body(receive)
        if body is None:  # the client went away mid-body
            return
        client = client_key(scope)
        try:  # a large body is decoded on the pool (json.loads is C, but its time grows with the body's items)
            call = await decode_body(self.pool.run, functools.partial(_parsed_call, route), body, client)
        except HTTPException as e:  # the pool is full (503) or this client has its share (429): Retry-After
            return await _send_json(send, e.status_code, {"detail": e.detail}, e.headers)
        if call is None:
            return await self.app(scope, _replay(body, receive), send)
        await self._answer(call, send, client)

    def _plain_json(self, headers: list[tuple[bytes, bytes]]) -> bool:
        """A declared ``application/json`` body within the limit, and the token when one is required."""
        found = {k: v for k, v in headers if k in (b"content-length", b"content-type", b"authorization")}
        length, media = found.get(b"content-length", b""), found.get(b"content-type", b"")
        if not length.isdigit() or int(length) > self.max_body_bytes:
            return False
        if media.split(b";", 1)[0].strip().lower() != b"application/json":
            return False
        return self.token is None or token_matches(self.token, found.get(b"authorization", b"").decode("latin-1"))

    def _tool_route(self, name: str) -> Callable[[Any], Any]:
        def route(body: Any) -> Any:
            args = tool_args(body)
            return None if args is None else (_run_tool, self.toolbox, name, *args)

        return route

    def _query_route(self, method: Callable[[str, int], list[Any]]) -> Callable[[Any], Any]:
        def route(body: Any) -> Any:
            args = query_args(body)
            return None if args is None else (_results, method, *args)

        return route

    def _search_route(self, body: Any) -> Any:
        from sim_web.serve.retrieve import bulk_args, bulk_search

        one = query_args(body)
        if one is not None:
            return (_results, self.executor.search, *one)
        many = bulk_args(body)
        return None if many is None else (bulk_search, self.executor.search, *many)

    def _retrieve_route(self, retriever: Retriever) -> Callable[[Any], Any]:
        from sim_web.serve.retrieve import retrieve_args

        def route(body: Any) -> Any:
            args = retrieve_args(body)
            return None if args is None else (retriever.retrieve, *args)

        return route

    def _visit_route(self, body: Any) -> Any:
        args = visit_args(body)
        return None if args is None else (_visit, self.executor.visit, *args)

    async def _answer(self, call: tuple[Any, ...], send: Send, client: str) -> None:
        """Run ``call`` (a function and its arguments) on the pool for ``client``; send its JSON, or the error as the
        app would."""
        from sim_web.protocol.errors import ActionError, ToolUnavailableError

        try:
            content = await self.pool.run(*call, client=client)
        except HTTPException as e:  # the pool is full (503) or this client has its share (429): Retry-After
            return await _send_json(send, e.status_code, {"detail": e.detail}, e.headers)
        except ActionError as e:  # a backend route's argument (a tool call answers its mistakes): never echoed
            return await _send_json(send, 422, {"detail": action_detail(e, list(call[2:]))})
        except ToolUnavailableError as e:
            return await _send_json(send, 503, {"detail": short(str(e))})
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", str(len(content)).encode()), (b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": content})


def _parsed_call(route: Callable[[Any], Any], body: bytes) -> Any:
    """``route``'s call for a JSON ``body``, or ``None`` (not JSON, not UTF-8, nested too deep, another shape: the app
    then says what is wrong)."""
    try:
        return route(json.loads(body)) if body else None
    except (ValueError, RecursionError):
        return None


def tool_text(toolbox: Toolbox, name: str, arguments: dict[str, Any], code: str | None) -> str:
    """The text the env prints inside ``<tool_response>`` for this call, agent mistakes included.

    The env answers an agent mistake (a missing or ill-typed argument, too many queries, a query or goal over its
    limit) with ``Error: <message>`` as the observation, and the server promises the env's text: so a mistake is
    a result, not an HTTP error.

    Args:
        toolbox: The served tools.
        name: A served tool's name.
        arguments: The call's arguments (a JSON object).
        code: The code of a ``PythonInterpreter`` call.

    Raises:
        ToolUnavailableError: Every backend failed (the tool could not answer at all).
    """
    from sim_web.protocol.actions import Action
    from sim_web.protocol.errors import ActionError

    try:
        return toolbox.call(Action(kind="tool_call", tool=name, arguments=arguments, code=code))
    except ActionError as e:
        return f"Error: {_env_message(name, e)}"


def _env_message(name: str, error: ActionError) -> str:
    """The message the env shows for ``error``: the toolbox's, except for a PythonInterpreter call without code,
    which the env's parser catches first (with an example call)."""
    from sim_web.protocol.actions import PYTHON_TOOL

    if name == PYTHON_TOOL and error.kind == "missing_argument":
        return _parser_python_message() or str(error)
    return str(error)


@functools.cache
def _parser_python_message() -> str | None:
    """What :func:`~sim_web.protocol.actions.parse_action` says to a PythonInterpreter call without code."""
    from sim_web.protocol.actions import PYTHON_TOOL, parse_action
    from sim_web.protocol.errors import ActionError

    try:
        parse_action(f'<tool_call>\n{{"name": "{PYTHON_TOOL}", "arguments": {{}}}}\n</tool_call>', tools=(PYTHON_TOOL,))
    except ActionError as e:
        return str(e)
    return None


def _run_tool(toolbox: Toolbox, name: str, arguments: dict[str, Any], code: str | None) -> bytes:
    return to_json({"result": tool_text(toolbox, name, arguments, code)})


def _results(method: Callable[[str, int], list[Any]], query: str, k: int) -> bytes:
    return to_json({"results": [asdict(r) for r in method(query, k)]})


def _visit(method: Callable[[str, str], Any], url: str, goal: str) -> bytes:
    return to_json(asdict(method(url, goal)))


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body, or ``None`` when the client disconnects first."""
    chunks, more = [], True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then whatever the connection sends (its disconnect)."""
    given = False

    async def replay() -> dict[str, Any]:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def _send_json(send: Send, status: int, content: Any, headers: dict[str, str] | None = None) -> None:
    """An error answer, built by the same response class as the app's exception handlers."""
    from starlette.responses import JSONResponse

    await JSONResponse(content, status_code=status, headers=headers)({"type": "http"}, _no_receive, send)


async def _no_receive() -> dict[str, Any]:
    return {"type": "http.disconnect"}
