"""The rollout engine: which model a GRPO rollout samples with.

``trainer`` samples with the trainer's own model, under the trainer's precision, so the rollout's logprobs are the
trainer's up to float rounding. ``bf16`` samples with a bfloat16 copy of the trainer's current weights, refreshed
at the start of every rollout call (the copy's time is counted in the rollout's generation time): on a CPU with
native bf16 its matrix products run at a multiple of float32's, at the price of a gap between the rollout's
logprobs and the trainer's, which :mod:`training.grpo.correction` corrects (truncated importance sampling, as TRL
corrects vLLM's).
"""

from __future__ import annotations

import time
from typing import Any

from simweb_core.errors import ConfigError

ENGINES = ("trainer", "bf16")


class RolloutEngine:
    """Hands out the model of a rollout call (None: the trainer's own) and keeps the bfloat16 copy between calls.

    Args:
        kind: One of :data:`ENGINES`.
    """

    def __init__(self, kind: str = "trainer") -> None:
        if kind not in ENGINES:
            raise ConfigError(f"rollout engine must be one of {', '.join(ENGINES)}, got {kind!r}")
        self.kind = kind
        self.model: Any = None
        self.sync_seconds = 0.0

    def exact(self) -> bool:
        """Whether the rollout samples with the trainer's own forward pass (no logprob correction needed)."""
        return self.kind == "trainer"

    def for_call(self, trainer: Any) -> Any:
        """The model to sample with in this rollout call: None (the trainer's), or the bfloat16 copy of its current
        weights (built on the first call, its parameters overwritten on each later one)."""
        if self.kind == "trainer":
            return None
        import torch

        t = time.perf_counter()
        base = trainer.accelerator.unwrap_model(trainer.model)
        if hasattr(base, "peft_config"):
            raise ConfigError("rollout engine 'bf16' copies full weights; with LoRA (lora_r > 0) use engine 'trainer'")
        with torch.no_grad():
            if self.model is None:
                import copy

                self.model = copy.deepcopy(base).eval().requires_grad_(False)
                # accelerate leaves an instance-level forward (its autocast / fp32-output wrapper) bound to the
                # trainer's model: the copy must run its own class's forward on its own weights
                self.model.__dict__.pop("forward", None)
                for p in self.model.parameters():  # parameters only: float32 buffers (rotary frequencies) stay
                    p.data = p.data.to(torch.bfloat16)
            else:
                for dst, src in zip(self.model.parameters(), base.parameters(), strict=True):
                    dst.copy_(src)
        self.sync_seconds = time.perf_counter() - t
        return self.model
