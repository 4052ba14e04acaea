"""No secret leaves memory (issue 38, item 1): marker secrets are planted in every input (command-line flags,
environment variables, credentialed base URLs) and every file a run writes, every log record, every exception
message, ``env.spec.to_json()`` and every pickle is searched for them."""

from __future__ import annotations

import base64
import copy
import json
import logging
import pickle
import socket
from dataclasses import asdict
from pathlib import Path

import gymnasium as gym
import httpx
import pytest

from sim_web.backends.mocks import MockJina
from sim_web.backends.recording import RecordingTransport, ReplayTransport
from sim_web.backends.serper import SerperBackend, SerperConfig
from sim_web.backends.upstream import UpstreamError
from sim_web.env import EnvConfig
from sim_web.executor import BackendPolicy, ExecutorConfig
from simweb_core.data import from_data
from simweb_core.errors import ConfigError
from simweb_core.secret import Secret, scrub, scrub_record
from tests.sim_web.real_mocks import sim_backend  # noqa: F401 - fixture

#: Every planted secret contains this, so one search finds any of them (and no fingerprint or mask does).
MARK = "zq9SECRET"
KEY = f"{MARK}-serper-key-0001"
JINA_KEY = f"{MARK}-jina-key-0002"
USER, PASSWORD = "zq9user", f"{MARK}-url-password-0003"


def leaks(text: str) -> bool:
    """Whether ``text`` holds a planted secret, or the basic-auth form of the URL's user info."""
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    return MARK in text or PASSWORD in text or basic in text


def files_text(folder: Path) -> str:
    """Every file under ``folder``, as text (bytes decoded leniently), names included."""
    return "\n".join(f"{p}\n{p.read_bytes().decode('utf-8', 'replace')}" for p in folder.rglob("*") if p.is_file())


def log_text(records: list[logging.LogRecord]) -> str:
    """Every record's message and exception text."""
    parts = []
    for r in records:
        parts.append(r.getMessage())
        if r.exc_info and r.exc_info[1] is not None:
            parts.append(str(r.exc_info[1]))
    return "\n".join(parts)


def with_credentials(url: str) -> str:
    """``url`` with the planted user info (``http://user:password@host:port``)."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{USER}:{PASSWORD}@{rest}"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- the type -------------------------------------------------------------------------------------------------


def test_a_secret_prints_formats_serialises_and_pickles_redacted(monkeypatch):
    s = Secret.of(KEY, env="ZQ9_TEST_KEY")
    url = Secret.of(with_credentials("http://127.0.0.1:9/v1?api_key=" + KEY))
    for shown in (repr(s), str(s), f"{s}", f"{s!r:>40}", f"{s}", json.dumps(asdict(s)), url.shown(), repr(url)):
        assert not leaks(shown), shown
    assert url.shown() == "http://127.0.0.1:9/v1" and s.fingerprint and s.fingerprint in repr(s)
    assert s.reveal() == KEY and copy.deepcopy(s).reveal() == KEY  # in memory the value stays usable
    blob = pickle.dumps(s)
    assert not leaks(blob.decode("latin-1"))
    copy_ = pickle.loads(blob)
    with pytest.raises(ConfigError, match=r"\$ZQ9_TEST_KEY"):  # dropped: says which variable to set
        copy_.reveal()
    monkeypatch.setenv("ZQ9_TEST_KEY", "from-the-environment")
    assert copy_.reveal() == "from-the-environment"  # read at the moment of use
    assert from_data(Secret, json.loads(json.dumps(asdict(s))), "s") == copy_


def test_the_scrubber_masks_user_info_credential_parameters_and_known_values():
    Secret.of(KEY)
    text = f"GET {with_credentials('http://h/x')}?q=paris&api%5Fkey={MARK}1&jwt={MARK}2 with {KEY}"
    clean = scrub(text)
    assert not leaks(clean) and "q=paris" in clean
    record = logging.LogRecord("httpx", logging.INFO, __file__, 1, "HTTP Request: %s", (text,), None)
    assert not leaks(scrub_record(record).getMessage())
    assert "q=***" in record.getMessage()  # an HTTP client's request line: every parameter is masked


# -- an env with credentialed base URLs -------------------------------------------------------------------------


@pytest.fixture()
def planted_env(monkeypatch, sample_index, sim_backend, tmp_path):  # noqa: F811 - fixture
    """A real-backend env whose base URLs (from the environment) carry credentials: Serper's is unreachable."""
    jina = MockJina(sim_backend, JINA_KEY)
    monkeypatch.setenv("SERPER_KEY_ID", KEY)
    monkeypatch.setenv("JINA_API_KEYS", JINA_KEY)
    monkeypatch.setenv("SERPER_BASE_URL", with_credentials(f"http://127.0.0.1:{closed_port()}"))
    monkeypatch.setenv("JINA_BASE_URL", with_credentials(jina.base_url))
    for name in ("API_KEY", "API_BASE", "SUMMARY_MODEL_NAME", "JINA_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    fast = {"backoff_base_s": 0.001, "backoff_max_s": 0.002, "jitter_s": 0.0, "timeout_s": 10.0}
    policies = {"serper": BackendPolicy(max_retries=0, **fast), "jina": BackendPolicy(max_retries=0, **fast)}
    config = EnvConfig(
        index_dir=str(sample_index),
        backend="real",
        executor=ExecutorConfig(cache_dir=str(tmp_path / "cache"), policies=policies),
    )
    yield config
    jina.close()


def test_credentialed_base_urls_reach_no_log_spec_or_pickle(planted_env, caplog):
    caplog.set_level(logging.DEBUG)
    env = gym.make("WebResearch-v0", config=planted_env)
    env.reset(seed=0)
    search = '<tool_call>\n{"name": "search", "arguments": {"query": ["Danube"]}}\n</tool_call>'
    visit = (
        '<tool_call>\n{"name": "visit", "arguments": {"url": ["https://en.wikipedia.org/wiki/Danube"], '
        '"goal": "length"}}\n</tool_call>'
    )
    observations = [env.step(a)[0] for a in (search, visit)]
    messages = log_text(caplog.records)
    assert "serper unreachable at http://127.0.0.1" in messages  # the executor's warning was logged ...
    assert "HTTP Request:" in messages  # ... and so was httpx's request line
    assert not leaks(messages)
    assert not leaks(json.dumps(observations))
    assert not leaks(env.spec.to_json())
    blob = pickle.dumps(env)
    assert not leaks(blob.decode("latin-1"))
    clone = pickle.loads(blob)  # the copy reads the variables again
    assert clone.unwrapped.config.serper.base_url.reveal().startswith(f"http://{USER}:")
    env.close(), clone.close()


def test_a_replay_miss_names_the_request_not_the_credentials(tmp_path):
    inner = httpx.MockTransport(lambda request: httpx.Response(200, json={"organic": []}))
    base = with_credentials("http://127.0.0.1:9/proxy")
    recorder = SerperBackend(KEY, SerperConfig(base_url=base), transport=RecordingTransport(tmp_path, inner))
    recorder.search("Danube")
    replayer = SerperBackend(KEY, SerperConfig(base_url=base), transport=ReplayTransport(tmp_path))
    with pytest.raises(UpstreamError) as e:
        replayer.scholar("Danube")
    assert e.value.fatal and "/scholar" in str(e.value) and not leaks(str(e.value))
    assert not leaks(files_text(tmp_path))


def test_an_env_with_an_llm_judge_pickles_without_its_key(sample_index, openai_stub, monkeypatch):
    from agents.judge import LLMJudge
    from agents.policies.openai_policy import OpenAIConfig, OpenAIPolicy

    base = with_credentials(openai_stub.base_url)
    judge = LLMJudge(OpenAIPolicy(OpenAIConfig("judge-model", base_url=base, api_key=KEY)))
    env = gym.make("WebResearch-v0", config=EnvConfig(index_dir=str(sample_index)), judge=judge)
    blob = pickle.dumps(env)  # was: TypeError, cannot pickle '_thread.RLock' object
    assert not leaks(blob.decode("latin-1"))
    monkeypatch.setenv("OPENAI_API_KEY", "key-from-the-environment")
    monkeypatch.setenv("OPENAI_BASE_URL", openai_stub.base_url)
    openai_stub.reply = lambda body: "Correct"
    clone = pickle.loads(blob)
    assert clone.unwrapped.judge("Q?", "Paris", ["Paris"]) == 1.0  # the copy builds its client from the environment
    assert judge("Q?", "Paris", ["Paris"]) == 1.0
    env.close(), clone.close()


# -- a whole eval run ---------------------------------------------------------------------------------------------


def test_an_eval_run_writes_no_key_anywhere(openai_stub, sample_index, tmp_path, monkeypatch, caplog, capsys):
    from sim_web.cli import main

    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", f"{MARK}-env-openai-key-0004")
    monkeypatch.setenv("SERPER_KEY_ID", KEY)
    monkeypatch.setenv("JINA_API_KEYS", JINA_KEY)
    monkeypatch.setenv("SERPER_BASE_URL", with_credentials("http://127.0.0.1:9"))
    openai_stub.reply = lambda body: "<think>t</think>\n<answer>Paris</answer>"
    out = tmp_path / "run"
    args = ["eval", "--policy", "openai:stub-model", "--base-url", with_credentials(openai_stub.base_url)]
    args += ["--api-key", f"{MARK}-cli-api-key-0005", "--judge", "openai:judge-model"]
    args += ["--index", str(sample_index), "--n", "2", "--workers", "1", "--no-progress", "--out", str(out)]
    assert main(args) == 0
    assert (out / "run.json").is_file() and openai_stub.requests  # the run happened, through the endpoint
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["endpoints"]["api_key"]["fingerprint"].startswith("sha256:")
    assert not leaks(files_text(out))
    assert not [(r.name, r.getMessage()[:300]) for r in caplog.records if leaks(log_text([r]))]
    printed = capsys.readouterr()
    assert not leaks(printed.out + printed.err)
