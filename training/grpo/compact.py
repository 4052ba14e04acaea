"""Compact a GRPO micro-batch before its forward pass: only the rows that move the loss, only the columns they use.

Under a loss that sums tokens and divides by the whole generation batch's trained-token count (TRL's ``dapo`` and
``cispo``, normalised by ``num_items_in_batch``), a row whose advantage is 0 (a zero-variance group, a group DUPO
dropped) or whose tokens are all masked (a dropped truncated episode) adds exactly 0 to the loss and to its gradient.
Columns to the right of every kept completion are padding that no kept token attends to (attention is causal). So
the loss of the compacted micro-batch equals the loss of the whole one, while the forward and backward passes run
only over what trains: on a CPU, where the backward pass is most of a step, that is the time a step saves.

Example:
    >>> import torch
    >>> batch = {
    ...     "prompt_ids": torch.tensor([[1, 2], [3, 4], [5, 6]]),
    ...     "completion_ids": torch.tensor([[7, 8, 0], [9, 0, 0], [7, 7, 7]]),
    ...     "completion_mask": torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1]]),
    ...     "advantages": torch.tensor([0.5, -0.5, 0.0]),
    ...     "num_items_in_batch": torch.tensor(6),
    ... }
    >>> live = live_rows(batch)
    >>> live.tolist()
    [True, True, False]
    >>> small = compact_batch(batch, live)
    >>> small["completion_ids"].tolist(), small["advantages"].tolist(), int(small["num_items_in_batch"])
    ([[7, 8], [9, 0]], [0.5, -0.5], 6)
"""

from __future__ import annotations

from typing import Any

import torch

#: TRL loss types whose loss is a sum over tokens divided by the whole batch's token count: dropping an inert row or a
#: padding column leaves it unchanged (the per-row and per-micro-batch means of the others would change).
ROW_SUM_LOSSES = ("dapo", "cispo")
#: Tensors with one column per completion token.
COMPLETION_KEYS = (
    "completion_ids",
    "completion_mask",
    "tool_mask",
    "advantages",
    "old_per_token_logps",
    "ref_per_token_logps",
    "sampling_per_token_logps",
    "importance_sampling_ratio",
)
#: Tensors with one row per sample and columns of their own.
ROW_KEYS = ("prompt_ids", "prompt_mask")


def live_rows(inputs: dict[str, Any]) -> torch.Tensor:
    """The rows of a micro-batch that move the loss: a non-zero advantage and at least one trained token.

    Args:
        inputs: A TRL GRPO micro-batch (``completion_mask``, optional ``tool_mask``, ``advantages`` of shape ``(B,)``
            or ``(B, T)``).

    Returns:
        A boolean tensor of shape ``(B,)``.
    """
    mask = inputs["completion_mask"] * inputs.get("tool_mask", 1)
    adv = inputs["advantages"]
    moves = adv != 0 if adv.dim() == 1 else (adv != 0).any(dim=1)
    return moves & (mask.sum(dim=1) > 0)


def compact_batch(inputs: dict[str, Any], live: torch.Tensor) -> dict[str, Any] | None:
    """The micro-batch's ``live`` rows, cut after the last column any of them attends to.

    Args:
        inputs: A TRL GRPO micro-batch.
        live: Rows to keep (:func:`live_rows`); at least one.

    Returns:
        A new dict (scalars such as ``num_items_in_batch`` unchanged), or ``None`` when the batch holds a tensor this
        function does not know how to cut (a multimodal batch): the caller then trains on the whole batch.
    """
    known = (*COMPLETION_KEYS, *ROW_KEYS)
    if any(torch.is_tensor(v) and v.dim() > 0 and k not in known for k, v in inputs.items()):
        return None
    columns = inputs["completion_ids"].shape[1]
    used = inputs["completion_mask"][live].sum(dim=0).nonzero()
    width = int(used.max()) + 1 if used.numel() else 1
    out: dict[str, Any] = {}
    for key, value in inputs.items():
        if not torch.is_tensor(value) or value.dim() == 0:
            out[key] = value
            continue
        value = value[live]
        if key in COMPLETION_KEYS and value.dim() == 2 and value.shape[1] == columns:
            value = value[:, :width]
        out[key] = value
    return out
