"""The HTTP tool server: the same tools (and the raw backend) over JSON, for many rollout workers.

Stateless apart from a content-keyed cache, so replicas behind any load balancer agree.
Endpoints: ``GET /health``, ``GET /tools`` (schemas), ``POST /tools/{name}`` (Tongyi-formatted
text, exactly what the env prints), ``POST /backend/{search,scholar,visit}`` (structured results,
used by :class:`sim_web.backends.remote.RemoteBackend`). OpenAPI schema at ``/openapi.json``.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Any

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, ConfigDict, Field

log = logging.getLogger(__name__)
INDEX_ENV = "SIM_WEB_SERVER_INDEX"
MODE_ENV = "SIM_WEB_SERVER_MODE"
CACHE_ENV = "SIM_WEB_SERVER_CACHE"
#: Idle keep-alive connections live this long (uvicorn's default is 5 s): a rollout worker pauses
#: for a whole LLM turn between two tool calls, and a closed connection costs it a new handshake
#: or, for clients that do not retry, an error.
KEEP_ALIVE_S = 120


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
    query: str = Field(min_length=1, max_length=2000)
    k: int = Field(default=10, ge=1, le=100)


class VisitRequest(BaseModel):
    """A backend page visit."""

    model_config = ConfigDict(extra="forbid")
    url: str = Field(min_length=1, max_length=4000)
    goal: str = Field(default="", max_length=4000)


def create_app(index_dir: str | None = None, mode: str = "bm25", cache: bool = True) -> FastAPI:
    """Build the FastAPI app over the index at ``index_dir`` (default: the sample index).

    Args:
        index_dir: The index directory.
        mode: Retrieval mode of ``search``/``google_scholar``.
        cache: Keep the executor's content-keyed result cache (off: every call is computed,
            e.g. to benchmark the uncached cost).

    Returns:
        The app (serve it with uvicorn).
    """
    from sim_web.protocol.actions import Action
    from fastapi.responses import JSONResponse

    from sim_web.protocol.errors import ActionError, ToolUnavailableError
    from sim_web.executor import ExecutorConfig, ToolExecutor
    from sim_web.backends.sim import SimBackend, SimConfig
    from sim_web.tools import Toolbox
    from wiki_index.index import WikiIndex

    index = WikiIndex.from_dir(index_dir)
    backend = SimBackend(index, SimConfig(mode=mode))
    executor = ToolExecutor([backend], ExecutorConfig(cache=cache))
    toolbox = Toolbox(executor)
    names = [s["function"]["name"] for s in toolbox.schemas()]
    app = FastAPI(title="sim-web tool server", version="0.1.0",
                  description="Tongyi-compatible search / visit / google_scholar / PythonInterpreter over a Wikipedia index.")

    @app.exception_handler(ToolUnavailableError)
    def unavailable(_request: Any, exc: ToolUnavailableError) -> JSONResponse:  # retryable for RemoteBackend
        return JSONResponse(status_code=503, content={"detail": str(exc)})

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "index": str(index.path), "content_sha256": index.manifest["content_sha256"],
                "pages": index.manifest["counts"]["pages"], "mode": mode}

    @app.get("/tools")
    def tools() -> list[dict[str, Any]]:
        return toolbox.schemas()

    @app.post("/tools/{name}", response_model=ToolReply)
    def call_tool(name: str, req: ToolRequest) -> ToolReply:
        if name not in names:
            raise HTTPException(404, f"unknown tool {name!r}; available: {names}")
        try:
            return ToolReply(result=toolbox.call(Action(kind="tool_call", tool=name, arguments=req.arguments, code=req.code)))
        except ActionError as e:
            raise HTTPException(422, f"{e.kind}: {e}") from e

    @app.post("/backend/search")
    def backend_search(req: QueryRequest) -> dict[str, Any]:
        return {"results": [asdict(r) for r in executor.search(req.query, req.k)]}

    @app.post("/backend/scholar")
    def backend_scholar(req: QueryRequest) -> dict[str, Any]:
        return {"results": [asdict(r) for r in executor.scholar(req.query, req.k)]}

    @app.post("/backend/visit")
    def backend_visit(req: VisitRequest) -> dict[str, Any]:
        return asdict(executor.visit(req.url, req.goal))

    return app


def app_factory() -> FastAPI:
    """uvicorn factory for multi-worker serving: reads the index and mode from the environment."""
    from wiki_index.settings import env

    return create_app(env(INDEX_ENV) or None, env(MODE_ENV) or "bm25", env(CACHE_ENV, "1") == "1")


def serve(index_dir: str | None, host: str = "127.0.0.1", port: int = 8000, workers: int = 1, mode: str = "bm25",
          cache: bool = True) -> None:
    """Run the server (blocking). With ``workers > 1`` each uvicorn worker opens the index itself."""
    import os
    import socket

    import uvicorn

    from wiki_index.index import WikiIndex

    WikiIndex.from_dir(index_dir)  # fail fast, with the build command, before forking workers
    if workers > 1:
        if index_dir:
            os.environ[INDEX_ENV] = str(index_dir)
        os.environ[MODE_ENV] = mode
        os.environ[CACHE_ENV] = "1" if cache else "0"
        from uvicorn.supervisors import Multiprocess

        config = uvicorn.Config("sim_web.serve.http:app_factory", factory=True, host=host, port=port, workers=workers,
                                log_level="warning", timeout_keep_alive=KEEP_ALIVE_S)
        sock = config.bind_socket()
        # uvicorn binds this shared socket with proto 0, so asyncio never sets TCP_NODELAY on the
        # accepted connections: with keep-alive clients every response then waits ~40 ms for a
        # delayed ACK (Nagle). Linux copies TCP_NODELAY from the listening socket to accepted ones.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        Multiprocess(config, sockets=[sock]).run()
    else:
        uvicorn.run(create_app(index_dir, mode, cache), host=host, port=port, log_level="warning", timeout_keep_alive=KEEP_ALIVE_S)
