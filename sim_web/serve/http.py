"""The HTTP tool server: the same tools (and the raw backend) over JSON, for many rollout workers.

Stateless apart from a content-keyed cache, so replicas behind any load balancer agree.
Endpoints: ``GET /health``, ``GET /tools`` (schemas), ``POST /tools/{name}`` (Tongyi-formatted
text, exactly what the env prints, agent mistakes included: 200 with the env's ``Error: ...`` text),
``POST /backend/{search,scholar,visit}`` (structured results, used by
:class:`sim_web.backends.remote.RemoteBackend`; ``/backend/search`` also takes many ``queries``), and
Search-R1's ``POST /retrieve`` (:mod:`sim_web.serve.retrieve`), and the OpenEnv environment (``/ws``,
``POST /mcp``, ``/metadata``, ``/schema``: :mod:`sim_web.serve.openenv`). OpenAPI schema at ``/openapi.json``.

Security:

* ``PythonInterpreter`` is not served unless enabled explicitly (``enable_python`` / ``--enable-python``);
  when it is, it runs in the bubblewrap sandbox of :mod:`sim_web.tools.python`.
* With a bearer token (``token`` / ``--token`` / ``$SIM_WEB_SERVER_TOKEN``) every ``/tools``,
  ``/backend`` and ``/retrieve`` route requires ``Authorization: Bearer <token>`` (401 otherwise). :func:`serve` refuses
  to bind a non-loopback address without one.
* Tool calls of every route run in a bounded thread pool of their own (``tool_threads``: a few for calls that
  hold the GIL, many for calls that wait; :mod:`sim_web.serve.config`), never on the event loop, so ``/health``
  answers however busy the tools are; past ``max_in_progress`` calls in progress the server answers 503
  (retryable) instead of queueing without bound. The threads are shared between clients
  (peer addresses) in round robin, and ``max_calls_per_client`` caps one client's calls in progress (429):
  :mod:`sim_web.serve.pool`.
* Request bodies over ``max_body_bytes`` are answered 413 before they are read whole; 4xx bodies
  never echo the request (validation errors carry the location and the reason, not the input; a backend
  argument's 422 names the argument and the type it got, not its value: :func:`~sim_web.serve.guards.action_detail`).
  Only malformed HTTP is a 4xx on ``/tools/{name}`` (not JSON, ``arguments`` not an object, an unknown tool):
  an agent mistake inside the arguments is the env's observation text, which may quote what the agent wrote.
  The routes read their bodies themselves, after the token check: a large one is decoded and validated on the
  tool threads (:mod:`sim_web.serve.bodies`), with FastAPI's 422s.
* ``/health`` without the token shows only ``PUBLIC_HEALTH`` (no filesystem path, tools or load); with a token,
  ``/openapi.json``, ``/docs``, ``/metadata`` and ``/schema`` are behind it too (``/redoc`` is not served), since
  they list the served tools.
* A client (for the per-client shares of calls and OpenEnv sessions) is the connection's peer address
  (:func:`~sim_web.serve.pool.client_key`), never ``X-Forwarded-For`` unless ``trusted_proxies`` names the proxy.
* Connections must send each request (headers and body) within a deadline, and each worker holds a bounded
  number of them, closing the one that has waited longest on its client first (:mod:`sim_web.serve.conn`).

Capacity (measured by ``benchmarks/bench_server.py``):

* Well-formed calls on ``/tools/{name}``, ``/backend/*`` and ``/retrieve`` skip FastAPI's per-request layers
  (:mod:`sim_web.serve.fast`: same status codes and bytes; everything else still goes through FastAPI).
* With ``workers > 1`` every worker accepts on its own SO_REUSEPORT socket (:mod:`sim_web.serve.workers`),
  so that connections opened together spread over the workers.
* Served apps open the index and run varied searches before the first request (:mod:`sim_web.serve.warm`):
  no slow first call per worker, and no JIT recompilation storm under load.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict
from importlib import metadata as _metadata
from typing import TYPE_CHECKING, Any

from fastapi import Depends, FastAPI, HTTPException, Request

from sim_web.serve.bodies import body_doc, read_model
from sim_web.serve.config import DEFAULT_MAX_BODY, DEFAULT_MAX_IN_PROGRESS, ServeConfig, default_tool_threads
from sim_web.serve.conn import uvicorn_config
from sim_web.serve.fast import HotRoutes, tool_text
from sim_web.serve.guards import TOKEN_ENV, BodyLimit, ToolPool, bearer_guard, check_exposure
from sim_web.serve.http_models import QueryRequest, ToolReply, ToolRequest, VisitRequest, add_error_handlers
from sim_web.serve.openenv import OpenEnvLimits, add_openenv_routes, openenv_serving
from sim_web.serve.pool import client_key
from sim_web.serve.retrieve import Retriever, SearchRequest, add_retrieve_route, bulk_search
from sim_web.serve.score import add_score_route
from sim_web.serve.warm import warm_index

if TYPE_CHECKING:
    from sim_web.env import EnvConfig
    from sim_web.tools import Toolbox

log = logging.getLogger(__name__)
CONFIG_ENV = "SIM_WEB_SERVER_CONFIG"  #: the :class:`ServeConfig` as JSON (set by ``serve`` for its workers; no token)
FAST_ENV = "SIM_WEB_SERVER_FAST_ROUTES"  #: "0": every request through FastAPI (to measure :mod:`sim_web.serve.fast`)
#: What ``/health`` shows without the token: enough for a load balancer to check that replicas serve the same index.
PUBLIC_HEALTH = ("pages", "content_sha256")


def create_app(
    index_dir: str | None = None,
    mode: str = "bm25",
    cache: bool = True,
    *,
    enable_python: bool = False,
    token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY,
    tool_threads: int | None = None,
    max_in_progress: int = DEFAULT_MAX_IN_PROGRESS,
    max_calls_per_client: int = 0,
    python_runner: Callable[[str], str] | None = None,
    backend: str = "sim",
    env_config: EnvConfig | None = None,
    fast_routes: bool = True,
    warm: bool = False,
    warm_searches: int = 0,
    openenv_limits: OpenEnvLimits | None = None,
) -> FastAPI:
    """Build the FastAPI app over the index at ``index_dir`` (default: the sample index).

    Args:
        index_dir: The index directory.
        mode: Retrieval mode of ``search``/``google_scholar``.
        cache: Keep the executor's content-keyed result cache (off: every call is computed,
            e.g. to benchmark the uncached cost).
        enable_python: Serve ``PythonInterpreter`` (off by default: it runs code for any client).
        token: Bearer token required on every ``/tools``, ``/backend`` and ``/retrieve`` route (``None``: no auth,
            for loopback only; :func:`serve` enforces that).
        max_body_bytes: Largest request body accepted; larger ones get 413.
        tool_threads: Threads that run tool calls (separate from the event loop that answers ``/health``; ``None``:
            :func:`~sim_web.serve.config.default_tool_threads` for the backend).
        max_in_progress: Tool calls running or waiting past which calls are answered 503.
        max_calls_per_client: Calls one client (peer address) may have in progress; more get 429 (0: no cap).
        python_runner: ``code -> text`` for ``PythonInterpreter`` (default: the bubblewrap sandbox).
        backend: ``"sim"`` (the index) or ``"real"`` (Serper + Jina with the index as fallback, keys from the
            environment): one server then holds the fleet's QPS budget, circuit breakers and cache.
        env_config: The full env configuration whose backend is served (e.g. real-web endpoints and policies);
            when given, ``index_dir``, ``mode``, ``cache`` and ``backend`` are taken from it.
        fast_routes: Answer well-formed calls on the hot routes without FastAPI's per-request layers
            (:mod:`sim_web.serve.fast`; same status codes and bytes); off: every request goes through FastAPI.
        warm: Open the local index's searchers now (:func:`warm_index`), so that the first request does not
            pay for starting the JVM (``serve`` and its workers do; tests need not).
        warm_searches: With ``warm``, varied searches to run first, so that Lucene's JIT has settled before the
            first client (:mod:`sim_web.serve.warm`).
        openenv_limits: Sessions, message size and idle time of the OpenEnv routes (:mod:`sim_web.serve.openenv`).

    Returns:
        The app (serve it with uvicorn).

    Raises:
        ConfigError: For a non-positive ``max_body_bytes``, ``tool_threads`` or ``max_in_progress``, a negative
            ``max_calls_per_client``, an empty token, or a real
            backend without its keys (naming the variable).
    """
    from sim_web.backends.sim import SimConfig
    from sim_web.env import EnvConfig, make_toolbox
    from sim_web.executor import ExecutorConfig
    from sim_web.protocol.actions import PYTHON_TOOL, TOOL_NAMES
    from sim_web.tools import Toolbox
    from simweb_core.errors import ConfigError
    from wiki_index.search.index import WikiIndex

    if max_body_bytes < 1 or (tool_threads is not None and tool_threads < 1) or max_in_progress < 1:
        raise ConfigError(
            f"create_app needs max_body_bytes, tool_threads and max_in_progress >= 1, got {max_body_bytes}, "
            f"{tool_threads}, {max_in_progress}; e.g. {DEFAULT_MAX_BODY}, None (the backend's default), "
            f"{DEFAULT_MAX_IN_PROGRESS}"
        )
    if max_calls_per_client < 0:
        raise ConfigError(f"max_calls_per_client must be >= 0 (0: no cap), got {max_calls_per_client}")
    if token is not None and not token.strip():
        raise ConfigError(f"the server token is empty; pass a non-empty --token or ${TOKEN_ENV}, or none on loopback")
    cfg = env_config or EnvConfig(
        index_dir=index_dir, backend=backend, sim=SimConfig(mode=mode), executor=ExecutorConfig(cache=cache)
    )
    index = WikiIndex.from_dir(cfg.index_dir)
    enabled = tuple(t for t in TOOL_NAMES if enable_python or t != PYTHON_TOOL)
    toolbox = Toolbox(make_toolbox(cfg).executor, enabled=enabled, python_runner=python_runner, k=cfg.search_results)
    closed = {"docs_url": None, "redoc_url": None, "openapi_url": None} if token is not None else {}
    app = FastAPI(
        title="sim-web tool server",
        version=_metadata.version("sim-web"),
        description="Tongyi-compatible search / visit / google_scholar / PythonInterpreter over a Wikipedia index.",
        **closed,  # type: ignore[arg-type]
    )
    if token is not None:
        _add_guarded_docs(app, bearer_guard(token))
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    threads = tool_threads or default_tool_threads(cfg.backend, enable_python)
    pool = ToolPool(threads, max_calls_per_client, max_in_progress)
    app.router.on_shutdown.append(pool.shutdown)
    add_error_handlers(app)
    _add_routes(
        app,
        toolbox,
        pool,
        bearer_guard(token),
        {
            "index": str(index.path),
            "content_sha256": index.manifest["content_sha256"],
            "pages": index.manifest["counts"]["pages"],
            "mode": cfg.sim.mode,
            "backend": cfg.backend,
        },
    )
    retriever = Retriever.serving(toolbox.executor.backends, index, cfg.sim.mode)
    add_retrieve_route(app, retriever, pool, bearer_guard(token))
    add_score_route(app, bearer_guard(token), pool)
    add_openenv_routes(app, **openenv_serving(cfg, enabled, toolbox, pool, token, openenv_limits))
    if warm:
        warm_index(toolbox.executor.backends, warm_searches)
    if fast_routes:  # added last: the outermost of our middlewares, in front of BodyLimit and the router
        app.add_middleware(
            HotRoutes,
            toolbox=toolbox,
            pool=pool,
            names=[s["function"]["name"] for s in toolbox.schemas()],
            max_body_bytes=max_body_bytes,
            token=token,
            retriever=retriever,
        )
    return app


def _add_routes(
    app: FastAPI, toolbox: Toolbox, pool: ToolPool, authorized: Callable[[Request], None], about: dict[str, Any]
) -> None:
    """``/health`` (open, on the event loop; its details behind ``authorized``), ``/tools`` and ``/backend/*``
    (behind ``authorized``, on ``pool``)."""
    from fastapi import Response

    executor = toolbox.executor
    names = [s["function"]["name"] for s in toolbox.schemas()]
    guarded = [Depends(authorized)]

    @app.get("/health")
    async def health(
        request: Request,
    ) -> dict[str, Any]:  # on the event loop: answered however busy the tool threads are
        public = {"status": "healthy", **{k: about[k] for k in PUBLIC_HEALTH}}
        try:
            authorized(request)
        except HTTPException:  # a load balancer without the token: no paths, tools or load
            return public
        return {**public, **about, "tools": names, "tool_calls_in_progress": pool.in_progress}

    @app.get("/tools", dependencies=guarded)
    async def tools() -> list[dict[str, Any]]:
        return toolbox.schemas()

    def run_tool(name: str, req: ToolRequest) -> ToolReply:  # an agent mistake is the env's text, not an HTTP error
        return ToolReply(result=tool_text(toolbox, name, req.arguments, req.code))

    @app.post("/tools/{name}", response_model=ToolReply, dependencies=guarded, openapi_extra=body_doc(ToolRequest))
    async def call_tool(name: str, request: Request) -> ToolReply:
        req = await read_model(request, ToolRequest, pool.run)  # checked before the name, as FastAPI did
        if name not in names:
            raise HTTPException(404, f"unknown tool; available: {names}")
        return await pool.run(run_tool, name, req, client=client_key(request.scope))

    @app.post("/backend/search", dependencies=guarded, response_model=None, openapi_extra=body_doc(SearchRequest))
    async def backend_search(request: Request) -> dict[str, Any] | Response:
        req, client = await read_model(request, SearchRequest, pool.run), client_key(request.scope)
        if req.queries is not None:  # bulk: one result list per query, the fast route's bytes
            return Response(
                await pool.run(bulk_search, executor.search, req.queries, req.k, client=client),
                media_type="application/json",
            )
        return {"results": [asdict(r) for r in await pool.run(executor.search, req.query, req.k, client=client)]}

    @app.post("/backend/scholar", dependencies=guarded, openapi_extra=body_doc(QueryRequest))
    async def backend_scholar(request: Request) -> dict[str, Any]:
        req = await read_model(request, QueryRequest, pool.run)
        found = await pool.run(executor.scholar, req.query, req.k, client=client_key(request.scope))
        return {"results": [asdict(r) for r in found]}

    @app.post("/backend/visit", dependencies=guarded, openapi_extra=body_doc(VisitRequest))
    async def backend_visit(request: Request) -> dict[str, Any]:
        req = await read_model(request, VisitRequest, pool.run)
        return asdict(await pool.run(executor.visit, req.url, req.goal, client=client_key(request.scope)))


def _add_guarded_docs(app: FastAPI, authorized: Callable[[Request], None]) -> None:
    """``/openapi.json`` and ``/docs`` behind ``authorized``: the schema lists every served tool (PythonInterpreter
    included when enabled), which a server with a token shows only to its callers."""
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.responses import HTMLResponse, JSONResponse

    guarded = [Depends(authorized)]

    @app.get("/openapi.json", include_in_schema=False, dependencies=guarded)
    async def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False, dependencies=guarded)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{app.title} - docs")


def app_factory() -> FastAPI:
    """uvicorn factory for multi-worker serving: the :class:`ServeConfig` and the token from the environment."""
    return app_from_config(_worker_config(), _token())


def app_from_config(cfg: ServeConfig, token: str | None) -> FastAPI:
    """The served app of ``cfg``: the index opened and the warm-up searches run before it takes connections."""
    return create_app(
        cfg.index,
        cfg.mode,
        cfg.cache,
        backend=cfg.backend,
        enable_python=cfg.enable_python,
        token=token,
        max_body_bytes=cfg.max_body_bytes,
        tool_threads=cfg.tool_threads,
        max_in_progress=cfg.max_in_progress,
        max_calls_per_client=cfg.max_calls_per_client,
        fast_routes=_fast_routes(),
        warm=True,
        warm_searches=cfg.warm_searches,
        openenv_limits=cfg.openenv,
    )


def _token() -> str | None:
    """``$SIM_WEB_SERVER_TOKEN``, or ``None`` when unset or empty."""
    from simweb_core.settings import env

    return env(TOKEN_ENV) or None


def _worker_config() -> ServeConfig:
    """The config :func:`serve` handed its workers in ``$SIM_WEB_SERVER_CONFIG`` (the defaults without it)."""
    import json

    from simweb_core.data import from_data
    from simweb_core.settings import env

    text = env(CONFIG_ENV)
    return from_data(ServeConfig, json.loads(text)) if text else ServeConfig()


def _fast_routes() -> bool:
    """Whether :mod:`sim_web.serve.fast` answers the hot routes (``$SIM_WEB_SERVER_FAST_ROUTES=0``: off, to measure it)."""
    from simweb_core.settings import env

    return env(FAST_ENV, "1") != "0"


def serve(cfg: ServeConfig, token: str | None = None) -> None:
    """Run the server (blocking). With ``cfg.workers > 1`` each uvicorn worker opens the index itself.

    Args:
        cfg: What to serve and how (:class:`~sim_web.serve.config.ServeConfig`).
        token: Bearer token for the tool and backend routes (default: ``$SIM_WEB_SERVER_TOKEN``); never part of
            ``cfg``, so it is not written wherever a config goes.

    Raises:
        ConfigError: A non-loopback ``host`` without a token; a real backend without its keys.
    """
    import json

    from simweb_core.settings import set_env

    token = token or _token()
    _preflight(cfg.index, cfg.host, token, cfg.enable_python, cfg.backend)
    if cfg.workers > 1:
        set_env(CONFIG_ENV, json.dumps(asdict(cfg)))
        if token:
            set_env(TOKEN_ENV, token)
        from sim_web.serve.workers import run_workers

        run_workers(cfg.host, cfg.port, cfg.workers, cfg.limits, cfg.trusted_proxies)
    else:
        import uvicorn

        app = app_from_config(cfg, token)
        uvicorn.Server(uvicorn_config(app, cfg.host, cfg.port, cfg.limits, cfg.trusted_proxies)).run()


def _preflight(index_dir: str | None, host: str, token: str | None, enable_python: bool, backend: str) -> None:
    """Fail before binding or forking: an exposed address without a token, a missing index, missing real-web keys.

    Raises:
        ConfigError: A non-loopback ``host`` without a token; a real backend without its keys.
        IndexNotFoundError: No index at ``index_dir`` (the message names the build command).
    """
    from wiki_index.search.index import WikiIndex

    check_exposure(host, token)
    if enable_python:
        from sim_web.tools.python import sandbox_problem

        problem = sandbox_problem()
        if problem:
            log.error("PythonInterpreter is enabled but will refuse every call: %s", problem)
    WikiIndex.from_dir(index_dir)  # fail fast, with the build command, before forking workers
    if backend != "sim":
        from sim_web.backends.jina import JinaConfig
        from sim_web.backends.real import build_real_backends
        from sim_web.backends.serper import SerperConfig

        build_real_backends(
            SerperConfig(), JinaConfig()
        )  # fail fast on missing keys (naming the variable); no request is sent
