"""``WebResearch-v0`` as an OpenEnv 0.10 environment, served by ``sim-web serve`` next to the tool routes.

:func:`add_openenv_routes` mounts ``/ws`` (one env per WebSocket session), ``POST /mcp`` (JSON-RPC 2.0),
``/metadata`` and ``/schema``; :class:`OpenEnvLimits` bounds them. The manifest and image are in
``openenv/`` at the repository root (``openenv.yaml``, ``Dockerfile``); docs/tools-and-wire-format.md lists the
OpenEnv clients tested against it.
"""

from sim_web.serve.openenv.routes import add_openenv_routes
from sim_web.serve.openenv.serving import openenv_serving
from sim_web.serve.openenv.sessions import OpenEnvLimits, SessionRegistry

__all__ = ["OpenEnvLimits", "SessionRegistry", "add_openenv_routes", "openenv_serving"]
