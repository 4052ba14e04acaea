"""``sim-web serve --backend real``: one tool server holds the real web for a fleet (its QPS budget, breakers and
cache), and its workers' observations are the env's, byte for byte."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from fastapi.testclient import TestClient

from sim_web.backends.remote import RemoteBackend
from sim_web.executor import ExecutorConfig, ToolExecutor
from sim_web.serve.http import create_app
from sim_web.tools import Toolbox
from simweb_core.errors import ConfigError
from tests.sim_web.real_mocks import jina, real_keys, serper, sim_backend  # noqa: F401 - fixtures
from tests.sim_web.test_real_env import body, call, real_config


def test_the_server_serves_the_real_web_as_the_env_sees_it(sample_index, serper, jina, tmp_path, real_keys):
    cfg = real_config(sample_index, serper, jina, tmp_path / "cache")
    client = TestClient(create_app(env_config=cfg), raise_server_exceptions=False)
    assert client.get("/health").json()["backend"] == "real"
    env = gym.make("WebResearch-v0", config=cfg)
    env.reset(seed=0)
    for name, args in [
        ("search", {"query": ["Danube"]}),
        ("visit", {"url": ["https://en.wikipedia.org/wiki/Danube"], "goal": "its length"}),
    ]:
        obs, *_ = env.step(call(name, **args))
        served = client.post(f"/tools/{name}", json={"arguments": args}).json()["result"]
        assert served == body(obs)
    assert serper.count() >= 1 and jina.count() >= 1
    before = serper.count()
    worker = Toolbox(ToolExecutor([RemoteBackend("http://testserver", client=client)], ExecutorConfig(cache=False)))
    remote_obs = worker.search(query=["Danube"])  # a rollout worker through the server: the server's cache answers
    assert remote_obs.startswith("A Google search for 'Danube' found") and serper.count() == before
    assert json.loads(json.dumps(client.get("/health").json()))["tools"] == ["search", "visit", "google_scholar"]


def test_a_real_server_without_keys_fails_at_startup_naming_the_variable(sample_index, monkeypatch):
    for name in ("SERPER_KEY_ID", "JINA_API_KEYS", "JINA_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match="SERPER_KEY_ID"):
        create_app(str(sample_index), backend="real")
