"""Plain data -> nested frozen dataclasses: what YAML recipes, JSON (``EnvSpec.to_json``, ``dataclasses.asdict``) and
``--set`` overrides give back as configs, each value read as its field's type.

Plain values (text, numbers, booleans, ``None``, lists, mappings) are read as the field's type: text as YAML
(:func:`parse_value`: ``"5"`` for an ``int``, ``"true"`` for a ``bool``, ``"null"`` where ``None`` is allowed), a list or
comma-separated text as a tuple, a mapping as a nested dataclass; a plain value of the wrong kind is an error naming
the field. Other Python objects (a ``Path``, a numpy number, a config instance) go to the dataclass's own checks.

Example:
    >>> from dataclasses import field, make_dataclass
    >>> Sim = make_dataclass("Sim", [("snippet_chars", int, 240)], frozen=True)
    >>> Env = make_dataclass(
    ...     "Env",
    ...     [("tools", tuple[str, ...], ("search",)), ("split", str | None, "train"), ("sim", Sim, field(default_factory=Sim))],
    ...     frozen=True,
    ... )
    >>> from_data(Env, {"tools": "search,visit", "split": "null", "sim": {"snippet_chars": "120"}})
    Env(tools=('search', 'visit'), split=None, sim=Sim(snippet_chars=120))
    >>> from_data(Env, {"sim": {"snipet_chars": 1}}, "config")
    Traceback (most recent call last):
    ...
    simweb_core.errors.ConfigError: unknown key 'config.sim.snipet_chars' in section 'config.sim' (did you mean config.sim.snippet_chars?); valid keys: snippet_chars
"""

from __future__ import annotations

import collections.abc
import dataclasses
import difflib
import numbers
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from simweb_core.errors import ConfigError

__all__ = [
    "check_keys",
    "coerce",
    "from_data",
    "parse_value",
    "section_type",
    "suggestions",
    "unknown_key_message",
    "valid_keys",
]

T = TypeVar("T")
_UNIONS = (typing.Union, types.UnionType)
_MAPPINGS = (dict, collections.abc.Mapping)
#: Text that stands for ``None`` in a field that allows it.
_NULLS = ("", "null", "none", "~")
#: What YAML, JSON and ``--set`` give: a value of these types and the wrong kind is an error, not the owner's to check.
_PLAIN = (str, int, float, bool, type(None), list, tuple, dict)


def parse_value(text: str) -> Any:
    """A value written as text (``--set key=value``): YAML scalars and lists (``3``, ``1e-6``, ``true``, ``null``,
    ``[search, visit]``); other text stays text.

    Example:
        >>> [parse_value(v) for v in ("3", "1e-6", "true", "null", "[search, visit]", "/a/b")]
        [3, 1e-06, True, None, ['search', 'visit'], '/a/b']
    """
    import yaml

    value = yaml.safe_load(text)
    if isinstance(value, str):
        try:
            return float(value)  # YAML 1.1 reads 1e-6 (no dot) as a string
        except ValueError:
            return value
    return value


def _path(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def section_type(hint: Any) -> type | None:
    """The dataclass ``hint`` names (``X`` or ``X | None``), else ``None``."""
    if typing.get_origin(hint) in _UNIONS:
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = options[0] if len(options) == 1 else None
    return hint if isinstance(hint, type) and dataclasses.is_dataclass(hint) else None


def valid_keys(cls: type, where: str = "", derived: Mapping[str, str] | None = None) -> list[str]:
    """The keys data may set in ``cls`` (at dotted path ``where``), in field order: its ``__init__`` fields, less
    ``derived`` paths."""
    return [f.name for f in dataclasses.fields(cls) if f.init and _path(where, f.name) not in (derived or {})]


def suggestions(cls: type, key: str, where: str = "", derived: Mapping[str, str] | None = None) -> list[str]:
    """The dotted paths a key that ``cls`` does not have may have meant, best first: a key of that name in one of its
    sections (given one level too high), then the closest valid keys (``difflib``).

    Args:
        cls: The dataclass the key was given for.
        key: The key it does not have.
        where: The dotted path of ``cls`` in the data (``""``: the top level).
        derived: Paths the caller fills in itself (never suggested).
    """
    valid = valid_keys(cls, where, derived)
    hints = typing.get_type_hints(cls)
    found = []
    for name in valid:
        sub = section_type(hints[name])
        if sub is not None and key in valid_keys(sub, _path(where, name), derived):
            found.append(_path(where, f"{name}.{key}"))
    found += [_path(where, m) for m in difflib.get_close_matches(key, valid, n=3, cutoff=0.6)]
    return list(dict.fromkeys(found))


def unknown_key_message(
    cls: type, unknown: Sequence[str], where: str = "", derived: Mapping[str, str] | None = None
) -> str:
    """The error text for keys that ``cls`` does not have: their dotted paths, what they may have meant
    (:func:`suggestions`) and the valid keys.

    Args:
        cls: The dataclass the keys were given for.
        unknown: The keys it does not have.
        where: The dotted path of ``cls`` in the data (``""``: the top level).
        derived: Paths the caller fills in itself (not listed as valid).
    """
    guesses = [g for key in unknown for g in suggestions(cls, key, where, derived)]
    paths = ", ".join(repr(_path(where, k)) for k in unknown)
    head = f"unknown key {paths}" if len(unknown) == 1 else f"unknown keys {paths}"
    place = f"section {where!r}" if where else f"the top level of {cls.__name__}"
    hint = f" (did you mean {' or '.join(dict.fromkeys(guesses))}?)" if guesses else ""
    return f"{head} in {place}{hint}; valid keys: {', '.join(valid_keys(cls, where, derived))}"


def check_keys(cls: type, data: Mapping[str, Any], where: str = "", derived: Mapping[str, str] | None = None) -> None:
    """Refuse keys of ``data`` that are not fields of ``cls`` (or that the caller derives).

    Raises:
        ConfigError: For a derived key, naming what it follows; for unknown keys, naming them, the closest valid keys
            and the valid keys.
    """
    derived = derived or {}
    for key in data:
        if _path(where, key) in derived:
            raise ConfigError(f"{_path(where, key)} is not set directly: it follows {derived[_path(where, key)]}")
    valid = set(valid_keys(cls, where, derived))
    unknown = sorted(k for k in data if k not in valid)
    if unknown:
        raise ConfigError(unknown_key_message(cls, unknown, where, derived))


def from_data(
    cls: type[T],
    data: Mapping[str, Any],
    where: str = "",
    *,
    base: T | None = None,
    derived: Mapping[str, str] | None = None,
) -> T:
    """Build the dataclass ``cls`` from a mapping of its fields, each value read as its field's type (:func:`coerce`).

    Args:
        cls: The dataclass.
        data: Field values by name: nested mappings for sections, lists or comma-separated text for tuples, text for
            numbers and booleans.
        where: The dotted path of ``data`` (``""``: the top level; ``"config"``, ``"trainer"``), for errors.
        base: An instance whose values stand for the fields ``data`` leaves out; a section of it takes a mapping key by
            key and nothing else (overrides on a recipe). Without it, missing fields take the class's defaults and a
            mapping builds a section from the field's type.
        derived: Dotted paths the caller fills in itself, each with what it follows: setting one is an error.

    Returns:
        The instance (its own ``__post_init__`` checks run once, on all values).

    Raises:
        ConfigError: For data that is not a mapping, an unknown or derived key, or a value that cannot be read as its
            field's type, each naming the field.
    """
    if not isinstance(data, Mapping):
        what = where or "the data"
        raise ConfigError(f"{what} must be a {cls.__name__} or a dict of its fields, got {type(data).__name__}")
    check_keys(cls, data, where, derived)
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for key, value in data.items():
        current = getattr(base, key) if base is not None else None
        if dataclasses.is_dataclass(current) and not isinstance(current, type):
            values[key] = _section(current, value, _path(where, key), derived)
        else:
            values[key] = coerce(value, hints[key], _path(where, key))
    return dataclasses.replace(base, **values) if base is not None else cls(**values)  # type: ignore[type-var]


def _section(current: Any, value: Any, path: str, derived: Mapping[str, str] | None) -> Any:
    """A section of an existing config set from ``value``: a mapping of its keys or an instance of its type."""
    if isinstance(value, type(current)):
        return value
    if not isinstance(value, Mapping):
        keys = valid_keys(type(current), path, derived)
        example = "enabled" if "enabled" in keys else keys[0]
        raise ConfigError(f"{path} is a section: set its keys ({', '.join(keys)}), e.g. {path}.{example}=...")
    return from_data(type(current), value, path, base=current, derived=derived)


def coerce(value: Any, hint: Any, where: str) -> Any:
    """``value`` read as the type ``hint`` of the field at ``where``.

    ``X | None`` takes ``None`` or null text (``""``, ``null``, ``none``, ``~``); a tuple takes a list or
    comma-separated text (``search,visit``), a single number a one-item tuple, each item read as the item type; a
    mapping's values are read as its value type; a dataclass takes a mapping of its fields (:func:`from_data`); an
    ``int``, ``float`` or ``bool`` takes its text; a ``float`` takes an integer; a ``str`` takes a number's text.

    Raises:
        ConfigError: For a plain value (text, a number, a boolean, ``None``, a list, a mapping) that cannot be read as
            that type, naming the field, the type and the value.
    """
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in _UNIONS:
        return _union(value, hint, where)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return from_data(hint, value, where) if isinstance(value, Mapping) else value
    if origin is tuple:
        return _tuple(value, hint, where)
    if origin in _MAPPINGS and isinstance(value, Mapping) and len(args) == 2:
        return {k: coerce(v, args[1], f"{where}[{k!r}]") for k, v in value.items()}
    if hint in (int, float, bool, str):
        return _scalar(value, hint, where)
    return value  # Any and other types: the owning dataclass checks them


def _union(value: Any, hint: Any, where: str) -> Any:
    args = typing.get_args(hint)
    options = [a for a in args if a is not type(None)]
    if len(options) < len(args) and (value is None or (isinstance(value, str) and value.strip().lower() in _NULLS)):
        return None
    for option in options[:-1]:  # several types: the first that takes the value
        try:
            return coerce(value, option, where)
        except ConfigError:
            continue
    return coerce(value, options[-1], where)


def _tuple(value: Any, hint: Any, where: str) -> Any:
    if isinstance(value, str):
        items: list[Any] = [v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        items = [value]
    elif isinstance(value, _PLAIN):
        raise ConfigError(f"{where} expects {_name(hint)}, got {value!r}")
    else:
        return value
    args = typing.get_args(hint)
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(coerce(v, args[0], f"{where}[{i}]") for i, v in enumerate(items))
    if args and len(args) != len(items):
        raise ConfigError(f"{where} expects {_name(hint)} ({len(args)} items), got {value!r}")
    return tuple(coerce(v, a, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, items))) if args else tuple(items)


def _scalar(value: Any, hint: type, where: str) -> Any:
    if isinstance(value, str) and hint is not str:
        parsed = parse_value(value)
        if isinstance(parsed, hint) or (hint is float and isinstance(parsed, int) and not isinstance(parsed, bool)):
            return hint(parsed)
    elif isinstance(value, bool):
        if hint is bool:
            return value
    elif hint is str and isinstance(value, (int, float)):
        return str(value)
    elif hint is float and isinstance(value, numbers.Real):
        return float(value)
    elif hint is int and isinstance(value, numbers.Integral):
        return int(value)
    elif isinstance(value, hint):
        return value
    elif not isinstance(value, _PLAIN):
        return value  # another Python object (a Path for a str field): the owning dataclass checks it
    raise ConfigError(f"{where} expects {_name(hint)}, got {value!r}")


def _name(hint: Any) -> str:
    """``int``, ``tuple[str, ...]``: how an error names a type."""
    return hint.__name__ if isinstance(hint, type) else str(hint)
