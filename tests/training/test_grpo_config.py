"""GRPO recipes: every file loads as written (nested), overrides apply by dotted path, mistakes are errors that name the
fix, the CLI is registered."""

import dataclasses

import pytest

from simweb_core.errors import ConfigError
from training.grpo.config import GRPORecipe
from training.grpo.recipes import CONFIG_DIR, load_recipe, parse_overrides, parse_value, recipe_names

RECIPES = ("cpu-smoke", "single-gpu", "multi-gpu")


@pytest.mark.parametrize("name", RECIPES)
def test_every_recipe_loads_and_the_gpu_recipes_use_the_python_interpreter(name):
    r = load_recipe(name)
    assert r.name == name and ("PythonInterpreter" in r.tools) == (name != "cpu-smoke")
    assert (r.trainer.advantage, r.trainer.truncation, r.trainer.loss_type) == (
        "loo",
        "drop_truncated_negatives",
        "dapo",
    )
    assert r.trainer.use_vllm == (name != "cpu-smoke") and r.trainer.max_completion_length >= r.rollout.max_turn_tokens
    assert "bubblewrap" in (CONFIG_DIR / f"{name}.yaml").read_text()


def test_shipped_recipes_keep_their_values_and_tool_order():
    smoke, learn, single = load_recipe("cpu-smoke"), load_recipe("cpu-learn"), load_recipe("single-gpu")
    assert smoke.tools == ("search", "visit", "google_scholar") and learn.tools == ("search", "visit")
    assert single.tools == ("search", "visit", "google_scholar", "PythonInterpreter")  # the system prompt's order
    assert (
        smoke.env.max_turns,
        smoke.env.max_obs_chars,
        smoke.rollout.max_turn_tokens,
        smoke.trainer.learning_rate,
    ) == (2, 4000, 24, 1e-3)
    assert (learn.env.prompt, learn.env.search_results, learn.env.sim.snippet_chars, learn.prefilter.k) == (
        "compact",
        5,
        160,
        2,
    )
    assert (single.loop.enabled, single.loop.tiers, single.loop.min_rollouts, single.loop.every) == (
        True,
        ("lookup", "bridge", "sailorfog"),
        8,
        10,
    )
    assert recipe_names() == ["cpu-learn", "cpu-smoke", "multi-gpu", "single-gpu"]


def test_derived_section_fields_follow_the_run():
    r = load_recipe("cpu-learn", {"seed": 3, "solved_reward": 0.5})
    rollout, loop = r.rollout_config(), r.loop_config()
    assert (rollout.seed, rollout.batch_size, loop.solved_reward) == (3, 32, 0.5)  # a step: 4 prompts x 8 rollouts
    assert (rollout.max_turn_tokens, loop.tiers) == (r.rollout.max_turn_tokens, r.loop.tiers)  # the rest as declared
    r2 = dataclasses.replace(r, seed=7)
    assert r2.rollout_config().seed == 7
    with pytest.raises(ConfigError, match="rollout.seed is not set directly: it follows seed"):
        load_recipe("cpu-smoke", {"rollout.seed": 1})
    with pytest.raises(ConfigError, match="set them at the top level"):
        GRPORecipe(env=dataclasses.replace(GRPORecipe().env, split="test"))


def test_a_call_cost_needs_a_solved_reward_that_right_answers_still_reach():
    with pytest.raises(ConfigError, match="set solved_reward=0.5"):
        load_recipe("cpu-learn", {"env.reward.call_cost": 0.1})
    r = load_recipe("cpu-learn", {"env.reward.call_cost": 0.1, "solved_reward": 0.5})
    assert (r.env.reward.call_cost, r.loop_config().solved_reward) == (0.1, 0.5)
    r = load_recipe("cpu-learn", {"env.reward.call_cost": 0.1, "env.reward.free_calls": "oracle", "solved_reward": 0.5})
    assert r.env.reward.free_calls == "oracle"
    with pytest.raises(ConfigError, match="set solved_reward=0.5"):
        load_recipe("cpu-learn", {"env.reward.call_penalty": 0.2})
    r = load_recipe("cpu-learn", {"env.reward.call_penalty": 0.2, "solved_reward": 0.5})
    assert r.env.reward.call_penalty == 0.2
    # a penalty on wrong answers only (restating the question) leaves right answers at 1: solved_reward stays
    r = load_recipe("cpu-learn", {"env.reward.echo_penalty": 0.1})
    assert (r.env.reward.echo_penalty, r.loop_config().solved_reward) == (0.1, 1.0)


def test_the_multi_gpu_recipe_documents_the_server_mode_hang():
    text = (CONFIG_DIR / "multi-gpu.yaml").read_text()
    assert "accelerate launch" in text and "trl#6673" in text and "colocate" in text
    assert (CONFIG_DIR / "accelerate-multi-gpu.yaml").is_file()


def test_overrides_and_trl_arguments(tmp_path):
    pytest.importorskip("trl")
    over = {
        **parse_overrides(["trainer.max_steps=5", "trainer.advantage=loo_std", "env.tools=search,visit"]),
        "output_dir": str(tmp_path),
    }
    r = load_recipe("cpu-smoke", over)
    assert (r.trainer.max_steps, r.trainer.advantage, r.tools) == (5, "loo_std", ("search", "visit"))
    assert load_recipe("cpu-smoke", {"trainer": {"max_steps": 4}}).trainer.max_steps == 4  # a section's mapping
    args = r.grpo_config()
    assert (args.advantage, args.truncation, args.num_generations, args.per_device_train_batch_size) == (
        "loo_std",
        r.trainer.truncation,
        2,
        4,
    )
    assert (args.loss_type, args.scale_rewards, args.mask_truncated_completions, args.num_iterations) == (
        "dapo",
        "none",
        False,
        1,
    )
    assert args.steps_per_generation == args.gradient_accumulation_steps and args.epsilon_high == 0.28
    assert args.output_dir == str(tmp_path) and args.max_steps == 5
    assert args.save_total_limit == 2  # checkpoints (model + optimizer) do not pile up on disk
    assert load_recipe("cpu-smoke", {"trainer.keep_checkpoints": None}).grpo_config().save_total_limit is None
    with pytest.raises(ConfigError, match="keep_checkpoints must be >= 1"):
        load_recipe("cpu-smoke", {"trainer.keep_checkpoints": 0})


def test_set_values_take_the_fields_type():
    r = load_recipe(
        "cpu-smoke",
        {
            "trainer.learning_rate": parse_value("1e-4"),
            "model": parse_value("123"),
            "n_tasks": parse_value("null"),
            "trainer.bf16": "true",
            "env.max_turns": "3",
        },
    )
    assert (r.trainer.learning_rate, r.model, r.n_tasks, r.trainer.bf16, r.env.max_turns) == (
        1e-4,
        "123",
        None,
        True,
        3,
    )
    assert isinstance(r.trainer.learning_rate, float)
    with pytest.raises(ConfigError, match="trainer.max_steps expects int, got 'many'"):
        load_recipe("cpu-smoke", {"trainer.max_steps": "many"})


def test_mistakes_name_the_fix():
    with pytest.raises(ConfigError, match="EnvConfig.tools must be a non-empty subset of"):
        load_recipe("cpu-smoke", {"env.tools": "search,python"})
    with pytest.raises(
        ConfigError,
        match="unknown key 'trainer.max_step' in section 'trainer' \\(did you mean trainer.max_steps or .*\\); "
        "valid keys: advantage, .*max_steps",
    ):
        load_recipe("cpu-smoke", {"trainer.max_step": 3})
    with pytest.raises(
        ConfigError,
        match="unknown key 'max_steps' in the top level of GRPORecipe \\(did you mean trainer.max_steps\\?\\)",
    ):
        load_recipe("cpu-smoke", {"max_steps": 3})
    with pytest.raises(ConfigError, match="loop is a section: set its keys .*e.g. loop.enabled="):
        load_recipe("cpu-smoke", {"loop": True})
    with pytest.raises(ConfigError, match="one of \\['cpu-learn', 'cpu-smoke', 'multi-gpu', 'single-gpu'\\]"):
        load_recipe("gpu")
    with pytest.raises(ConfigError, match="raise it or lower rollout.max_turn_tokens"):
        load_recipe("cpu-smoke", {"trainer.max_completion_length": 100, "rollout.max_turn_tokens": 512})
    with pytest.raises(ConfigError, match="num_generations must be >= 2"):
        load_recipe("cpu-smoke", {"trainer.num_generations": 1})
    with pytest.raises(ConfigError, match="trainer.advantage must be one of"):
        load_recipe("cpu-smoke", {"trainer.advantage": "rloo"})
    with pytest.raises(ConfigError, match="trainer.truncation must be one of \\('keep_all', "):
        load_recipe("cpu-smoke", {"trainer.truncation": "drop"})
    with pytest.raises(ConfigError, match="loop.tiers must be a non-empty subset"):
        load_recipe("cpu-smoke", {"loop.tiers": "hard"})
    with pytest.raises(ConfigError, match="not 'tiny', 'smollm2' or a model folder"):
        GRPORecipe(model="/no/such/model").model_path()


def test_a_recipe_file_with_an_unknown_key_names_its_section(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("model: tiny\nenv:\n  max_turn: 3\n")
    with pytest.raises(
        ConfigError,
        match="recipe '.*mine.yaml': unknown key 'env.max_turn' in section 'env' \\(did you mean env.max_turns.*\\); "
        "valid keys: .*max_turns",
    ):
        load_recipe(str(path))
    path.write_text("model: tiny\nenv:\n  max_turns: 3\n")
    assert load_recipe(str(path)).env.max_turns == 3 and load_recipe(str(path)).name == "mine"


def test_prompt_style_and_search_budgets_reach_the_env_config(sample_index):
    r = load_recipe(
        "cpu-smoke", {"env.prompt": "compact", "env.search_results": parse_value("3"), "env.sim.snippet_chars": 120}
    )
    env = r.env_config(str(sample_index))
    assert (env.prompt, env.search_results, env.sim.snippet_chars, env.tools, env.index_dir) == (
        "compact",
        3,
        120,
        r.tools,
        str(sample_index),
    )
    assert (env.max_turns, env.max_obs_chars, env.max_response_chars, env.reward.kind) == (2, 4000, 400, "em")
    default = GRPORecipe().env_config(str(sample_index))
    assert (default.prompt, default.search_results, default.sim.snippet_chars, default.max_turns) == (
        "tongyi",
        10,
        240,
        8,
    )
    with pytest.raises(ConfigError, match="prompt must be one of \\('tongyi', 'compact'\\), got 'small'"):
        load_recipe("cpu-smoke", {"env.prompt": "small"})
    with pytest.raises(ConfigError, match="env.sim.snippet_chars must be >= 1"):
        load_recipe("cpu-smoke", {"env.sim.snippet_chars": 0})
    with pytest.raises(ConfigError, match="env.reward.kind must be one of \\('em', 'f1'\\)"):
        load_recipe("cpu-smoke", {"env.reward.kind": "judge"})


def test_set_values_parse_as_yaml():
    assert [parse_value(v) for v in ("3", "1e-6", "true", "null", "[search, visit]", "/a/b")] == [
        3,
        1e-6,
        True,
        None,
        ["search", "visit"],
        "/a/b",
    ]


def test_sim_web_cli_lists_grpo():
    from sim_web.cli import make_parser
    from training.grpo.train import recipe_from_namespace

    args = make_parser().parse_args(["grpo", "--recipe", "cpu-smoke", "--set", "trainer.max_steps=1", "--no-resume"])
    assert args.recipe == "cpu-smoke" and args.set == ["trainer.max_steps=1"] and args.no_resume and callable(args.func)
    r = recipe_from_namespace(args)
    assert (r.trainer.max_steps, r.resume) == (1, False)


def test_a_recipe_with_the_python_interpreter_is_refused_where_its_sandbox_cannot_run(monkeypatch):
    from sim_web.tools.python import sandbox

    monkeypatch.setattr(sandbox, "sandbox_problem", lambda config=None: "bubblewrap is not on PATH")
    with pytest.raises(ConfigError, match="bubblewrap is not on PATH.*--set env.tools=search,visit,google_scholar"):
        GRPORecipe().check_sandbox()
    load_recipe("cpu-smoke", {"env.tools": "search,visit"}).check_sandbox()  # no PythonInterpreter: nothing to check


def test_micro_batch_accumulates_to_the_same_step():
    r = load_recipe("cpu-learn", {"trainer.micro_batch": 2})
    c = r.grpo_config()
    assert (c.per_device_train_batch_size, c.gradient_accumulation_steps, c.generation_batch_size) == (2, 16, 32)
    full = load_recipe("cpu-learn", {"trainer.micro_batch": None}).grpo_config()
    assert (full.per_device_train_batch_size, full.gradient_accumulation_steps) == (32, 1)
    with pytest.raises(ConfigError, match="micro_batch must divide"):
        load_recipe("cpu-learn", {"trainer.micro_batch": 3})


def test_tiers_pick_the_training_tasks_before_n_tasks(sample_index, tmp_path):
    import json

    from training.grpo.train import train_tasks
    from wiki_index.search.index import WikiIndex

    path = tmp_path / "tiers.jsonl"
    rows = [
        {"id": f"{tier}-{i}", "question": f"q{tier}{i}?", "answer": "a", "tier": tier, "split": split}
        for i, (tier, split) in enumerate([("lookup", "train"), ("bridge", "train"), ("bridge", "test")] * 3)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    index = WikiIndex.from_dir(str(sample_index))
    both = train_tasks(load_recipe("cpu-learn", {"tasks": str(path), "n_tasks": None}), index)
    assert [t.id for t in both] == ["lookup-0", "bridge-1", "lookup-3", "bridge-4", "lookup-6", "bridge-7"]
    bridge = train_tasks(load_recipe("cpu-learn", {"tasks": str(path), "tiers": "bridge", "n_tasks": 2}), index)
    assert [t.id for t in bridge] == ["bridge-1", "bridge-4"]  # the tier first, then the first n


def _other_value(f: dataclasses.Field) -> object:
    """A value of the switch ``f`` that is not its default (the next of its choices, the other bool, a float)."""
    choices = f.metadata.get("choices")
    if choices:
        return choices[(choices.index(f.default) + 1) % len(choices)]
    if isinstance(f.default, bool):
        return not f.default
    if isinstance(f.default, float):
        return f.default + 0.05
    raise AssertionError(f"no non-default value for switch {f.name} (default {f.default!r}): extend _other_value")


def test_a_switch_is_declared_once_and_reaches_trl(tmp_path):
    """Every GRPOSwitches field is a recipe key and an AgentGRPOConfig field, and a --set value of each reaches TRL's
    arguments: a new switch needs one field, no copy in TrainerConfig.args."""
    pytest.importorskip("trl")
    from training.grpo.advantage import GRPOSwitches
    from training.grpo.grpo_config import AgentGRPOConfig
    from training.grpo.trainer_config import TrainerConfig

    switches = dataclasses.fields(GRPOSwitches)
    names = {f.name for f in switches}
    assert names >= {"advantage", "truncation", "dupo", "epsilon_high"}
    trl_fields = {f.name: f for f in dataclasses.fields(AgentGRPOConfig)}
    recipe_fields = {f.name: f for f in dataclasses.fields(TrainerConfig)}
    for f in switches:  # same default and help text on both holders
        for holder in (trl_fields, recipe_fields):
            assert (holder[f.name].default, holder[f.name].metadata) == (f.default, f.metadata)
    over = {f"trainer.{f.name}": _other_value(f) for f in switches}
    recipe = load_recipe("cpu-smoke", {**over, "output_dir": str(tmp_path)})
    args = recipe.grpo_config()
    for f in switches:
        assert getattr(recipe.trainer, f.name) == getattr(args, f.name) == over[f"trainer.{f.name}"] != f.default
    assert TrainerConfig().args(str(tmp_path), seed=0).switch_values() == GRPOSwitches().switch_values()


def test_the_switches_check_runs_once_per_config(monkeypatch):
    from training.grpo import advantage
    from training.grpo.trainer_config import TrainerConfig

    seen = []
    original = advantage.check_choice
    monkeypatch.setattr(advantage, "check_choice", lambda owner, *a: seen.append(owner) or original(owner, *a))
    TrainerConfig(advantage="grpo")
    assert seen == ["trainer"] * len(dataclasses.fields(advantage.GRPOSwitches))  # once per switch, by its holder
