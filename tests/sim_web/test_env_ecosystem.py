"""``WebResearch-v0`` in the Gymnasium ecosystem: async vector envs on real text, pickling, ``close()``, spec round trips."""

from __future__ import annotations

import copy
import json
import pickle
import threading
from dataclasses import replace

import gymnasium as gym
import pytest
from gymnasium.envs.registration import EnvSpec

import sim_web  # noqa: F401 - registers WebResearch-v0
from sim_web.backends.jina import JinaConfig
from sim_web.backends.serper import SerperConfig
from sim_web.backends.sim import SimConfig
from sim_web.env import EnvConfig, Task, WebResearchEnv
from sim_web.executor import BackendPolicy, ExecutorConfig
from simweb_core.errors import ConfigError
from tests.sim_web.real_mocks import jina, real_keys, serper, sim_backend  # noqa: F401 - fixtures

NON_ASCII = "São Paulo Kraków Москва"
NO_SHARED_MEMORY = {"shared_memory": False}  # what an async vector env of this env needs (the space is real text)
POOL = "sim-web-tool"  # the name prefix of the executor's worker threads


def call(name: str, **arguments: object) -> str:
    return f"<think>t</think>\n<tool_call>{json.dumps({'name': name, 'arguments': arguments}, ensure_ascii=False)}</tool_call>"


SEARCH = call("search", query=[NON_ASCII])


@pytest.fixture()
def cfg(sample_index) -> EnvConfig:
    return EnvConfig(index_dir=str(sample_index), max_turns=6)


def run_vector(venv: gym.vector.VectorEnv) -> tuple:
    """Reset with fixed seeds, then one non-ASCII search in every env; the observations and messages seen."""
    obs0, info0 = venv.reset(seed=[0, 1])
    obs1, reward, term, trunc, info1 = venv.step((SEARCH, SEARCH))
    venv.close()
    return (
        tuple(obs0),
        tuple(obs1),
        tuple(reward),
        tuple(term),
        tuple(trunc),
        info0["messages"].tolist(),
        info1["messages"].tolist(),
    )


def test_async_vector_env_with_shared_memory_fails_before_any_step_naming_the_fix(cfg):
    with pytest.raises(ValueError, match="shared_memory=False") as e:
        gym.make_vec("WebResearch-v0", num_envs=2, vectorization_mode="async", config=cfg)
    assert "vector_kwargs={'shared_memory': False}" in str(e.value.__cause__)


def test_async_vector_env_gives_the_sync_observations_on_non_ascii_text(cfg):
    sync = run_vector(gym.make_vec("WebResearch-v0", num_envs=2, vectorization_mode="sync", config=cfg))
    asyn = run_vector(
        gym.make_vec(
            "WebResearch-v0", num_envs=2, vectorization_mode="async", vector_kwargs=NO_SHARED_MEMORY, config=cfg
        )
    )
    assert asyn == sync
    assert all("A Google search for 'São Paulo Kraków Москва' found" in o for o in asyn[1])


def test_spawned_workers_run_pickled_envs(cfg):
    env = WebResearchEnv(cfg)
    blob = pickle.dumps(env)
    env.close()
    spawned = gym.vector.AsyncVectorEnv([lambda: pickle.loads(blob)] * 2, context="spawn", **NO_SHARED_MEMORY)
    sync = gym.make_vec("WebResearch-v0", num_envs=2, vectorization_mode="sync", config=cfg)
    assert run_vector(spawned) == run_vector(sync)


@pytest.mark.parametrize("clone", [lambda e: pickle.loads(pickle.dumps(e)), copy.deepcopy], ids=["pickle", "deepcopy"])
def test_a_copy_continues_the_episode_and_reseeds_alike(cfg, clone):
    env = gym.make("WebResearch-v0", config=cfg)
    env.reset(seed=7)
    env.step(SEARCH)
    twin = clone(env)
    assert twin.unwrapped.executor is not env.unwrapped.executor  # its own toolbox, over the same index
    a, b = (
        env.step(call("visit", url="https://en.wikipedia.org/wiki/Danube", goal="length")),
        twin.step(call("visit", url="https://en.wikipedia.org/wiki/Danube", goal="length")),
    )
    assert a == b and a[4]["turn"] == 2 and a[4]["tool_stats"]["calls"] == 2
    assert env.reset() == twin.reset()  # the seeded generator came along
    assert env.reset(seed=3) == twin.reset(seed=3)
    assert env.step("<answer>x</answer>")[:4] == twin.step("<answer>x</answer>")[:4]
    env.close()
    twin.close()


def new_pool_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t not in before and t.name.startswith(POOL) and t.is_alive()]


def test_close_stops_the_env_threads_and_is_idempotent(cfg):
    WebResearchEnv(cfg).close()  # the shared index is open before the snapshot
    before = set(threading.enumerate())
    timed = EnvConfig(index_dir=cfg.index_dir, executor=ExecutorConfig(policies={"sim": BackendPolicy(timeout_s=30.0)}))
    env = gym.make("WebResearch-v0", config=timed)  # a timed backend: its calls run on the executor's threads
    env.reset(seed=0)
    env.step(SEARCH)
    assert new_pool_threads(before)
    env.close()
    assert new_pool_threads(before) == []
    env.close()
    with pytest.raises(gym.error.ClosedEnvironmentError, match="make a new one"):
        env.reset()


def test_close_closes_the_real_backends_http_clients(sample_index, serper, jina, real_keys, tmp_path):
    before = set(threading.enumerate())
    config = EnvConfig(
        index_dir=str(sample_index),
        backend="real",
        serper=SerperConfig(base_url=serper.base_url),
        jina=JinaConfig(base_url=jina.base_url),
        executor=ExecutorConfig(cache_dir=str(tmp_path)),
    )
    env = gym.make("WebResearch-v0", config=config)
    env.reset(seed=0)
    env.step(call("search", query=["Danube"]))
    env.step(call("visit", url="https://en.wikipedia.org/wiki/Danube", goal="length"))
    clients = [b._client for b in env.unwrapped.executor.backends if hasattr(b, "_client")]
    assert len(clients) == 2 and not any(c.is_closed for c in clients) and new_pool_threads(before)
    env.close()
    env.close()
    assert all(c.is_closed for c in clients) and new_pool_threads(before) == []


def test_the_spec_round_trips_through_json(cfg):
    config = EnvConfig(
        index_dir=cfg.index_dir,
        max_turns=5,
        tools=("search", "visit"),
        sim=SimConfig(snippet_chars=100),
        executor=ExecutorConfig(policies={"sim": BackendPolicy(timeout_s=9.0)}),
    )
    tasks = [Task("t1", "Which city is the capital of France?", "Paris", ("paris, france",), {"split": "test"})]
    env = gym.make("WebResearch-v0", config=config, tasks=tasks, max_response_chars=5000)
    again = gym.make(EnvSpec.from_json(env.spec.to_json()))
    assert again.unwrapped.config == env.unwrapped.config == replace(config, max_response_chars=5000)
    assert again.unwrapped.tasks == tasks
    assert again.reset(seed=1) == env.reset(seed=1)
    assert again.step(SEARCH)[0] == env.step(SEARCH)[0]
    env.close()
    again.close()


def test_a_config_dict_with_an_unknown_key_is_a_clear_error(cfg):
    with pytest.raises(
        ConfigError,
        match=r"unknown key 'config.max_turn' in section 'config' \(did you mean config.max_turns.*\); valid keys: .*max_turns",
    ):
        gym.make("WebResearch-v0", config={"index_dir": cfg.index_dir, "max_turn": 3})
    with pytest.raises(
        ConfigError,
        match=r"unknown key 'config.sim.snipet_chars' in section 'config.sim' \(did you mean config.sim.snippet_chars\?\)",
    ):
        gym.make("WebResearch-v0", config={"index_dir": cfg.index_dir, "sim": {"snipet_chars": 3}})
    with pytest.raises(
        ConfigError, match=r"gym.make keyword arguments: unknown key 'max_turn' .*did you mean max_turns"
    ):
        gym.make("WebResearch-v0", config=cfg, max_turn=3)
    with pytest.raises(ConfigError, match="config must be an EnvConfig or a dict of its fields, got list"):
        gym.make("WebResearch-v0", config=[1])


def test_the_text_space_refuses_a_shared_memory_buffer():
    from gymnasium.error import CustomSpaceError
    from gymnasium.vector.utils import create_shared_memory

    from sim_web.env.spaces import TextSpace

    with pytest.raises(CustomSpaceError, match="shared_memory=False"):
        create_shared_memory(TextSpace(10), n=2)
