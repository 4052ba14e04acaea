"""The OpenEnv routes of ``sim-web serve``: ``/ws`` (sessions), ``POST /mcp``, ``/metadata``, ``/schema``.

OpenEnv 0.10's WebSocket protocol: the client sends ``{"type": "reset", "data": {"seed", "episode_id",
"options"}}``, ``{"type": "step", "data": <action>}``, ``{"type": "state"}``, ``{"type": "mcp", "data":
<JSON-RPC request>}`` or ``{"type": "close"}``; the server answers ``{"type": "observation" | "state" | "mcp" |
"error", "data": ...}``. There are no plain-HTTP ``/reset``, ``/step``, ``/state`` routes (OpenEnv's "production"
mode: an episode needs a session, which only ``/ws`` has).

Guards: the tool server's bearer token on ``/ws`` (checked before the socket is accepted) and ``POST /mcp``;
the request body limit on ``POST /mcp`` (the app's middleware); :class:`OpenEnvLimits` (message size, sessions,
idle time); env turns and tool calls run on the tool threads, never on the event loop. A socket that closes or
drops closes its env.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from fastapi import Depends, FastAPI, HTTPException, Request, WebSocket
from fastapi.responses import JSONResponse, Response
from starlette.websockets import WebSocketDisconnect

from sim_web.serve.guards import token_matches
from sim_web.serve.openenv.mcp import PARSE_ERROR, McpContext, handle_rpc, rpc_error
from sim_web.serve.openenv.sessions import CapacityError, EnvSession, OpenEnvLimits, SessionError, SessionRegistry

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

    @app.get("/metadata")
    async def metadata() -> dict[str, Any]:
        tools = [s["function"]["name"] for s in toolbox.schemas()]
        return {"name": ENV_NAME, "description": DESCRIPTION, "version": version, "env_id": "WebResearch-v0",
                "tools": tools}  # fmt: skip

    @app.get("/schema")
    async def schema() -> dict[str, Any]:
        return SCHEMAS

    @app.post("/mcp", dependencies=[Depends(authorized)], response_model=None)
    async def mcp(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except (ValueError, RecursionError):
            return JSONResponse(rpc_error(PARSE_ERROR, "the body is not JSON"))
        reply = await handle_rpc(body, ctx)
        return Response(status_code=202) if reply is None else JSONResponse(reply)

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        if token is not None and not token_matches(token, websocket.headers.get("authorization", "")):
            await websocket.close(
                code=1008, reason="missing or wrong token (Bearer, or Basic with the token as password)"
            )  # before accept: HTTP 403
            return
        await websocket.accept()
        attach_id = websocket.query_params.get("session_id")
        try:
            session_id, session = (attach_id, registry.attach(attach_id)) if attach_id else await run(registry.open)
        except (CapacityError, SessionError, HTTPException) as e:
            code = "SESSION_ERROR" if isinstance(e, SessionError) else "CAPACITY_REACHED"
            await _send_error(websocket, code, str(getattr(e, "detail", e)))
            await websocket.close(code=1013 if code == "CAPACITY_REACHED" else 1008)
            return
        try:
            await _serve_socket(websocket, session, ctx, limits)
        finally:
            if attach_id:
                registry.detach(session_id)
            else:  # on a thread, to completion even if this task is cancelled
                await asyncio.get_running_loop().run_in_executor(None, registry.close, session_id)

    return registry


async def _serve_socket(websocket: WebSocket, session: EnvSession, ctx: McpContext, limits: OpenEnvLimits) -> None:
    """Answer the socket's messages in order until ``close``, a disconnect, an oversized message or idleness."""
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
            reply = await _answer(raw, session, ctx)
            if reply is None:  # close
                await websocket.close(code=1000)
                return
            await websocket.send_text(json.dumps(reply, ensure_ascii=False))
    except WebSocketDisconnect:
        return


async def _answer(raw: str | bytes, session: EnvSession, ctx: McpContext) -> dict[str, Any] | None:
    """One message's reply (``None`` for ``close``)."""
    try:
        message = json.loads(raw)
    except (ValueError, RecursionError) as e:
        return _error("INVALID_JSON", f"Invalid JSON: {type(e).__name__}")
    if not isinstance(message, dict):
        return _error("INVALID_JSON", "a message is a JSON object with a 'type'")
    kind, data = message.get("type"), message.get("data")
    data = {} if data is None else data
    if kind == "close":
        return None
    if kind == "state":
        return {"type": "state", "data": session.state()}
    if kind == "mcp":
        return {"type": "mcp", "data": await handle_rpc(data, ctx) or {}}
    if kind not in ("reset", "step"):
        return _error("UNKNOWN_TYPE", "unknown message type; expected reset, step, state, mcp or close")
    if not isinstance(data, dict):
        return _error("VALIDATION_ERROR", f"a {kind} message's data must be an object")
    try:
        payload = await ctx.run(session.reset if kind == "reset" else session.step, data)
    except HTTPException as e:  # tool threads saturated: retryable
        return _error("SERVER_BUSY", str(e.detail))
    except Exception as e:  # a bad action, a step before reset, a failed tool: the message says which
        log.debug("OpenEnv %s failed", kind, exc_info=True)
        return _error("EXECUTION_ERROR", f"{type(e).__name__}: {e}")
    return {"type": "observation", "data": payload}


def _error(code: str, message: str) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code}}


async def _send_error(websocket: WebSocket, code: str, message: str) -> None:
    try:
        await websocket.send_text(json.dumps(_error(code, message)))
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
