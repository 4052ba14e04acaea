"""The ablation grid: a baseline recipe and variants that each flip one switch.

The baseline is the Tongyi recipe as :class:`~training.grpo.config.GRPORecipe` defines it: leave-one-out advantages,
truncated negatives out of the loss, no DUPO, no feedback loop. Every variant changes exactly one of those switches, so a
row of the table differs from ``base`` by one thing; all runs share the seed, the task set and the number of rollouts
(``prompts_per_step * num_generations * max_steps``).

Example:
    >>> [v.name for v in select(["base", "dupo"])]
    ['base', 'dupo']
    >>> variant("adv-grpo").overrides
    {'trainer.advantage': 'grpo'}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from simweb_core.errors import ConfigError
from simweb_core.fields import help_field

#: The switches the baseline fixes (and which the grid flips one at a time), by their recipe paths.
BASELINE: dict[str, Any] = {
    "trainer.advantage": "loo",
    "trainer.truncation": "drop_truncated_negatives",
    "trainer.dupo": False,
    "loop.enabled": False,
}


@dataclass(frozen=True)
class Variant:
    """One configuration of the grid."""

    name: str = help_field(help="Short name (the run's folder and the table's row).")
    switch: str = help_field(help="The switch it flips relative to the baseline ('-' for the baseline).")
    overrides: dict[str, Any] = help_field(
        help="Recipe fields (dotted paths) that differ from the baseline.", default_factory=dict
    )
    quick: dict[str, Any] = help_field(help="Extra fields for --quick (small CPU settings).", default_factory=dict)
    implies: dict[str, Any] = help_field(
        help="Recipe fields the switch cannot run without (not a second switch: e.g. the loop rebuilds the task "
        "list, so a recipe's fixed tier order is turned off).",
        default_factory=dict,
    )

    def fields(self, quick: bool = False) -> dict[str, Any]:
        """The recipe fields of this run: the baseline's switches, then this variant's."""
        return {**BASELINE, **self.overrides, **self.implies, **(self.quick if quick else {})}


GRID: tuple[Variant, ...] = (
    Variant("base", "-"),
    Variant("adv-grpo", "advantage", {"trainer.advantage": "grpo"}),
    Variant("adv-loo_std", "advantage", {"trainer.advantage": "loo_std"}),
    Variant("trunc-keep_all", "truncation", {"trainer.truncation": "keep_all"}),
    Variant("trunc-drop_all", "truncation", {"trainer.truncation": "drop_all_truncated"}),
    Variant("dupo", "dupo", {"trainer.dupo": True}),
    Variant(
        "loop",
        "loop",
        {"loop.enabled": True},
        quick={
            "loop.every": 1,
            "loop.min_rollouts": 2,
            "loop.window": 4,
            "loop.synth_max_nodes": 300,
            "loop.synth_oversample": 1.0,
        },
        implies={"balance_tiers": False},
    ),
)
NAMES = tuple(v.name for v in GRID)


def variant(name: str) -> Variant:
    """The grid's variant called ``name``.

    Raises:
        ConfigError: For an unknown name, listing the known ones.
    """
    for v in GRID:
        if v.name == name:
            return v
    raise ConfigError(f"no ablation configuration {name!r}; known: {', '.join(NAMES)}")


def select(names: Sequence[str] | None = None) -> list[Variant]:
    """The variants named (all of them for ``None``), in grid order, each once."""
    if not names:
        return list(GRID)
    wanted = {variant(n).name for n in names}
    return [v for v in GRID if v.name in wanted]
