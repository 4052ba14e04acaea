"""``GRPORecipe``: everything one GRPO run needs (model, tasks, env budgets, GRPO switches), loadable from a recipe file.

Recipes live in ``training/configs/<name>.yaml`` (``cpu-smoke``, ``single-gpu``, ``multi-gpu``); any field can be
overridden (``sim-web grpo --recipe cpu-smoke --set max_steps=5``). :meth:`GRPORecipe.grpo_config` turns a recipe
into TRL arguments (:class:`~training.grpo.trainer.AgentGRPOConfig`).

PythonInterpreter is on in the GPU recipes: it runs in the bubblewrap sandbox (no network, no view of
``$SIM_WEB_HOME``, the repository or the task files), so a policy cannot read gold answers through it.
:func:`check_sandbox` refuses a recipe that enables it where the sandbox cannot run, before any model loads.

Example:
    >>> GRPORecipe(model="tiny", max_steps=2).per_device_batch
    8
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim_web.tools import PROMPT_STYLES
from training.grpo.advantage import ADVANTAGES, TRUNCATION_RULES
from wiki_index.errors import ConfigError
from wiki_index.settings import sim_web_home

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
TRAIN_TOOLS = ("search", "visit", "google_scholar", "PythonInterpreter")
NO_PYTHON_TOOLS = ("search", "visit", "google_scholar")
SMOLLM2_DIR = "models/SmolLM2-135M-Instruct"  # where agents.models.smollm2_path() converts the bundled GGUF


def _f(default: Any, text: str) -> Any:
    if isinstance(default, (list, dict, set)):
        raise TypeError("use default_factory for mutable defaults")
    return field(default=default, metadata={"help": text})


@dataclass(frozen=True)
class GRPORecipe:
    """One GRPO run on the simulated web."""

    model: str = _f("smollm2", "'tiny' (a random 2-layer Llama, CPU smoke), 'smollm2' (the bundled SmolLM2-135M-Instruct, "
                               "converted under $SIM_WEB_HOME/models) or a Hugging Face model folder (e.g. an SFT checkpoint).")
    index_dir: str | None = _f(None, "Index to browse (default: the sample index under $SIM_WEB_HOME).")
    tasks: str | None = _f(None, "Task set: default (the index's SailorFog-QA set when synthesized), derived, sailorfog, or a path.")
    split: str | None = _f("train", "Task split to train on (the test split stays held out for `sim-web eval`).")
    n_tasks: int | None = _f(None, "Use the first n tasks of the split (None = all).")
    tools: tuple[str, ...] = _f(TRAIN_TOOLS, "Enabled tools; PythonInterpreter runs in the bubblewrap sandbox (refused where it "
                                             "cannot run: install bubblewrap or drop the tool).")
    max_turns: int = _f(8, "Agent turns per episode (the env's turn cap; reaching it ends the episode without an answer).")
    max_response_chars: int = _f(4000, "Cap on one tool response in characters (shorter outputs keep rollouts within budget).")
    max_obs_chars: int = _f(50_000, "Tool output budget per episode in characters.")
    prompt: str = _f("tongyi", "System prompt style: 'tongyi' (upstream's, ~450-780 tokens) or 'compact' (a short instruction for "
                               "small models, same tags and tool-call format); evaluate with the same `sim-web eval --prompt`.")
    search_results: int = _f(10, "Results per search query shown to the agent (fewer: shorter observations).")
    snippet_chars: int = _f(240, "Most characters of one search result's snippet.")
    reward: str = _f("em", "Answer score: 'em' (exact match) or 'f1' (token F1), over the gold answer and its aliases.")
    num_generations: int = _f(4, "Group size G (larger groups instead of dynamic sampling).")
    prompts_per_step: int = _f(2, "Tasks per optimiser step per process (the batch is prompts_per_step * num_generations).")
    max_steps: int = _f(20, "Optimiser steps (one per generation batch: strictly on-policy).")
    micro_batch: int | None = _f(None, "Episodes per forward/backward pass (None: the whole batch at once); the step's gradient "
                                       "is accumulated over batch / micro_batch passes, so the update is the same with less "
                                       "memory (the logits of a CPU batch of 16 x 1,024 tokens alone take 3 GB per copy).")
    learning_rate: float = _f(1e-6, "AdamW learning rate.")
    max_completion_length: int = _f(4096, "Token budget of the whole multi-turn completion, tool outputs included.")
    max_turn_tokens: int = _f(512, "Most new tokens of one assistant turn.")
    temperature: float = _f(1.0, "Sampling temperature of the rollouts (also used for the trained logprobs).")
    top_p: float = _f(1.0, "Nucleus sampling mass of the rollouts.")
    advantage: str = _f("loo", f"Group advantage, one of {ADVANTAGES}.")
    truncation: str = _f("drop_truncated_negatives", f"Which samples leave the loss, one of {TRUNCATION_RULES}.")
    epsilon_high: float = _f(0.28, "Upper clip of the ratio (clip-higher); set it to 0.2 for symmetric clipping.")
    loss_type: str = _f("dapo", "TRL loss aggregation ('dapo': token-level, normalised by the batch's trained tokens).")
    lora_r: int = _f(0, "LoRA rank (0 = full fine-tuning); LoRA needs peft.")
    gradient_checkpointing: bool = _f(False, "Trade compute for memory on long completions.")
    bf16: bool = _f(False, "bfloat16 training (GPU; CPUs here have no native bf16).")
    use_vllm: bool = _f(False, "Generate with vLLM (GPU, `pip install -e .[gpu]`); colocate shares the training GPU. Where "
                               "vLLM is not installed or there is no CUDA GPU, rollouts fall back to TRL's transformers "
                               "generation with one warning (require_vllm: stop instead).")
    require_vllm: bool = _f(False, "With use_vllm: stop with an error where vLLM cannot run instead of falling back to "
                                   "transformers generation (for runs whose timings assume vLLM).")
    vllm_mode: str = _f("colocate", "'colocate' (one process per GPU, safe with tools) or 'server' (see the README: TRL 1.16 can "
                                    "hang with tools and more than one trainer process per server).")
    vllm_gpu_memory_utilization: float = _f(0.3, "GPU memory share of the colocated vLLM engine.")
    dupo: bool = _f(False, "DUPO batch filling: groups whose rewards are all equal are replaced by copies of informative groups "
                           "of the same batch (no extra rollouts).")
    dupo_prefilter_k: int = _f(0, "DUPO's pre-RL filter: play k rollouts per task with the starting policy and drop the tasks it "
                                  "always solves (0 = off).")
    prefilter_verdict: str | None = _f(None, "A saved prefilter verdict (another run's prefilter.json from the same starting "
                                             "model, tasks and seed) to reuse instead of playing its rollouts again.")
    pass_reward: float = _f(1.0, "Reward at or above which an episode counts as solved (DUPO's filter, the loop's pass rates).")
    loop: bool = _f(False, "Data-policy feedback loop (training.loop): retire tasks with pass rate 0 or 1, add fresh synthesized "
                           "tasks aimed at the learning band, same trainer.")
    loop_every: int = _f(10, "Optimiser steps between curation rounds.")
    loop_window: int = _f(16, "Most recent rollouts of a task that decide its pass rate.")
    loop_min_rollouts: int = _f(4, "Rollouts a task needs (since it entered the set) before it can be retired.")
    loop_revisit_after: int = _f(2, "Rounds a too-hard task stays retired before it may return.")
    loop_max_return: int = _f(2, "Too-hard tasks that return per round.")
    loop_synth_max_nodes: int = _f(1000, "Knowledge-graph size of the loop's synthesizer calls (smaller: faster, fewer tasks).")
    loop_tiers: tuple[str, ...] = _f(("sailorfog",), "Curriculum tiers the loop's fresh tasks come from (lookup, bridge, "
                                                     "sailorfog); each round asks the tier closest to the learning band.")
    loop_synth_oversample: float = _f(3.0, "Candidates synthesized per fresh task wanted (the closest to the target are kept).")
    threads: int | None = _f(None, "torch CPU threads (None: torch's default).")
    output_dir: str | None = _f(None, "Checkpoints, metrics.jsonl and the final model (default $SIM_WEB_HOME/runs/grpo/<recipe>).")
    save_steps: int = _f(10, "Save a checkpoint every N steps (resuming starts from the last one).")
    resume: bool = _f(True, "Resume from the last checkpoint in output_dir when there is one.")
    seed: int = _f(0, "Seed of the model init (tiny), data order and sampling.")
    name: str = _f("custom", "Recipe name (names the default output folder).")

    def __post_init__(self) -> None:
        unknown = sorted(set(self.tools) - set(TRAIN_TOOLS))
        if unknown or not self.tools:
            raise ConfigError(f"GRPORecipe.tools must be a non-empty subset of {TRAIN_TOOLS}, got {self.tools!r}")
        if self.advantage not in ADVANTAGES or self.truncation not in TRUNCATION_RULES:
            raise ConfigError(f"GRPORecipe needs advantage in {ADVANTAGES} and truncation in {TRUNCATION_RULES}; got "
                              f"{self.advantage!r}, {self.truncation!r}")
        if self.prompt not in PROMPT_STYLES:
            raise ConfigError(f"GRPORecipe.prompt must be one of {PROMPT_STYLES}, got {self.prompt!r} (--set prompt=compact)")
        if self.search_results < 1 or self.snippet_chars < 1:
            raise ConfigError(f"GRPORecipe needs search_results >= 1 and snippet_chars >= 1, got {self.search_results}, "
                              f"{self.snippet_chars}")
        if self.reward not in ("em", "f1"):
            raise ConfigError(f"GRPORecipe.reward must be 'em' or 'f1', got {self.reward!r} (judge rewards need a judge endpoint)")
        if self.num_generations < 2:
            raise ConfigError(f"GRPORecipe.num_generations must be >= 2 (a group needs a baseline), got {self.num_generations}")
        if min(self.prompts_per_step, self.max_steps, self.max_turns, self.max_turn_tokens, self.save_steps) < 1:
            raise ConfigError("GRPORecipe needs prompts_per_step, max_steps, max_turns, max_turn_tokens and save_steps >= 1")
        if self.max_completion_length < self.max_turn_tokens:
            raise ConfigError(f"GRPORecipe.max_completion_length ({self.max_completion_length}) is the budget of the whole "
                              f"episode and must be >= max_turn_tokens ({self.max_turn_tokens}); raise it or lower max_turn_tokens")
        if self.dupo_prefilter_k < 0 or min(self.loop_every, self.loop_window, self.loop_min_rollouts, self.loop_revisit_after) < 1 \
                or self.loop_min_rollouts > self.loop_window or self.loop_synth_oversample < 1:
            raise ConfigError("GRPORecipe needs dupo_prefilter_k >= 0, loop_every / loop_window / loop_min_rollouts / "
                              "loop_revisit_after >= 1, loop_min_rollouts <= loop_window and loop_synth_oversample >= 1")
        if not self.loop_tiers or set(self.loop_tiers) - {"lookup", "bridge", "sailorfog"}:
            raise ConfigError(f"GRPORecipe.loop_tiers must be a non-empty subset of (lookup, bridge, sailorfog), got "
                              f"{self.loop_tiers!r}")
        if self.micro_batch is not None and (self.micro_batch < 1 or self.per_device_batch % self.micro_batch):
            raise ConfigError(f"GRPORecipe.micro_batch must divide prompts_per_step * num_generations "
                              f"({self.per_device_batch}), got {self.micro_batch}")
        if self.vllm_mode not in ("colocate", "server"):
            raise ConfigError(f"GRPORecipe.vllm_mode must be 'colocate' or 'server', got {self.vllm_mode!r}")

    def generation(self) -> tuple[bool, str | None]:
        """Whether rollouts generate with vLLM here, and the warning to log when the recipe asked for vLLM but gets
        transformers generation (:func:`choose_generation` on this machine).

        Raises:
            ConfigError: When ``require_vllm`` is set and vLLM cannot run here.
        """
        if not self.use_vllm:
            return False, None
        return choose_generation(True, self.require_vllm, vllm=vllm_installed(), cuda=_cuda())

    def check_sandbox(self) -> None:
        """Refuse PythonInterpreter where its sandbox cannot run (an error observation on every call would teach the
        policy that the tool is broken).

        Raises:
            ConfigError: Naming what is missing and the two fixes.
        """
        check_sandbox(self.tools)

    @property
    def per_device_batch(self) -> int:
        """Episodes per process per step."""
        return self.prompts_per_step * self.num_generations

    def env_config(self, index_dir: str) -> Any:
        """The :class:`~sim_web.env.EnvConfig` every rollout plays in (tools, budgets, prompt style, reward)."""
        from sim_web.backends.sim import SimConfig
        from sim_web.env import EnvConfig, RewardConfig

        return EnvConfig(index_dir=index_dir, tools=self.tools, max_turns=self.max_turns, max_obs_chars=self.max_obs_chars,
                         max_response_chars=self.max_response_chars, prompt=self.prompt, search_results=self.search_results,
                         sim=SimConfig(snippet_chars=self.snippet_chars), reward=RewardConfig(kind=self.reward))

    def eval_config(self, policy: str, out: str | Path, *, split: str = "test", **extra: Any) -> Any:
        """A greedy :class:`~agents.harness.EvalConfig` that sees what this recipe trains on: its tasks, tools, turn cap,
        turn length and observation settings (so a checkpoint is evaluated as it was trained).

        Args:
            policy: The policy spec (``hf:PATH``, ``oracle:search``, ...).
            out: The eval's output folder.
            split: The task split (``test``: the held-out tasks).
            **extra: Other ``EvalConfig`` fields (``n``, ``batch_size``, ``threads``, ``progress``, ...).
        """
        from agents.config import AgentConfig, SamplingConfig
        from agents.harness import EvalConfig

        sampling = SamplingConfig(max_tokens=self.max_turn_tokens, temperature=0.0, presence_penalty=0.0, seed=self.seed)
        return EvalConfig(policy=policy, index_dir=self.index_dir, tasks=self.tasks, split=split, k=1, out=str(out),
                          agent=AgentConfig(max_llm_calls=self.max_turns, sampling=sampling), tools=tuple(self.tools),
                          max_obs_chars=self.max_obs_chars, max_response_chars=self.max_response_chars, prompt=self.prompt,
                          search_results=self.search_results, snippet_chars=self.snippet_chars, **extra)

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
                raise ConfigError(f"SmolLM2 is not converted yet at {path}: run once `python -c \"from agents.models import "
                                  "smollm2_path; smollm2_path()\"` (or `sim-web eval --policy hf:smollm2`)")
            return str(path)
        if not (Path(self.model) / "config.json").is_file():
            raise ConfigError(f"GRPORecipe.model {self.model!r} is not 'tiny', 'smollm2' or a model folder with config.json")
        return self.model

    def grpo_config(self, **overrides: Any) -> Any:
        """The TRL arguments of this recipe (:class:`~training.grpo.trainer.AgentGRPOConfig`)."""
        from training.grpo.trainer import AgentGRPOConfig

        micro = self.micro_batch or self.per_device_batch
        use_vllm, _ = self.generation()
        kw = dict(output_dir=str(self.out_dir()), per_device_train_batch_size=micro,
                  gradient_accumulation_steps=self.per_device_batch // micro,
                  num_generations=self.num_generations, max_steps=self.max_steps, learning_rate=self.learning_rate,
                  max_completion_length=self.max_completion_length, temperature=self.temperature, top_p=self.top_p,
                  advantage=self.advantage, truncation=self.truncation, dupo=self.dupo, epsilon_high=self.epsilon_high, loss_type=self.loss_type,
                  gradient_checkpointing=self.gradient_checkpointing, bf16=self.bf16, use_cpu=not _cuda(), use_vllm=use_vllm,
                  vllm_mode=self.vllm_mode,
                  vllm_gpu_memory_utilization=self.vllm_gpu_memory_utilization, logging_steps=1, save_steps=self.save_steps,
                  save_strategy="steps", report_to="none", seed=self.seed, data_seed=self.seed, log_completions=False)
        kw.update(overrides)
        return AgentGRPOConfig(**kw)


def _cuda() -> bool:
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
    missing = " and ".join(m for m, ok in (("the vllm package is not installed", vllm), ("no CUDA GPU is visible", cuda))
                           if not ok)
    if require_vllm:
        raise ConfigError(f"use_vllm and require_vllm are set but {missing}: on a CUDA machine `pip install -e '.[gpu]'`, "
                          "or let the run fall back to transformers generation (--set require_vllm=false), or "
                          "--set use_vllm=false")
    return False, (f"use_vllm is set but {missing}: generating with TRL's transformers generation instead (same trainer, "
                   "env and rewards; slower rollouts). Install vLLM with `pip install -e '.[gpu]'` on a CUDA machine, or "
                   "--set use_vllm=false to silence this")


def recipe_path(name: str) -> Path:
    """``training/configs/<name>.yaml``, or ``name`` itself when it is a file."""
    path = Path(name)
    if path.is_file():
        return path
    found = CONFIG_DIR / f"{name}.yaml"
    if not found.is_file():
        names = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml") if not p.stem.startswith("accelerate"))
        raise ConfigError(f"no GRPO recipe {name!r}: expected a YAML file or one of {names}")
    return found


def parse_value(text: str) -> Any:
    """A ``--set key=value`` value: YAML scalars and lists (``3``, ``1e-6``, ``true``, ``null``, ``[search, visit]``)."""
    import yaml

    value = yaml.safe_load(text)
    if isinstance(value, str):
        try:
            return float(value)  # YAML 1.1 reads 1e-6 (no dot) as a string
        except ValueError:
            return value
    return value


def parse_overrides(items: list[str], flag: str = "--set") -> dict[str, Any]:
    """``["max_steps=5", "tools=search,visit"]`` -> ``{"max_steps": 5, "tools": "search,visit"}`` (values by :func:`parse_value`).

    Raises:
        ConfigError: For an item without ``=``, naming the flag.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} expects KEY=VALUE, got {item!r}")
        out[key.strip()] = parse_value(value)
    return out


def load_recipe(name: str, **overrides: Any) -> GRPORecipe:
    """Read a recipe file and apply overrides.

    Args:
        name: A recipe name under ``training/configs`` or a YAML path.
        **overrides: Field values that win over the file.

    Returns:
        The recipe.

    Raises:
        ConfigError: For an unknown recipe or field, or a value the recipe rejects.
    """
    import yaml

    path = recipe_path(name)
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    data = {"name": path.stem, **data, **overrides}
    known = {f.name for f in dataclasses.fields(GRPORecipe)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{path}: unknown GRPO recipe fields {unknown}; known fields: {sorted(known)}")
    for key in ("tools", "loop_tiers"):
        if isinstance(data.get(key), str):  # --set tools=search,visit
            data[key] = tuple(t.strip() for t in data[key].split(",") if t.strip())
        if isinstance(data.get(key), list):
            data[key] = tuple(data[key])
    return GRPORecipe(**data)


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
        raise ConfigError(f"PythonInterpreter is enabled but its sandbox cannot run here: {problem} Or train without it: "
                          f"--set tools={','.join(NO_PYTHON_TOOLS)}")
