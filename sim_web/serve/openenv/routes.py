"""The OpenEnv routes of ``sim-web serve``: ``/ws`` (sessions), ``POST /mcp``, ``/metadata``, ``/schema``.

OpenEnv 0.10's WebSocket protocol: the client sends ``{"type": "reset", "data": {"seed", "episode_id",
"options"}}``, ``{"type": "step", "data": <action>}``, ``{"type": "state"}``, ``{"type": "mcp", "data":
<JSON-RPC request>}`` or ``{"type": "close"}``; the server answers ``{"type": "observation" | "state" | "mcp" |
"error", "data": ...}``. There are no plain-HTTP ``/reset``, ``/step``, ``/state`` routes (OpenEnv's "production"
mode: an episode needs a session, which only ``/ws`` has).

A message may carry a ``request_id`` (a string of at most 200 characters, or an integer): its reply carries the same
one, so that a raw client that gave up on a reply can tell it from the next one. OpenEnv's clients send none.

Guards: the tool server's bearer token on ``/ws`` (checked before the socket is accepted), ``POST /mcp``,
``/metadata`` and ``/schema``; the request body limit on ``POST /mcp`` (the app's middleware);
:class:`OpenEnvLimits` (message size, sessions and each client's share of them, idle time); env turns, tool calls
and the encoding of their replies run on the tool threads under the caller's client key, never on the event loop.
A socket that closes or drops lets go of its session (closing the env it owns). Every reply is encodable: a lone
surrogate in what a reply would echo is replaced by U+FFFD, an episode id that is not valid text is a
``VALIDATION_ERROR``, and a failure to answer closes the socket with code 1011 rather than dropping it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from fastapi import Depends, FastAPI, HTTPException, Request, WebSocket
from fastapi.responses import JSONResponse, Response
from starlette.websockets import WebSocketDisconnect

from sim_web.serve.guards import token_matches
from sim_web.serve.openenv.mcp import PARSE_ERROR, SERVER_BUSY, McpContext, encode_reply, handle_rpc, rpc_error
from sim_web.serve.openenv.sessions import CapacityError, EnvSession, OpenEnvLimits, SessionError, SessionRegistry
from sim_web.serve.pool import client_key, decode_body

if TYPE_CHECKING:
    from sim_web.env import WebResearchEnv
    from sim_web.tools import Toolbox

log = logging.getLogger(__name__)
ENV_NAME = "sim-web-research"
DESCRIPTION = (
    "WebResearch-v0 over OpenEnv: answer a question by searching and reading a deterministic simulated web built "
    "from Wikipedia (Tongyi-format tools search, visit, google_scholar, PythonInterpreter when enabled); reward is "
    "the answer's score against the gold answer, on <answer>."
)
MAX_REQUEST_ID = 200  #: characters of a ``/ws`` message's ``request_id``


def add_openenv_routes(
    app: FastAPI,
    *,
    make_env: Callable[[], WebResearchEnv],
    toolbox: Toolbox,
    run: Callable[..., Awaitable[Any]],
    authorized: Callable[[Request], None],
    token: str | None,
    limits: OpenEnvLimits,
    version: str,
) -> SessionRegistry:
    """Mount ``/ws``, ``POST /mcp``, ``GET /metadata`` and ``GET /schema`` on ``app``.

    Args:
        app: The tool server's app.
        make_env: Builds one env per session (the served configuration, PythonInterpreter only if enabled).
        toolbox: The served tools (``tools/list``, ``tools/call``).
        run: ``run(fn, *args)`` on the tool threads (the server's :class:`~sim_web.serve.guards.ToolPool`).
        authorized: The bearer-token dependency of the other guarded routes.
        token: The bearer token (``None``: none), checked on the WebSocket handshake.
        limits: Sessions, message size, idle time.
        version: The server's version (``/metadata``, MCP ``serverInfo``).

    Returns:
        The session registry (its ``live`` count is what tests watch).
    """
    registry = SessionRegistry(make_env, limits)
    ctx = McpContext(toolbox=toolbox, run=run, registry=registry, server_version=version)
    app.state.openenv_sessions = registry
    app.router.on_shutdown.append(registry.close_all)

    guarded = [Depends(authorized)]  # what the env serves is the server's business: behind the token too

    @app.get("/metadata", dependencies=guarded)
    async def metadata() -> dict[str, Any]:
        tools = [s["function"]["name"] for s in toolbox.schemas()]
        return {"name": ENV_NAME, "description": DESCRIPTION, "version": version, "env_id": "WebResearch-v0",
                "tools": tools}  # fmt: skip

    @app.get("/schema", dependencies=guarded)
    async def schema() -> dict[str, Any]:
        return SCHEMAS

    @app.post("/mcp", dependencies=guarded, response_model=None)
    async def mcp(request: Request) -> Response:
        client = client_key(request.scope)
        try:
            body = await decode_body(run, json.loads, await request.body(), client)
        except (ValueError, RecursionError):
            return JSONResponse(rpc_error(PARSE_ERROR, "the body is not JSON"))
        except HTTPException as e:  # a large body, and the pool is full or the client has its share
            return JSONResponse(rpc_error(SERVER_BUSY, str(e.detail)))
        reply = await handle_rpc(body, ctx, client)
        if reply is None:
            return Response(status_code=202)
        return Response(encode_reply(reply), media_type="application/json")

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        if token is not None and not token_matches(token, websocket.headers.get("authorization", "")):
            await websocket.close(
                code=1008, reason="missing or wrong token (Bearer, or Basic with the token as password)"
            )  # before accept: HTTP 403
            return
        await websocket.accept()
        client, attach_id = client_key(websocket.scope), websocket.query_params.get("session_id")
        try:
            if attach_id:
                session_id, session = attach_id, registry.attach(attach_id)
            else:
                registry.check_room(client)  # refused on the loop, with no trip to the tool threads
                session_id, session = await run(registry.open, client, True, client=client)
        except (CapacityError, SessionError, HTTPException) as e:
            code = "SESSION_ERROR" if isinstance(e, SessionError) else "CAPACITY_REACHED"
            await _send_error(websocket, code, str(getattr(e, "detail", e)))
            await websocket.close(code=1013 if code == "CAPACITY_REACHED" else 1008)
            return
        try:
            await _serve_socket(websocket, session, ctx, limits, client)
        finally:  # on a thread (the env may close), to completion even if this task is cancelled
            await asyncio.get_running_loop().run_in_executor(None, registry.detach, session_id)

    return registry


async def _serve_socket(
    websocket: WebSocket, session: EnvSession, ctx: McpContext, limits: OpenEnvLimits, client: str
) -> None:
    """Answer the socket's messages in order until ``close``, a disconnect, an oversized message, idleness, or its
    session closed over ``/mcp``; a reply that cannot be sent closes the socket with 1011."""
    try:
        while True:
            try:
                message = await asyncio.wait_for(websocket.receive(), limits.idle_timeout_s)
            except TimeoutError:
                await _send_error(websocket, "IDLE_TIMEOUT", f"no message for {limits.idle_timeout_s:g} s; closing")
                await websocket.close(code=1001)
                return
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            raw: str | bytes = text if isinstance(text, str) else bytes(message.get("bytes") or b"")
            size = len(raw.encode("utf-8", "surrogatepass")) if isinstance(raw, str) else len(raw)
            if size > limits.max_message_bytes:
                await _send_error(
                    websocket, "MESSAGE_TOO_LARGE", f"message over the limit of {limits.max_message_bytes} bytes"
                )
                await websocket.close(code=1009)
                return
            if session.close_requested:
                await _send_error(websocket, "SESSION_CLOSED", "this session was closed (openenv/session/close)")
                await websocket.close(code=1000)
                return
            reply = await _answer(raw, session, ctx, client)
            if reply is None:  # close
                await websocket.close(code=1000)
                return
            await websocket.send_text(reply)
    except WebSocketDisconnect:
        return
    except Exception:  # never a silent drop: the client gets a close code
        log.exception("an OpenEnv socket failed")
        with contextlib.suppress(Exception):
            await websocket.close(code=1011)


async def _answer(raw: str | bytes, session: EnvSession, ctx: McpContext, client: str) -> str | None:
    """One message's reply, encoded (``None`` for ``close``)."""
    try:  # a large message is decoded on the tool threads, as a large HTTP body is
        message = await decode_body(ctx.run, json.loads, raw, client)
    except (ValueError, RecursionError) as e:
        return encode_message(_error("INVALID_JSON", f"Invalid JSON: {type(e).__name__}"))
    except HTTPException as e:
        return encode_message(_error("SERVER_BUSY", str(e.detail)))
    if not isinstance(message, dict):
        return encode_message(_error("INVALID_JSON", "a message is a JSON object with a 'type'"))
    request_id = message.get("request_id")
    if request_id is not None and not _valid_request_id(request_id):
        return encode_message(
            _error("VALIDATION_ERROR", f"request_id must be a string of at most {MAX_REQUEST_ID} characters or an int")
        )
    kind, data = message.get("type"), message.get("data")
    data = {} if data is None else data
    if kind == "close":
        return None
    if kind not in ("reset", "step", "state", "mcp"):
        reply = _error("UNKNOWN_TYPE", "unknown message type; expected reset, step, state, mcp or close")
    elif kind == "state":
        reply = {"type": "state", "data": session.state()}
    elif kind == "mcp":
        reply = {"type": "mcp", "data": await handle_rpc(data, ctx, client) or {}}
    elif not isinstance(data, dict):
        reply = _error("VALIDATION_ERROR", f"a {kind} message's data must be an object")
    else:  # the turn and its reply's encoding on the tool threads
        return await _turn(session.reset if kind == "reset" else session.step, data, request_id, ctx, client)
    return encode_message(reply, request_id)


async def _turn(
    method: Callable[[dict[str, Any]], dict[str, Any]], data: dict[str, Any], request_id: Any, ctx: McpContext,
    client: str,
) -> str:  # fmt: skip
    try:
        return str(await ctx.run(_observation, method, data, request_id, client=client))
    except HTTPException as e:  # tool threads saturated, or this client has its share of calls: retryable
        return encode_message(_error("SERVER_BUSY", str(e.detail)), request_id)


def _observation(method: Callable[[dict[str, Any]], dict[str, Any]], data: dict[str, Any], request_id: Any) -> str:
    """``method(data)`` as an encoded observation message, or an encoded error (on a tool thread)."""
    try:
        reply = {"type": "observation", "data": method(data)}
    except Exception as e:  # a bad action, a step before reset, a failed tool: the message says which
        log.debug("OpenEnv turn failed", exc_info=True)
        reply = _error("EXECUTION_ERROR", f"{type(e).__name__}: {e}")
    return encode_message(reply, request_id)


def _valid_request_id(value: Any) -> bool:
    if type(value) is int:
        return True
    return type(value) is str and len(value) <= MAX_REQUEST_ID


def encode_message(reply: dict[str, Any], request_id: Any = None) -> str:
    """A ``/ws`` reply as JSON text that UTF-8 can carry (lone surrogates replaced by U+FFFD; NaN refused).

    Args:
        reply: The message (``type`` and ``data``).
        request_id: The request's ``request_id``, echoed when given.
    """
    from sim_web.protocol.arguments import valid_unicode_value

    if request_id is not None:
        reply = {**reply, "request_id": request_id}
    try:
        text = json.dumps(reply, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(valid_unicode_value(reply), ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError) as e:  # NaN or an unknown type in what the env returned
        log.warning("an OpenEnv reply could not be encoded: %s", type(e).__name__)
        text = json.dumps(_error("INTERNAL_ERROR", "the reply could not be encoded as JSON"))
    return text


def _error(code: str, message: str) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code}}


async def _send_error(websocket: WebSocket, code: str, message: str) -> None:
    try:
        await websocket.send_text(encode_message(_error(code, message)))
    except (RuntimeError, WebSocketDisconnect):
        pass  # the client is gone


_OBS_TEXT = "the env's observation: the question on reset, then each tool response (or error text); '' on <answer>"
SCHEMAS: dict[str, Any] = {
    "action": {
        "title": "WebResearchAction",
        "type": "object",
        "description": (
            "One assistant turn {'message': ...} (the one required field: a client that wraps a raw reply, such as "
            "verifiers' openenv taskset, sends it as the message), or an MCP action of OpenEnv's MCPToolClient "
            "({'type': 'call_tool' | 'list_tools', ...}, accepted as well)"
        ),
        "properties": {
            "message": {"type": "string", "description": "one assistant turn in the Tongyi format (env.step)"},
            "type": {"type": "string", "enum": ["call_tool", "list_tools"]},
            "tool_name": {"type": "string"},
            "arguments": {"type": "object"},
        },
        "required": ["message"],
    },
    "observation": {
        "title": "WebResearchObservation",
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": _OBS_TEXT},
            "terminated": {"type": "boolean"},
            "truncated": {"type": "boolean"},
            "tool_name": {"type": "string", "description": "call_tool actions: the tool called"},
            "result": {"type": "string", "description": "call_tool actions: the tool's text (= text)"},
            "tools": {"type": "array", "description": "list_tools actions: the MCP tool list"},
        },
        "required": [],
    },
    "state": {
        "title": "WebResearchState",
        "type": "object",
        "properties": {
            "episode_id": {"type": ["string", "null"]},
            "step_count": {"type": "integer", "description": "turns taken (info['turn'])"},
            "task_id": {"type": ["string", "null"]},
            "done": {"type": "boolean"},
        },
        "required": ["episode_id", "step_count"],
    },
}
