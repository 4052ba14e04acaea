"""Record / replay: a real-web run recorded against the mocks replays offline, without keys, byte for byte."""

from __future__ import annotations

import json
from dataclasses import replace

import gymnasium as gym
import httpx
import pytest

from sim_web.backends.recording import RecordingTransport, RelativeTransport, ReplayMiss, ReplayTransport
from sim_web.backends.upstream import UpstreamError, request
from sim_web.env import EnvConfig
from simweb_core.errors import ConfigError
from tests.sim_web.real_mocks import KEY, Fault, MockJina, MockSerper, real_keys, sim_backend  # noqa: F401 - fixtures
from tests.sim_web.test_real_env import call, real_config

WIKI = "https://en.wikipedia.org/wiki/"
ACTIONS = [
    call("search", query=["Danube", "Paris"]),
    call("visit", url=[WIKI + "Albert_Einstein"], goal="relativity"),
    call("google_scholar", query=["relativity"]),
    call("visit", url=[WIKI + "Paris"], goal="population"),
    call("search", query=["Danube"]),
]


def run(config: EnvConfig) -> tuple[list[str], dict]:
    env = gym.make("WebResearch-v0", config=config)
    env.reset(seed=0)
    observations, info = [], {}
    for action in ACTIONS:
        obs, _, _, _, info = env.step(action)
        observations.append(obs)
    return observations, info["tool_stats"]


def test_record_then_replay_offline_gives_the_same_observations(
    sample_index, sim_backend, tmp_path, real_keys, monkeypatch, openai_stub
):
    serper, jina = MockSerper(sim_backend, KEY), MockJina(sim_backend, KEY)
    monkeypatch.setenv("API_KEY", "k")
    monkeypatch.setenv("API_BASE", openai_stub.base_url)
    monkeypatch.setenv("SUMMARY_MODEL_NAME", "summary-model")
    openai_stub.reply = lambda req: json.dumps(
        {
            "rational": "r",
            "evidence": "quoted " + str(len(req["messages"][0]["content"])),
            "summary": "a summary of the page for the goal",
        }
    )
    serper.inject(Fault(status=429, retry_after="0"))  # recorded too: the replay retries the same way
    base = real_config(sample_index, serper, jina, tmp_path / "cache")
    recorded, stats = run(replace(base, record_dir=str(tmp_path / "rec")))
    serper.close(), jina.close(), openai_stub.close()  # nothing to talk to from here on
    assert stats["retries"] == 1 and stats["fallbacks"] == stats["failures"] == 0
    files = list((tmp_path / "rec").glob("*.json"))
    assert (
        len(files) == 8
    )  # 429 + 2 searches, 2 pages, 2 summaries, 1 scholar (the repeated search is an executor cache hit)
    assert not any(KEY in f.read_text() for f in files)  # credentials are never recorded

    for name in ("SERPER_KEY_ID", "JINA_API_KEYS", "API_KEY"):
        monkeypatch.delenv(name)  # a replay needs no key
    replayed, replay_stats = run(replace(base, replay_dir=str(tmp_path / "rec")))
    assert replayed == recorded
    assert replay_stats == stats  # same retries, same answers from the same upstreams: no fallback hid a miss
    assert "quoted" in recorded[1]


def test_a_request_missing_from_the_recording_fails_without_retry(tmp_path) -> None:
    rec = tmp_path / "rec"
    inner = httpx.MockTransport(lambda request: httpx.Response(200, text="ok " + request.url.path))
    with httpx.Client(transport=RecordingTransport(rec, inner)) as client:
        assert client.get("http://up/a", headers={"Authorization": "Bearer secret"}).text == "ok /a"
    replay = ReplayTransport(rec)
    with httpx.Client(transport=replay) as client:
        assert client.get("http://up/a").text == "ok /a" and len(replay) == 1
        with pytest.raises(ReplayMiss, match="not in the recording"):
            client.get("http://up/b")
        with pytest.raises(UpstreamError, match="record this run again") as e:
            request(client, "serper", "SERPER_KEY_ID", "GET", "http://up/b")
        assert (
            not e.value.retryable and e.value.fatal
        )  # replaying again cannot help, and no fallback may answer instead
    with pytest.raises(ConfigError, match="holds no recorded exchanges"):
        ReplayTransport(tmp_path / "empty")


def test_a_recording_replays_wherever_the_service_is(tmp_path) -> None:
    """Keys leave out scheme, host and port: a run recorded against a loopback mock on a random port replays
    against the real service's address (and the other way round), while path, query and body still tell requests apart."""
    rec = tmp_path / "rec"
    inner = httpx.MockTransport(
        lambda request: httpx.Response(200, text=f"{request.url.path} {request.content.decode()}")
    )
    with httpx.Client(transport=RelativeTransport(RecordingTransport(rec, inner), "http://127.0.0.1:40123")) as client:
        client.post("http://127.0.0.1:40123/search", content=b'{"q": "Danube"}')
        client.get("http://127.0.0.1:40777/https://en.wikipedia.org/wiki/Paris")
    with httpx.Client(transport=RelativeTransport(ReplayTransport(rec), "https://google.serper.dev")) as client:
        assert (
            client.post("https://google.serper.dev/search", content=b'{"q": "Danube"}').text
            == '/search {"q": "Danube"}'
        )
        assert client.get("https://r.jina.ai/https://en.wikipedia.org/wiki/Paris").status_code == 200
        for miss in (
            lambda: client.post("https://google.serper.dev/search", content=b'{"q": "Paris"}'),
            lambda: client.post("https://google.serper.dev/scholar", content=b'{"q": "Danube"}'),
            lambda: client.get("https://r.jina.ai/https://en.wikipedia.org/wiki/Paris?x=1"),
        ):
            with pytest.raises(ReplayMiss):
                miss()


def test_eval_cli_passes_the_backend_and_recording_into_the_env_config(tmp_path) -> None:
    from agents.cli import config_from_args
    from agents.harness import EvalConfig
    from sim_web.cli import make_parser

    args = make_parser().parse_args(["eval", "--policy", "oracle", "--backend", "real", "--replay", str(tmp_path)])
    cfg = config_from_args(args)
    assert (cfg.env.backend, cfg.env.replay_dir, cfg.env.record_dir) == ("real", str(tmp_path), None)
    assert cfg.identity()["backend"] == "real" and "backend" not in EvalConfig().identity()  # old sim runs still resume
    with pytest.raises(SystemExit):  # --record and --replay are exclusive
        make_parser().parse_args(["eval", "--policy", "oracle", "--backend", "real", "--record", "a", "--replay", "b"])
    with pytest.raises(ConfigError, match="set backend='real'"):
        EvalConfig(env=EnvConfig(record_dir="x"))
