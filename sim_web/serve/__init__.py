"""Front ends over the tools: the HTTP tool server (:mod:`sim_web.serve.http`) and TRL's
``environment_factory`` shape (:mod:`sim_web.serve.trl`).

The names are re-exported lazily: importing this package does not import fastapi or TRL's dataset stack.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "create_app": "http",
    "serve": "http",
    "ServeConfig": "config",
    "WebResearchToolEnv": "trl",
    "answer_reward": "trl",
    "tasks_dataset": "trl",
    "with_tool_template": "trl",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
