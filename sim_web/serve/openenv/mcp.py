"""MCP over JSON-RPC 2.0, as OpenEnv serves it: ``POST /mcp`` and the ``mcp`` message of ``/ws``.

Methods: ``initialize``, ``tools/list``, ``tools/call`` (the server's tools, stateless: the text the env prints
inside ``<tool_response>``, agent mistakes included; no env turn, no reward), ``openenv/session/create`` and
``openenv/session/close`` (an env session that a WebSocket can attach to with ``/ws?session_id=...``, which is
what ``MCPToolClient(mode="production")`` does). A failed call (every backend down) is a result with
``isError: true``; an unknown tool or malformed params is a JSON-RPC error.

Every reply can be encoded: a request ``id`` that is not a string, a finite number or null (a lone surrogate, NaN,
an object) is answered ``INVALID_REQUEST`` with id null, as JSON-RPC 2.0 answers a request whose id it cannot
read, and :func:`encode_reply` turns anything left that JSON or UTF-8 cannot carry into an ``INTERNAL_ERROR``. The
calls run on the tool threads under the caller's client key, so the per-client share of calls holds on ``/mcp``
and ``/ws`` as on ``/tools``.
"""

from __future__ import annotations

import json
import logging
import math
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


def valid_id(value: Any) -> bool:
    """Whether ``value`` is a JSON-RPC id a reply can carry: a UTF-8-encodable string, an integer, a finite number,
    or null."""
    if value is None or type(value) is int:
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    return False


def encode_reply(reply: dict[str, Any]) -> bytes:
    """A JSON-RPC reply as UTF-8 JSON; one that JSON or UTF-8 cannot carry becomes an ``INTERNAL_ERROR`` reply."""
    try:
        return json.dumps(reply, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, TypeError):  # UnicodeEncodeError is a ValueError
        log.warning("a JSON-RPC reply could not be encoded", exc_info=True)
        request_id = reply.get("id")
        fallback = rpc_error(INTERNAL_ERROR, "the reply could not be encoded as JSON", request_id)
        return json.dumps(fallback if valid_id(request_id) else rpc_error(INTERNAL_ERROR, "unencodable")).encode()


async def handle_rpc(request: Any, ctx: McpContext, client: str = "") -> dict[str, Any] | None:
    """Answer one JSON-RPC request (``None`` for a notification, which gets no answer).

    Args:
        request: The decoded JSON body.
        ctx: The tools, threads and sessions.
        client: Who asks (:func:`~sim_web.serve.pool.client_key`): its calls count towards its share.

    Returns:
        The response object, or ``None`` for a notification.
    """
    if not isinstance(request, dict) or request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str):
        return rpc_error(
            INVALID_REQUEST, "expected a JSON-RPC 2.0 request: {'jsonrpc': '2.0', 'method': ..., 'id': ...}"
        )
    method, request_id, params = request["method"], request.get("id"), request.get("params") or {}
    if not valid_id(request_id):
        return rpc_error(INVALID_REQUEST, "the id must be a string (valid Unicode), a finite number or null")
    if not isinstance(params, dict):
        return rpc_error(INVALID_PARAMS, "params must be an object", request_id)
    if "id" not in request:  # a notification (notifications/initialized, ...)
        return None
    try:
        return _ok(await _dispatch(method, params, ctx, client), request_id)
    except _RpcError as e:
        return rpc_error(e.code, e.message, request_id)


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


async def _dispatch(method: str, params: dict[str, Any], ctx: McpContext, client: str) -> Any:
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
        return await _call_tool(params, ctx, client)
    if method == "openenv/session/create":
        return {"session_id": await _create_session(ctx, client)}
    if method == "openenv/session/close":
        session_id = params.get("session_id")
        if not isinstance(session_id, str):
            raise _RpcError(INVALID_PARAMS, "openenv/session/close needs params.session_id (a string)")
        return {"closed": await _run(ctx, client, ctx.registry.close, session_id)}
    raise _RpcError(
        METHOD_NOT_FOUND,
        f"method not found; this server answers initialize, ping, tools/list, tools/call, "
        f"openenv/session/create and openenv/session/close (got {method[:80]!r})",
    )


async def _run(ctx: McpContext, client: str, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` on the tool threads as ``client``; a full pool (503) or a spent share (429) is SERVER_BUSY."""
    from fastapi import HTTPException

    try:
        return await ctx.run(fn, *args, client=client)
    except HTTPException as e:
        raise _RpcError(SERVER_BUSY, str(e.detail)) from e


async def _create_session(ctx: McpContext, client: str) -> str:
    try:
        session_id, _ = await _run(ctx, client, ctx.registry.open, client)
    except CapacityError as e:
        raise _RpcError(SERVER_BUSY, str(e)) from e
    return str(session_id)


async def _call_tool(params: dict[str, Any], ctx: McpContext, client: str) -> dict[str, Any]:
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
        text = await _run(ctx, client, tool_text, ctx.toolbox, name, arguments, code)
    except ToolUnavailableError as e:
        text = f"Error: {e}"
        return {"content": [{"type": "text", "text": text}], "isError": True, "data": text}
    return {"content": [{"type": "text", "text": text}], "isError": False, "data": text}
