"""Rebuild an ``EnvConfig`` (and tasks) from plain data: what ``EnvSpec.to_json`` and ``dataclasses.asdict`` make of them.

``gym.make`` keeps its keyword arguments in ``env.spec.kwargs``; ``EnvSpec.to_json`` turns every dataclass
in them into a dict and every tuple into a list. The env accepts those back (through the kernel's
:func:`~simweb_core.data.from_data`), so that ``gym.make(EnvSpec.from_json(env.spec.to_json()))`` builds the same env.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from typing import Any

from sim_web.env.config import EnvConfig
from sim_web.env.tasks import Task
from simweb_core.data import check_keys, coerce, from_data
from simweb_core.errors import ConfigError


def env_config_from(config: EnvConfig | Mapping[str, Any] | None, overrides: Mapping[str, Any]) -> EnvConfig:
    """The env's config: ``config`` (an ``EnvConfig``, a dict of its fields, or ``None`` for the defaults) with ``overrides``.

    Args:
        config: The config, possibly as plain data (from ``EnvSpec.from_json``).
        overrides: ``EnvConfig`` fields passed to ``gym.make`` as keyword arguments (plain data accepted too).

    Returns:
        The :class:`EnvConfig`.

    Raises:
        ConfigError: For a config of another type, or a key that is not an ``EnvConfig`` field.
    """
    if config is None:
        base = EnvConfig()
    elif isinstance(config, EnvConfig):
        base = config
    elif isinstance(config, Mapping):
        base = from_data(EnvConfig, config, "config")
    else:
        raise ConfigError(f"config must be an EnvConfig or a dict of its fields, got {type(config).__name__}")
    if not overrides:
        return base
    try:
        check_keys(EnvConfig, overrides)
    except ConfigError as e:
        raise ConfigError(f"gym.make keyword arguments: {e}") from None
    hints = typing.get_type_hints(EnvConfig)
    return replace(base, **{k: coerce(v, hints[k], k) for k, v in overrides.items()})


def tasks_from(tasks: Sequence[Task | Mapping[str, Any]] | None) -> list[Task] | None:
    """``tasks`` as :class:`Task` objects: dicts of a task's fields (``dataclasses.asdict``) or task records are converted.

    Raises:
        ConfigError: For a task that is neither a ``Task`` nor a dict.
    """
    if tasks is None:
        return None
    task_fields = {f.name for f in fields(Task)}
    out = []
    for i, t in enumerate(tasks):
        if isinstance(t, Mapping):
            t = (
                from_data(Task, t, f"tasks[{i}]")
                if "id" in t and set(t) <= task_fields
                else Task.from_record(dict(t), f"tasks[{i}]")
            )
        elif not isinstance(t, Task):
            raise ConfigError(
                f"tasks[{i}] must be a Task or a dict with 'question' and 'answer', got {type(t).__name__}"
            )
        out.append(t)
    return out
