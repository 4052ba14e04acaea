"""SFT cold start with TRL's ``SFTTrainer`` on a pre-tokenised dataset: assistant-only loss, full or LoRA.

Reads top to bottom (cleanrl style): config -> tokenizer and the wire check -> model (+ LoRA) -> trainer -> train
-> merged model folder. The dataset comes from :mod:`training.sft.dataset` (``input_ids`` + ``assistant_masks``
rendered by :func:`training.wire.encode_chat`); TRL 1.16 skips its own chat rendering for such a dataset and
turns ``assistant_masks`` into ``-100`` labels, so system, question, tool responses and template glue are never
trained, and the tokens trained are exactly the ones GRPO rollouts and ``sim-web eval`` generate.

The output folder is a plain Hugging Face model (LoRA merged into the weights) with the tokenizer and its chat
template: ``sim-web eval --policy hf:OUT`` runs it. Trainer checkpoints (resumable) go to ``OUT/checkpoints``.
The dataset's chats carry the tool list of the runs they came from (PythonInterpreter included when the runs had it;
it runs in the bubblewrap sandbox).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from simweb_core.hardware import emulated_bf16_warning
from simweb_core.settings import sim_web_home
from training.sft.dataset import load as load_dataset
from training.wire import encode_chat

log = logging.getLogger(__name__)
#: Bundled model names accepted for ``model`` (converted once by ``sim-web eval --policy hf:smollm2``).
BUNDLED = {"smollm2": "SmolLM2-135M-Instruct"}


@dataclass(frozen=True)
class SFTRunConfig:
    """One SFT run (TRL style: a help text per field, errors that name the fix)."""

    dataset: str = help_field("", "A dataset folder from `sim-web sft collect` (input_ids + assistant_masks).")
    model: str = help_field(
        "smollm2",
        (
            "HF model folder, or 'smollm2' (the bundled SmolLM2-135M-Instruct, "
            "converted under $SIM_WEB_HOME/models by `sim-web eval --policy hf:smollm2`)."
        ),
    )
    out: str = help_field("", "Output folder: the merged model + tokenizer (`--policy hf:OUT`), checkpoints/ inside.")
    lora: bool = help_field(True, "Train LoRA adapters (merged at the end); False = full fine-tune.")
    lora_r: int = help_field(16, "LoRA rank.")
    lora_alpha: int = help_field(32, "LoRA scaling alpha.")
    lora_dropout: float = help_field(0.0, "LoRA dropout.")
    lora_targets: str = help_field("all-linear", "Modules with adapters: 'all-linear' or comma-separated names.")
    learning_rate: float = help_field(2e-4, "Peak learning rate (LoRA ~1e-4..1e-3; full fine-tune ~1e-5..5e-5).")
    epochs: float = help_field(1.0, "Passes over the dataset (ignored when max_steps > 0).")
    max_steps: int = help_field(-1, "Stop after this many optimiser steps (-1 = run the epochs).")
    batch_size: int = help_field(1, "Episodes per device batch (padded to the longest).")
    grad_accum: int = help_field(1, "Batches accumulated per optimiser step.")
    warmup_ratio: float = help_field(0.05, "Fraction of steps of linear warm-up.")
    max_length: int | None = help_field(
        None,
        (
            "Cut episodes to this many tokens (keep the start); None never "
            "cuts (drop long episodes when building the dataset instead)."
        ),
    )
    gradient_checkpointing: bool = help_field(False, "Recompute activations (less memory, slower steps).")
    bf16: bool = help_field(
        False,
        "bfloat16 mixed precision (autocast; weights and optimiser stay float32). Faster on a GPU and on CPUs with "
        "native bf16 (avx512_bf16 or amx_bf16 in /proc/cpuinfo); slower where bf16 is emulated.",
    )
    save_steps: int = help_field(0, "Trainer checkpoint every N steps (0 = only the final model).")
    logging_steps: int = help_field(1, "Log loss every N steps.")
    seed: int = help_field(0, "Seed of initialisation (LoRA), shuffling and dropout.")
    threads: int | None = help_field(None, "torch CPU threads (None keeps torch's default).")
    resume: bool = help_field(True, "Resume from the last checkpoint in OUT/checkpoints when there is one.")
    progress: bool = help_field(True, "Show progress bars.")

    def __post_init__(self) -> None:
        if not self.dataset or not self.out:
            raise ConfigError(
                "SFTRunConfig needs dataset= (a folder from `sim-web sft collect`) and out= (where the model goes)"
            )
        if (
            self.learning_rate <= 0
            or self.epochs <= 0
            or self.batch_size < 1
            or self.grad_accum < 1
            or not 0 <= self.warmup_ratio < 1
        ):
            raise ConfigError(
                f"SFTRunConfig needs learning_rate > 0, epochs > 0, batch_size >= 1, grad_accum >= 1, 0 <= warmup_ratio < 1; got "
                f"{self.learning_rate}, {self.epochs}, {self.batch_size}, {self.grad_accum}, {self.warmup_ratio}"
            )
        if self.lora and (self.lora_r < 1 or self.lora_alpha < 1 or not 0 <= self.lora_dropout < 1):
            raise ConfigError(
                f"LoRA needs lora_r >= 1, lora_alpha >= 1, 0 <= lora_dropout < 1; got {self.lora_r}, "
                f"{self.lora_alpha}, {self.lora_dropout} (or set lora=False for a full fine-tune)"
            )
        if self.max_length is not None and self.max_length < 64:
            raise ConfigError(f"SFTRunConfig.max_length must be >= 64 or None, got {self.max_length}")
        if self.max_steps == 0 or self.max_steps < -1 or self.save_steps < 0 or self.logging_steps < 1:
            raise ConfigError(
                f"SFTRunConfig needs max_steps > 0 or -1, save_steps >= 0, logging_steps >= 1; got "
                f"{self.max_steps}, {self.save_steps}, {self.logging_steps}"
            )


def resolve_model(name: str) -> Path:
    """A model folder for ``name``: a bundled alias (``smollm2``) or a path.

    Raises:
        ConfigError: When the folder does not exist (for ``smollm2``: not converted yet).
    """
    path = sim_web_home() / "models" / BUNDLED[name.lower()] if name.lower() in BUNDLED else Path(name)
    if not (path / "config.json").is_file():
        hint = (
            " (convert the bundled model once with `sim-web eval --policy hf:smollm2 --n 1`)"
            if name.lower() in BUNDLED
            else ""
        )
        raise ConfigError(f"model folder {path} not found: expected config.json and weights there{hint}")
    return path


def check_wire(tokenizer: Any, ds: Any) -> None:
    """Re-encode the first example with ``tokenizer``: a dataset built with another tokenizer or template is refused."""
    row = ds[0]
    enc = encode_chat(tokenizer, row["messages"])
    if enc.ids != list(row["input_ids"]) or enc.assistant_mask != list(row["assistant_masks"]):
        raise ConfigError(
            "the dataset was tokenised with another tokenizer or chat template than the model's: rebuild it with "
            "`sim-web sft collect ... --tokenizer MODEL` for the model you train"
        )


def train(cfg: SFTRunConfig) -> Path:
    """Run SFT and write the merged model folder.

    Args:
        cfg: The run.

    Returns:
        ``cfg.out``, a model folder loadable by ``agents.policies.hf_policy.HFPolicy``.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    if note := emulated_bf16_warning(
        cfg.bf16, torch.cuda.is_available(), "--no-bf16 (sim-web learn: --set precision=float32)"
    ):
        log.warning("%s", note)
    out = Path(cfg.out)
    model_path = resolve_model(cfg.model)

    # 1. data, and the check that it was rendered by this model's template
    tokenizer = AutoTokenizer.from_pretrained(str(model_path))
    ds = load_dataset(cfg.dataset)
    check_wire(tokenizer, ds)
    train_ds = ds.select_columns(["input_ids", "assistant_masks"])
    log.info(
        "SFT on %d episodes, %d tokens (%d trained); PythonInterpreter disabled in the recipes",
        len(ds),
        sum(ds["num_tokens"]),
        sum(ds["num_trained_tokens"]),
    )

    # 2. model (+ LoRA adapters)
    model = AutoModelForCausalLM.from_pretrained(str(model_path), dtype=torch.float32)
    peft_config = None
    if cfg.lora:
        from peft import LoraConfig

        targets: Any = (
            cfg.lora_targets if cfg.lora_targets == "all-linear" else [t.strip() for t in cfg.lora_targets.split(",")]
        )
        peft_config = LoraConfig(
            r=cfg.lora_r,
            lora_alpha=cfg.lora_alpha,
            lora_dropout=cfg.lora_dropout,
            target_modules=targets,
            task_type="CAUSAL_LM",
        )

    # 3. trainer: labels come from assistant_masks (TRL builds them for a pre-tokenised dataset)
    args = SFTConfig(
        output_dir=str(out / "checkpoints"),
        max_length=cfg.max_length,
        learning_rate=cfg.learning_rate,
        num_train_epochs=cfg.epochs,
        max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum,
        warmup_steps=cfg.warmup_ratio,
        lr_scheduler_type="cosine",
        logging_steps=cfg.logging_steps,
        save_strategy="steps" if cfg.save_steps else "no",
        save_steps=cfg.save_steps or 500,
        seed=cfg.seed,
        data_seed=cfg.seed,
        report_to="none",
        gradient_checkpointing=cfg.gradient_checkpointing,
        disable_tqdm=not cfg.progress,
        use_cpu=not torch.cuda.is_available(),
        bf16=cfg.bf16,
        fp16=False,
        assistant_only_loss=False,
        completion_only_loss=False,
        dataset_num_proc=None,
    )
    trainer = SFTTrainer(
        model=model, args=args, train_dataset=train_ds, processing_class=tokenizer, peft_config=peft_config
    )
    last = _last_checkpoint(out / "checkpoints") if cfg.resume else None
    result = trainer.train(resume_from_checkpoint=str(last) if last else None)

    # 4. a plain model folder: adapters merged, tokenizer and chat template beside it
    trained = trainer.model.merge_and_unload() if cfg.lora else trainer.model
    trained.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    _write_summary(out, cfg, result.metrics, trainer.state.log_history, len(ds))
    return out


def _last_checkpoint(folder: Path) -> Path | None:
    steps = [(int(p.name.split("-")[-1]), p) for p in folder.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()]
    return max(steps)[1] if steps else None


def _write_summary(
    out: Path, cfg: SFTRunConfig, metrics: dict[str, Any], history: list[dict[str, Any]], n: int
) -> None:
    import json

    losses = [h["loss"] for h in history if "loss" in h]
    summary = {
        "config": asdict(cfg),
        "examples": n,
        "train_metrics": metrics,
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
        "log_history": history,
    }
    (out / "sft_run.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
