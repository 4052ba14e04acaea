"""What guards the tool server: loopback checks, the bearer token, the body limit (the bounded tool pool:
:mod:`sim_web.serve.pool`).

Split from :mod:`sim_web.serve.http` (which wires them into the app); see its docstring for the policy.
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import HTTPException, Request

from sim_web.protocol.arguments import MAX_GOAL_CHARS
from sim_web.serve.pool import ToolPool as ToolPool  # re-exported: the pool lived here first

if TYPE_CHECKING:
    from sim_web.protocol.errors import ActionError

#: Request limits: the fast routes check them, and the pydantic models of :mod:`sim_web.serve.http_models` declare
#: their fields with them.
#: The goal limit is the toolbox's, so ``/backend/visit`` and ``/tools/visit`` bound the extractor's work alike.
QUERY_MAX, URL_MAX, GOAL_MAX, K_MAX = 2000, 4000, MAX_GOAL_CHARS, 100
TOKEN_ENV = "SIM_WEB_SERVER_TOKEN"  #: the bearer token, when not given as ``--token``
_MAX_DETAIL = 500  # characters of an error message in a 4xx body
_ECHO_MIN = 8  # request strings this long must not appear in a 4xx body (shorter ones match ordinary words)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address) only accepts connections from this machine.

    Args:
        host: ``127.0.0.1``, ``::1``, ``localhost``, ``0.0.0.0``, a name...

    Returns:
        True for loopback addresses and ``localhost``; False for everything else (names included).
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, token: str | None) -> None:
    """Refuse to serve tools without a token on an address other machines can reach.

    Args:
        host: The bind address.
        token: The bearer token, or ``None``.

    Raises:
        ConfigError: ``host`` is not loopback and there is no token.
    """
    from simweb_core.errors import ConfigError

    if not token and not is_loopback(host):
        raise ConfigError(
            f"refusing to serve the tools on {host!r} (reachable from other machines) without a bearer "
            f"token: set ${TOKEN_ENV} (or pass --token), or bind 127.0.0.1"
        )


class BodyLimit:
    """ASGI middleware: answer 413 to a body over ``max_bytes`` (declared or streamed), without reading it whole."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            return await self._reject(send)
        seen, over, started = 0, False, False

        async def limited_receive() -> dict[str, Any]:
            nonlocal seen, over
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    over = True
                    raise _TooLarge  # FastAPI turns it into a 400 while parsing: replaced by our 413 below
            return message

        async def tracking_send(message: dict[str, Any]) -> None:
            nonlocal started
            if over:
                return  # the app's answer to a cut-off body
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            pass
        if over and not started:
            await self._reject(send)

    async def _reject(self, send: Callable[..., Any]) -> None:
        from starlette.responses import JSONResponse

        body = JSONResponse(
            status_code=413,
            content={"detail": f"request body over the limit of {self.max_bytes} bytes; send smaller requests"},
        )
        await body({"type": "http"}, _no_receive, send)


class _TooLarge(Exception):
    pass


async def _no_receive() -> dict[str, Any]:
    return {"type": "http.disconnect"}


def short(text: str) -> str:
    """``text`` cut to the length a 4xx body may carry."""
    return text if len(text) <= _MAX_DETAIL else text[:_MAX_DETAIL] + "..."


def action_detail(error: ActionError, arguments: Any) -> str:
    """The 422 text of an :class:`ActionError` on a backend route: what is wrong and what is expected, without the
    client's values (a tool call's agent mistake is no 4xx: it is answered with the env's text, values and all).

    The env shows the model the values it sent (``got a dict ({...})``); a 4xx body must not echo the request.
    Each value the message describes is put back as its type alone, and a message that would still contain a
    string of the request is replaced by one that names the error kind only.

    Args:
        error: The error raised by the toolbox.
        arguments: The call's ``arguments`` as the client sent them.
    """
    from sim_web.protocol.arguments import describe_value, valid_unicode_value

    arguments = valid_unicode_value(arguments)  # as the toolbox saw, and described, them
    message = error.message
    for value in _described(arguments):  # a message describes one value at most
        shown = describe_value(value)
        if shown in message:
            message = message.replace(shown, f"a {type(value).__name__}")
            break
    if any(len(s) >= _ECHO_MIN and s in message for s in _strings(arguments)):
        message = "the arguments do not match the tool's schema (GET /tools lists the schemas)"
    return short(f"{error.kind}: {message}")


def _described(arguments: Any) -> list[Any]:
    """Every value the protocol may describe: the arguments, each argument, each item of a list argument."""
    values = [arguments]
    for value in arguments.values() if isinstance(arguments, dict) else ():
        values += [value, *(value if isinstance(value, list) else ())]
    return values


def _strings(value: Any) -> list[str]:
    """The strings in a JSON value, keys included (without recursion: the value may be nested deeply)."""
    found, todo = [], [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            todo += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            todo += item
    return found


def token_matches(token: str, authorization: str) -> bool:
    """Whether an ``Authorization`` header value carries ``token``, compared in constant time.

    Two forms: ``Bearer <token>``, and HTTP Basic with any user name and the token as the password, which is what
    requests, httpx, mcp's client and the websockets handshake send for a URL with user info
    (``http://user:TOKEN@host:port``): the released clients that take a URL only can authenticate that way.
    """
    scheme, _, credentials = authorization.strip().partition(" ")
    scheme = scheme.lower()
    if scheme == "basic":
        given = _basic_password(credentials.strip())
    elif scheme == "bearer":
        given = credentials.strip()
    else:
        return False
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def _basic_password(credentials: str) -> str | None:
    """The password of a Basic ``user:password`` in base64, or ``None`` when it is not one."""
    try:
        decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    user, colon, password = decoded.partition(":")
    return password if colon else None


#: What a refused request is told (never the token, nor what was sent).
AUTH_HINT = (
    "missing or wrong token: send 'Authorization: Bearer <token>', or HTTP Basic auth with any user name and the "
    "token as the password (a URL such as http://user:<token>@host:port)"
)


def bearer_guard(token: str | None) -> Callable[[Request], None]:
    """A FastAPI dependency that answers 401 unless the request carries the token (see :func:`token_matches`)."""

    def authorized(request: Request) -> None:
        if token is not None and not token_matches(token, request.headers.get("authorization", "")):
            raise HTTPException(401, AUTH_HINT, headers={"WWW-Authenticate": "Bearer"})

    return authorized
