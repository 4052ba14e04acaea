"""Loading GRPO recipes: the shipped recipe files, ``--set`` overrides, and reading every value as its field's type.

Recipes ship as package data (``training/configs/<name>.yaml``: ``cpu-smoke``, ``cpu-learn``, ``single-gpu``,
``multi-gpu``) and are written nested, as the sections of :class:`~training.grpo.config.GRPORecipe` are;
``--set section.field=value`` overrides one field (``sim-web grpo --recipe cpu-smoke --set trainer.max_steps=5``), its
value read as the field's type (:func:`~simweb_core.data.from_data`; the ``--set`` parser is the kernel's
:func:`~simweb_core.overrides.parse_overrides`). The recipe's fields and their validation live in
:mod:`training.grpo.config`; this module holds only how a file and its overrides become a recipe.

Example:
    >>> load_recipe("cpu-smoke", {"trainer.max_steps": "5"}).trainer.max_steps
    5
    >>> parse_overrides(["trainer.max_steps=5"])
    {'trainer.max_steps': 5}
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from simweb_core.data import from_data
from simweb_core.errors import ConfigError
from simweb_core.overrides import apply_overrides, merge, parse_overrides, parse_value
from training.grpo.config import GRPORecipe

__all__ = [
    "CONFIG_DIR",
    "DERIVED",
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


def load_recipe(name: str, overrides: Mapping[str, Any] | None = None) -> GRPORecipe:
    """Read a recipe file and apply overrides.

    Args:
        name: A recipe name under ``training/configs`` or a YAML path.
        overrides: Values that win over the file, keyed by dotted path (``"trainer.max_steps"``, ``"model"``); a
            section's key may also hold a mapping of its fields (``{"trainer": {"max_steps": 5}}``).

    Returns:
        The recipe: :class:`GRPORecipe`'s defaults, then the file, then the overrides, every value read as its field's
        type (:func:`~simweb_core.data.from_data`); each section validates its own fields.

    Raises:
        ConfigError: For an unknown recipe or key (naming the section, the closest valid keys and the valid keys), a
            derived key (:data:`DERIVED`), or a value the recipe rejects.
    """
    import yaml

    text, stem = recipe_text(name)
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"recipe {name!r} must be a YAML mapping of fields and sections, got {type(data).__name__}")
    data = apply_overrides(merge({"name": stem}, data), overrides or {})
    try:
        return from_data(GRPORecipe, data, base=GRPORecipe(), derived=DERIVED)
    except ConfigError as e:
        raise ConfigError(f"recipe {name!r}: {e}") from None
