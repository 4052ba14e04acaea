"""The Serper and Jina backends against wire-format mocks: requests, parsing, error classification, summariser."""

from __future__ import annotations

import json

import pytest

from sim_web.backends.jina import JinaBackend, JinaConfig
from sim_web.backends.serper import SerperBackend, SerperConfig, parse_scholar, parse_search, request_body
from sim_web.backends.summarise import (
    DeterministicExtractor,
    LLMSummariser,
    SummariserError,
    cut_to_tokens,
    parse_extraction,
)
from sim_web.backends.upstream import UpstreamError, parse_retry_after
from sim_web.executor import SqliteCache
from sim_web.protocol.formatting import format_search
from sim_web.protocol.results import EMPTY_SEARCH
from tests.sim_web.real_mocks import KEY, Fault, jina, serper, sim_backend  # noqa: F401 - fixtures

WIKI = "https://en.wikipedia.org/wiki/"


def make_serper(mock, **kw) -> SerperBackend:
    return SerperBackend(
        kw.pop("key", KEY), SerperConfig(base_url=mock.base_url, timeout_s=kw.pop("timeout_s", 5.0)), **kw
    )


def make_jina(mock, **kw) -> JinaBackend:
    return JinaBackend(kw.pop("key", KEY), JinaConfig(base_url=mock.base_url, **kw.pop("cfg", {})), **kw)


def test_serper_request_is_tongyis_and_results_match_the_organic_items(serper, sim_backend) -> None:
    b = make_serper(serper)
    res = b.search("Albert Einstein", 5)
    req = serper.requests[-1]
    assert (req["method"], req["path"], req["headers"]["X-API-KEY"]) == ("POST", "/search", KEY)
    assert json.loads(req["body"]) == {"q": "Albert Einstein", "location": "United States", "gl": "us", "hl": "en"}
    assert req["headers"]["Content-Type"] == "application/json"
    expected = sim_backend.search("Albert Einstein", 10)[:5]
    assert [(r.title, r.link, r.snippet) for r in res] == [(r.title, r.link, r.snippet) for r in expected]
    assert res[0].date == "Jan 1, 2024" and res[1].date is None and res[0].source is None


def test_cjk_queries_search_from_china() -> None:
    assert request_body("北京 人口", SerperConfig()) == {
        "q": "北京 人口",
        "location": "China",
        "gl": "cn",
        "hl": "zh-cn",
    }
    assert request_body("Beijing", SerperConfig(gl="uk"))["gl"] == "uk"


def test_scholar_request_and_fields(serper) -> None:
    res = make_serper(serper).scholar("relativity", 3)
    assert json.loads(serper.requests[-1]["body"]) == {"q": "relativity"} and serper.requests[-1]["path"] == "/scholar"
    assert res[0].pdf_url and res[0].pdf_url.endswith(".pdf") and res[1].pdf_url is None
    assert (res[0].year, res[0].cited_by, res[0].publication_info) == (2001, 10, "Wikipedia")


def test_parsing_tolerates_missing_fields_and_rejects_wrong_shapes() -> None:
    assert parse_search({"organic": [{"title": "T", "link": "L"}, {"title": "no link"}, "junk"]}, 10) == [
        parse_search({"organic": [{"title": "T", "link": "L", "snippet": None}]}, 10)[0]
    ]
    assert parse_search({"searchParameters": {}}, 10) == []  # no organic at all: no results
    assert (
        parse_scholar({"organic": [{"title": "P", "citedBy": "n/a"}]}, 10)[0].cited_by == "n/a"
    )  # Tongyi prints str(citedBy)
    with pytest.raises(UpstreamError, match="expected a list"):
        parse_search({"organic": {"title": "x"}}, 10)
    with pytest.raises(UpstreamError, match="expected a JSON object"):
        parse_search([], 10)


@pytest.mark.parametrize(
    ("status", "retryable", "opens", "fix"),
    [
        (403, False, True, "SERPER_KEY_ID"),
        (401, False, True, "SERPER_KEY_ID"),
        (402, False, True, "out of credit"),
        (400, False, False, "bug in sim-web"),
        (451, False, False, "blocks this domain"),
        (429, True, False, "429"),
        (500, True, False, "500"),
        (502, True, False, "502"),
        (503, True, False, "503"),
    ],
)
def test_status_codes_are_classified_and_name_the_fix(serper, status, retryable, opens, fix) -> None:
    serper.inject(Fault(status=status))
    with pytest.raises(UpstreamError, match=fix) as e:
        make_serper(serper).search("q", 3)
    assert (e.value.retryable, e.value.opens_circuit, e.value.status) == (retryable, opens, status)


def test_bad_key_is_serpers_403_and_malformed_bodies_are_retryable(serper) -> None:
    with pytest.raises(UpstreamError, match=r"403 \(Unauthorized.\).*check SERPER_KEY_ID"):
        make_serper(serper, key="wrong").search("q", 3)
    serper.inject(Fault(body=b'{"organic": [{"title": "cut'))
    with pytest.raises(UpstreamError, match="not JSON") as e:
        make_serper(serper).search("q", 3)
    assert e.value.retryable
    serper.inject(Fault(kind="empty"))
    assert make_serper(serper).search("q", 3) == [EMPTY_SEARCH]  # "organic": [] (Tongyi's "found 0 results")


def test_retry_after_header_and_timeout(serper) -> None:
    serper.inject(Fault(status=429, retry_after="2"))
    with pytest.raises(UpstreamError) as e:
        make_serper(serper).search("q", 3)
    assert e.value.retry_after_s == 2.0 and "Retry-After 2 s" in str(e.value)
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    serper.inject(Fault(delay_s=1.0))
    with pytest.raises(UpstreamError, match="timed out") as e:
        make_serper(serper, timeout_s=0.1).search("q", 3)
    assert e.value.retryable and e.value.is_timeout


def test_raw_replies_are_cached_by_content(serper, tmp_path) -> None:
    store = SqliteCache(tmp_path / "raw.sqlite")
    events: list[str] = []
    b = make_serper(serper, raw_cache=store)
    b.bind_events(events.append)
    first = b.search("Paris", 10)
    assert make_serper(serper, raw_cache=store).search("Paris", 3) == first[:3]  # another process: the disk answers
    assert serper.count("/search") == 1 and events == ["serper.http_requests"]
    serper.inject(Fault(status=503))
    with pytest.raises(UpstreamError):
        b.search("Lyon", 3)
    assert b.search("Lyon", 3) and serper.count("/search") == 3  # the failure was not cached


def test_jina_reads_a_page_and_extracts_for_the_goal(jina) -> None:
    r = make_jina(jina).visit(WIKI + "Albert_Einstein", "theory of relativity")
    req = jina.requests[-1]
    assert (req["method"], req["path"], req["headers"]["Authorization"]) == (
        "GET",
        "/" + WIKI + "Albert_Einstein",
        f"Bearer {KEY}",
    )
    assert r.ok and "relativity" in r.evidence.lower() and r.summary.startswith("Albert Einstein: ")


def test_jina_errors_warning_pages_and_unknown_pages(jina) -> None:
    with pytest.raises(UpstreamError, match="could not read that page"):
        make_jina(jina).visit("https://example.invalid/x", "g")  # 422
    jina.inject(Fault(kind="warning"))
    with pytest.raises(UpstreamError, match="Target URL returned error 404") as e:
        make_jina(jina).visit(WIKI + "Paris", "g")
    assert not e.value.retryable
    with pytest.raises(UpstreamError, match=r"401.*check JINA_API_KEYS") as e:
        make_jina(jina, key="bad").visit(WIKI + "Paris", "g")
    assert e.value.opens_circuit
    jina.inject(Fault(status=402))
    with pytest.raises(UpstreamError, match="out of credit: top it up, or set JINA_API_KEYS") as e:
        make_jina(jina).visit(WIKI + "Paris", "g")


def test_token_budget_cuts_the_page() -> None:
    text = "one two, three. " * 100
    assert cut_to_tokens(text, 12) == "one two, three. one two, three. one two"  # words and marks: 5 tokens a sentence
    assert cut_to_tokens("short", 10) == "short"
    with pytest.raises(Exception, match="tokenizer='approx'"):
        cut_to_tokens(text, 10, "tiktoken:no_such_encoding")


def test_page_budget_reaches_the_summariser(jina) -> None:
    seen: list[str] = []

    def summariser(title: str, content: str, goal: str) -> tuple[str, str]:
        seen.append(content)
        return "quoted", "a long enough summary"

    r = make_jina(jina, summariser=summariser, summariser_id="m", cfg={"max_page_tokens": 100}).visit(
        WIKI + "Albert_Einstein", "g"
    )
    assert (r.evidence, r.summary) == ("quoted", "a long enough summary")
    assert len(seen[0].split()) <= 100 and seen[0]


def test_llm_summariser_json_and_fallback_to_deterministic(jina, openai_stub) -> None:
    openai_stub.reply = [
        '```json\n{"rational": "r", "evidence": ["line 1", "line 2"], "summary": "Einstein developed relativity."}\n```',
        "not json at all",
        '{"evidence": "e", "summary": "short"}',
    ]
    llm = LLMSummariser(openai_stub.base_url, "k", "summary-model")
    events: list[str] = []
    b = make_jina(jina, summariser=llm, summariser_id="summary-model")
    b.bind_events(events.append)
    r = b.visit(WIKI + "Albert_Einstein", "relativity")
    assert (r.evidence, r.summary) == ("line 1\nline 2", "Einstein developed relativity.")
    body = openai_stub.requests[0]
    assert body["model"] == "summary-model" and body["temperature"] == 0.0
    assert (
        "relativity" in body["messages"][0]["content"]
        and '"rational", "evidence" and "summary"' in body["messages"][0]["content"]
    )
    plain = make_jina(jina).visit(WIKI + "Albert_Einstein", "relativity")
    for _ in range(2):  # no JSON, then a summary under 10 characters: the deterministic extractor answers
        assert b.visit(WIKI + "Albert_Einstein", "relativity") == plain
    assert events.count("jina.summariser_failures") == 2 and events.count("jina.summariser_ok") == 1
    with pytest.raises(SummariserError):
        parse_extraction("{}")


def test_deterministic_extractor_is_deterministic() -> None:
    ex = DeterministicExtractor(evidence_chunks=1)
    text = "Cats purr.\n\nDogs bark loudly at night.\n\nBirds sing."
    assert (
        ex("Pets", text, "dogs bark")
        == ex("Pets", text, "dogs bark")
        == ("Cats purr.\nDogs bark loudly at night.\nBirds sing.", "Pets: Dogs bark loudly at night.")
    )
    assert ex("", "", "g") == ("", "")


def test_observations_are_byte_identical_to_the_sim_backends(serper, sim_backend) -> None:
    """The shared format check: the same results through Serper print the sim backend's bytes."""
    real = make_serper(serper)
    for q in ("Paris", "theory of relativity", "Danube"):
        sim_res = sim_backend.search(q, 10)
        real_res = [
            type(r)(title=r.title, link=r.link, snippet=r.snippet) for r in real.search(q, 10)
        ]  # the mock's date aside
        assert format_search(q, real_res) == format_search(q, sim_res)


def test_benchmark_quick_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.bench_real import main

    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "ratio vs baseline" in out and "persistent cache hit (SQLite)" in out and "bare httpx" in out
    assert "qps=50 saturated" in out and "after five 429s" in out


def test_the_persistent_cache_is_shared_with_another_process(serper, tmp_path) -> None:
    import subprocess
    import sys

    from sim_web.executor import BackendPolicy, ExecutorConfig, ToolExecutor

    script = (
        "import sys\n"
        "from sim_web.backends.serper import SerperBackend, SerperConfig\n"
        "from sim_web.executor import ExecutorConfig, ToolExecutor\n"
        f"b = SerperBackend({KEY!r}, SerperConfig(base_url={serper.base_url!r}))\n"
        f"ex = ToolExecutor([b], ExecutorConfig(cache_dir={str(tmp_path)!r}))\n"
        "print(ex.search('Danube', 10)[0].title)\n"
    )
    other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert serper.count("/search") == 1
    here = ToolExecutor(
        [make_serper(serper)],
        ExecutorConfig(cache_dir=str(tmp_path), policies={"serper": BackendPolicy(cache_ttl_s=3600)}),
    )
    assert here.search("Danube", 10)[0].title == other.stdout.strip()
    assert serper.count("/search") == 1 and here.stats.counts()["cache_hits"] == 1  # the other process paid for it
