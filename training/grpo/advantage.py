"""Group advantages and the truncated-negative drop mask (pure functions on flat reward tensors), and the switches that
pick them (:class:`GRPOSwitches`, declared once for the recipe and TRL's arguments).

Rewards arrive flat, ``G`` consecutive samples per prompt (TRL's layout after ``gather``). A NaN reward
marks an unscorable sample (every reward function returned ``None``): it is left out of its group's
baseline and gets advantage 0.

- ``grpo``: ``A_i = r_i - mean_j r_j`` (TRL's ``scale_rewards="none"``).
- ``loo``: leave-one-out, ``A_i = r_i - mean_{j != i} r_j``, computed in the explicit form
  ``r_i - (sum_group - r_i) / (n_scorable - 1)`` so that NaN samples drop out of the sums; with no NaN it
  equals ``G / (G - 1) * (r_i - mean)`` (SkyRL's and verl's RLOO).
- ``loo_std``: ``loo`` divided by the group's standard deviation (unbiased, over scorable samples, plus
  ``eps``; TRL's ``nanstd``).

A group with a single scorable sample has no baseline: its advantage is 0.

Example:
    >>> import torch
    >>> group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0]), 4, "loo").tolist()
    [1.0, -0.3333333432674408, -0.3333333432674408, -0.3333333432674408]
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any, ClassVar, get_type_hints

import torch

from simweb_core.errors import ConfigError
from simweb_core.fields import help_field

ADVANTAGES = ("grpo", "loo", "loo_std")
TRUNCATION_RULES = ("keep_all", "drop_all_truncated", "drop_truncated_negatives")
EPS = 1e-4  # TRL's epsilon when scaling by the std


@dataclass(frozen=True)
class GRPOSwitches:
    """The GRPO loss switches, declared once: the recipe's ``trainer:`` section
    (:class:`~training.grpo.trainer_config.TrainerConfig`) inherits these fields, TRL's arguments
    (:class:`~training.grpo.grpo_config.AgentGRPOConfig`) inherit the same fields through
    :data:`MutableGRPOSwitches`, and ``TrainerConfig.args`` copies every one of them across, so a new switch is one
    field here (plus the code that reads it).

    A field with ``choices`` in its metadata only takes those values (:meth:`check_switches`).
    """

    #: How errors name the holder of the values (``trainer`` in a recipe); each holder sets its own.
    switch_owner: ClassVar[str] = "GRPOSwitches"

    advantage: str = help_field(
        "loo",
        "Group advantage: 'grpo' (TRL's own, honouring scale_rewards), 'loo' (leave-one-out r_i - mean_{j!=i} r_j) "
        "or 'loo_std' (LOO / group std).",
        choices=ADVANTAGES,
    )
    truncation: str = help_field(
        "drop_truncated_negatives",
        "Which samples leave the loss: 'keep_all'; 'drop_all_truncated' (every episode without a final answer, "
        "TRL's mask_truncated_completions rule); 'drop_truncated_negatives' (no final answer AND reward <= 0; "
        "truncated successes stay). Dropped samples stay in the group baseline.",
        choices=TRUNCATION_RULES,
    )
    dupo: bool = help_field(
        False,
        "DUPO batch filling: replace each group whose rewards are all equal by a copy of an informative group of the "
        "same batch (no extra rollouts); counts logged as agent/dupo_dropped_groups and agent/dupo_duplicated_groups.",
    )
    epsilon_high: float | None = help_field(
        0.28, "Upper clip of the ratio (clip-higher); 0.2 gives symmetric clipping, None = epsilon."
    )
    trained_positions_only: bool = help_field(
        True,
        "On a CPU, one process: the loss's logprobs from the backbone plus a float32 output layer on the positions "
        "the loss reads (completion tokens outside tool outputs) instead of TRL's fused head over every position "
        "(training.grpo.head); False: TRL's head. The loss is the same either way.",
    )

    def __post_init__(self) -> None:
        self.check_switches()

    def check_switches(self) -> None:
        """Refuse a value outside its switch's ``choices`` (the one check of every holder of the switches).

        Raises:
            ConfigError: Naming the holder (:attr:`switch_owner`), the switch, the value found and the allowed ones.
        """
        for f in fields(GRPOSwitches):
            check_choice(self.switch_owner, f.name, getattr(self, f.name))

    def switch_values(self) -> dict[str, Any]:
        """Every switch by name (what ``TrainerConfig.args`` hands to TRL's arguments)."""
        return {f.name: getattr(self, f.name) for f in fields(GRPOSwitches)}


#: :class:`GRPOSwitches`' fields (same types, defaults and help) and methods on a class that is not frozen, for TRL's
#: arguments: a frozen dataclass cannot be the base of one that is not. Made from the fields above, not declared again.
MutableGRPOSwitches = make_dataclass(
    "MutableGRPOSwitches",
    [
        (f.name, get_type_hints(GRPOSwitches)[f.name], field(default=f.default, metadata=f.metadata))
        for f in fields(GRPOSwitches)
    ],
    namespace={
        "__module__": __name__,
        "__doc__": "GRPOSwitches' fields on a dataclass that is not frozen (TRL's arguments).",
        "switch_owner": GRPOSwitches.switch_owner,
        "check_switches": GRPOSwitches.check_switches,
        "switch_values": GRPOSwitches.switch_values,
    },
)
_SWITCH_FIELDS = {f.name: f for f in fields(GRPOSwitches)}


def check_choice(owner: str, switch: str, value: Any) -> None:
    """Refuse a value outside the ``choices`` of the :class:`GRPOSwitches` field ``switch`` (none: anything goes).

    Args:
        owner: What holds the value, for the message (``trainer``, ``AgentGRPOConfig``, ``group_advantages``...).
        switch: The field's name.
        value: The value to check.

    Raises:
        ConfigError: Naming the owner, the switch, the value found and the allowed ones.
    """
    choices = _SWITCH_FIELDS[switch].metadata.get("choices")
    if choices is not None and value not in choices:
        raise ConfigError(f"{owner}.{switch} must be one of {choices}, got {value!r}")


def _grouped(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    if rewards.dim() != 1:
        raise ConfigError(f"rewards must be a flat tensor (one reward per sample), got shape {tuple(rewards.shape)}")
    if group_size < 2 or rewards.numel() % group_size:
        raise ConfigError(
            f"{rewards.numel()} rewards cannot be split into groups of {group_size} "
            "(num_generations must be >= 2 and divide the generation batch)"
        )
    return rewards.float().view(-1, group_size)


def group_std(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Per-sample standard deviation of its group (unbiased, over scorable samples; 0 when fewer than 2).

    Args:
        rewards: Flat rewards, ``group_size`` consecutive samples per group; NaN = unscorable.
        group_size: ``G``.

    Returns:
        A flat tensor like ``rewards``.
    """
    r = _grouped(rewards, group_size)
    ok = ~torch.isnan(r)
    n = ok.sum(1, keepdim=True).float()
    mean = torch.where(ok, r, 0.0).sum(1, keepdim=True) / n.clamp(min=1)
    var = torch.where(ok, (r - mean) ** 2, 0.0).sum(1, keepdim=True) / (n - 1).clamp(min=1)
    return var.sqrt().expand_as(r).reshape(-1)


def group_advantages(rewards: torch.Tensor, group_size: int, kind: str = "loo", eps: float = EPS) -> torch.Tensor:
    """Advantages of a flat batch of grouped rewards.

    Args:
        rewards: Flat rewards, ``group_size`` consecutive samples per prompt; NaN = unscorable.
        group_size: ``G`` (TRL's ``num_generations``), at least 2.
        kind: ``grpo``, ``loo`` or ``loo_std`` (see the module docstring).
        eps: Added to the std before dividing (``loo_std``).

    Returns:
        A flat float tensor like ``rewards``; 0 for NaN samples and for groups with one scorable sample.

    Raises:
        ConfigError: For an unknown ``kind`` or a batch that is not a whole number of groups.
    """
    check_choice("group_advantages", "advantage", kind)
    r = _grouped(rewards, group_size)
    ok = ~torch.isnan(r)
    n = ok.sum(1, keepdim=True).float()
    total = torch.where(ok, r, 0.0).sum(1, keepdim=True)
    if kind == "grpo":
        adv = r - total / n.clamp(min=1)
    else:
        adv = r - (total - r) / (n - 1).clamp(min=1)
    adv = torch.where(ok & (n > 1), adv, 0.0)
    if kind == "loo_std":
        adv = adv / (group_std(rewards, group_size).view_as(r) + eps)
    return adv.reshape(-1)


def zero_variance_groups(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """One bool per group: all scorable rewards of the group are equal (no learning signal)."""
    return torch.isclose(group_std(rewards, group_size).view(-1, group_size)[:, 0], torch.tensor(0.0))


def drop_mask(rewards: torch.Tensor, no_answer: torch.Tensor, rule: str = "drop_truncated_negatives") -> torch.Tensor:
    """Which samples leave the loss (True = dropped); they stay in their group's baseline.

    Args:
        rewards: Flat rewards (NaN = unscorable, never dropped here: its advantage is already 0).
        no_answer: Flat bools: the episode ended without a final answer (length cut, turn cap, tool
            output rolled back for length, observation budget).
        rule: ``keep_all``; ``drop_all_truncated`` (every sample without a final answer, like TRL's
            ``mask_truncated_completions`` but with the fuller notion of truncation); or
            ``drop_truncated_negatives`` (no final answer AND reward <= 0: truncated successes stay).

    Returns:
        A flat bool tensor.

    Raises:
        ConfigError: For an unknown rule or mismatched shapes.
    """
    check_choice("drop_mask", "truncation", rule)
    if rewards.shape != no_answer.shape:
        raise ConfigError(
            f"rewards {tuple(rewards.shape)} and no_answer {tuple(no_answer.shape)} must have the same shape"
        )
    no_answer = no_answer.bool()
    if rule == "keep_all":
        return torch.zeros_like(no_answer)
    if rule == "drop_all_truncated":
        return no_answer
    return no_answer & (rewards <= 0)  # NaN <= 0 is False
