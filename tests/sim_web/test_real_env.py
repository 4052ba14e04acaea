"""``backend="real"`` through the env: the switch, keys checked at build time, every injected fault survived,
counts that reconcile, fallback to the index, Tongyi's failure strings, the persistent cache across envs."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

from sim_web.backends.jina import JinaConfig
from sim_web.backends.serper import SerperConfig
from sim_web.env import EnvConfig
from sim_web.executor import BackendPolicy, ExecutorConfig
from sim_web.protocol.formatting import INACCESSIBLE_EVIDENCE, SCHOLAR_UNAVAILABLE, SEARCH_UNAVAILABLE, format_search
from simweb_core.errors import ConfigError
from tests.sim_web.real_mocks import Fault, jina, real_keys, serper, sim_backend  # noqa: F401 - fixtures

WIKI = "https://en.wikipedia.org/wiki/"
FAST = dict(backoff_base_s=0.001, backoff_max_s=0.002, jitter_s=0.0, timeout_s=10.0)


def call(name: str, **arguments: object) -> str:
    return f"<think>t</think>\n<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def real_config(sample_index, serper, jina, cache_dir, **kw) -> EnvConfig:
    policies = {
        "serper": BackendPolicy(max_retries=2, **FAST),
        "jina": BackendPolicy(max_retries=2, **FAST),
        "sim": BackendPolicy(max_retries=0, breaker_failures=None, **FAST),
    }
    return EnvConfig(
        index_dir=str(sample_index),
        backend="real",
        serper=SerperConfig(base_url=serper.base_url, timeout_s=1.0),
        jina=JinaConfig(base_url=jina.base_url, timeout_s=1.0),
        executor=ExecutorConfig(cache_dir=str(cache_dir), policies=policies),
        **kw,
    )


def body(obs: str) -> str:
    assert obs.startswith("<tool_response>\n") and obs.endswith("\n</tool_response>")
    return obs[len("<tool_response>\n") : -len("\n</tool_response>")]


def reconciles(stats: dict) -> bool:
    return stats["calls"] == stats["successes"] + stats["fallbacks"] + stats["failures"]


@pytest.fixture()
def make_env(sample_index, serper, jina, tmp_path, real_keys):
    def make(**kw):
        return gym.make("WebResearch-v0", config=real_config(sample_index, serper, jina, tmp_path / "cache", **kw))

    return make


@pytest.mark.parametrize(("unset", "named"), [("SERPER_KEY_ID", "SERPER_KEY_ID"), ("JINA_API_KEYS", "JINA_API_KEYS")])
def test_a_missing_key_fails_when_the_env_is_built(
    sample_index, serper, jina, tmp_path, real_keys, monkeypatch, unset, named
):
    monkeypatch.delenv(unset)
    with pytest.raises(ConfigError, match=f"set the environment variable {named}"):
        gym.make("WebResearch-v0", config=real_config(sample_index, serper, jina, tmp_path))
    assert serper.count() == jina.count() == 0


def test_partial_summariser_settings_and_bad_backend_name(sample_index, serper, jina, tmp_path, real_keys, monkeypatch):
    monkeypatch.setenv("API_BASE", "http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="API_KEY, SUMMARY_MODEL_NAME is not set"):
        gym.make("WebResearch-v0", config=real_config(sample_index, serper, jina, tmp_path))
    with pytest.raises(ConfigError, match=r"backend must be one of \('sim', 'real'\)"):
        EnvConfig(backend="web")
    with pytest.raises(ConfigError, match="set backend='real' too"):
        EnvConfig(record_dir="x")


def test_the_switch_runs_an_episode_on_the_real_wire(make_env, serper, jina, sim_backend):
    env = make_env()
    env.reset(seed=0)
    obs, _, _, _, info = env.step(call("search", query=["Danube", "Paris"]))
    assert serper.count("/search") == 2
    assert (
        body(obs)
        .split("\n=======\n")[0]
        .startswith("A Google search for 'Danube' found 10 results:\n\n## Web Results\n1. [")
    )
    obs, _, _, _, info = env.step(call("visit", url=[WIKI + "Albert_Einstein"], goal="relativity"))
    assert jina.count() == 1 and "Evidence in page: \n" in obs and INACCESSIBLE_EVIDENCE not in obs
    obs, _, _, _, info = env.step(call("google_scholar", query=["relativity"]))
    assert body(obs).startswith("A Google scholar for 'relativity' found 10 results:\n\n## Scholar Results\n1. [")
    s = info["tool_stats"]
    assert (s["calls"], s["successes"], s["fallbacks"], s["failures"]) == (4, 4, 0, 0)
    assert s["backends"] == {"jina": {"answered": 1}, "serper": {"answered": 3}}
    assert s["events"] == {"jina.http_requests": 1, "serper.http_requests": 3}
    _, _, terminated, _, info = env.step("<answer>x</answer>")
    assert (
        terminated
        and gym.make("WebResearch-v0", backend="real", config=env.unwrapped.config).unwrapped.config.backend == "real"
    )


TRANSIENT = [
    Fault(status=429, retry_after="0"),
    Fault(status=429),
    Fault(status=500),
    Fault(status=502),
    Fault(status=503),
    Fault(delay_s=1.5),
    Fault(body=b'{"organic": ['),
]


@pytest.mark.parametrize(
    "fault", TRANSIENT, ids=lambda f: f"{f.status or ''}{'delay' if f.delay_s else ''}{'malformed' if f.body else ''}"
)
def test_transient_faults_are_retried_and_answered_by_the_upstream(make_env, serper, fault):
    env = make_env()
    env.reset(seed=0)
    serper.inject(fault)
    obs, _, _, _, info = env.step(call("search", query=["Danube"]))
    s = info["tool_stats"]
    assert body(obs).startswith("A Google search for 'Danube' found") and serper.count("/search") == 2
    assert (s["successes"], s["retries"], s["fallbacks"]) == (1, 1, 0) and reconciles(s)
    assert s["timeouts"] == int(bool(fault.delay_s))


@pytest.mark.parametrize("status", [400, 401, 402, 403, 451])
def test_fatal_statuses_fail_fast_and_fall_back_to_the_index(make_env, serper, sim_backend, status, caplog):
    env = make_env()
    env.reset(seed=0)
    serper.always(Fault(status=status))
    obs, _, _, _, info = env.step(call("search", query=["Danube"]))
    s = info["tool_stats"]
    assert serper.count("/search") == 1 and s["retries"] == 0 and (s["fallbacks"], s["backend_errors"]) == (1, 1)
    assert body(obs) == format_search("Danube", sim_backend.search("Danube", 10))  # the sim index answered
    assert f"serper answered {status}" in caplog.text


def test_a_bad_key_opens_the_circuit_so_later_calls_skip_serper(make_env, serper):
    env = make_env()
    env.reset(seed=0)
    serper.always(Fault(status=403))
    for q in ("a b", "c d", "e f"):
        env.step(call("search", query=[q]))
    _, _, _, _, info = env.step(call("google_scholar", query=["g"]))
    s = info["tool_stats"]
    assert serper.count() == 1 and s["short_circuits"] == 3 and s["fallbacks"] == 4 and reconciles(s)


def test_retries_exhausted_fall_back_then_everything_down_degrades(make_env, serper, jina):
    env = make_env()
    env.reset(seed=0)
    serper.always(Fault(status=503))
    jina.always(Fault(status=503))
    obs, *_ = env.step(call("visit", url=[WIKI + "Paris", "https://example.org/page"], goal="population"))
    wiki, other = body(obs).split("\n=======\n")
    assert INACCESSIBLE_EVIDENCE not in wiki and "Paris" in wiki  # the sim page
    assert INACCESSIBLE_EVIDENCE in other  # no fallback for a non-Wikipedia page
    _, _, _, _, info = env.step(call("search", query=["Danube"]))
    s = info["tool_stats"]
    assert jina.count() == 6 and serper.count() == 3  # 3 attempts each
    assert (s["calls"], s["fallbacks"], s["failures"], s["retries"]) == (3, 2, 1, 6) and reconciles(s)


def test_without_fallback_the_tools_print_tongyis_failure_strings(make_env, serper, jina):
    env = make_env(real_fallback=False)
    env.reset(seed=0)
    serper.always(Fault(status=500))
    jina.always(Fault(delay_s=1.5))
    for action, expected in [
        (call("search", query=["Danube"]), SEARCH_UNAVAILABLE),
        (call("google_scholar", query=["Danube"]), SCHOLAR_UNAVAILABLE),
        (call("visit", url=[WIKI + "Paris"], goal="g"), INACCESSIBLE_EVIDENCE),
    ]:
        obs, _, terminated, truncated, info = env.step(action)
        assert expected in obs and not terminated and not truncated
    s = info["tool_stats"]
    assert s["failures"] == s["calls"] == 3 and s["timeouts"] == 3 and reconciles(s)
    assert env.step("<answer>x</answer>")[2]  # the episode still ends normally


def test_jina_warning_pages_and_summariser_failure_through_the_env(make_env, jina, monkeypatch, openai_stub):
    monkeypatch.setenv("API_KEY", "k")
    monkeypatch.setenv("API_BASE", openai_stub.base_url)
    monkeypatch.setenv("SUMMARY_MODEL_NAME", "summary-model")
    openai_stub.fail_next = 1
    env = make_env()
    env.reset(seed=0)
    jina.inject(Fault(kind="warning"))
    obs, _, _, _, info = env.step(call("visit", url=["https://example.org/gone"], goal="g"))
    assert INACCESSIBLE_EVIDENCE in obs and info["tool_stats"]["failures"] == 1 and jina.count() == 1  # not retried
    obs, _, _, _, info = env.step(call("visit", url=[WIKI + "Albert_Einstein"], goal="relativity"))
    assert (
        "Summary: \nAlbert Einstein: " in obs
    )  # the summariser failed (HTTP 500): the deterministic extractor wrote it
    assert info["tool_stats"]["events"]["jina.summariser_failures"] == 1


def test_the_persistent_cache_serves_a_second_env_and_raw_text_is_reused_across_goals(make_env, serper, jina):
    a = make_env()
    a.reset(seed=0)
    a.step(call("search", query=["Danube"]))
    a.step(call("visit", url=[WIKI + "Paris"], goal="population"))
    b = make_env()  # another env (another process would read the same files)
    b.reset(seed=0)
    b.step(call("search", query=["Danube"]))
    _, _, _, _, info = b.step(call("visit", url=[WIKI + "Paris"], goal="history"))  # new goal: raw page from the cache
    s = info["tool_stats"]
    assert serper.count() == 1 and jina.count() == 1
    assert s["cache_hits"] == 1 and s["events"] == {"jina.raw_cache_hits": 1}


def test_unreadable_pages_do_not_open_the_upstreams_circuit(make_env, jina):
    env = make_env()
    env.reset(seed=0)
    for i in range(3):  # 6 unreadable pages in a row (422, then Warning pages): more than breaker_failures=5
        jina.inject(Fault(), Fault(kind="warning"))
        env.step(call("visit", url=[f"https://example.org/missing{i}", f"https://example.org/gone{i}"], goal="g"))
    _, _, _, _, info = env.step(call("visit", url=[WIKI + "Paris"], goal="population"))
    s = info["tool_stats"]
    assert jina.count() == 7 and s["short_circuits"] == 0 and s["backends"]["jina"]["answered"] == 1
    assert s["failures"] == 6 and s["successes"] == 1 and reconciles(s)
