"""JSON request bodies read by the routes themselves, so that a large one is decoded and checked on the tool threads.

FastAPI parses a declared body model's JSON (and validates it) on the event loop, before the route runs, and the
event loop answers ``/health``: a 1 MiB body of the wrong shape (hundreds of thousands of lists, or a list a
``mode="before"`` validator walks in Python) held it for as long as that took, just to word its 422. The routes of
:mod:`sim_web.serve.http` and :mod:`sim_web.serve.score` take the raw body instead and call :func:`read_model`,
which decodes and validates a body over :data:`~sim_web.serve.pool.INLINE_DECODE_BYTES` on the pool
(:func:`~sim_web.serve.pool.decode_body`), under the sender's share, and a smaller one where it is.

The answers are FastAPI's: the same 422 errors (``missing`` for an empty body, ``json_invalid`` at the decode
error's position, the model's errors under ``body``), a 400 for a body too deeply nested or not UTF-8, and a body
that is not declared JSON validated as bytes (refused). The token is checked first (the route's dependencies run
before its body is read), so an unauthenticated body is never decoded. :func:`body_doc` puts the model's schema
back into the OpenAPI document.
"""

from __future__ import annotations

import email.message
import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import HTTPException, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from sim_web.serve.pool import client_key, decode_body

_M = TypeVar("_M", bound=BaseModel)


def body_doc(model: type[BaseModel]) -> dict[str, Any]:
    """The ``openapi_extra`` of a route that reads a ``model`` body itself: the request body FastAPI would document.

    Args:
        model: The body's pydantic model.
    """
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}}


async def read_model(request: Request, model: type[_M], run: Callable[..., Awaitable[Any]]) -> _M:
    """The request's body as a checked ``model``: decoded and validated on the pool when large (see the module).

    Args:
        request: The request (its dependencies, the token among them, already passed).
        model: The body's pydantic model.
        run: The pool's :meth:`~sim_web.serve.pool.ToolPool.run`.

    Raises:
        RequestValidationError: An empty body, not JSON, or not a valid ``model`` (answered 422 without echo).
        HTTPException: 400 for a body nested too deeply or not UTF-8; 503 or 429 from the pool.
    """
    raw, media = await request.body(), _is_json(request.headers.get("content-type"))
    return await decode_body(run, functools.partial(parse_model, model, media), raw, client_key(request.scope))


def parse_model(model: type[_M], media_is_json: bool, raw: bytes) -> _M:
    """``raw`` as a checked ``model``, with FastAPI's errors for a declared body model.

    Args:
        model: The body's pydantic model.
        media_is_json: Whether the request declared a JSON media type (else the bytes are validated, and refused).
        raw: The body.

    Raises:
        RequestValidationError: An empty body, not JSON, or not a valid ``model``.
        HTTPException: 400 for a body nested too deeply or not UTF-8 (FastAPI's "error parsing the body").
    """
    if not raw:
        raise RequestValidationError([{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}])
    data: Any = raw
    if media_is_json:
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as e:
            error = {"type": "json_invalid", "loc": ("body", e.pos), "msg": "JSON decode error", "input": {}}
            raise RequestValidationError([{**error, "ctx": {"error": e.msg}}]) from None
        except (ValueError, RecursionError):  # not UTF-8, or nested past the interpreter's limit
            raise HTTPException(400, "There was an error parsing the body") from None
    try:
        return model.model_validate(data)
    except ValidationError as e:
        errors = [{**err, "loc": ("body", *err["loc"])} for err in e.errors(include_input=False, include_url=False)]
        raise RequestValidationError(errors) from None


@functools.lru_cache(maxsize=256)
def _is_json(content_type: str | None) -> bool:
    """Whether FastAPI would parse a body of this ``Content-Type`` as JSON (``application/json`` or ``*+json``)."""
    if not content_type:
        return False
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (subtype == "json" or subtype.endswith("+json"))
