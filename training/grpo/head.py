"""Per-token logprobs of a CPU micro-batch, scored only where the loss reads them.

TRL's loss takes its logprobs from a fused LM head (``add_fused_lm_head``) that scores, in tiles, every position of
the micro-batch when no Triton device is there: the prompt's positions, the tool observations' (which ``tool_mask``
keeps out of the loss) and the padding, and its backward pass recomputes each tile and accumulates the weight
gradient in float32. On a CPU that head is a large share of a small model's backward pass (SmolLM2-135M: a
49,152-word vocabulary on 576-wide states). :func:`token_logps` runs the model's backbone once under the caller's
autocast (bfloat16 matrix products where the CPU has them), gathers the hidden states of the positions ``score_mask``
marks, and projects only those through the output layer; that layer, on those few positions, and the softmax run in
float32. The logprob and entropy of a scored position are the quantities TRL's head computes (checked against it in
``tests/training/test_grpo_head.py``); the other positions get 0, which the loss masks out.
"""

from __future__ import annotations

from typing import Any

import torch


def supported(model: Any) -> bool:
    """Whether :func:`token_logps` computes what TRL's head does for ``model``: a text causal LM with a backbone and
    a plain output layer (no logit soft-capping or scaling, no adapter of its own on the head)."""
    cfg = getattr(model, "config", None)
    if cfg is None or not callable(getattr(model, "get_decoder", None)):
        return False
    if getattr(cfg, "final_logit_softcapping", None) or getattr(cfg, "logit_scale", 1.0) not in (None, 1.0):
        return False
    head = model.get_output_embeddings()
    return type(head) is torch.nn.Linear  # not a subclass: an adapter (LoRA) on the head computes otherwise


def token_logps(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    score_mask: torch.Tensor,
    temperature: float,
    entropy: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Logprobs (and entropies) at ``temperature`` of the last ``score_mask.shape[1]`` tokens where it is nonzero.

    Args:
        model: A causal LM that :func:`supported` accepts.
        input_ids: ``[batch, width]``, prompt and completion.
        attention_mask: ``[batch, width]``.
        score_mask: ``[batch, keep]``, nonzero where a completion token's logprob is used.
        temperature: The sampling temperature the logits are divided by.
        entropy: Also return each scored position's entropy (no gradient).

    Returns:
        ``[batch, keep]`` logprobs (0 where not scored), and the entropies in the same layout or None.
    """
    if score_mask.shape[1] >= input_ids.shape[1]:
        raise ValueError(
            f"cannot score the last {score_mask.shape[1]} tokens of a {input_ids.shape[1]}-token row: the first token "
            "has no state that predicts it"
        )
    keep = score_mask.bool()
    hidden = model.get_decoder()(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)[0]
    states = hidden[:, -keep.shape[1] - 1 : -1][keep]
    head = model.get_output_embeddings()
    with torch.autocast(states.device.type, enabled=False):  # few rows: float32 costs little and keeps the gradient
        bias = None if head.bias is None else head.bias.float()
        logits = torch.nn.functional.linear(states.float(), head.weight.float(), bias) / temperature
    logp = logits.log_softmax(-1)
    picked = logp.gather(1, input_ids[:, -keep.shape[1] :][keep].unsqueeze(1)).squeeze(1)
    out = picked.new_zeros(keep.shape).masked_scatter(keep, picked)
    if not entropy:
        return out, None
    with torch.no_grad():
        ent = -(logp.exp() * logp).sum(-1)
    return out, ent.new_zeros(keep.shape).masked_scatter(keep, ent)
