"""A tiny randomly initialised Llama with a byte-level BPE and ChatML tokens: for CPU smoke runs and tests (no downloads);
and the trainer that only drives :func:`training.grpo.rollout.generate` (tests and the rollout benchmark)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from training.wire import CHATML


def tiny_model(
    texts: Sequence[str],
    vocab_size: int = 400,
    hidden: int = 32,
    layers: int = 2,
    seed: int = 0,
    max_positions: int = 8192,
    eos_bias: float = 0.0,
) -> tuple[Any, Any]:
    """A 2-layer Llama and its tokenizer (BPE trained on ``texts``, ChatML template, ``<|im_end|>`` as eos).

    Args:
        texts: Text to train the BPE on (e.g. the Tongyi system prompt and a few questions).
        vocab_size: BPE vocabulary size (byte-level, so any text encodes).
        hidden: Hidden size (intermediate size is twice this).
        layers: Decoder layers.
        seed: Weight initialisation seed (the global RNG is left untouched).
        max_positions: Context window.
        eos_bias: Added to the end-of-turn logit through a bias on the output layer, so that a random model ends its
            turns after a few tokens (about ``vocab / e**eos_bias`` on average) and smoke rollouts step the env.
            The bias is part of the model (sampled and trained) but ``LlamaForCausalLM.from_pretrained`` does not
            restore it: the tiny model is for smoke runs only.

    Returns:
        ``(model, tokenizer)``.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|im_start|>", "<|im_end|>", "<|pad|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(
        list(texts) + ["<tool_call> <tool_response> <answer> </answer> <think> search visit"], trainer
    )
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|pad|>")
    tok.chat_template = CHATML
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=None,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(cfg)
    if eos_bias:
        head = torch.nn.Linear(hidden, len(tok), bias=True)
        with torch.no_grad():
            head.weight.copy_(model.lm_head.weight)
            head.bias.zero_()
            head.bias[tok.eos_token_id] = eos_bias
        model.lm_head = head
    return model, tok


def load_tiny(path: str) -> Any:
    """A saved tiny model with its end-of-turn bias restored (``from_pretrained`` drops the biased output layer).

    Args:
        path: A folder written by ``save_pretrained`` of a :func:`tiny_model` model.

    Returns:
        The model (float32), with ``lm_head`` carrying the saved bias when there is one.
    """
    from pathlib import Path

    import torch
    from safetensors.torch import load_file
    from transformers import LlamaConfig, LlamaForCausalLM

    weights: dict[str, Any] = {}
    for f in sorted(Path(path).glob("*.safetensors")):
        weights.update(load_file(str(f)))
    cfg = LlamaConfig.from_pretrained(path)
    model = LlamaForCausalLM(cfg)
    if "lm_head.bias" in weights:
        model.lm_head = torch.nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=True)
    model.load_state_dict({k: v.float() for k, v in weights.items()}, strict=True)
    return model.eval()


def generation_trainer(model: Any, tok: Any, output_dir: Any, **args: Any) -> Any:
    """An ``AgentGRPOTrainer`` set up only to drive :func:`training.grpo.rollout.generate`: a one-prompt dataset, an
    empty rollout function, the env reward, CPU and float32 arithmetic.

    Args:
        model: The policy model.
        tok: Its tokenizer.
        output_dir: The trainer's output folder (nothing is trained or saved there).
        **args: ``AgentGRPOConfig`` fields over the defaults (batch 2, group 2, 64 completion tokens, temperature 0.7).
    """
    from datasets import Dataset

    from training.grpo.rollout import env_reward
    from training.grpo.trainer import AgentGRPOConfig, AgentGRPOTrainer

    config = {
        "per_device_train_batch_size": 2,
        "num_generations": 2,
        "max_completion_length": 64,
        "temperature": 0.7,
        "report_to": "none",
        "use_cpu": True,
        "bf16": False,
        **args,
    }
    return AgentGRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=[env_reward],
        args=AgentGRPOConfig(output_dir=str(output_dir), **config),
        train_dataset=Dataset.from_list([{"prompt": [{"role": "user", "content": "q"}]}]),
        rollout_func=lambda p, t: {},
    )
