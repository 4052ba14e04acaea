"""The released Search-R1-family clients, unchanged, against a live ``sim-web serve`` (issue 35, parts 2 and 3).

Each client comes from the package index (``pip install -e '.[clients]'``; skipped with the reason when absent) and
is pointed at a server on a free loopback port. A search must bring back passages of the index (the text the index
itself returns for the query), and a refused search (a server that wants a token the client does not send: 401)
must come back through the client's own error path, never as an empty success. Each client is also pointed at the
token-protected server with the credential in the URL (``http://user:TOKEN@host:port``, which each turns into HTTP
Basic auth): the right token brings back the passages, a wrong one is refused with 401 (issue 58).

docs/tools-and-wire-format.md has the compatibility table; :func:`test_the_compatibility_table_matches_these_tests`
checks that each of its rows names a test here, and the version the ``clients`` extra installs.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import sys
import types
from pathlib import Path

import pytest
from live_server import running

from sim_web.serve.http import create_app
from wiki_index.search.index import WikiIndex

ROOT = Path(__file__).resolve().parents[2]
QUERY = "Danube river"


TOKEN = "t0ken-for-the-client-tests"


@pytest.fixture(scope="module")
def servers(sample_index):
    """An open server and one that wants a token (every client call without it is refused with 401)."""
    with (
        running(create_app(str(sample_index))) as open_url,
        running(create_app(str(sample_index), token=TOKEN)) as shut,
    ):
        yield f"{open_url}/retrieve", f"{shut}/retrieve"


def _with_user_info(url: str, password: str) -> str:
    """``url`` with ``trainer:<password>@`` in front of its host (the form a remote rollout worker is given)."""
    return url.replace("http://", f"http://trainer:{password}@", 1)


@pytest.fixture(scope="module")
def credentialed(servers) -> tuple[str, str]:
    """The token-protected server's URL with the right token in its user info, and with a wrong one."""
    return _with_user_info(servers[1], TOKEN), _with_user_info(servers[1], "wrong-token")


@pytest.fixture(scope="module")
def passages(sample_index) -> list[str]:
    """The texts of the index's top 3 passages for :data:`QUERY` (what every client must show)."""
    return [p.text for _, p in WikiIndex.from_dir(str(sample_index)).search(QUERY, 3, "bm25")]


def _need(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{dist} is not installed: pip install -e '.[clients]' (the released client packages)")


def _shows(text: str, passages: list[str]) -> bool:
    return all(p.strip()[:80] in text for p in passages)


def test_skyrl_gym_search_env(servers, passages):
    _need("skyrl-gym")
    from skyrl_gym.envs.search.env import SearchEnv, SearchEnvConfig

    def env(url: str) -> SearchEnv:
        extras = {"reward_spec": {"ground_truth": {"target": ["Black Sea"]}}, "max_turns": 3}
        return SearchEnv(SearchEnvConfig(search_url=url, topk=3, timeout=30), extras=extras)

    found = env(servers[0]).step(f"<think>look it up</think><search>{QUERY}</search>")
    text = found["observations"][0]["content"]
    assert not found["done"] and _shows(
        json.loads(text.split("<information>")[1].split("</information>")[0])["result"], passages
    )
    refused = env(servers[1]).step(f"<search>{QUERY}</search>")["observations"][0]["content"]
    assert "Search error" in refused and "401" in refused and "Doc 1" not in refused


def test_skyrl_gym_search_env_with_the_token_in_the_url(credentialed, passages):
    _need("skyrl-gym")
    from skyrl_gym.envs.search.env import SearchEnv, SearchEnvConfig

    def observation(url: str) -> str:
        extras = {"reward_spec": {"ground_truth": {"target": ["Black Sea"]}}, "max_turns": 3}
        env = SearchEnv(SearchEnvConfig(search_url=url, topk=3, timeout=30), extras=extras)
        return env.step(f"<search>{QUERY}</search>")["observations"][0]["content"]

    found = observation(credentialed[0])
    assert _shows(json.loads(found.split("<information>")[1].split("</information>")[0])["result"], passages)
    refused = observation(credentialed[1])
    assert "Search error" in refused and "401" in refused and "Doc 1" not in refused


def test_gem_search_tool(servers, passages):
    _need("gem-llm")
    from gem.tools.search_tool import SearchTool

    valid, has_error, observation, _ = SearchTool(search_url=servers[0], topk=3).execute_action(
        f"<search>{QUERY}</search>"
    )
    assert valid and not has_error and _shows(observation, passages) and "Doc 3(Title: " in observation
    valid, has_error, observation, _ = SearchTool(search_url=servers[1], topk=3).execute_action(
        f"<search>{QUERY}</search>"
    )
    assert valid and has_error and "[SearchTool Error: 401" in observation


def test_gem_search_tool_with_the_token_in_the_url(credentialed, passages):
    _need("gem-llm")
    from gem.tools.search_tool import SearchTool

    right, wrong = (SearchTool(search_url=url, topk=3) for url in credentialed)
    valid, has_error, observation, _ = right.execute_action(f"<search>{QUERY}</search>")
    assert valid and not has_error and _shows(observation, passages)
    valid, has_error, observation, _ = wrong.execute_action(f"<search>{QUERY}</search>")
    assert valid and has_error and "[SearchTool Error: 401" in observation


def verl_dir() -> Path:
    """Where ``make install`` puts verl (``pip install --no-deps --target``): off ``sys.path``, since its wheel also
    installs a top-level ``tests`` package that would hide this repository's ``tests/``."""
    return Path(os.environ.get("SIM_WEB_VERL_DIR") or Path(sys.prefix) / "clients" / "verl")


def verl_version() -> str | None:
    """The version of verl in :func:`verl_dir`, or ``None``."""
    found = list(importlib.metadata.distributions(name="verl", path=[str(verl_dir())]))
    return found[0].version if found else None


def _verl_search_helper() -> types.ModuleType:
    """verl 0.7.1's ``verl/tools/utils/search_r1_like_utils.py``, loaded from the released wheel's files as they are.

    It imports only the standard library and ``requests``; the package's ``verl/__init__.py`` imports ray and
    torch's distributed stack (which the Makefile leaves out), so the file is loaded by path, not by ``import verl``.
    """
    if verl_version() is None:
        pytest.skip(f"verl is not in {verl_dir()}: make install (pip install --no-deps --target there 'verl==0.7.1')")
    path = verl_dir() / "verl" / "tools" / "utils" / "search_r1_like_utils.py"
    if not path.is_file():
        pytest.skip(f"this verl ({verl_version()}) has no search_r1_like_utils: 0.7.1 is the last release with it")
    module_spec = importlib.util.spec_from_file_location("verl_search_r1_like_utils", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("batch", [1, 8, 64])
def test_verl_search_r1_like_helper(servers, passages, batch):
    helper = _verl_search_helper()
    text, meta = helper.perform_single_search_batch(servers[0], [QUERY] * batch, topk=3)
    assert meta["status"] == "success" and meta["total_results"] == 3 * batch
    per_query = json.loads(text)["result"].split("\n---\n")
    assert len(per_query) == batch and all(_shows(q, passages) for q in per_query)
    text, meta = helper.perform_single_search_batch(servers[1], [QUERY], topk=3)
    assert meta["status"] == "api_error" and "401" in meta["api_request_error"] and "Doc 1" not in text


def test_verl_search_r1_like_helper_with_the_token_in_the_url(credentialed, passages):
    helper = _verl_search_helper()
    text, meta = helper.perform_single_search_batch(credentialed[0], [QUERY] * 8, topk=3)
    assert meta["status"] == "success" and meta["total_results"] == 3 * 8
    assert all(_shows(q, passages) for q in json.loads(text)["result"].split("\n---\n"))
    text, meta = helper.perform_single_search_batch(credentialed[1], [QUERY], topk=3)
    assert meta["status"] == "api_error" and "401" in meta["api_request_error"] and "Doc 1" not in text


def test_the_compatibility_table_matches_these_tests():
    """Every row of the table names a test of this module and the version the ``clients`` extra pins."""
    import tomllib

    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["clients"]
    pinned = dict(p.split(";")[0].strip().split("==", 1) for p in pins)
    pinned.update(re.findall(r"--target \S+ '([\w-]+)==([\w.]+)'", (ROOT / "Makefile").read_text()))
    doc = (ROOT / "docs" / "tools-and-wire-format.md").read_text()
    rows = re.findall(r"^\| ([^|]+?) \| `([\w-]+)==([\w.]+)` \|[^\n]*`tests/sim_web/test_clients.py::(\w+)`", doc, re.M)
    assert {dist for _, dist, _, _ in rows} == set(pinned), "one table row per client the Makefile installs"
    here = sys.modules[__name__]
    for client, dist, version, test in rows:
        assert callable(getattr(here, test, None)), f"{client}: no test {test} in tests/sim_web/test_clients.py"
        assert pinned[dist] == version, f"{client}: the table says {version}, the clients extra pins {pinned[dist]}"
        try:
            installed = verl_version() if dist == "verl" else importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        assert installed in (None, version), f"{client}: the table says {version}, {installed} is installed"
