"""The ``trainer:`` section of a GRPO recipe (:class:`TrainerConfig`) and the checks of what can run on this machine.

:class:`TrainerConfig` holds the batch shape, optimiser, loss switches and generation settings and turns into TRL's
arguments (:class:`~training.grpo.grpo_config.AgentGRPOConfig`, imported only then: TRL's import is slow, and loading a
recipe, building the CLI or checking a config does not need it). The loss switches (advantage, truncation, DUPO batch
filling, clip-higher) are not declared here: :class:`TrainerConfig` inherits them, with their help texts and their
check, from :class:`training.grpo.advantage.GRPOSwitches`, as ``AgentGRPOConfig`` does, and :meth:`TrainerConfig.args`
passes every one of them on. :func:`choose_generation` decides between vLLM and transformers generation on this
machine, :func:`check_sandbox` whether the enabled tools can run here.

Example:
    >>> TrainerConfig(prompts_per_step=2, num_generations=4).per_device_batch
    8
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from sim_web.protocol import NO_PYTHON_TOOLS
from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from training.grpo.advantage import GRPOSwitches

if TYPE_CHECKING:
    from training.grpo.grpo_config import AgentGRPOConfig

VLLM_MODES = ("colocate", "server")


@dataclass(frozen=True)
class TrainerConfig(GRPOSwitches):
    """The ``trainer:`` section of a GRPO recipe: batch shape, optimiser, loss switches (the fields of
    :class:`~training.grpo.advantage.GRPOSwitches`, listed first), precision and generation."""

    switch_owner: ClassVar[str] = "trainer"

    num_generations: int = help_field(4, "Group size G (larger groups instead of dynamic sampling).")
    prompts_per_step: int = help_field(
        2, "Tasks per optimiser step per process (the batch is prompts_per_step * num_generations)."
    )
    max_steps: int = help_field(20, "Optimiser steps (one per generation batch: strictly on-policy).")
    micro_batch: int | None = help_field(
        None,
        "Episodes per forward/backward pass (None: the whole batch at once); the step's gradient "
        "is accumulated over batch / micro_batch passes, so the update is the same with less "
        "memory.",
    )
    learning_rate: float = help_field(1e-6, "AdamW learning rate.")
    max_completion_length: int = help_field(
        4096, "Token budget of the whole multi-turn completion, tool outputs included."
    )
    temperature: float = help_field(1.0, "Sampling temperature of the rollouts (also used for the trained logprobs).")
    top_p: float = help_field(1.0, "Nucleus sampling mass of the rollouts.")
    loss_type: str = help_field(
        "dapo", "TRL loss aggregation ('dapo': token-level, normalised by the batch's trained tokens)."
    )
    lora_r: int = help_field(0, "LoRA rank (0 = full fine-tuning); LoRA needs peft.")
    gradient_checkpointing: bool = help_field(False, "Trade compute for memory on long completions.")
    bf16: bool = help_field(
        False,
        "bfloat16 mixed precision: on a GPU bfloat16 weights; on a CPU with native bf16 (avx512_bf16 or amx_bf16 in "
        "/proc/cpuinfo) float32 weights with the loss and the rollouts under bfloat16 autocast.",
    )
    is_mode: str = help_field(
        "sequence_mask",
        "Importance-sampling correction of rollouts not sampled by the trainer's forward pass (vLLM, "
        "rollout.engine=bf16), TRL's vllm_importance_sampling_mode: token_truncate (TIS), token_mask, "
        "sequence_truncate, sequence_mask (TRL's default).",
    )
    is_clip_max: float = help_field(3.0, "Upper bound (truncate) or upper edge of the kept band (mask) of that ratio.")
    use_vllm: bool = help_field(
        False,
        "Generate with vLLM (GPU, `pip install -e .[gpu]`); colocate shares the training GPU. Where "
        "vLLM is not installed or there is no CUDA GPU, rollouts fall back to TRL's transformers "
        "generation with one warning (require_vllm: stop instead).",
    )
    require_vllm: bool = help_field(
        False,
        "With use_vllm: stop with an error where vLLM cannot run instead of falling back to "
        "transformers generation (for runs whose timings assume vLLM).",
    )
    vllm_mode: str = help_field(
        "colocate",
        "'colocate' (one process per GPU, safe with tools) or 'server' (TRL 1.16 can hang with "
        "tools and more than one trainer process per server).",
    )
    vllm_gpu_memory_utilization: float = help_field(0.3, "GPU memory share of the colocated vLLM engine.")
    save_steps: int = help_field(10, "Save a checkpoint every N steps (resuming starts from the last one).")
    keep_checkpoints: int | None = help_field(
        2,
        "Checkpoints kept on disk, the oldest deleted first (None: all). Each holds the model and the optimizer "
        "state, about 12 bytes a parameter; two, so that a save cut short (a full disk) leaves one to resume from.",
    )

    def __post_init__(self) -> None:
        super().__post_init__()  # the switches' check
        if self.num_generations < 2:
            raise ConfigError(
                f"trainer.num_generations must be >= 2 (a group needs a baseline), got {self.num_generations}"
            )
        if min(self.prompts_per_step, self.max_steps, self.save_steps, self.max_completion_length) < 1:
            raise ConfigError(
                f"trainer needs prompts_per_step, max_steps, save_steps and max_completion_length >= 1, got "
                f"{self.prompts_per_step}, {self.max_steps}, {self.save_steps}, {self.max_completion_length}"
            )
        if self.keep_checkpoints is not None and self.keep_checkpoints < 1:
            raise ConfigError(f"trainer.keep_checkpoints must be >= 1 or None (keep all), got {self.keep_checkpoints}")
        if self.micro_batch is not None and (self.micro_batch < 1 or self.per_device_batch % self.micro_batch):
            raise ConfigError(
                f"trainer.micro_batch must divide prompts_per_step * num_generations "
                f"({self.per_device_batch}), got {self.micro_batch}"
            )
        if self.vllm_mode not in VLLM_MODES:
            raise ConfigError(f"trainer.vllm_mode must be one of {VLLM_MODES}, got {self.vllm_mode!r}")
        if self.lora_r < 0:
            raise ConfigError(f"trainer.lora_r must be >= 0 (0 = full fine-tuning), got {self.lora_r}")

    @property
    def per_device_batch(self) -> int:
        """Episodes per process per step."""
        return self.prompts_per_step * self.num_generations

    def generation(self) -> tuple[bool, str | None]:
        """Whether rollouts generate with vLLM on this machine, and the warning to log when ``use_vllm`` asked for it
        but transformers generation runs instead (:func:`choose_generation`).

        Raises:
            ConfigError: When ``require_vllm`` is set and vLLM cannot run here.
        """
        if not self.use_vllm:
            return False, None
        return choose_generation(True, self.require_vllm, vllm=vllm_installed(), cuda=cuda_available())

    def args(self, output_dir: str, *, seed: int, **overrides: Any) -> AgentGRPOConfig:
        """The TRL arguments of this section on this machine (vLLM or not, GPU or CPU).

        Args:
            output_dir: The run's folder.
            seed: Seed of the model init, data order and sampling.
            **overrides: Other :class:`AgentGRPOConfig` fields that win.
        """
        from training.grpo.grpo_config import AgentGRPOConfig

        use_vllm, _ = self.generation()
        cuda = cuda_available()
        micro = self.micro_batch or self.per_device_batch
        kw = dict(
            output_dir=output_dir,
            per_device_train_batch_size=micro,
            gradient_accumulation_steps=self.per_device_batch // micro,
            num_generations=self.num_generations,
            max_steps=self.max_steps,
            learning_rate=self.learning_rate,
            max_completion_length=self.max_completion_length,
            temperature=self.temperature,
            top_p=self.top_p,
            **self.switch_values(),
            loss_type=self.loss_type,
            gradient_checkpointing=self.gradient_checkpointing,
            bf16=self.bf16,
            use_cpu=not cuda,
            use_vllm=use_vllm,
            vllm_mode=self.vllm_mode,
            vllm_gpu_memory_utilization=self.vllm_gpu_memory_utilization,
            vllm_importance_sampling_mode=self.is_mode,
            vllm_importance_sampling_clip_max=self.is_clip_max,
            logging_steps=1,
            save_steps=self.save_steps,
            save_total_limit=self.keep_checkpoints,
            save_strategy="steps",
            report_to="none",
            seed=seed,
            data_seed=seed,
            log_completions=False,
        )
        kw.update(overrides)
        return AgentGRPOConfig(**kw)


def cuda_available() -> bool:
    """Whether a CUDA GPU is visible to torch."""
    import torch

    return torch.cuda.is_available()


def vllm_installed() -> bool:
    """Whether the ``vllm`` package is installed (found without importing it: its import is slow and starts CUDA)."""
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def choose_generation(use_vllm: bool, require_vllm: bool, *, vllm: bool, cuda: bool) -> tuple[bool, str | None]:
    """Pick the rollouts' generator: vLLM when asked for and it can run, else TRL's transformers generation.

    vLLM pins its own torch and ships a large wheel, so many CUDA images lack it; the GPU recipes then still run (same
    trainer, env, rewards and curriculum; slower generation) instead of stopping, unless ``require_vllm`` says that
    only a vLLM run is wanted.

    Args:
        use_vllm: The recipe asks for vLLM.
        require_vllm: Stop rather than fall back.
        vllm: The vllm package is installed.
        cuda: A CUDA GPU is visible.

    Returns:
        (generate with vLLM, the warning to log when the recipe's request was not met, else None).

    Raises:
        ConfigError: When vLLM is required and cannot run, naming what is missing and the fixes.

    Example:
        >>> choose_generation(True, False, vllm=True, cuda=True)
        (True, None)
        >>> choose_generation(True, False, vllm=False, cuda=True)[0]
        False
    """
    if not use_vllm or (vllm and cuda):
        return use_vllm, None
    missing = " and ".join(
        m for m, ok in (("the vllm package is not installed", vllm), ("no CUDA GPU is visible", cuda)) if not ok
    )
    if require_vllm:
        raise ConfigError(
            f"trainer.use_vllm and trainer.require_vllm are set but {missing}: on a CUDA machine "
            "`pip install -e '.[gpu]'`, or let the run fall back to transformers generation "
            "(--set trainer.require_vllm=false), or --set trainer.use_vllm=false"
        )
    return False, (
        f"trainer.use_vllm is set but {missing}: generating with TRL's transformers generation instead (same "
        "trainer, env and rewards; slower rollouts). Install vLLM with `pip install -e '.[gpu]'` on a CUDA "
        "machine, or --set trainer.use_vllm=false to silence this"
    )


def check_sandbox(tools: tuple[str, ...]) -> None:
    """Refuse ``tools`` with PythonInterpreter where the bubblewrap sandbox cannot run.

    Raises:
        ConfigError: Naming what is missing and the fixes (install bubblewrap, or train without the tool).
    """
    if "PythonInterpreter" not in tools:
        return
    from sim_web.tools.python.sandbox import sandbox_problem

    problem = sandbox_problem()
    if problem:
        raise ConfigError(
            f"PythonInterpreter is enabled but its sandbox cannot run here: {problem} Or train without it: "
            f"--set env.tools={','.join(NO_PYTHON_TOOLS)}"
        )
