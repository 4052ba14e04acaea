"""TRL's arguments for agentic GRPO: :class:`AgentGRPOConfig`, ``GRPOConfig`` plus the agent-RL switches.

It sits beside :mod:`training.grpo.trainer` as TRL keeps ``grpo_config.py`` beside ``grpo_trainer.py``; a recipe's
``trainer:`` section (:class:`~training.grpo.trainer_config.TrainerConfig`) builds it. The loss switches are not
declared here: both classes inherit them, with their help texts and their check, from
:class:`training.grpo.advantage.GRPOSwitches`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from trl import GRPOConfig

from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from training.grpo.advantage import MutableGRPOSwitches


# The switches' base comes first so that their fields follow GRPOConfig's and win over it (epsilon_high's default).
@dataclass
class AgentGRPOConfig(MutableGRPOSwitches, GRPOConfig):
    """``GRPOConfig`` plus the agent-RL switches (:class:`~training.grpo.advantage.GRPOSwitches`), with the Tongyi
    recipe's defaults.

    Defaults that differ from TRL's: ``scale_rewards="none"`` (LOO does its own scaling),
    ``epsilon_high=0.28`` (clip-higher), ``beta=0.0``; ``loss_type="dapo"`` and
    ``mask_truncated_completions=False`` are TRL's defaults, kept.
    """

    switch_owner: ClassVar[str] = "AgentGRPOConfig"

    strict_on_policy: bool = help_field(
        True,
        "Require one optimiser step per generation batch (num_iterations=1, "
        "steps_per_generation=gradient_accumulation_steps), so every sample is from the "
        "current policy.",
    )
    scale_rewards: str = help_field("none", "TRL's reward scaling, used only by advantage='grpo'.")
    beta: float = help_field(0.0, "KL coefficient (0: no reference model, as in the Tongyi recipe).")

    def __post_init__(self) -> None:
        super().__post_init__()  # GRPOConfig's (the switches' base has none)
        self.check_switches()
        if self.advantage != "grpo" and self.scale_rewards != "none":
            raise ConfigError(
                f"advantage={self.advantage!r} ignores scale_rewards={self.scale_rewards!r}: set scale_rewards='none' "
                "(use advantage='loo_std' to divide by the group std)"
            )
        if self.advantage != "grpo" and self.multi_objective_aggregation != "sum_then_normalize":
            raise ConfigError("leave-one-out advantages need multi_objective_aggregation='sum_then_normalize'")
        if self.mask_truncated_completions:
            raise ConfigError(
                "mask_truncated_completions=True drops samples before rewards exist and zeroes the attention mask; "
                "use truncation='drop_all_truncated' (or 'drop_truncated_negatives') instead"
            )
        if self.strict_on_policy and (
            self.num_iterations != 1 or self.steps_per_generation != self.gradient_accumulation_steps
        ):
            raise ConfigError(
                f"strict_on_policy needs num_iterations=1 and steps_per_generation == gradient_accumulation_steps "
                f"(got {self.num_iterations}, {self.steps_per_generation}, {self.gradient_accumulation_steps}); "
                "leave steps_per_generation/generation_batch_size unset, or set strict_on_policy=False"
            )
