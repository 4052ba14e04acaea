"""What the tool server hands :func:`~sim_web.serve.openenv.add_openenv_routes`: one env per session, built
from the served configuration (PythonInterpreter only when the server enables it), tasks resolved once."""

from __future__ import annotations

import threading
from dataclasses import replace
from importlib import metadata
from typing import TYPE_CHECKING, Any

from sim_web.serve.guards import bearer_guard
from sim_web.serve.openenv.sessions import OpenEnvLimits

if TYPE_CHECKING:
    from sim_web.env import EnvConfig, WebResearchEnv
    from sim_web.serve.guards import ToolPool
    from sim_web.tools import Toolbox


def openenv_serving(
    cfg: EnvConfig,
    enabled: tuple[str, ...],
    toolbox: Toolbox,
    pool: ToolPool,
    token: str | None,
    limits: OpenEnvLimits | None,
) -> dict[str, Any]:
    """The keyword arguments of :func:`~sim_web.serve.openenv.add_openenv_routes` for a server.

    Args:
        cfg: The served env configuration.
        enabled: The served tools (the env of a session gets the same ones).
        toolbox: The served toolbox.
        pool: The server's tool threads.
        token: The bearer token, or ``None``.
        limits: The OpenEnv limits (default: ``OpenEnvLimits()``).
    """
    env_cfg = replace(cfg, tools=tuple(t for t in cfg.tools if t in enabled))
    tasks: list[Any] = []
    lock = threading.Lock()

    def make_env() -> WebResearchEnv:
        from sim_web.env import WebResearchEnv

        with lock:  # the task set is read once, by the first session's env
            if not tasks:
                env = WebResearchEnv(config=env_cfg)
                tasks.extend(env.tasks)
                return env
        return WebResearchEnv(config=env_cfg, tasks=tasks)

    return {
        "make_env": make_env,
        "toolbox": toolbox,
        "run": pool.run,
        "authorized": bearer_guard(token),
        "token": token,
        "limits": limits or OpenEnvLimits(),
        "version": metadata.version("sim-web"),
    }
