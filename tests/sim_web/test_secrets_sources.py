"""Secrets from the places issue 59 found them leaking (items 10 and 11): a proxy key in a base URL's query, API
keys read from the environment, errors printed by the command line, and flags that show in ``ps``."""

from __future__ import annotations

import argparse
import logging
import urllib.parse
import uuid

import pytest

from agents.policies.openai_policy import OpenAIConfig, OpenAIPolicy
from sim_web.backends.jina import JinaBackend, JinaConfig, KeyRing
from sim_web.backends.upstream import require_key
from simweb_core.cli import print_error
from simweb_core.errors import ConfigError
from simweb_core.secret import scrub, scrub_record
from tests.sim_web.real_mocks import KEY, jina, sim_backend  # noqa: F401 - fixtures

MARK = "zq9SECRET"
PROXY_KEY = f"{MARK}-proxy-key-0004"
WIKI = "https://en.wikipedia.org/wiki/"


class DictCache:
    """An in-memory raw cache (the persistent one's interface)."""

    def __init__(self) -> None:
        self.rows: dict[str, str] = {}

    def get(self, key: str, ttl_s: float | None = None) -> str | None:
        return self.rows.get(key)

    def put(self, key: str, value: str) -> None:
        self.rows[key] = value


def test_a_base_url_query_goes_to_the_base_host_only_and_is_never_cached(jina):  # noqa: F811 - fixture
    """Item 10: ``JINA_BASE_URL=https://proxy/?apikey=K``; K must not become part of a page's URL, nor be cached."""
    cache = DictCache()
    backend = JinaBackend(KEY, JinaConfig(base_url=f"{jina.base_url}/?apikey={PROXY_KEY}"), raw_cache=cache)
    try:
        result = backend.visit(WIKI + "Albert_Einstein?oldid=1", "theory of relativity")
    finally:
        backend.close()
    assert result.ok and "relativity" in result.evidence.lower()
    assert jina.requests, "the reader was never asked"
    for req in jina.requests:
        path, _, query = req["path"].partition("?")
        assert urllib.parse.parse_qs(query) == {"apikey": [PROXY_KEY]}  # the base host gets its key, as given
        page = urllib.parse.parse_qs(req["body"].decode()).get("url", [path[1:]])[0]  # the URL the reader fetches
        assert page == WIKI + "Albert_Einstein?oldid=1" and MARK not in path
    assert cache.rows and not any(MARK in text for text in cache.rows.values())
    assert MARK not in scrub(f"an upstream echoed {PROXY_KEY}")  # registered with the log scrubber


def _marked(label: str) -> str:
    """A planted secret of its own (the scrubber's registry is per process: no test sees another's value)."""
    return f"{MARK}-{label}-{uuid.uuid4().hex[:12]}"


def test_keys_read_from_the_environment_are_registered_with_the_scrubber(monkeypatch):
    """Item 11: an upstream or endpoint that echoes its key back must not put it in a log or a printed error."""
    serper, jina_a, jina_b, endpoint = (_marked(x) for x in ("serper", "jina-a", "jina-b", "endpoint"))
    monkeypatch.setenv("SERPER_KEY_ID", serper)
    monkeypatch.setenv("JINA_API_KEYS", f"{jina_a},{jina_b}")
    monkeypatch.setenv("OPENAI_API_KEY", endpoint)
    assert require_key("SERPER_KEY_ID", what="a key") == serper
    assert KeyRing(require_key("JINA_API_KEYS", what="keys")).size == 2
    policy = OpenAIPolicy(OpenAIConfig("stub-model", base_url="http://127.0.0.1:9/v1"))
    assert policy.client is not None  # the client reads $OPENAI_API_KEY now
    echoed = f"401 for key {serper}; keys {jina_a} and {jina_b}; Bearer {endpoint}"
    assert MARK not in scrub(echoed)
    record = logging.LogRecord("sim_web.executor", logging.WARNING, __file__, 1, "upstream said: %s", (echoed,), None)
    assert MARK not in scrub_record(record).getMessage()


def test_the_run_stopped_line_and_printed_errors_are_scrubbed(monkeypatch, capsys):
    """Item 11: ``sim-web eval`` prints the endpoint's own error when the run stops; it passes the scrubber."""
    import agents.cli
    import agents.harness
    from agents.policies.base import FatalPolicyError

    password, key = _marked("url-password"), _marked("api-key")
    monkeypatch.setenv("OPENAI_API_KEY", key)

    def stop(cfg):
        assert OpenAIPolicy(OpenAIConfig("stub-model", base_url="http://127.0.0.1:9/v1")).client  # reads the key
        raise FatalPolicyError(f"https://u:{password}@proxy.example/v1?api_key={key} answered 401: bad key {key}")

    monkeypatch.setattr(agents.harness, "run_eval", stop)
    args = argparse.Namespace(summariser="policy", split=None, policy="oracle", api_key_file=None)
    assert agents.cli.run(args) == 2
    err = capsys.readouterr().err
    assert "the run stopped" in err and "answered 401" in err and MARK not in err
    print_error(f"an upstream echoed {key}")
    assert MARK not in capsys.readouterr().err


def test_the_server_token_can_come_from_a_file_and_help_says_argv_shows(tmp_path, monkeypatch, capsys):
    """Item 11: ``sim-web serve --token-file PATH``; ``--help`` says a flag's value is visible in ``ps``."""
    from sim_web.cli import make_parser, server_token

    monkeypatch.delenv("SIM_WEB_SERVER_TOKEN", raising=False)
    token = _marked("server-token")
    (tmp_path / "token").write_text(token + "\n", encoding="utf-8")
    args = make_parser().parse_args(["serve", "--token-file", str(tmp_path / "token")])
    assert server_token(args) == token and MARK not in scrub(f"echo {token}")
    (tmp_path / "empty").write_text("\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"--token-file .*empty.*first line"):
        server_token(make_parser().parse_args(["serve", "--token-file", str(tmp_path / "empty")]))
    with pytest.raises(ConfigError, match=r"--token-file .*cannot be read"):
        server_token(make_parser().parse_args(["serve", "--token-file", str(tmp_path / "missing")]))
    monkeypatch.setenv("SIM_WEB_SERVER_TOKEN", token)
    assert server_token(make_parser().parse_args(["serve"])) == token
    with pytest.raises(SystemExit):
        make_parser().parse_args(["serve", "--help"])
    assert "`ps`" in " ".join(capsys.readouterr().out.split())


def test_the_endpoint_key_can_come_from_a_file(tmp_path, capsys):
    """Item 11: ``sim-web eval --api-key-file PATH`` (and ``sim-to-real``); ``--help`` says ``--api-key`` shows."""
    import agents.cli
    import agents.sim_to_real.cli

    key = _marked("endpoint-file")
    (tmp_path / "key").write_text(key, encoding="utf-8")
    for module in (agents.cli, agents.sim_to_real.cli):
        parser = argparse.ArgumentParser()
        module.add_parser(parser.add_subparsers())
        name = "eval" if module is agents.cli else "sim-to-real"
        args = parser.parse_args([name, "--policy", "openai:m", "--api-key-file", str(tmp_path / "key")])
        assert module.config_from_args(args).endpoints.api_key.reveal() == key
        both = parser.parse_args(
            [name, "--policy", "openai:m", "--api-key", "x", "--api-key-file", str(tmp_path / "key")]
        )
        with pytest.raises(ConfigError, match="not both"):
            module.config_from_args(both)
        with pytest.raises(SystemExit):
            parser.parse_args([name, "--help"])
        assert "`ps`" in " ".join(capsys.readouterr().out.split())
