"""MCP over JSON-RPC 2.0, as OpenEnv serves it: ``POST /mcp`` and the ``mcp`` message of ``/ws``.

Methods: ``initialize``, ``tools/list``, ``tools/call`` (the server's tools, stateless: the text the env prints
inside ``<tool_response>``, agent mistakes included; no env turn, no reward), ``openenv/session/create`` and
``openenv/session/close`` (an env session that a WebSocket can attach to with ``/ws?session_id=...``, which is
what ``MCPToolClient(mode="production")`` does). A failed call (every backend down) is a result with
``isError: true``; an unknown tool or malformed params is a JSON-RPC error.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sim_web.serve.openenv.sessions import CapacityError, SessionRegistry, mcp_tools

if TYPE_CHECKING:
    from sim_web.tools import Toolbox

log = logging.getLogger(__name__)
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
SERVER_BUSY = -32000  #: retryable: too many tool calls in progress, or every session slot taken
MCP_PROTOCOL_VERSION = "2025-06-18"


@dataclass
class McpContext:
    """What the JSON-RPC methods reach: the served tools, the tool threads and the sessions."""

    toolbox: Toolbox
    run: Callable[..., Awaitable[Any]]  #: ``run(fn, *args)`` on the tool threads (the server's ToolPool)
    registry: SessionRegistry
    server_version: str


def rpc_error(code: int, message: str, request_id: Any = None) -> dict[str, Any]:
    """A JSON-RPC 2.0 error response."""
    return {"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": request_id}


def _ok(result: Any, request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "result": result, "id": request_id}


async def handle_rpc(request: Any, ctx: McpContext) -> dict[str, Any] | None:
    """Answer one JSON-RPC request (``None`` for a notification, which gets no answer).

    Args:
        request: The decoded JSON body.
        ctx: The tools, threads and sessions.

    Returns:
        The response object, or ``None`` for a notification.
    """
    if not isinstance(request, dict) or request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str):
        return rpc_error(
            INVALID_REQUEST, "expected a JSON-RPC 2.0 request: {'jsonrpc': '2.0', 'method': ..., 'id': ...}"
        )
    method, request_id, params = request["method"], request.get("id"), request.get("params") or {}
    if not isinstance(params, dict):
        return rpc_error(INVALID_PARAMS, "params must be an object", request_id)
    if "id" not in request:  # a notification (notifications/initialized, ...)
        return None
    try:
        return _ok(await _dispatch(method, params, ctx), request_id)
    except _RpcError as e:
        return rpc_error(e.code, e.message, request_id)


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


async def _dispatch(method: str, params: dict[str, Any], ctx: McpContext) -> Any:
    if method == "initialize":
        return {
            "protocolVersion": str(params.get("protocolVersion") or MCP_PROTOCOL_VERSION),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "sim-web", "version": ctx.server_version},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": mcp_tools(ctx.toolbox.schemas())}
    if method == "tools/call":
        return await _call_tool(params, ctx)
    if method == "openenv/session/create":
        try:
            session_id, _ = await ctx.run(ctx.registry.open)
        except CapacityError as e:
            raise _RpcError(SERVER_BUSY, str(e)) from e
        return {"session_id": session_id}
    if method == "openenv/session/close":
        session_id = params.get("session_id")
        if not isinstance(session_id, str):
            raise _RpcError(INVALID_PARAMS, "openenv/session/close needs params.session_id (a string)")
        return {"closed": await ctx.run(ctx.registry.close, session_id)}
    raise _RpcError(
        METHOD_NOT_FOUND,
        f"method not found; this server answers initialize, ping, tools/list, tools/call, "
        f"openenv/session/create and openenv/session/close (got {method[:80]!r})",
    )


async def _call_tool(params: dict[str, Any], ctx: McpContext) -> dict[str, Any]:
    from fastapi import HTTPException

    from sim_web.protocol.actions import PYTHON_TOOL
    from sim_web.protocol.errors import ToolUnavailableError
    from sim_web.serve.fast import tool_text

    name, arguments = params.get("name"), params.get("arguments") or {}
    names = [s["function"]["name"] for s in ctx.toolbox.schemas()]
    if name not in names:
        raise _RpcError(INVALID_PARAMS, f"unknown tool; available: {names}")
    if not isinstance(arguments, dict):
        raise _RpcError(INVALID_PARAMS, "params.arguments must be an object")
    arguments = dict(arguments)
    code = arguments.pop("code", None) if name == PYTHON_TOOL else None
    if code is not None and not isinstance(code, str):
        raise _RpcError(INVALID_PARAMS, "a PythonInterpreter call's arguments.code must be a string")
    try:
        text = await ctx.run(tool_text, ctx.toolbox, name, arguments, code)
    except HTTPException as e:  # the tool threads are saturated (503): retryable
        raise _RpcError(SERVER_BUSY, str(e.detail)) from e
    except ToolUnavailableError as e:
        text = f"Error: {e}"
        return {"content": [{"type": "text", "text": text}], "isError": True, "data": text}
    return {"content": [{"type": "text", "text": text}], "isError": False, "data": text}
