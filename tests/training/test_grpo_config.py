"""GRPO recipes: every file loads, overrides apply, mistakes are errors that name the fix, the CLI is registered."""

import pytest

from training.grpo.config import CONFIG_DIR, GRPORecipe, load_recipe, parse_value
from wiki_index.errors import ConfigError

RECIPES = ("cpu-smoke", "single-gpu", "multi-gpu")


@pytest.mark.parametrize("name", RECIPES)
def test_every_recipe_loads_and_the_gpu_recipes_use_the_python_interpreter(name):
    r = load_recipe(name)
    assert r.name == name and ("PythonInterpreter" in r.tools) == (name != "cpu-smoke")
    assert (r.advantage, r.truncation, r.loss_type) == ("loo", "drop_truncated_negatives", "dapo")
    assert r.use_vllm == (name != "cpu-smoke") and r.max_completion_length >= r.max_turn_tokens
    assert "bubblewrap" in (CONFIG_DIR / f"{name}.yaml").read_text()


def test_multi_gpu_recipe_documents_the_server_mode_hang():
    text = (CONFIG_DIR / "multi-gpu.yaml").read_text()
    assert "accelerate launch" in text and "trl#6673" in text and "colocate" in text
    assert (CONFIG_DIR / "accelerate-multi-gpu.yaml").is_file()


def test_overrides_and_trl_arguments(tmp_path):
    pytest.importorskip("trl")
    r = load_recipe("cpu-smoke", max_steps=5, advantage="loo_std", output_dir=str(tmp_path), tools=["search", "visit"])
    assert (r.max_steps, r.advantage, r.tools) == (5, "loo_std", ("search", "visit"))
    args = r.grpo_config()
    assert (args.advantage, args.truncation, args.num_generations, args.per_device_train_batch_size) == ("loo_std", r.truncation, 2, 4)
    assert (args.loss_type, args.scale_rewards, args.mask_truncated_completions, args.num_iterations) == ("dapo", "none", False, 1)
    assert args.steps_per_generation == args.gradient_accumulation_steps and args.epsilon_high == 0.28


def test_mistakes_name_the_fix():
    with pytest.raises(ConfigError, match="non-empty subset of"):
        GRPORecipe(tools=("search", "python"))
    assert load_recipe("cpu-smoke", tools=parse_value("search,visit")).tools == ("search", "visit")  # --set tools=search,visit
    with pytest.raises(ConfigError, match="unknown GRPO recipe fields \\['max_step'\\]"):
        load_recipe("cpu-smoke", max_step=3)
    with pytest.raises(ConfigError, match="one of \\['cpu-learn', 'cpu-smoke', 'multi-gpu', 'single-gpu'\\]"):
        load_recipe("gpu")
    with pytest.raises(ConfigError, match="raise it or lower max_turn_tokens"):
        GRPORecipe(max_completion_length=100, max_turn_tokens=512)
    with pytest.raises(ConfigError, match="num_generations must be >= 2"):
        GRPORecipe(num_generations=1)
    with pytest.raises(ConfigError, match="not 'tiny', 'smollm2' or a model folder"):
        GRPORecipe(model="/no/such/model").model_path()


def test_prompt_style_and_search_budgets_reach_the_env_config(sample_index):
    r = load_recipe("cpu-smoke", prompt="compact", search_results=parse_value("3"), snippet_chars=120)
    env = r.env_config(str(sample_index))
    assert (env.prompt, env.search_results, env.sim.snippet_chars, env.tools) == ("compact", 3, 120, r.tools)
    assert (env.max_turns, env.max_obs_chars, env.max_response_chars, env.reward.kind) == (r.max_turns, r.max_obs_chars,
                                                                                          r.max_response_chars, r.reward)
    default = GRPORecipe().env_config(str(sample_index))
    assert (default.prompt, default.search_results, default.sim.snippet_chars) == ("tongyi", 10, 240)
    with pytest.raises(ConfigError, match="prompt must be one of \\('tongyi', 'compact'\\), got 'small'"):
        GRPORecipe(prompt="small")
    with pytest.raises(ConfigError, match="search_results >= 1 and snippet_chars >= 1"):
        GRPORecipe(snippet_chars=0)


def test_set_values_parse_as_yaml():
    assert [parse_value(v) for v in ("3", "1e-6", "true", "null", "[search, visit]", "/a/b")] == [3, 1e-6, True, None, ["search", "visit"], "/a/b"]


def test_sim_web_cli_lists_grpo():
    from sim_web.cli import make_parser

    args = make_parser().parse_args(["grpo", "--recipe", "cpu-smoke", "--set", "max_steps=1", "--no-resume"])
    assert args.recipe == "cpu-smoke" and args.set == ["max_steps=1"] and args.no_resume and callable(args.func)


def test_a_recipe_with_the_python_interpreter_is_refused_where_its_sandbox_cannot_run(monkeypatch):
    from sim_web.tools.python import sandbox

    monkeypatch.setattr(sandbox, "sandbox_problem", lambda config=None: "bubblewrap is not on PATH")
    with pytest.raises(ConfigError, match="bubblewrap is not on PATH.*--set tools=search,visit,google_scholar"):
        GRPORecipe().check_sandbox()
    GRPORecipe(tools=("search", "visit")).check_sandbox()  # no PythonInterpreter: nothing to check


def test_micro_batch_accumulates_to_the_same_step():
    r = load_recipe("cpu-learn", micro_batch=2)
    c = r.grpo_config()
    assert (c.per_device_train_batch_size, c.gradient_accumulation_steps, c.generation_batch_size) == (2, 8, 16)
    full = load_recipe("cpu-learn", micro_batch=None).grpo_config()
    assert (full.per_device_train_batch_size, full.gradient_accumulation_steps) == (16, 1)
    with pytest.raises(ConfigError, match="micro_batch must divide"):
        load_recipe("cpu-learn", micro_batch=3)
