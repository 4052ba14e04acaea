"""``JINA_API_KEYS`` with several keys: 401 / 402 / 429 move on to the next key at once (refused and empty keys
are retired, rate-limited ones stay), counted in ``tool_stats``; a recording replays through as many stand-in keys;
``SERPER_BASE_URL`` / ``JINA_BASE_URL`` point the backends elsewhere."""

from __future__ import annotations

import gymnasium as gym
import pytest

from sim_web.backends.jina import JinaBackend, JinaConfig, KeyRing
from sim_web.backends.mocks import Fault, MockJina
from sim_web.backends.serper import SerperConfig
from sim_web.backends.upstream import UpstreamError
from simweb_core.errors import ConfigError
from tests.sim_web.real_mocks import KEY, real_keys, serper, sim_backend  # noqa: F401 - fixtures
from tests.sim_web.test_real_env import body, call, real_config

WIKI = "https://en.wikipedia.org/wiki/"


@pytest.fixture()
def two_key_jina(sim_backend):
    server = MockJina(sim_backend, ["k1", "k2"])
    yield server
    server.close()


def keys_seen(server) -> list[str]:
    return [r["key"] for r in server.requests]


def test_the_ring_parses_rotates_and_never_retires_its_last_key():
    ring = KeyRing(" a, b,,a ")
    assert (ring.size, ring.current()) == (2, "a")
    assert ring.rotate("a", retire=False) == "b" and ring.live == 2  # 429: moved on, kept
    assert ring.rotate("a", retire=False) == "b"  # another thread's stale report: no move
    assert ring.rotate("b", retire=True) == "a" and ring.live == 1  # 402: retired
    assert ring.rotate("a", retire=True) is None and ring.live == 1  # the last key stays (the breaker paces it)
    assert KeyRing(["x"]).rotate("x", retire=False) is None
    with pytest.raises(ConfigError, match="JINA_API_KEYS holds no key"):
        KeyRing(" , ")


def test_a_rate_limited_then_empty_key_backs_off_on_the_live_key(two_key_jina):
    events: list[str] = []
    backend = JinaBackend("k1,k2", JinaConfig(base_url=two_key_jina.base_url, timeout_s=5.0))
    backend.bind_events(events.append)
    two_key_jina.inject(Fault(status=429, retry_after="7"), Fault(status=402))
    with pytest.raises(UpstreamError) as info:
        backend.fetch(WIKI + "Paris")
    e = info.value
    assert (e.status, e.retryable, e.retry_after_s, e.opens_circuit) == (429, True, 7.0, False)  # k1 is still live
    assert backend.keys.live == 1 and keys_seen(two_key_jina) == ["k1", "k2"]
    assert backend.fetch(WIKI + "Paris").startswith("Title: ")
    assert keys_seen(two_key_jina) == ["k1", "k2", "k1"]
    assert events == ["jina.http_requests", "jina.key_rotations", "jina.http_requests", "jina.http_requests"]
    backend.close()


def test_one_key_behaves_as_before(two_key_jina):
    backend = JinaBackend("k1", JinaConfig(base_url=two_key_jina.base_url, timeout_s=5.0))
    two_key_jina.inject(Fault(status=402))
    with pytest.raises(UpstreamError, match="out of credit.*JINA_API_KEYS") as info:
        backend.fetch(WIKI + "Paris")
    assert info.value.opens_circuit and not info.value.retryable and backend.keys.live == 1
    backend.close()


def test_rotation_through_the_env_is_counted_and_needs_no_retry(
    sample_index, serper, two_key_jina, tmp_path, real_keys, monkeypatch
):
    monkeypatch.setenv("JINA_API_KEYS", "k1,k2")
    env = gym.make("WebResearch-v0", config=real_config(sample_index, serper, two_key_jina, tmp_path / "cache"))
    env.reset(seed=0)
    two_key_jina.inject(Fault(status=429, retry_after="30"))  # k1 rate-limited: k2 answers at once
    obs, _, _, _, info = env.step(call("visit", url=[WIKI + "Paris"], goal="population"))
    s = info["tool_stats"]
    assert "Evidence in page: \n" in body(obs) and keys_seen(two_key_jina) == ["k1", "k2"]
    assert (s["calls"], s["successes"], s["retries"], s["fallbacks"]) == (1, 1, 0, 0)  # no 30 s Retry-After wait
    assert s["events"]["jina.key_rotations"] == 1 and s["events"]["jina.http_requests"] == 2


def test_a_refused_key_is_retired_for_the_next_calls(
    sample_index, serper, two_key_jina, tmp_path, real_keys, monkeypatch
):
    monkeypatch.setenv("JINA_API_KEYS", "bad-key,k2")
    env = gym.make("WebResearch-v0", config=real_config(sample_index, serper, two_key_jina, tmp_path / "cache"))
    env.reset(seed=0)
    env.step(call("visit", url=[WIKI + "Albert_Einstein"], goal="relativity"))
    _, _, _, _, info = env.step(call("visit", url=[WIKI + "Paris"], goal="population"))
    s = info["tool_stats"]
    assert keys_seen(two_key_jina) == ["bad-key", "k2", "k2"]
    assert (s["calls"], s["successes"], s["failures"], s["retries"]) == (2, 2, 0, 0)
    assert s["events"]["jina.key_rotations"] == 1 and s["events"]["jina.http_requests"] == 3


def test_a_recording_with_rotation_replays_offline(
    sample_index, serper, two_key_jina, tmp_path, real_keys, monkeypatch
):
    monkeypatch.setenv("JINA_API_KEYS", "bad-key,k1")
    rec = tmp_path / "rec"
    actions = [call("visit", url=[WIKI + "Albert_Einstein"], goal="relativity"), call("search", query=["Danube"])]

    def run(**kw):
        env = gym.make("WebResearch-v0", config=real_config(sample_index, serper, two_key_jina, tmp_path / "c", **kw))
        env.reset(seed=0)
        return [env.step(a)[0] for a in actions]

    recorded = run(record_dir=str(rec))
    assert (rec / "jina-keys.count").read_text() == "2" and "bad-key" not in "".join(
        p.read_text() for p in rec.glob("*.json")
    )
    for name in ("SERPER_KEY_ID", "JINA_API_KEYS"):
        monkeypatch.delenv(name)
    n = len(two_key_jina.requests)
    assert run(replay_dir=str(rec)) == recorded and len(two_key_jina.requests) == n  # offline, byte for byte


def test_base_url_variables_point_the_backends_elsewhere(monkeypatch):
    monkeypatch.setenv("SERPER_BASE_URL", "http://127.0.0.1:9/serper")
    monkeypatch.setenv("JINA_BASE_URL", "http://127.0.0.1:9/jina")
    assert (SerperConfig().base_url.reveal(), JinaConfig().base_url.reveal()) == (
        "http://127.0.0.1:9/serper",
        "http://127.0.0.1:9/jina",
    )
    monkeypatch.delenv("SERPER_BASE_URL")
    monkeypatch.delenv("JINA_BASE_URL")
    assert (SerperConfig().base_url.reveal(), JinaConfig().base_url.reveal()) == (
        "https://google.serper.dev",
        "https://r.jina.ai",
    )
    assert KEY == "test-key"
