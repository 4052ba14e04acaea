"""The trainer's arguments: :class:`AgentGRPOConfig` (TRL's ``GRPOConfig`` plus the agent-RL switches) and
:class:`TrainerConfig`, the ``trainer:`` section of a GRPO recipe that turns into it.

The switches (advantage, truncation, DUPO batch filling, clip-higher) have one help text each (:data:`SWITCH_HELP`)
and one check (:func:`training.grpo.advantage.check_switches`), shared by both classes. :func:`choose_generation` decides between vLLM and
transformers generation on this machine, :func:`check_sandbox` whether the enabled tools can run here.

Example:
    >>> TrainerConfig(prompts_per_step=2, num_generations=4).per_device_batch
    8
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trl import GRPOConfig

from sim_web.protocol import NO_PYTHON_TOOLS
from training.grpo.advantage import check_switches
from wiki_index.errors import ConfigError

VLLM_MODES = ("colocate", "server")
#: Help texts of the switches that both the recipe's trainer section and :class:`AgentGRPOConfig` carry.
SWITCH_HELP = {
    "advantage": "Group advantage: 'grpo' (TRL's own, honouring scale_rewards), 'loo' (leave-one-out "
    "r_i - mean_{j!=i} r_j) or 'loo_std' (LOO / group std).",
    "truncation": "Which samples leave the loss: 'keep_all'; 'drop_all_truncated' (every episode without a final answer, "
    "TRL's mask_truncated_completions rule); 'drop_truncated_negatives' (no final answer AND reward <= 0; "
    "truncated successes stay). Dropped samples stay in the group baseline.",
    "dupo": "DUPO batch filling: replace each group whose rewards are all equal by a copy of an informative group of the "
    "same batch (no extra rollouts); counts logged as agent/dupo_dropped_groups and agent/dupo_duplicated_groups.",
    "epsilon_high": "Upper clip of the ratio (clip-higher); 0.2 gives symmetric clipping, None = epsilon.",
}


def _f(default: Any, text: str) -> Any:
    return field(default=default, metadata={"help": text})


@dataclass
class AgentGRPOConfig(GRPOConfig):
    """``GRPOConfig`` plus the agent-RL switches, with the Tongyi recipe's defaults.

    Defaults that differ from TRL's: ``scale_rewards="none"`` (LOO does its own scaling),
    ``epsilon_high=0.28`` (clip-higher), ``beta=0.0``; ``loss_type="dapo"`` and
    ``mask_truncated_completions=False`` are TRL's defaults, kept.
    """

    advantage: str = _f("loo", SWITCH_HELP["advantage"])
    truncation: str = _f("drop_truncated_negatives", SWITCH_HELP["truncation"])
    strict_on_policy: bool = _f(
        True,
        "Require one optimiser step per generation batch (num_iterations=1, "
        "steps_per_generation=gradient_accumulation_steps), so every sample is from the "
        "current policy.",
    )
    dupo: bool = _f(False, SWITCH_HELP["dupo"])
    scale_rewards: str = _f("none", "TRL's reward scaling, used only by advantage='grpo'.")
    epsilon_high: float | None = _f(0.28, SWITCH_HELP["epsilon_high"])
    beta: float = _f(0.0, "KL coefficient (0: no reference model, as in the Tongyi recipe).")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_switches("AgentGRPOConfig", self.advantage, self.truncation)
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


@dataclass(frozen=True)
class TrainerConfig:
    """The ``trainer:`` section of a GRPO recipe: batch shape, optimiser, loss switches, precision and generation."""

    num_generations: int = _f(4, "Group size G (larger groups instead of dynamic sampling).")
    prompts_per_step: int = _f(
        2, "Tasks per optimiser step per process (the batch is prompts_per_step * num_generations)."
    )
    max_steps: int = _f(20, "Optimiser steps (one per generation batch: strictly on-policy).")
    micro_batch: int | None = _f(
        None,
        "Episodes per forward/backward pass (None: the whole batch at once); the step's gradient "
        "is accumulated over batch / micro_batch passes, so the update is the same with less "
        "memory.",
    )
    learning_rate: float = _f(1e-6, "AdamW learning rate.")
    max_completion_length: int = _f(4096, "Token budget of the whole multi-turn completion, tool outputs included.")
    temperature: float = _f(1.0, "Sampling temperature of the rollouts (also used for the trained logprobs).")
    top_p: float = _f(1.0, "Nucleus sampling mass of the rollouts.")
    advantage: str = _f("loo", SWITCH_HELP["advantage"])
    truncation: str = _f("drop_truncated_negatives", SWITCH_HELP["truncation"])
    dupo: bool = _f(False, SWITCH_HELP["dupo"])
    epsilon_high: float = _f(0.28, SWITCH_HELP["epsilon_high"])
    loss_type: str = _f("dapo", "TRL loss aggregation ('dapo': token-level, normalised by the batch's trained tokens).")
    lora_r: int = _f(0, "LoRA rank (0 = full fine-tuning); LoRA needs peft.")
    gradient_checkpointing: bool = _f(False, "Trade compute for memory on long completions.")
    bf16: bool = _f(False, "bfloat16 training (GPU; CPUs here have no native bf16).")
    use_vllm: bool = _f(
        False,
        "Generate with vLLM (GPU, `pip install -e .[gpu]`); colocate shares the training GPU. Where "
        "vLLM is not installed or there is no CUDA GPU, rollouts fall back to TRL's transformers "
        "generation with one warning (require_vllm: stop instead).",
    )
    require_vllm: bool = _f(
        False,
        "With use_vllm: stop with an error where vLLM cannot run instead of falling back to "
        "transformers generation (for runs whose timings assume vLLM).",
    )
    vllm_mode: str = _f(
        "colocate",
        "'colocate' (one process per GPU, safe with tools) or 'server' (TRL 1.16 can hang with "
        "tools and more than one trainer process per server).",
    )
    vllm_gpu_memory_utilization: float = _f(0.3, "GPU memory share of the colocated vLLM engine.")
    save_steps: int = _f(10, "Save a checkpoint every N steps (resuming starts from the last one).")

    def __post_init__(self) -> None:
        check_switches("trainer", self.advantage, self.truncation)
        if self.num_generations < 2:
            raise ConfigError(
                f"trainer.num_generations must be >= 2 (a group needs a baseline), got {self.num_generations}"
            )
        if min(self.prompts_per_step, self.max_steps, self.save_steps, self.max_completion_length) < 1:
            raise ConfigError(
                f"trainer needs prompts_per_step, max_steps, save_steps and max_completion_length >= 1, got "
                f"{self.prompts_per_step}, {self.max_steps}, {self.save_steps}, {self.max_completion_length}"
            )
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
            advantage=self.advantage,
            truncation=self.truncation,
            dupo=self.dupo,
            epsilon_high=self.epsilon_high,
            loss_type=self.loss_type,
            gradient_checkpointing=self.gradient_checkpointing,
            bf16=self.bf16,
            use_cpu=not cuda,
            use_vllm=use_vllm,
            vllm_mode=self.vllm_mode,
            vllm_gpu_memory_utilization=self.vllm_gpu_memory_utilization,
            logging_steps=1,
            save_steps=self.save_steps,
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
