"""A local Hugging Face causal LM as a policy: chat template, batched generation across episodes.

Episodes waiting for the model are answered in one ``generate`` call (left padding), so a
lockstep driver (:func:`agents.loop.drive`) keeps the model busy with several episodes at once.
Sampling follows :class:`~agents.config.SamplingConfig`: greedy at temperature 0; the presence
penalty is applied OpenAI-style (subtracted once from every token already generated in the turn);
stop sequences end a row through ``stop_strings`` and are cut from the text. Sampling seeds are
applied inside :func:`torch.random.fork_rng`, so the global RNG is left untouched.

Multi-turn episodes re-send their whole chat every turn; with ``HFConfig.reuse_kv`` the keys and values of the
rows of recent calls are kept (:mod:`agents.policies.kv_reuse`, matched by token prefix, so no episode id is
needed) and a prompt prefills only what follows its longest stored prefix (a prompt shared by several rows of a
call, such as the samples of one task, is prefilled once). The stored keys belong to the current
weights: call :meth:`HFPolicy.clear_kv` after changing them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.config import SamplingConfig
from agents.policies.base import Generation, Messages, Policy, cut_at_stop
from agents.policies.fast_decode import fast_decode, grow_cache
from agents.policies.kv_reuse import Batch, PrefixKV, cache_kwarg, supports
from simweb_core.errors import ConfigError
from simweb_core.fields import help_field

log = logging.getLogger(__name__)
DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class HFConfig:
    """Which model to load and how to batch it."""

    path: str = help_field("", "A Hugging Face model folder (config, weights, tokenizer).")
    device: str = help_field("cpu", "torch device, e.g. 'cpu' or 'cuda'.")
    dtype: str = help_field("float32", "Weights dtype: float32, bfloat16 or float16.")
    batch_size: int = help_field(8, "Most chats per generate() call.")
    context_window: int | None = help_field(None, "Context size (default: the model's max_position_embeddings).")
    num_threads: int | None = help_field(
        None,
        (
            "torch CPU threads (process-wide; None keeps torch's default). "
            "1 is often fastest for small models on a busy machine."
        ),
    )
    reuse_kv: bool = help_field(
        True,
        (
            "Keep the keys and values of recent chats and prefill only what a "
            "new prompt adds to its longest stored prefix (multi-turn episodes)."
        ),
    )
    kv_cache_mb: int = help_field(1024, "Memory budget of the stored keys and values (the oldest go first).")
    fast_decode: bool = help_field(
        True,
        (
            "Decode with agents.policies.fast_decode (a key/value cache written in place and one-token attention as "
            "batched matrix products; the same logits up to float rounding)."
        ),
    )

    def __post_init__(self) -> None:
        if not self.path:
            raise ConfigError(
                "HFConfig.path is empty: give a model folder, e.g. --policy hf:/models/my-sft or hf:smollm2"
            )
        if (
            self.dtype not in DTYPES
            or self.batch_size < 1
            or (self.num_threads is not None and self.num_threads < 1)
            or self.kv_cache_mb < 0
        ):
            raise ConfigError(
                f"HFConfig needs dtype in {DTYPES}, batch_size >= 1, num_threads >= 1 or None and kv_cache_mb >= 0; "
                f"got {self.dtype!r}, {self.batch_size}, {self.num_threads}, {self.kv_cache_mb}"
            )


def _presence_processor(penalty: float, prompt_len: int) -> Any:
    import torch
    from transformers import LogitsProcessor

    class PresencePenalty(LogitsProcessor):
        """Subtract ``penalty`` from the logits of every token already generated in this turn."""

        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
            gen = input_ids[:, prompt_len:]
            if gen.shape[1] == 0:
                return scores
            seen = torch.zeros_like(scores, dtype=torch.bool).scatter_(1, gen, True)
            return scores - penalty * seen.to(scores.dtype)

    return PresencePenalty()


class HFPolicy(Policy):
    """Generate turns with a local transformers model.

    Args:
        config: Model folder, device, dtype, batch size.
        sampling: Default sampling parameters.
        model: An already loaded model (tests); with ``tokenizer``, ``config.path`` is not read.
        tokenizer: Its tokenizer (needs a chat template).
    """

    batched = True

    def __init__(
        self, config: HFConfig, sampling: SamplingConfig | None = None, model: Any = None, tokenizer: Any = None
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.config = config
        self.sampling = sampling or SamplingConfig()
        if config.num_threads:
            torch.set_num_threads(config.num_threads)
        if model is None or tokenizer is None:
            if not Path(config.path).is_dir():
                raise ConfigError(
                    f"HF model folder {config.path!r} not found: expected a folder with config.json and weights "
                    "(for the bundled SmolLM2 use --policy hf:smollm2)"
                )
            tokenizer = AutoTokenizer.from_pretrained(config.path)
            model = AutoModelForCausalLM.from_pretrained(config.path, dtype=getattr(torch, config.dtype))
        if not getattr(tokenizer, "chat_template", None):
            raise ConfigError(
                f"the tokenizer of {config.path!r} has no chat template; set tokenizer.chat_template first"
            )
        self.tokenizer, self.model = tokenizer, model.to(config.device).eval()
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.name = f"hf:{Path(config.path).name or config.path}"
        self.context_window = config.context_window or getattr(model.config, "max_position_embeddings", None)
        self.generated_tokens = 0
        self.generate_seconds = 0.0
        reuse = config.reuse_kv and config.kv_cache_mb > 0 and supports(model)
        self.kv = PrefixKV(max_bytes=config.kv_cache_mb << 20) if reuse else None

    def clear_kv(self) -> None:
        """Forget the stored keys and values (needed after the model's weights change)."""
        if self.kv is not None:
            self.kv.clear()

    def prompt(self, messages: Messages) -> str:
        """The chat rendered with the model's template, ending with the assistant prefix."""
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def count_tokens(self, messages: Messages) -> int:
        """Exact prompt length under the chat template."""
        return len(self.tokenizer(self.prompt(messages), add_special_tokens=False)["input_ids"])

    def generate(
        self,
        batch: Sequence[Messages],
        sampling: SamplingConfig | None = None,
        seeds: Sequence[int | None] | None = None,
    ) -> list[Generation]:
        """Generate for ``batch`` in chunks of ``batch_size`` (shortest prompts together)."""
        s = sampling or self.sampling
        seeds = list(seeds) if seeds is not None else [s.seed] * len(batch)
        prompts = [self.prompt(m) for m in batch]
        order = sorted(range(len(batch)), key=lambda i: len(prompts[i]))
        out: list[Generation | None] = [None] * len(batch)
        bs = self.config.batch_size
        for c in range(0, len(order), bs):
            ids = order[c : c + bs]
            for i, g in zip(ids, self._chunk([prompts[i] for i in ids], s, seeds[ids[0]])):
                out[i] = g
        return [g for g in out if g is not None]

    def _encode(self, prompts: list[str], max_new: int) -> tuple[dict[str, Any], int, Batch | None]:
        """``generate``'s inputs for ``prompts`` and the new-token cap that fits the window: continuing stored keys and
        values (also returned, to store the rows after the call) when the prompts fit, else left padded and, past the
        window, cut to their last tokens."""
        tok = self.tokenizer
        if self.kv is not None:
            ids = tok(prompts, add_special_tokens=False)["input_ids"]
            room = self.context_window - max(map(len, ids)) if self.context_window else max_new
            if not self.context_window or room >= 16:
                self.kv.prime(self.model, ids, self.config.device)
                batch = self.kv.batch(
                    ids, tok.pad_token_id, self.model.config, self.config.device, grow=self.config.fast_decode
                )
                enc = {
                    "input_ids": batch.input_ids,
                    "attention_mask": batch.attention_mask,
                    cache_kwarg(self.model): batch.cache,
                }
                return enc, min(max_new, room), batch
        enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        if self.context_window:
            room = self.context_window - enc["input_ids"].shape[1]
            if room < 16:
                keep = self.context_window - min(max_new, self.context_window // 4)
                log.warning(
                    "%s: prompt of %d tokens exceeds the %d-token window; keeping its last %d tokens",
                    self.name,
                    enc["input_ids"].shape[1],
                    self.context_window,
                    keep,
                )
                enc = {k: v[:, -keep:] for k, v in enc.items()}
                room = self.context_window - keep
            max_new = min(max_new, room)
        out = {k: v.to(self.config.device) for k, v in enc.items()}
        if self.config.fast_decode:
            out[cache_kwarg(self.model)] = grow_cache(self.model.config)
        return out, max_new, None

    def _chunk(self, prompts: list[str], s: SamplingConfig, seed: int | None) -> list[Generation]:
        import torch

        tok = self.tokenizer
        enc, max_new, batch = self._encode(prompts, s.max_tokens)
        plen = enc["input_ids"].shape[1]
        kwargs: dict[str, Any] = {"max_new_tokens": max_new, "pad_token_id": tok.pad_token_id}
        if s.temperature > 0:
            kwargs.update(do_sample=True, temperature=s.temperature, top_p=s.top_p)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if s.stop:
            kwargs.update(stop_strings=list(s.stop), tokenizer=tok)
        if s.presence_penalty:
            from transformers import LogitsProcessorList

            kwargs["logits_processor"] = LogitsProcessorList([_presence_processor(s.presence_penalty, plen)])
        t = time.perf_counter()
        with (
            torch.random.fork_rng(devices=[]),
            torch.inference_mode(),
            fast_decode(self.model, self.config.fast_decode),
        ):
            if seed is not None:
                torch.manual_seed(seed)
            out = self.model.generate(**enc, **kwargs)
        dt = time.perf_counter() - t
        if batch is not None:
            self.kv.keep(batch, out)  # type: ignore[union-attr]
        gens = []
        for row, mask in zip(out[:, plen:], enc["attention_mask"]):
            ids = row.tolist()
            n = next((k for k, x in enumerate(ids) if x in (tok.eos_token_id, tok.pad_token_id)), len(ids))
            raw = tok.decode(ids[:n], skip_special_tokens=True)
            text = cut_at_stop(raw, s.stop)
            reason = "stop" if n < len(ids) or text != raw else "length"
            gens.append(
                Generation(
                    text=text, prompt_tokens=int(mask.sum()), completion_tokens=n, finish_reason=reason, seconds=dt
                )
            )
        self.generated_tokens += sum(g.completion_tokens or 0 for g in gens)
        self.generate_seconds += dt
        return gens
