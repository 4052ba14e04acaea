"""``ServeConfig``: the CLI's flags come from its fields, and workers receive it whole, without the token."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from sim_web.cli import SERVE_FLAGS, make_parser
from sim_web.serve.config import ServeConfig
from sim_web.serve.conn import ConnectionLimits
from sim_web.serve.http import CONFIG_ENV, _worker_config
from simweb_core.cli import given_flags
from simweb_core.data import from_data
from simweb_core.errors import ConfigError
from simweb_core.overrides import apply_overrides


def _parsed(*argv: str) -> ServeConfig:
    args = make_parser().parse_args(["serve", *argv])
    return from_data(ServeConfig, apply_overrides({}, given_flags(args)))


def test_flags_set_their_fields_and_absent_flags_keep_the_field_defaults():
    assert _parsed() == ServeConfig()
    cfg = _parsed("--workers", "3", "--no-cache", "--tool-threads", "9", "--keep-alive", "60", "--mode", "hybrid")
    assert (cfg.workers, cfg.cache, cfg.tool_threads, cfg.mode) == (3, False, 9, "hybrid")
    assert cfg.limits == ConnectionLimits(keep_alive_s=60)
    assert len(SERVE_FLAGS) == len({path for path in SERVE_FLAGS.values()})  # one flag per field


def test_workers_rebuild_the_same_config_from_the_environment_and_never_see_the_token(monkeypatch):
    cfg = ServeConfig(workers=2, port=0, tool_threads=3, max_in_progress=40, limits=ConnectionLimits(keep_alive_s=7))
    text = json.dumps(asdict(cfg))
    monkeypatch.setenv(CONFIG_ENV, text)
    assert _worker_config() == cfg
    assert "token" not in text
    monkeypatch.delenv(CONFIG_ENV)
    assert _worker_config() == ServeConfig()


@pytest.mark.parametrize(
    "bad, expected",
    [
        ({"workers": 0}, "workers must be >= 1, got 0"),
        ({"tool_threads": 0}, "tool_threads must be >= 1, got 0"),
        ({"max_in_progress": 0}, "max_in_progress must be >= 1, got 0"),
        ({"max_calls_per_client": -1}, "max_calls_per_client must be >= 0"),
        ({"port": 70000}, "port must be 0-65535, got 70000"),
    ],
)
def test_out_of_range_settings_name_the_field_and_the_range(bad, expected):
    with pytest.raises(ConfigError, match=expected):
        ServeConfig(**bad)
