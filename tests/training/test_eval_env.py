"""A recipe's evals play in the env its rollouts trained in (``EvalConfig.env`` is the recipe's ``env``, nested, never a
copy of some of its fields), and a run's identity keeps the keys and values of the flat config it replaced, so that
earlier eval folders still resume."""

from __future__ import annotations

import json
from dataclasses import fields, replace

import pytest

from agents.eval_config import EvalConfig, eval_env
from sim_web.backends.sim import SimConfig
from sim_web.env import EnvConfig
from sim_web.env.rewards import RewardConfig
from simweb_core.errors import ConfigError
from training.grpo.recipes import load_recipe

#: ``asdict(AgentConfig())``, which the pinned identities below start from.
AGENT = {
    "max_llm_calls": 100,
    "max_seconds": 9000.0,
    "max_context_tokens": 110592,
    "force_on": ["context", "calls", "time"],
    "force_replaces_observation": True,
    "sampling": {
        "temperature": 0.6,
        "top_p": 0.95,
        "presence_penalty": 1.1,
        "max_tokens": 8192,
        "stop": ["\n<tool_response>", "<tool_response>"],
        "seed": 0,
    },
    "resum": {
        "enabled": False,
        "trigger_fraction": 0.6,
        "every_n_turns": None,
        "summariser": "policy",
        "max_summaries": 8,
        "max_history_chars": 60000,
        "summary_max_tokens": 1024,
    },
}
#: ``EvalConfig().identity()`` as the flat EvalConfig (tools, retrieval, max_response_chars, ... as its own fields) made it.
DEFAULT_IDENTITY = {
    "policy": "oracle",
    "index_dir": None,
    "tasks": None,
    "split": "test",
    "agent": AGENT,
    "retrieval": "bm25",
    "tools": ["search", "visit", "PythonInterpreter", "google_scholar"],
    "judge": None,
}
#: The cpu-learn recipe's greedy eval, as the flat EvalConfig made it (the identity in the run.json of `sim-web learn`'s
#: eval folders, whose tasks are a path there).
CPU_LEARN_IDENTITY = {
    "policy": "hf:/ckpt",
    "index_dir": None,
    "tasks": "cpu-learn",
    "split": "test",
    "agent": {
        **AGENT,
        "max_llm_calls": 5,
        "sampling": {**AGENT["sampling"], "temperature": 0.0, "presence_penalty": 0.0, "max_tokens": 64},
    },
    "retrieval": "bm25",
    "tools": ["search", "visit"],
    "judge": None,
    "max_response_chars": 1500,
    "prompt": "compact",
    "search_results": 5,
    "snippet_chars": 160,
}
#: A recipe that trains on another reward and search mode, and sets other env fields the flat EvalConfig dropped.
NON_DEFAULT = {
    "env.reward.kind": "f1",
    "env.reward.format_penalty": 0.1,
    "env.sim.mode": "hybrid",
    "env.allow_multiple_calls": True,
    "env.max_calls_per_turn": 3,
    "env.max_action_chars": 9000,
    "env.date": "2024-06-01",
}


def identity(cfg: EvalConfig) -> dict:
    return json.loads(json.dumps(cfg.identity()))  # as run.json holds it


def test_identity_keeps_the_keys_and_values_of_the_flat_config():
    assert identity(EvalConfig()) == DEFAULT_IDENTITY
    recipe = load_recipe("cpu-learn")
    ecfg = recipe.eval_config("hf:/ckpt", "/tmp/eval", n=50, batch_size=8, threads=2, progress=False)
    assert identity(ecfg) == CPU_LEARN_IDENTITY
    real = EvalConfig(
        policy="oracle:search",
        env=replace(
            eval_env(),
            backend="real",
            real_fallback=True,
            replay_dir="/rec",
            sim=SimConfig(mode="hybrid", snippet_chars=120),
            max_response_chars=400,
            max_obs_chars=9000,
            prompt="compact",
            search_results=3,
            tools=("search", "visit"),
        ),
    )
    assert identity(real) == {
        **DEFAULT_IDENTITY,
        "policy": "oracle:search",
        "retrieval": "hybrid",
        "tools": ["search", "visit"],
        "backend": "real",
        "real_fallback": True,
        "max_response_chars": 400,
        "prompt": "compact",
        "search_results": 3,
        "snippet_chars": 120,
    }


def test_identity_names_the_other_env_settings_only_where_they_differ():
    ecfg = load_recipe("cpu-learn", NON_DEFAULT).eval_config("hf:/ckpt", "/tmp/eval")
    assert identity(ecfg) == {
        **CPU_LEARN_IDENTITY,
        "retrieval": "hybrid",
        "reward": {"kind": "f1", "format_penalty": 0.1},
        "allow_multiple_calls": True,
        "max_calls_per_turn": 3,
        "max_action_chars": 9000,
        "date": "2024-06-01",
    }
    deeper = replace(eval_env(), sim=SimConfig(depth=5), executor=replace(eval_env().executor, max_retries=0))
    assert identity(EvalConfig(env=deeper)) == {**DEFAULT_IDENTITY, "sim": {"depth": 5}}  # how calls run: not named


@pytest.mark.parametrize("overrides", [{}, NON_DEFAULT], ids=["cpu-learn", "f1-hybrid"])
def test_the_eval_plays_in_the_env_the_recipe_trains_in(overrides):
    recipe = load_recipe("cpu-learn", overrides)
    ecfg = recipe.eval_config("hf:/ckpt", "/tmp/eval")
    assert ecfg.env == recipe.env
    played, trained = ecfg.env_config("/index"), recipe.env_config("/index")
    differ = {f.name for f in fields(EnvConfig) if getattr(played, f.name) != getattr(trained, f.name)}
    assert differ == {"max_turns"}  # the agent's max_llm_calls (the recipe's max_turns) ends an episode first
    assert ecfg.agent.max_llm_calls == trained.max_turns and played.max_turns == trained.max_turns + 2
    if overrides:
        assert (played.reward.kind, played.sim.mode, played.date) == ("f1", "hybrid", "2024-06-01")


def test_eval_defaults_are_those_of_sim_web_eval():
    env = EvalConfig().env
    assert env == replace(EnvConfig(), max_obs_chars=2_000_000, real_fallback=False)
    assert (env.max_response_chars, env.prompt, env.search_results, env.sim.snippet_chars, env.sim.mode) == (
        20_000,
        "tongyi",
        10,
        240,
        "bm25",
    )


def test_env_mistakes_name_the_fix():
    with pytest.raises(ConfigError, match="set them on the EvalConfig itself"):
        EvalConfig(env=replace(eval_env(), tasks="derived"))
    with pytest.raises(ConfigError, match="snippet_chars must be >= 1"):
        EvalConfig(env=replace(eval_env(), sim=SimConfig(snippet_chars=0)))
    with pytest.raises(ConfigError, match="--judge openai:MODEL"):
        EvalConfig(env=replace(eval_env(), reward=RewardConfig(kind="judge")))


def test_eval_cli_flags_write_into_the_nested_env(tmp_path):
    from agents.cli import config_from_args
    from sim_web.cli import make_parser

    def env(*flags: str) -> EnvConfig:
        return config_from_args(make_parser().parse_args(["eval", "--policy", "oracle", *flags])).env

    assert env() == eval_env()  # no flag: the defaults of `sim-web eval`
    given = env(
        "--retrieval",
        "hybrid",
        "--tools",
        "search,visit",
        "--max-response-chars",
        "400",
        "--max-obs-chars",
        "9000",
        "--prompt",
        "compact",
        "--search-results",
        "3",
        "--snippet-chars",
        "120",
        "--backend",
        "real",
        "--record",
        str(tmp_path),
        "--real-fallback",
    )
    assert given == replace(
        eval_env(),
        sim=SimConfig(mode="hybrid", snippet_chars=120),
        tools=("search", "visit"),
        max_response_chars=400,
        max_obs_chars=9000,
        prompt="compact",
        search_results=3,
        backend="real",
        record_dir=str(tmp_path),
        real_fallback=True,
    )


def test_sim_to_real_plays_one_env_on_both_sides(tmp_path):
    from agents.sim_to_real.cli import config_from_args
    from agents.sim_to_real.run import SimToRealConfig, _eval_config
    from sim_web.cli import make_parser

    args = ["sim-to-real", "--tools", "search,visit", "--real-fallback", "--record", str(tmp_path / "rec")]
    cfg = config_from_args(make_parser().parse_args(args))
    assert cfg.env == replace(eval_env(), tools=("search", "visit"), real_fallback=True)
    cfg = replace(cfg, env=replace(cfg.env, reward=RewardConfig(kind="f1"), sim=SimConfig(mode="hybrid")))
    sim, real = (_eval_config(cfg, "oracle", b, tmp_path).env for b in ("sim", "real"))
    assert (
        replace(real, backend="sim", real_fallback=False, record_dir=None)
        == sim
        == replace(cfg.env, real_fallback=False)
    )
    assert (real.backend, real.real_fallback, real.record_dir) == ("real", True, str(tmp_path / "rec" / "oracle"))
    with pytest.raises(ConfigError, match="leave it 'sim'"):
        SimToRealConfig(env=replace(eval_env(), backend="real"))


@pytest.mark.parametrize("command", ["eval", "sim-to-real"])
def test_split_flag_takes_the_field_default_and_all_for_every_task(command):
    from agents import cli as eval_cli
    from agents.eval_config import EvalConfig
    from agents.sim_to_real import cli as s2r_cli
    from agents.sim_to_real.run import SimToRealConfig
    from sim_web.cli import make_parser

    from_args, cls = {
        "eval": (eval_cli.config_from_args, EvalConfig),
        "sim-to-real": (s2r_cli.config_from_args, SimToRealConfig),
    }[command]
    parser = make_parser()
    split = next(a for a in parser._actions if a.dest == "cmd").choices[command]
    action = next(a for a in split._actions if "--split" in a.option_strings)
    default = next(f.default for f in fields(cls) if f.name == "split")
    assert action.default == default and f"(default: {default}," in action.help  # the field's, not a copy

    def parsed(*flags: str) -> str | None:
        return from_args(parser.parse_args([command, "--policy", "oracle", *flags])).split

    assert (parsed(), parsed("--split", "all"), parsed("--split", "train")) == (default, None, "train")
