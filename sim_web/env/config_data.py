"""Rebuild an ``EnvConfig`` (and tasks) from plain data: what ``EnvSpec.to_json`` and ``dataclasses.asdict`` make of them.

``gym.make`` keeps its keyword arguments in ``env.spec.kwargs``; ``EnvSpec.to_json`` turns every dataclass
in them into a dict and every tuple into a list. The env accepts those back, so that
``gym.make(EnvSpec.from_json(env.spec.to_json()))`` builds the same env.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import fields, is_dataclass, replace
from typing import Any, TypeVar

from sim_web.env.config import EnvConfig
from sim_web.env.tasks import Task
from simweb_core.errors import ConfigError

T = TypeVar("T")
_MAPPINGS = (dict, collections.abc.Mapping)
_UNIONS = (typing.Union, types.UnionType)


def dataclass_from_data(cls: type[T], data: Mapping[str, Any], where: str) -> T:
    """Build the dataclass ``cls`` from a dict of its fields, converting nested dicts and lists by the field types.

    Args:
        cls: The dataclass (e.g. :class:`EnvConfig`).
        data: Field values; nested dataclasses as dicts and tuples as lists are accepted.
        where: What ``data`` is, for error messages (e.g. ``"config"``).

    Returns:
        The instance (its own ``__post_init__`` checks still run).

    Raises:
        ConfigError: When ``data`` is not a dict or names a field that ``cls`` does not have.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where} must be a {cls.__name__} or a dict of its fields, got {type(data).__name__}")
    _check_keys(cls, data, where)
    hints = typing.get_type_hints(cls)
    return cls(**{k: _coerce(hints[k], v, f"{where}.{k}") for k, v in data.items()})


def _check_keys(cls: type, data: Mapping[str, Any], where: str) -> None:
    known = sorted(f.name for f in fields(cls) if f.init)
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(
            f"{where} has unknown keys {unknown}; {cls.__name__} has the fields {known} "
            "(fix the spelling, or drop keys that this version does not have)"
        )


def _coerce(hint: Any, value: Any, where: str) -> Any:
    """``value`` as the type ``hint`` wants it, where plain data stands for a dataclass, a tuple or a mapping of them."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and is_dataclass(hint) and isinstance(value, Mapping):
        return dataclass_from_data(hint, value, where)
    if origin in _UNIONS:
        for arg in args:
            out = _coerce(arg, value, where)
            if out is not value:
                return out
        return value
    if origin is tuple and isinstance(value, (list, tuple)):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        return (
            tuple(_coerce(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value))) if args else tuple(value)
        )
    if origin in _MAPPINGS and isinstance(value, Mapping) and len(args) == 2:
        return {k: _coerce(args[1], v, f"{where}[{k!r}]") for k, v in value.items()}
    return value


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
        base = dataclass_from_data(EnvConfig, config, "config")
    else:
        raise ConfigError(f"config must be an EnvConfig or a dict of its fields, got {type(config).__name__}")
    if not overrides:
        return base
    _check_keys(EnvConfig, overrides, "gym.make keyword arguments")
    hints = typing.get_type_hints(EnvConfig)
    return replace(base, **{k: _coerce(hints[k], v, k) for k, v in overrides.items()})


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
                dataclass_from_data(Task, t, f"tasks[{i}]")
                if "id" in t and set(t) <= task_fields
                else Task.from_record(dict(t), f"tasks[{i}]")
            )
        elif not isinstance(t, Task):
            raise ConfigError(
                f"tasks[{i}] must be a Task or a dict with 'question' and 'answer', got {type(t).__name__}"
            )
        out.append(t)
    return out
