"""``GRPORecipe``: everything one GRPO run needs, in sections that each own their fields, loadable from a recipe file.

A recipe is the run's top-level fields (model, tasks, split, output folder, seed, ...) plus one section per part of the
run, each a dataclass that declares and validates its own fields:

- ``env``: :class:`~sim_web.env.EnvConfig` (tools, turn cap, observation budgets, prompt style, ``sim``, ``reward``);
- ``rollout``: :class:`~training.grpo.rollout.RolloutConfig` (turn length; :meth:`GRPORecipe.rollout_config` fills its
  seed and batch from the run, and :meth:`GRPORecipe.loop_config` the loop's ``solved_reward``);
- ``trainer``: :class:`~training.grpo.trainer_config.TrainerConfig` (batch shape, optimiser, loss switches, vLLM), which
  :meth:`GRPORecipe.grpo_config` turns into TRL arguments;
- ``prefilter``: :class:`~training.grpo.dupo.PrefilterConfig` (DUPO's pre-RL filter);
- ``loop``: :class:`~training.loop.loop.LoopConfig` (the data-policy feedback loop).

Recipes ship as package data (``training/configs/<name>.yaml``) and are written nested, as the sections are;
:mod:`training.grpo.recipes` reads them and applies ``--set`` overrides (:func:`~training.grpo.recipes.load_recipe`).

PythonInterpreter runs in the bubblewrap sandbox (no network, no view of ``$SIM_WEB_HOME``, the repository or the
task files), so a policy cannot read gold answers through it; :meth:`GRPORecipe.check_sandbox` refuses a recipe that
enables it where the sandbox cannot run, before any model loads.

Example:
    >>> GRPORecipe(model="tiny").per_device_batch
    8
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim_web.env import EnvConfig
from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from simweb_core.settings import sim_web_home
from training.grpo.dupo import PrefilterConfig
from training.grpo.rollout import RolloutConfig
from training.grpo.trainer_config import TrainerConfig, check_sandbox
from training.loop.loop import LoopConfig

__all__ = ["GRPORecipe", "check_sandbox"]

SMOLLM2_DIR = "models/SmolLM2-135M-Instruct"  # where agents.models.smollm2_path() converts the bundled GGUF
REWARDS = ("em", "f1")


def _recipe_env() -> EnvConfig:
    """The env of a recipe that sets nothing: short episodes and budgets sized for training."""
    return EnvConfig(max_turns=8, max_response_chars=4000, max_obs_chars=50_000)


@dataclass(frozen=True)
class GRPORecipe:
    """One GRPO run on the simulated web."""

    model: str = help_field(
        "smollm2",
        "'tiny' (a random 2-layer Llama, CPU smoke), 'smollm2' (the bundled SmolLM2-135M-Instruct, "
        "converted under $SIM_WEB_HOME/models) or a Hugging Face model folder (e.g. an SFT checkpoint).",
    )
    index_dir: str | None = help_field(None, "Index to browse (default: the sample index under $SIM_WEB_HOME).")
    tasks: str | None = help_field(
        None, "Task set: default (the index's SailorFog-QA set when synthesized), derived, sailorfog, or a path."
    )
    split: str | None = help_field(
        "train", "Task split to train on (the test split stays held out for `sim-web eval`)."
    )
    n_tasks: int | None = help_field(None, "Use the first n tasks of the split (None = all).")
    task_pool: str | None = help_field(
        None,
        "A JSON file whose `ids` list keeps only those tasks of the split, before tiers and n_tasks (sim-web learn's "
        "headroom/pool.json: the tasks whose sampled pass-rate gives a group reward variance).",
    )
    tiers: tuple[str, ...] | None = help_field(
        None, "Train only on tasks of these curriculum tiers (the records' `tier`, e.g. bridge), before n_tasks."
    )
    balance_tiers: bool = help_field(
        False,
        "Interleave the tiers in the train order (one task of each tier in turn, each tier shuffled with seed) "
        "and turn off TRL's own shuffle, so each step's prompts mix the tiers (training.grpo.order).",
    )
    tier_weights: dict[str, int] = help_field(
        help="With balance_tiers: places per round of each tier (default 1 each), e.g. {bridge: 3, lookup: 1} puts "
        "3 bridge and 1 lookup task in each step of 4 prompts.",
        default_factory=dict,
    )
    solved_reward: float = help_field(
        1.0, "Reward at or above which an episode counts as solved (DUPO's prefilter, the loop's pass rates)."
    )
    threads: int | None = help_field(None, "torch CPU threads (None: torch's default).")
    heap_return_mib: int = help_field(
        4,
        "Freed blocks of at least this many MiB go straight back to the system, and glibc keeps two heaps, so a step's"
        " peak memory holds less that is already free (0: glibc's defaults; MALLOC_MMAP_THRESHOLD_ or MALLOC_ARENA_MAX"
        " in the environment win).",
    )
    output_dir: str | None = help_field(
        None, "Checkpoints, metrics.jsonl and the final model (default $SIM_WEB_HOME/runs/grpo/<name>)."
    )
    resume: bool = help_field(True, "Resume from the last checkpoint in output_dir when there is one.")
    seed: int = help_field(0, "Seed of the model init (tiny), data order and sampling.")
    name: str = help_field("custom", "Recipe name (names the default output folder).")
    env: EnvConfig = help_field(
        help="The env every rollout plays in (sim_web.env.EnvConfig): tools, max_turns, "
        "budgets, prompt, search_results, sim.snippet_chars, reward.kind.",
        default_factory=_recipe_env,
    )
    rollout: RolloutConfig = help_field(
        help="Rollout limits (training.grpo.rollout.RolloutConfig): max_turn_tokens, reuse_kv.",
        default_factory=RolloutConfig,
    )
    trainer: TrainerConfig = help_field(
        help="Trainer arguments (training.grpo.trainer_config.TrainerConfig).", default_factory=TrainerConfig
    )
    prefilter: PrefilterConfig = help_field(
        help="DUPO's pre-RL filter (training.grpo.dupo.PrefilterConfig).", default_factory=PrefilterConfig
    )
    loop: LoopConfig = help_field(
        help="The data-policy feedback loop (training.loop.loop.LoopConfig).", default_factory=LoopConfig
    )

    def __post_init__(self) -> None:
        given = [p for p in ("index_dir", "tasks", "split") if getattr(self.env, p) is not None]
        if given:
            raise ConfigError(
                f"GRPORecipe.env sets {given}: set them at the top level of the recipe (index_dir, tasks, split)"
            )
        if self.env.reward.kind not in REWARDS:
            raise ConfigError(
                f"env.reward.kind must be one of {REWARDS} for training, got {self.env.reward.kind!r} "
                "(judge rewards need a judge endpoint)"
            )
        if not 0 <= self.heap_return_mib <= 32:  # glibc refuses a mapping threshold above 32 MiB on 64-bit
            raise ConfigError(f"heap_return_mib must be 0 (glibc's defaults) to 32, got {self.heap_return_mib}")
        if self.env.sim.snippet_chars < 1:  # SimConfig does not check it
            raise ConfigError(f"env.sim.snippet_chars must be >= 1, got {self.env.sim.snippet_chars}")
        if self.trainer.max_completion_length < self.rollout.max_turn_tokens:
            raise ConfigError(
                f"trainer.max_completion_length ({self.trainer.max_completion_length}) is the budget of the whole "
                f"episode and must be >= rollout.max_turn_tokens ({self.rollout.max_turn_tokens}); raise it or "
                "lower rollout.max_turn_tokens"
            )
        lowest = self.env.reward.lowest_right
        if self.env.reward.charges_calls and self.solved_reward > lowest:
            raise ConfigError(
                f"env.reward.call_cost={self.env.reward.call_cost} / call_penalty={self.env.reward.call_penalty} "
                f"lower a right answer's reward to as little as {lowest}, so solved_reward={self.solved_reward} would "
                f"count right answers as unsolved in DUPO's prefilter and the loop: set solved_reward={lowest}"
            )
        bad = {k: v for k, v in self.tier_weights.items() if not isinstance(v, int) or isinstance(v, bool) or v < 1}
        if bad or (self.tier_weights and not self.balance_tiers):
            raise ConfigError(
                f"tier_weights must map tiers to whole numbers >= 1 and needs balance_tiers=true; got "
                f"{dict(self.tier_weights)!r} with balance_tiers={self.balance_tiers}"
            )
        if self.balance_tiers and self.loop.enabled:
            raise ConfigError(
                "balance_tiers orders a fixed task list, but loop.enabled rebuilds the list as it trains: "
                "turn one of them off"
            )

    def rollout_config(self) -> RolloutConfig:
        """The ``rollout`` section with its derived fields filled from the run: ``seed`` and ``batch_size`` (one
        step's episodes per process), which a recipe does not set (:data:`~training.grpo.recipes.DERIVED`)."""
        return dataclasses.replace(self.rollout, seed=self.seed, batch_size=self.trainer.per_device_batch)

    def loop_config(self) -> LoopConfig:
        """The ``loop`` section with ``solved_reward`` the run's (also DUPO's), which a recipe does not set."""
        return dataclasses.replace(self.loop, solved_reward=self.solved_reward)

    @property
    def tools(self) -> tuple[str, ...]:
        """The enabled tools (``env.tools``), in system-prompt order."""
        return tuple(self.env.tools)

    @property
    def per_device_batch(self) -> int:
        """Episodes per process per step."""
        return self.trainer.per_device_batch

    def generation(self) -> tuple[bool, str | None]:
        """Whether rollouts generate with vLLM here, and the warning to log when the recipe asked for vLLM but gets
        transformers generation (:meth:`TrainerConfig.generation <training.grpo.trainer_config.TrainerConfig.generation>`).

        Raises:
            ConfigError: When ``trainer.require_vllm`` is set and vLLM cannot run here.
        """
        return self.trainer.generation()

    def check_sandbox(self) -> None:
        """Refuse PythonInterpreter where its sandbox cannot run (an error observation on every call would teach the
        policy that the tool is broken).

        Raises:
            ConfigError: Naming what is missing and the two fixes.
        """
        check_sandbox(self.tools)

    def env_config(self, index_dir: str) -> EnvConfig:
        """The :class:`~sim_web.env.EnvConfig` every rollout plays in: the ``env`` section on ``index_dir``."""
        return dataclasses.replace(self.env, index_dir=index_dir)

    def eval_config(self, policy: str, out: str | Path, *, split: str = "test", **extra: Any) -> Any:
        """A greedy :class:`~agents.harness.EvalConfig` that sees what this recipe trains on: its tasks, turn cap, turn
        length and its whole ``env`` section, passed through unchanged (tools, observation settings, retrieval mode,
        reward, ...), so a checkpoint is evaluated in the env it was trained in.

        Args:
            policy: The policy spec (``hf:PATH``, ``oracle:search``, ...).
            out: The eval's output folder.
            split: The task split (``test``: the held-out tasks).
            **extra: Other ``EvalConfig`` fields (``n``, ``batch_size``, ``threads``, ``progress``, ...).
        """
        from agents.config import AgentConfig, SamplingConfig
        from agents.harness import EvalConfig

        sampling = SamplingConfig(
            max_tokens=self.rollout.max_turn_tokens, temperature=0.0, presence_penalty=0.0, seed=self.seed
        )
        return EvalConfig(
            policy=policy,
            index_dir=self.index_dir,
            tasks=self.tasks,
            split=split,
            k=1,
            out=str(out),
            agent=AgentConfig(max_llm_calls=self.env.max_turns, sampling=sampling),
            env=self.env,
            **extra,
        )

    def out_dir(self) -> Path:
        """Where the run writes (``output_dir`` or ``$SIM_WEB_HOME/runs/grpo/<name>``)."""
        return Path(self.output_dir) if self.output_dir else sim_web_home() / "runs" / "grpo" / self.name

    def model_path(self) -> str:
        """The model folder (``tiny`` has none).

        Raises:
            ConfigError: When SmolLM2 has not been converted yet or the folder does not exist.
        """
        if self.model.lower() in ("smollm2", "smollm2-135m-instruct"):
            path = sim_web_home() / SMOLLM2_DIR
            if not (path / "config.json").is_file():
                raise ConfigError(
                    f'SmolLM2 is not converted yet at {path}: run once `python -c "from agents.models import '
                    'smollm2_path; smollm2_path()"` (or `sim-web eval --policy hf:smollm2`)'
                )
            return str(path)
        if not (Path(self.model) / "config.json").is_file():
            raise ConfigError(
                f"GRPORecipe.model {self.model!r} is not 'tiny', 'smollm2' or a model folder with config.json"
            )
        return self.model

    def grpo_config(self, **overrides: Any) -> Any:
        """The TRL arguments of this recipe (:class:`~training.grpo.grpo_config.AgentGRPOConfig`)."""
        overrides.setdefault("shuffle_dataset", not self.balance_tiers)
        return self.trainer.args(str(self.out_dir()), seed=self.seed, **overrides)
