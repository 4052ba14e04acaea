"""``--set a.b=c`` overrides: parsing them, checking their keys against a config class, applying them to plain data.

A key is a dotted path through a config's sections (``trainer.max_steps``); a value is YAML text
(:func:`~simweb_core.data.parse_value`), later read as its field's type by :func:`~simweb_core.data.from_data`. A key
the config does not have is an error that names it, the closest valid keys and the fix.

Example:
    >>> from dataclasses import field, make_dataclass
    >>> Trainer = make_dataclass("Trainer", [("max_steps", int, 10)], frozen=True)
    >>> Recipe = make_dataclass("Recipe", [("trainer", Trainer, field(default_factory=Trainer))], frozen=True)
    >>> parse_overrides(["trainer.max_steps=5"], target=Recipe)
    {'trainer.max_steps': 5}
    >>> parse_overrides(["trainer.max_step=5"], target=Recipe)
    Traceback (most recent call last):
    ...
    simweb_core.errors.ConfigError: --set trainer.max_step=5: unknown key 'trainer.max_step' in section 'trainer' (did you mean trainer.max_steps?); valid keys: max_steps; fix: --set trainer.max_steps=5
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from typing import Any

from simweb_core.data import parse_value, section_type, suggestions, unknown_key_message, valid_keys
from simweb_core.errors import ConfigError

__all__ = ["apply_overrides", "check_key", "merge", "parse_overrides", "parse_value"]


def parse_overrides(items: Sequence[str], flag: str = "--set", *, target: type | None = None) -> dict[str, Any]:
    """``["trainer.max_steps=5", "env.tools=search,visit"]`` -> ``{"trainer.max_steps": 5, "env.tools": "search,visit"}``
    (values by :func:`~simweb_core.data.parse_value`; :func:`~simweb_core.data.from_data` reads them as the field's
    type).

    Args:
        items: ``KEY=VALUE`` texts, as the flag gave them.
        flag: The flag's name, for errors (``--set``, ``--grpo-set``).
        target: The config class whose fields the keys must name (dotted through its sections); ``None``: unchecked.

    Returns:
        The values by key, in the order given.

    Raises:
        ConfigError: For an item without ``=``, naming the flag; for a key ``target`` does not have, naming it, the
            closest valid keys and the flag as it should have been given.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} expects KEY=VALUE, got {item!r}")
        key = key.strip()
        if target is not None:
            try:
                check_key(target, key)
            except ConfigError as e:
                raise ConfigError(f"{flag} {item}: {e}{_fix(target, key, value, flag)}") from None
        out[key] = parse_value(value)
    return out


def check_key(cls: type, key: str) -> type:
    """Check that the dotted ``key`` names a field of ``cls``, through its sections (``trainer.max_steps``).

    Returns:
        The class that holds the key's last part (``cls`` itself for a top-level key).

    Raises:
        ConfigError: For a part that is not a field (naming the closest valid keys), or a part below a field that is
            not a section.
    """
    parts = key.split(".")
    owner, i = _walk(cls, parts)
    if i < len(parts):
        raise ConfigError(unknown_key_message(owner, [parts[i]], ".".join(parts[:i])))
    return owner


def _walk(cls: type, parts: list[str]) -> tuple[type, int]:
    """The class that should hold ``parts[i]``, and ``i``, for the first part that is not one of its fields
    (``i == len(parts)``: every part is).

    Raises:
        ConfigError: For a part below a field that is not a section.
    """
    for i, part in enumerate(parts):
        if part not in valid_keys(cls, ".".join(parts[:i])):
            return cls, i
        if i < len(parts) - 1:
            sub = section_type(typing.get_type_hints(cls)[part])
            if sub is None:
                name = ".".join(parts[: i + 1])
                raise ConfigError(f"{name} is not a section: set it whole ({name}=VALUE)")
            cls = sub
    return cls, len(parts)


def _fix(cls: type, key: str, value: str, flag: str) -> str:
    """``; fix: --set KEY=VALUE`` with the best suggestion for the unknown part of ``key`` (nothing without one)."""
    parts = key.split(".")
    try:
        owner, i = _walk(cls, parts)
    except ConfigError:  # a part below a field that is not a section: no key to suggest
        return ""
    if i == len(parts):
        return ""
    best = suggestions(owner, parts[i], ".".join(parts[:i]))[:1]
    return f"; fix: {flag} {'.'.join([*best, *parts[i + 1 :]])}={value}" if best else ""


def apply_overrides(data: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` (nested mappings) with each override set at its dotted key, in order; a mapping value merges into the
    mapping already there key by key.

    Example:
        >>> apply_overrides({"trainer": {"max_steps": 2, "beta": 0.0}}, {"trainer.max_steps": 5, "model": "tiny"})
        {'trainer': {'max_steps': 5, 'beta': 0.0}, 'model': 'tiny'}
    """
    out = dict(data)
    for key, value in overrides.items():
        *parents, leaf = key.split(".")
        nested: dict[str, Any] = {leaf: value}
        for parent in reversed(parents):
            nested = {parent: nested}
        out = merge(out, nested)
    return out


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on ``base`` (nested mappings, keys taken as they are), mappings merged key by key.

    Example:
        >>> merge({"name": "x", "trainer": {"beta": 0.0}}, {"trainer": {"max_steps": 5}})
        {'name': 'x', 'trainer': {'beta': 0.0, 'max_steps': 5}}
    """
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(out.get(k), Mapping) and isinstance(v, Mapping) else v
    return out
