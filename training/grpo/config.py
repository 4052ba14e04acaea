"""``GRPORecipe``: everything one GRPO run needs, in sections that each own their fields, loadable from a recipe file.

A recipe is the run's top-level fields (model, tasks, split, output folder, seed, ...) plus one section per part of the
run, each a dataclass that declares and validates its own fields:

- ``env``: :class:`~sim_web.env.EnvConfig` (tools, turn cap, observation budgets, prompt style, ``sim``, ``reward``);
- ``rollout``: :class:`~training.grpo.rollout.RolloutConfig` (turn length; its seed and batch follow the run);
- ``trainer``: :class:`~training.grpo.grpo_config.TrainerConfig` (batch shape, optimiser, loss switches, vLLM), which
  :meth:`GRPORecipe.grpo_config` turns into TRL arguments;
- ``prefilter``: :class:`~training.grpo.dupo.PrefilterConfig` (DUPO's pre-RL filter);
- ``loop``: :class:`~training.loop.loop.LoopConfig` (the data-policy feedback loop).

Recipes ship as package data (``training/configs/<name>.yaml``: ``cpu-smoke``, ``cpu-learn``, ``single-gpu``,
``multi-gpu``) and are written nested, as the sections are; ``--set section.field=value`` overrides one field
(``sim-web grpo --recipe cpu-smoke --set trainer.max_steps=5``), its value read as the field's type.

PythonInterpreter runs in the bubblewrap sandbox (no network, no view of ``$SIM_WEB_HOME``, the repository or the
task files), so a policy cannot read gold answers through it; :meth:`GRPORecipe.check_sandbox` refuses a recipe that
enables it where the sandbox cannot run, before any model loads.

Example:
    >>> GRPORecipe(model="tiny").per_device_batch
    8
    >>> load_recipe("cpu-smoke", {"trainer.max_steps": "5"}).trainer.max_steps
    5
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from sim_web.env import EnvConfig
from training.grpo.dupo import PrefilterConfig
from training.grpo.grpo_config import TrainerConfig, check_sandbox
from training.grpo.rollout import RolloutConfig
from training.loop.loop import LoopConfig
from wiki_index.errors import ConfigError
from wiki_index.settings import sim_web_home

__all__ = [
    "CONFIG_DIR",
    "GRPORecipe",
    "build",
    "check_sandbox",
    "coerce",
    "load_recipe",
    "parse_overrides",
    "parse_value",
    "recipe_names",
    "recipe_text",
]

#: The shipped recipes (package data of ``training``).
CONFIG_DIR = resources.files("training") / "configs"
SMOLLM2_DIR = "models/SmolLM2-135M-Instruct"  # where agents.models.smollm2_path() converts the bundled GGUF
REWARDS = ("em", "f1")
#: Section fields a recipe does not set: the run fills them in (path -> where the value comes from).
DERIVED = {
    "env.index_dir": "index_dir",
    "env.tasks": "tasks",
    "env.split": "split",
    "rollout.seed": "seed",
    "rollout.batch_size": "trainer.prompts_per_step * trainer.num_generations",
    "loop.solved_reward": "solved_reward",
}


def _f(default: Any, text: str) -> Any:
    if isinstance(default, (list, dict, set)):
        raise TypeError("use default_factory for mutable defaults")
    return field(default=default, metadata={"help": text})


def _section(factory: Any, text: str) -> Any:
    return field(default_factory=factory, metadata={"help": text})


def _recipe_env() -> EnvConfig:
    """The env of a recipe that sets nothing: short episodes and budgets sized for training."""
    return EnvConfig(max_turns=8, max_response_chars=4000, max_obs_chars=50_000)


@dataclass(frozen=True)
class GRPORecipe:
    """One GRPO run on the simulated web."""

    model: str = _f(
        "smollm2",
        "'tiny' (a random 2-layer Llama, CPU smoke), 'smollm2' (the bundled SmolLM2-135M-Instruct, "
        "converted under $SIM_WEB_HOME/models) or a Hugging Face model folder (e.g. an SFT checkpoint).",
    )
    index_dir: str | None = _f(None, "Index to browse (default: the sample index under $SIM_WEB_HOME).")
    tasks: str | None = _f(
        None, "Task set: default (the index's SailorFog-QA set when synthesized), derived, sailorfog, or a path."
    )
    split: str | None = _f("train", "Task split to train on (the test split stays held out for `sim-web eval`).")
    n_tasks: int | None = _f(None, "Use the first n tasks of the split (None = all).")
    solved_reward: float = _f(
        1.0, "Reward at or above which an episode counts as solved (DUPO's prefilter, the loop's pass rates)."
    )
    threads: int | None = _f(None, "torch CPU threads (None: torch's default).")
    output_dir: str | None = _f(
        None, "Checkpoints, metrics.jsonl and the final model (default $SIM_WEB_HOME/runs/grpo/<name>)."
    )
    resume: bool = _f(True, "Resume from the last checkpoint in output_dir when there is one.")
    seed: int = _f(0, "Seed of the model init (tiny), data order and sampling.")
    name: str = _f("custom", "Recipe name (names the default output folder).")
    env: EnvConfig = _section(
        _recipe_env,
        "The env every rollout plays in (sim_web.env.EnvConfig): tools, max_turns, "
        "budgets, prompt, search_results, sim.snippet_chars, reward.kind.",
    )
    rollout: RolloutConfig = _section(
        RolloutConfig, "Rollout limits (training.grpo.rollout.RolloutConfig): max_turn_tokens, reuse_kv."
    )
    trainer: TrainerConfig = _section(TrainerConfig, "Trainer arguments (training.grpo.grpo_config.TrainerConfig).")
    prefilter: PrefilterConfig = _section(PrefilterConfig, "DUPO's pre-RL filter (training.grpo.dupo.PrefilterConfig).")
    loop: LoopConfig = _section(LoopConfig, "The data-policy feedback loop (training.loop.loop.LoopConfig).")

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
        if self.env.sim.snippet_chars < 1:  # SimConfig does not check it
            raise ConfigError(f"env.sim.snippet_chars must be >= 1, got {self.env.sim.snippet_chars}")
        if self.trainer.max_completion_length < self.rollout.max_turn_tokens:
            raise ConfigError(
                f"trainer.max_completion_length ({self.trainer.max_completion_length}) is the budget of the whole "
                f"episode and must be >= rollout.max_turn_tokens ({self.rollout.max_turn_tokens}); raise it or "
                "lower rollout.max_turn_tokens"
            )
        # the derived section fields follow the run
        object.__setattr__(
            self, "rollout", dataclasses.replace(self.rollout, seed=self.seed, batch_size=self.trainer.per_device_batch)
        )
        object.__setattr__(self, "loop", dataclasses.replace(self.loop, solved_reward=self.solved_reward))

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
        transformers generation (:meth:`TrainerConfig.generation <training.grpo.grpo_config.TrainerConfig.generation>`).

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

        env = self.env
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
            agent=AgentConfig(max_llm_calls=env.max_turns, sampling=sampling),
            tools=tuple(env.tools),
            max_obs_chars=env.max_obs_chars,
            max_response_chars=env.max_response_chars,
            prompt=env.prompt,
            search_results=env.search_results,
            snippet_chars=env.sim.snippet_chars,
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
        return self.trainer.args(str(self.out_dir()), seed=self.seed, **overrides)


def recipe_names() -> list[str]:
    """The shipped recipes (``training/configs/*.yaml`` without the accelerate launcher configs)."""
    return sorted(
        p.name[:-5] for p in CONFIG_DIR.iterdir() if p.name.endswith(".yaml") and not p.name.startswith("accelerate")
    )


def recipe_text(name: str) -> tuple[str, str]:
    """The YAML text of a recipe and its name: a shipped recipe's name or a YAML path.

    Raises:
        ConfigError: For a name that is neither, listing the shipped recipes.
    """
    path = Path(name)
    if path.is_file():
        return path.read_text(encoding="utf-8"), path.stem
    found = CONFIG_DIR / f"{name}.yaml"
    if not found.is_file():
        raise ConfigError(f"no GRPO recipe {name!r}: expected a YAML file or one of {recipe_names()}")
    return found.read_text(encoding="utf-8"), name


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
    """``["trainer.max_steps=5", "env.tools=search,visit"]`` -> ``{"trainer.max_steps": 5, "env.tools": "search,visit"}``
    (values by :func:`parse_value`; :func:`load_recipe` reads them as the field's type).

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


def load_recipe(name: str, overrides: Mapping[str, Any] | None = None) -> GRPORecipe:
    """Read a recipe file and apply overrides.

    Args:
        name: A recipe name under ``training/configs`` or a YAML path.
        overrides: Values that win over the file, keyed by dotted path (``"trainer.max_steps"``, ``"model"``); a
            section's key may also hold a mapping of its fields (``{"trainer": {"max_steps": 5}}``).

    Returns:
        The recipe.

    Raises:
        ConfigError: For an unknown recipe or key (naming the section and its valid keys), or a value the recipe
            rejects.
    """
    import yaml

    text, stem = recipe_text(name)
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"recipe {name!r} must be a YAML mapping of fields and sections, got {type(data).__name__}")
    data = _merge({"name": stem}, data)
    for key, value in (overrides or {}).items():
        *parents, leaf = key.split(".")
        data = _merge(data, _nest(parents, {leaf: value}))
    try:
        return build(GRPORecipe(), data)
    except ConfigError as e:
        raise ConfigError(f"recipe {name!r}: {e}") from None


def _nest(parents: list[str], value: dict[str, Any]) -> dict[str, Any]:
    for p in reversed(parents):
        value = {p: value}
    return value


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on ``base``, mappings merged key by key."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(out.get(k), Mapping) and isinstance(v, Mapping) else v
    return out


def build(default: Any, data: Mapping[str, Any], where: str = "") -> Any:
    """``default`` (a dataclass instance) with the values of ``data``; nested mappings fill nested sections, every value
    is read as its field's type (:func:`coerce`) and each dataclass validates its own fields.

    Args:
        default: The instance whose fields are not in ``data``.
        data: Field values, by name.
        where: The dotted path of ``default`` in the recipe (``""`` for the recipe itself), for errors.

    Raises:
        ConfigError: For an unknown or derived key, naming the section and its valid keys.
    """
    hints = typing.get_type_hints(type(default))
    names = [f.name for f in dataclasses.fields(default) if f.init and f"{where}{f.name}" not in DERIVED]
    changes: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{where}{key}"
        if path in DERIVED:
            raise ConfigError(f"{path} is not set in a recipe: it follows {DERIVED[path]}")
        if key not in names:
            raise ConfigError(_unknown(key, where, names))
        current = getattr(default, key)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, Mapping):
                keys = _keys(current, path)
                example = "enabled" if "enabled" in keys else keys[0]
                raise ConfigError(f"{path} is a section: set its keys ({', '.join(keys)}), e.g. {path}.{example}=...")
            changes[key] = build(current, value, f"{path}.")
        else:
            changes[key] = coerce(value, hints[key], path)
    return dataclasses.replace(default, **changes)


def _keys(section: Any, path: str) -> list[str]:
    return [f.name for f in dataclasses.fields(section) if f.init and f"{path}.{f.name}" not in DERIVED]


def _unknown(key: str, where: str, names: list[str]) -> str:
    section = f"section {where.rstrip('.')!r}" if where else "the recipe's top level"
    hint = ""
    if not where:  # an old flat name: point at its section
        homes = [
            f"{s}.{key}"
            for s in ("env", "rollout", "trainer", "prefilter", "loop")
            if key in {f.name for f in dataclasses.fields(GRPORecipe.__dataclass_fields__[s].default_factory())}
        ]
        hint = f" (did you mean {' or '.join(homes)}?)" if homes else ""
    return f"unknown key {where + key!r} in {section}{hint}; valid keys: {', '.join(names)}"


def coerce(value: Any, hint: Any, path: str) -> Any:
    """``value`` read as the type ``hint`` of the field at ``path`` (``--set`` gives text and YAML scalars).

    Tuples take a YAML list or comma-separated text (``search,visit``); floats take ints; ``str`` fields take the
    text of a number; ``None`` is allowed where the field is optional.

    Raises:
        ConfigError: When the value cannot be read as that type, naming the field, the type and the value.
    """
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint):
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "null", "none", "~")):
            return None
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if typing.get_origin(hint) is tuple:
        if isinstance(value, str):
            return tuple(v.strip() for v in value.split(",") if v.strip())
        if isinstance(value, (list, tuple)):
            return tuple(value)
    elif hint not in (int, float, bool, str):
        return value  # mappings and other types: the owning dataclass checks them
    elif isinstance(value, str) and hint is not str:
        parsed = parse_value(value)
        if isinstance(parsed, hint) or (hint is float and isinstance(parsed, int) and not isinstance(parsed, bool)):
            return hint(parsed)
    elif isinstance(value, bool):
        if hint is bool:
            return value
    elif hint is str and isinstance(value, (int, float)):
        return str(value)
    elif hint is float and isinstance(value, (int, float)):
        return float(value)
    elif isinstance(value, hint):
        return value
    raise ConfigError(f"{path} expects {getattr(hint, '__name__', hint)}, got {value!r}")
