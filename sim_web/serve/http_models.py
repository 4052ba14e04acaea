"""The request and reply bodies of the HTTP tool server (:mod:`sim_web.serve.http`), and its error handlers.

Split from :mod:`sim_web.serve.http` to keep it short: the pydantic models declare the same limits the fast
routes check (:mod:`sim_web.serve.guards`), and the handlers turn errors into bodies that name fields but never
echo the request.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field, field_validator

from sim_web.protocol.arguments import valid_unicode
from sim_web.serve.guards import GOAL_MAX, K_MAX, QUERY_MAX, URL_MAX, short
from sim_web.serve.retrieve import RetrieveRequest, SearchRequest


class ToolRequest(BaseModel):
    """A tool call: the JSON arguments, plus the code for ``PythonInterpreter``."""

    model_config = ConfigDict(extra="forbid")
    arguments: dict[str, Any] = Field(default_factory=dict, description='e.g. {"query": ["capital of France"]}')
    code: str | None = Field(default=None, description="Python code (PythonInterpreter only)")


class ToolReply(BaseModel):
    """The tool's observation text, byte-identical to what the env prints inside ``<tool_response>``."""

    result: str


class QueryRequest(BaseModel):
    """A backend search or scholar query."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=QUERY_MAX)
    k: int = Field(default=10, ge=1, le=K_MAX)

    @field_validator("query", mode="before")
    @classmethod
    def _valid_unicode(cls, value: Any) -> Any:  # lone surrogates: replaced, as in the tools' arguments
        return valid_unicode(value) if isinstance(value, str) else value


class VisitRequest(BaseModel):
    """A backend page visit."""

    model_config = ConfigDict(extra="forbid")
    url: str = Field(min_length=1, max_length=URL_MAX)
    goal: str = Field(default="", max_length=GOAL_MAX)

    @field_validator("url", "goal", mode="before")
    @classmethod
    def _valid_unicode(cls, value: Any) -> Any:  # lone surrogates: replaced, as in the tools' arguments
        return valid_unicode(value) if isinstance(value, str) else value


def add_error_handlers(app: FastAPI) -> None:
    """503 for a tool no backend could serve (retryable); 422 bodies that name fields but never echo values."""
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    from sim_web.protocol.errors import ToolUnavailableError

    known = {
        "body",
        "path",
        "query",
        "header",
        *ToolRequest.model_fields,
        *QueryRequest.model_fields,
        *VisitRequest.model_fields,
        *SearchRequest.model_fields,
        *RetrieveRequest.model_fields,
    }

    @app.exception_handler(ToolUnavailableError)
    def unavailable(_request: Any, exc: ToolUnavailableError) -> JSONResponse:  # retryable for RemoteBackend
        return JSONResponse(status_code=503, content={"detail": short(str(exc))})

    @app.exception_handler(RequestValidationError)
    def invalid(_request: Any, exc: RequestValidationError) -> JSONResponse:  # never echo the input back
        detail = [
            {
                "loc": [p if isinstance(p, int) or p in known else "(unknown field)" for p in e.get("loc", ())],
                "type": e.get("type"),
                "msg": short(str(e.get("msg", ""))),
            }
            for e in exc.errors()[:20]
        ]
        return JSONResponse(status_code=422, content={"detail": detail})
