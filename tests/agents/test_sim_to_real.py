"""``sim-web sim-to-real``: a small mock run end to end (oracle, the held-out tasks, injected faults), the report's
numbers reconciled with what the mocks received, the format check, and the clear stop without keys."""

from __future__ import annotations

import json

import pytest

from agents.sim_to_real.format import check_observation, check_records
from agents.sim_to_real.report import ApiPrices, percentile
from sim_web.cli import main
from sim_web.protocol.formatting import format_search, format_tool_response
from sim_web.protocol.results import SearchResult

KEY_VARS = (
    "SERPER_KEY_ID",
    "JINA_API_KEYS",
    "JINA_API_KEY",
    "API_KEY",
    "API_BASE",
    "SUMMARY_MODEL_NAME",
    "SERPER_BASE_URL",
    "JINA_BASE_URL",
    "SIM_TO_REAL_MOCK",
)


@pytest.fixture()
def no_keys(monkeypatch, sample_index):
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SIM_WEB_HOME", str(sample_index.parent.parent))  # caches and runs under the session's tmp home


@pytest.fixture(scope="module")
def mock_run(sample_index, tmp_path_factory):
    """One ``SIM_TO_REAL_MOCK=1 sim-web sim-to-real --policy oracle --n 3`` (exit status, output, report, folder)."""
    mp = pytest.MonkeyPatch()
    for name in KEY_VARS:
        mp.delenv(name, raising=False)
    mp.setenv("SIM_WEB_HOME", str(sample_index.parent.parent))
    mp.setenv("SIM_TO_REAL_MOCK", "1")
    out = tmp_path_factory.mktemp("s2r")
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        status = main(
            [
                "sim-to-real",
                "--index",
                str(sample_index),
                "--policy",
                "oracle",
                "--n",
                "3",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
    mp.undo()
    return status, buf.getvalue(), json.loads((out / "report.json").read_text()), out


def test_the_mock_run_writes_every_file_and_prints_the_report(mock_run):
    status, printed, _, out = mock_run
    assert status == 0
    for name in ("report.json", "report.md", "report.png"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0
    assert (
        printed.startswith("# Sim-to-real report (mock)")
        and "| oracle |" in printed
        and str(out / "report.md") in printed
    )
    assert (out / "oracle" / "sim" / "trajectories.jsonl").is_file() and (
        out / "oracle" / "real" / "trajectories.jsonl"
    ).is_file()


def test_both_backends_ran_the_same_tasks_and_the_counts_reconcile(mock_run):
    _, _, report, _ = mock_run
    sim, real = report["policies"]["oracle"]["sim"], report["policies"]["oracle"]["real"]
    assert report["mode"] == "mock" and sim["episodes"] == real["episodes"] == report["n_tasks"] == 3
    for run in (sim, real):
        ex = run["executor"]
        assert ex["reconciles"] and ex["calls"] == ex["successes"] + ex["fallbacks"] + ex["failures"] > 0
        assert ex["cache_hits"] <= ex["successes"]
        assert run["latency"]["n"] == sum(run["tool_calls"].get(t, 0) for t in ("search", "visit", "google_scholar"))
        assert run["latency"]["p50_ms"] <= run["latency"]["p95_ms"]
    assert sim["api"] == {"serper": 0, "jina": 0, "summariser": 0} and sim["cost_usd"]["total"] == 0
    assert (sim["executor"]["retries"], sim["executor"]["fallbacks"]) == (0, 0)
    # the injected faults, each with its one deterministic consequence
    assert real["executor"]["retries"] == 4  # Serper 429, 503, truncated JSON; Jina 500
    assert real["key_rotations"] == 1  # Jina 402 -> key 2
    assert (real["executor"]["fallbacks"], real["executor"]["failures"]) == (0, 1)  # failed page: shown, not the index
    # the backends' request counts are what the mocks received
    assert (real["api"]["serper"], real["api"]["jina"]) == (
        report["mock"]["received"]["serper"],
        report["mock"]["received"]["jina"],
    )
    assert real["api"]["summariser"] == 0
    expected = ApiPrices().cost(real["api"])
    assert real["cost_usd"] == expected and expected["total"] > 0
    assert (
        sim["pass@1"] == real["pass@1"] and sim["tool_calls"] == real["tool_calls"]
    )  # the mocks serve the index's content


def test_every_observation_parses_with_the_tongyi_grammar_in_both(mock_run):
    _, _, report, out = mock_run
    fc = report["format_check"]
    assert fc["passed"] and fc["sim"]["observations"] == fc["real"]["observations"] > 0
    assert fc["sim"]["parsed"] == fc["sim"]["observations"] and fc["real"]["failed"] == 0
    records = [json.loads(line) for line in (out / "oracle" / "real" / "trajectories.jsonl").read_text().splitlines()]
    assert check_records(records)["observations"] == fc["real"]["observations"]
    assert all("tool_stats" in r for r in records)


def test_the_grammar_rejects_what_tongyi_would_not_print():
    good = format_tool_response(format_search("q", [SearchResult("T", "https://x", "s")]))
    assert check_observation("search", good) == ("results", None)
    assert check_observation("search", good.replace("1. [T]", "1) [T]"))[0] == "invalid"
    assert check_observation("search", good.replace("found 1 results", "found 2 results"))[0] == "invalid"
    assert check_observation("visit", good)[0] == "invalid"
    assert check_observation("search", good[len("<tool_response>\n") :])[1].startswith("not wrapped")


def test_without_keys_it_stops_naming_the_variables(no_keys, sample_index, tmp_path, capsys):
    status = main(["sim-to-real", "--index", str(sample_index), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert (
        status == 2 and "SERPER_KEY_ID and JINA_API_KEYS" in err and "SIM_TO_REAL_MOCK=1" in err and "API_BASE" in err
    )
    assert not (tmp_path / "o").exists()  # nothing ran


def test_the_index_stands_in_for_the_real_web_only_when_asked(tmp_path):
    from dataclasses import replace

    from agents.eval_config import eval_env
    from agents.sim_to_real.run import SimToRealConfig, _eval_config

    for asked in (False, True):
        cfg = SimToRealConfig(env=replace(eval_env(), real_fallback=asked))
        real, sim = _eval_config(cfg, "oracle", "real", tmp_path), _eval_config(cfg, "oracle", "sim", tmp_path)
        assert (real.env.real_fallback, sim.env.real_fallback) == (asked, False)
        assert ("real_fallback" in real.identity()) == asked  # a run with the index behind it never resumes one without
    assert SimToRealConfig().env.real_fallback is False


def test_percentile_and_prices():
    assert percentile([10.0, 20.0, 30.0], 95) == pytest.approx(29.0)
    assert ApiPrices(serper_usd_per_1k=2.0).cost({"serper": 500})["serper"] == 1.0
    with pytest.raises(Exception, match="must not be negative"):
        ApiPrices(jina_tokens_per_page=-1)
