"""Loading GRPO recipes: the shipped recipe files, ``--set`` overrides, and reading every value as its field's type.

Recipes ship as package data (``training/configs/<name>.yaml``: ``cpu-smoke``, ``cpu-learn``, ``single-gpu``,
``multi-gpu``) and are written nested, as the sections of :class:`~training.grpo.config.GRPORecipe` are;
``--set section.field=value`` overrides one field (``sim-web grpo --recipe cpu-smoke --set trainer.max_steps=5``), its
value read as the field's type (:func:`coerce`). The recipe's fields and their validation live in
:mod:`training.grpo.config`; this module holds only how a file and its overrides become a recipe.

Example:
    >>> load_recipe("cpu-smoke", {"trainer.max_steps": "5"}).trainer.max_steps
    5
    >>> parse_overrides(["trainer.max_steps=5"])
    {'trainer.max_steps': 5}
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from simweb_core.errors import ConfigError
from training.grpo.config import GRPORecipe

__all__ = [
    "CONFIG_DIR",
    "build",
    "coerce",
    "load_recipe",
    "parse_overrides",
    "parse_value",
    "recipe_names",
    "recipe_text",
]

#: The shipped recipes (package data of ``training``).
CONFIG_DIR = resources.files("training") / "configs"
#: Section fields a recipe does not set: the run fills them in (path -> where the value comes from).
DERIVED = {
    "env.index_dir": "index_dir",
    "env.tasks": "tasks",
    "env.split": "split",
    "rollout.seed": "seed",
    "rollout.batch_size": "trainer.prompts_per_step * trainer.num_generations",
    "loop.solved_reward": "solved_reward",
}


def recipe_names() -> list[str]:
    """The shipped recipes (``training/configs/*.yaml`` without the accelerate launcher configs)."""
    return sorted(
        p.name[:-5] for p in CONFIG_DIR.iterdir() if p.name.endswith(".yaml") and not p.name.startswith("accelerate")
    )


def recipe_text(name: str) -> tuple[str, str]:
    """The YAML text of a recipe and its name: a shipped recipe's name or a YAML path.

    Raises:
        ConfigError: For a name that is neither, listing the shipped recipes.
    """
    path = Path(name)
    if path.is_file():
        return path.read_text(encoding="utf-8"), path.stem
    found = CONFIG_DIR / f"{name}.yaml"
    if not found.is_file():
        raise ConfigError(f"no GRPO recipe {name!r}: expected a YAML file or one of {recipe_names()}")
    return found.read_text(encoding="utf-8"), name


def parse_value(text: str) -> Any:
    """A ``--set key=value`` value: YAML scalars and lists (``3``, ``1e-6``, ``true``, ``null``, ``[search, visit]``)."""
    import yaml

    value = yaml.safe_load(text)
    if isinstance(value, str):
        try:
            return float(value)  # YAML 1.1 reads 1e-6 (no dot) as a string
        except ValueError:
            return value
    return value


def parse_overrides(items: list[str], flag: str = "--set") -> dict[str, Any]:
    """``["trainer.max_steps=5", "env.tools=search,visit"]`` -> ``{"trainer.max_steps": 5, "env.tools": "search,visit"}``
    (values by :func:`parse_value`; :func:`load_recipe` reads them as the field's type).

    Raises:
        ConfigError: For an item without ``=``, naming the flag.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} expects KEY=VALUE, got {item!r}")
        out[key.strip()] = parse_value(value)
    return out


def load_recipe(name: str, overrides: Mapping[str, Any] | None = None) -> GRPORecipe:
    """Read a recipe file and apply overrides.

    Args:
        name: A recipe name under ``training/configs`` or a YAML path.
        overrides: Values that win over the file, keyed by dotted path (``"trainer.max_steps"``, ``"model"``); a
            section's key may also hold a mapping of its fields (``{"trainer": {"max_steps": 5}}``).

    Returns:
        The recipe.

    Raises:
        ConfigError: For an unknown recipe or key (naming the section and its valid keys), or a value the recipe
            rejects.
    """
    import yaml

    text, stem = recipe_text(name)
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"recipe {name!r} must be a YAML mapping of fields and sections, got {type(data).__name__}")
    data = _merge({"name": stem}, data)
    for key, value in (overrides or {}).items():
        *parents, leaf = key.split(".")
        data = _merge(data, _nest(parents, {leaf: value}))
    try:
        return build(GRPORecipe(), data)
    except ConfigError as e:
        raise ConfigError(f"recipe {name!r}: {e}") from None


def _nest(parents: list[str], value: dict[str, Any]) -> dict[str, Any]:
    for p in reversed(parents):
        value = {p: value}
    return value


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on ``base``, mappings merged key by key."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(out.get(k), Mapping) and isinstance(v, Mapping) else v
    return out


def build(default: Any, data: Mapping[str, Any], where: str = "") -> Any:
    """``default`` (a dataclass instance) with the values of ``data``; nested mappings fill nested sections, every value
    is read as its field's type (:func:`coerce`) and each dataclass validates its own fields.

    Args:
        default: The instance whose fields are not in ``data``.
        data: Field values, by name.
        where: The dotted path of ``default`` in the recipe (``""`` for the recipe itself), for errors.

    Raises:
        ConfigError: For an unknown or derived key, naming the section and its valid keys.
    """
    hints = typing.get_type_hints(type(default))
    names = _keys(default, where)
    changes: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{where}{key}"
        if path in DERIVED:
            raise ConfigError(f"{path} is not set in a recipe: it follows {DERIVED[path]}")
        if key not in names:
            raise ConfigError(_unknown(key, where, names, default))
        current = getattr(default, key)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, Mapping):
                keys = _keys(current, f"{path}.")
                example = "enabled" if "enabled" in keys else keys[0]
                raise ConfigError(f"{path} is a section: set its keys ({', '.join(keys)}), e.g. {path}.{example}=...")
            changes[key] = build(current, value, f"{path}.")
        else:
            changes[key] = coerce(value, hints[key], path)
    return dataclasses.replace(default, **changes)


def _keys(section: Any, where: str) -> list[str]:
    """The fields a recipe may set in ``section`` (at dotted prefix ``where``): all but those the run derives."""
    return [f.name for f in dataclasses.fields(section) if f.init and f"{where}{f.name}" not in DERIVED]


def _unknown(key: str, where: str, names: list[str], default: Any) -> str:
    section = f"section {where.rstrip('.')!r}" if where else "the recipe's top level"
    hint = ""
    if not where:  # an old flat name: point at the sections of ``default`` that have it
        homes = [
            f"{n}.{key}"
            for n in names
            if dataclasses.is_dataclass(sub := getattr(default, n)) and key in _keys(sub, f"{n}.")
        ]
        hint = f" (did you mean {' or '.join(homes)}?)" if homes else ""
    return f"unknown key {where + key!r} in {section}{hint}; valid keys: {', '.join(names)}"


def coerce(value: Any, hint: Any, path: str) -> Any:
    """``value`` read as the type ``hint`` of the field at ``path`` (``--set`` gives text and YAML scalars).

    Tuples take a YAML list or comma-separated text (``search,visit``); floats take ints; ``str`` fields take the
    text of a number; ``None`` is allowed where the field is optional.

    Raises:
        ConfigError: When the value cannot be read as that type, naming the field, the type and the value.
    """
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint):
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "null", "none", "~")):
            return None
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if typing.get_origin(hint) is tuple:
        if isinstance(value, str):
            return tuple(v.strip() for v in value.split(",") if v.strip())
        if isinstance(value, (list, tuple)):
            return tuple(value)
    elif hint not in (int, float, bool, str):
        return value  # mappings and other types: the owning dataclass checks them
    elif isinstance(value, str) and hint is not str:
        parsed = parse_value(value)
        if isinstance(parsed, hint) or (hint is float and isinstance(parsed, int) and not isinstance(parsed, bool)):
            return hint(parsed)
    elif isinstance(value, bool):
        if hint is bool:
            return value
    elif hint is str and isinstance(value, (int, float)):
        return str(value)
    elif hint is float and isinstance(value, (int, float)):
        return float(value)
    elif isinstance(value, hint):
        return value
    raise ConfigError(f"{path} expects {getattr(hint, '__name__', hint)}, got {value!r}")
