"""Importance-sampling correction of rollouts sampled by an engine that is not the trainer's forward pass.

TRL corrects vLLM's rollouts (``vllm_importance_sampling_*``) and only when ``use_vllm`` is on; a rollout function
on another engine (here :class:`training.grpo.engine.RolloutEngine` ``bf16``) would be treated as exactly on-policy.
:func:`is_ratio` is TRL's ratio with TRL's four modes and clip settings, and
:class:`~training.grpo.trainer.AgentGRPOTrainer` applies it without an extra forward pass: strictly on-policy, the
trainer's logprobs at sampling time are the ones its loss computes, so the ratio is taken from those (detached) and
multiplies the token advantages, which scales each token's clipped loss by it exactly as TRL's multiplication of the
per-token loss does (the ratio is never negative).
"""

from __future__ import annotations

import math
from typing import Any

MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")


def is_ratio(
    logps: Any,
    sampling_logps: Any,
    mask: Any,
    mode: str = "token_truncate",
    clip_min: float | None = None,
    clip_max: float | None = 3.0,
) -> Any:
    """TRL's importance-sampling ratio ``exp(trainer - sampler)`` per token or per sequence, truncated or masked.

    Args:
        logps: The trainer's per-token logprobs ``[B, T]`` (detached).
        sampling_logps: The rollout engine's ``[B, T]`` (NaN where unknown: no correction there).
        mask: Tokens that count ``[B, T]`` (the model's own tokens).
        mode: One of :data:`MODES` (TRL's ``vllm_importance_sampling_mode``).
        clip_min: Lower bound (truncate) or lower edge of the kept band (mask); None: none.
        clip_max: Upper bound or upper edge; None: none.

    Returns:
        ``[B, T]`` for token modes, ``[B, 1]`` for sequence modes.

    Raises:
        ValueError: For an unknown mode.
    """
    import torch

    if mode not in MODES:
        raise ValueError(f"importance sampling mode must be one of {', '.join(MODES)}, got {mode!r}")
    diff = torch.nan_to_num((logps - sampling_logps) * mask, nan=0.0)
    if mode.startswith("sequence"):
        diff = diff.sum(dim=-1, keepdim=True)
    ratio = torch.exp(diff)
    if mode.endswith("truncate"):
        return torch.clamp(ratio, min=clip_min, max=clip_max)
    low = -math.inf if clip_min is None else clip_min
    high = math.inf if clip_max is None else clip_max
    return ratio.masked_fill((ratio < low) | (ratio > high), 0.0)


def gap_stats(logps: Any, sampling_logps: Any, mask: Any) -> dict[str, float]:
    """How far the engine's logprobs are from the trainer's on the counted tokens: mean and max absolute gap, the
    mean signed gap (trainer minus engine) and the masked tokens' count."""
    import torch

    m = mask.bool() & ~torch.isnan(sampling_logps)
    d = (logps - sampling_logps)[m].float()
    if d.numel() == 0:
        return {"abs_mean": 0.0, "abs_max": 0.0, "mean": 0.0, "tokens": 0.0}
    return {
        "abs_mean": d.abs().mean().item(),
        "abs_max": d.abs().max().item(),
        "mean": d.mean().item(),
        "tokens": float(d.numel()),
    }
