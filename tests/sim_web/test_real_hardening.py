"""Caches and recordings fail loudly, never silently wrong; Serper replies print Tongyi's bytes where they used to differ.

The expected observations below were worked out by hand from github.com/Alibaba-NLP/DeepResearch
``inference/tool_search.py`` (``google_search_with_serp``) and ``tool_scholar.py`` (``google_scholar_with_serp``),
as in ``test_formatting.py``: ``"organic" in results`` with an empty list prints the header and no item, a
present ``snippet`` (even ``""``) adds ``"\\n" + snippet``, and ``citedBy`` is printed as ``str(page["citedBy"])``.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from dataclasses import replace

import gymnasium as gym
import httpx
import pytest

from sim_web.backends.recording import RecordingTransport, ReplayTransport
from sim_web.backends.serper import SerperBackend, SerperConfig
from sim_web.backends.upstream import UpstreamError
from sim_web.executor import SqliteCache
from sim_web.executor.cache import decode_result
from sim_web.protocol.formatting import format_scholar, format_search
from simweb_core.errors import ConfigError
from tests.sim_web.real_mocks import KEY, Fault, MockJina, MockSerper, jina, real_keys, serper, sim_backend  # noqa: F401 - fixtures
from tests.sim_web.test_real_env import body, call, make_env, real_config  # noqa: F401 - fixture

WIKI = "https://en.wikipedia.org/wiki/"


def make_serper(mock, **kw) -> SerperBackend:
    return SerperBackend(KEY, SerperConfig(base_url=mock.base_url, timeout_s=5.0), **kw)


def rows(path) -> list[str]:
    with sqlite3.connect(path) as db:
        return [r[0] for r in db.execute("SELECT value FROM cache")]


def set_rows(path, value: str | None = None, cut: int | None = None) -> None:
    with sqlite3.connect(path) as db:
        if cut is not None:
            db.execute("UPDATE cache SET value = substr(value, 1, ?)", (cut,))
        else:
            db.execute("UPDATE cache SET value = ?", (value,))


# -- caches and recordings fail loudly ----------------------------------------------------------------


@pytest.mark.parametrize(
    "damage",
    [
        {"cut": 40},
        {"value": json.dumps([{"title": "T", "url": "https://x.example"}])},
        {"value": json.dumps({"title": "T", "link": "https://x.example"})},
    ],
    ids=["cut", "old-field-name", "object-not-list"],
)
def test_a_bad_result_row_is_a_counted_miss_and_is_rewritten(make_env, serper, tmp_path, damage):
    env = make_env()
    env.reset(seed=0)
    first, *_ = env.step(call("search", query=["Danube"]))
    results = tmp_path / "cache" / "results.sqlite"
    set_rows(results, **damage)
    again = make_env()  # another env, as another process: only the disk remembers
    again.reset(seed=0)
    obs, _, _, _, info = again.step(call("search", query=["Danube"]))
    assert obs == first and info["tool_stats"]["events"]["cache.bad_rows"] == 1
    assert serper.count("/search") == 1  # the raw reply was still good: no new request
    assert [len(decode_result("search", v)) for v in rows(results)] == [10]  # rewritten


def test_a_cache_file_that_is_not_a_database_is_named(tmp_path):
    bad = tmp_path / "results.sqlite"
    bad.write_text("not a database, just text that happens to be here\n" * 100)
    with pytest.raises(ConfigError, match=f"persistent cache {bad} is not an SQLite database.*delete that file"):
        SqliteCache(bad)


def test_a_cut_raw_row_is_a_counted_miss_fetched_again_and_rewritten(serper, tmp_path):
    store = SqliteCache(tmp_path / "raw.sqlite")
    events: list[str] = []
    b = make_serper(serper, raw_cache=store)
    b.bind_events(events.append)
    first = b.search("Paris", 10)
    set_rows(tmp_path / "raw.sqlite", cut=50)
    assert b.search("Paris", 10) == first and serper.count("/search") == 2
    assert events == ["serper.http_requests", "serper.raw_cache_bad_rows", "serper.http_requests"]
    assert b.search("Paris", 10) == first and serper.count("/search") == 2 and events[-1] == "serper.raw_cache_hits"


def test_a_reply_of_the_wrong_shape_is_never_cached(serper, tmp_path):
    store = SqliteCache(tmp_path / "raw.sqlite")
    b = make_serper(serper, raw_cache=store)
    serper.inject(Fault(body=b'{"organic": {"title": "an object, not a list"}}'))
    with pytest.raises(UpstreamError, match="expected a list") as e:
        b.search("Paris", 10)
    assert e.value.retryable and len(store) == 0
    assert len(b.search("Paris", 10)) == 10 and serper.count("/search") == 2  # the retry asks Serper, not the cache


@pytest.mark.parametrize(
    ("status", "message", "retryable", "opens", "fix"),
    [
        (403, "Unauthorized.", False, True, "check SERPER_KEY_ID"),
        (400, "Not enough credits", False, False, "Not enough credits"),
        (429, "Too many requests.", True, False, "429"),
    ],
)
def test_serpers_error_body_under_a_200_is_an_upstream_error_and_not_cached(
    serper, tmp_path, status, message, retryable, opens, fix
):
    store = SqliteCache(tmp_path / "raw.sqlite")
    serper.inject(Fault(body=json.dumps({"message": message, "statusCode": status}).encode()))
    with pytest.raises(UpstreamError, match=fix) as e:
        make_serper(serper, raw_cache=store).search("q", 3)
    assert (e.value.status, e.value.retryable, e.value.opens_circuit) == (status, retryable, opens)
    assert len(store) == 0


def test_a_lone_surrogate_in_a_reply_becomes_a_replacement_character(make_env, serper, tmp_path):
    cut_emoji = b'{"organic": [{"title": "Cut \\ud83d", "link": "https://x.example/a", "snippet": "emoji \\ud83d", "date": "\\udc00"}]}'
    serper.inject(Fault(body=cut_emoji))
    env = make_env()  # the persistent cache is on: storing the result used to raise UnicodeEncodeError
    env.reset(seed=0)
    obs, *_ = env.step(call("search", query=["emoji"]))
    assert body(obs) == (
        "A Google search for 'emoji' found 1 results:\n\n## Web Results\n"
        "1. [Cut \ufffd](https://x.example/a)\nDate published: \ufffd\n\nemoji \ufffd"
    )
    obs.encode("utf-8")
    serper.inject(Fault(body=cut_emoji.replace(b"Cut", b"Other")))
    without_cache = make_serper(serper).search("emoji 2", 10)  # the cache off: the observation must still encode
    format_search("emoji 2", without_cache).encode("utf-8")


def test_a_lone_surrogate_from_the_summariser_becomes_a_replacement_character(jina):
    from sim_web.backends.jina import JinaBackend, JinaConfig

    b = JinaBackend(
        KEY,
        JinaConfig(base_url=jina.base_url),
        summariser=lambda t, c, g: ("cut \ud83d", "a summary cut \udc00"),
        summariser_id="m",
    )
    r = b.visit(WIKI + "Paris", "g")
    assert (r.evidence, r.summary) == ("cut \ufffd", "a summary cut \ufffd")


def test_credentials_in_base_urls_are_never_recorded_and_do_not_change_the_match(tmp_path):
    rec = tmp_path / "rec"
    inner = httpx.MockTransport(lambda request: httpx.Response(200, text="ok " + request.url.path))
    with httpx.Client(transport=RecordingTransport(rec, inner)) as client:
        client.post("https://alice:pa55word@proxy.example/search?apikey=s3cret&gl=us", content=b'{"q": "x"}')
        client.get("https://proxy.example/r?access_token=t0ken&x=1")
    text = "".join(f.read_text() for f in rec.glob("*.json"))
    for secret in ("alice", "pa55word", "s3cret", "t0ken", base64.b64encode(b"alice:pa55word").decode()):
        assert secret not in text
    assert "apikey" not in text and '"target": "/search"' in text  # the allow-list: no query, no header, no host
    with httpx.Client(transport=ReplayTransport(rec)) as client:  # another key, or none in the URL: the same exchange
        assert (
            client.post("https://bob:other@proxy.example/search?apikey=other&gl=us", content=b'{"q": "x"}').text
            == "ok /search"
        )
        assert client.get("http://127.0.0.1:9/r?access_token=new&x=1").text == "ok /r"


def record_then_drop(sample_index, sim_backend, tmp_path, actions, drop) -> tuple[object, list[str]]:
    """Record ``actions`` against fresh mocks, delete the exchanges whose request matches ``drop``; the replay config."""
    serper, jina = MockSerper(sim_backend, KEY), MockJina(sim_backend, KEY)
    base = real_config(sample_index, serper, jina, tmp_path / "cache")
    env = gym.make("WebResearch-v0", config=replace(base, record_dir=str(tmp_path / "rec")))
    env.reset(seed=0)
    recorded = [env.step(a)[0] for a in actions]
    serper.close(), jina.close()
    dropped = [f for f in (tmp_path / "rec").glob("*.json") if drop(json.loads(f.read_text())["request"])]
    assert dropped
    for f in dropped:
        f.unlink()
    return replace(base, replay_dir=str(tmp_path / "rec")), recorded


def test_a_replay_miss_fails_the_run_instead_of_falling_back_to_the_index(
    sample_index, sim_backend, tmp_path, real_keys
):
    actions = [call("search", query=["Danube"]), call("search", query=["Paris"])]
    config, recorded = record_then_drop(
        sample_index, sim_backend, tmp_path, actions, lambda req: b"Paris" in base64.b64decode(req["body"])
    )
    env = gym.make("WebResearch-v0", config=config)
    env.reset(seed=0)
    assert env.step(actions[0])[0] == recorded[0]
    with pytest.raises(UpstreamError, match=r"serper: POST .*/search is not in the recording") as e:
        env.step(actions[1])
    assert e.value.fatal


def test_a_replayed_summariser_miss_fails_instead_of_using_the_extractor(
    sample_index, sim_backend, tmp_path, real_keys, monkeypatch, openai_stub
):
    monkeypatch.setenv("API_KEY", "k")
    monkeypatch.setenv("API_BASE", openai_stub.base_url)
    monkeypatch.setenv("SUMMARY_MODEL_NAME", "summary-model")
    openai_stub.reply = lambda req: json.dumps(
        {"rational": "r", "evidence": "quoted", "summary": "a summary of the page"}
    )
    actions = [call("visit", url=[WIKI + "Albert_Einstein"], goal="relativity")]
    config, recorded = record_then_drop(
        sample_index, sim_backend, tmp_path, actions, lambda req: req["target"].endswith("/chat/completions")
    )
    assert "quoted" in recorded[0]
    env = gym.make("WebResearch-v0", config=config)
    env.reset(seed=0)
    with pytest.raises(UpstreamError, match="summariser summary-model: .*not in the recording"):
        env.step(actions[0])


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ('{\n "key": "abc",\n "time_ns": 1,\n "request": {"meth', r"line 4, column \d+"),
        ('{"key": "abc", "time_ns": 1}', "not a recorded exchange.*KeyError: 'request'"),
    ],
)
def test_a_damaged_recording_names_the_file_and_the_line(tmp_path, content, named):
    rec = tmp_path / "rec"
    inner = httpx.MockTransport(lambda request: httpx.Response(200, text="ok"))
    with httpx.Client(transport=RecordingTransport(rec, inner)) as client:
        client.get("http://up/a")
    bad = rec / "zz-cut.json"
    bad.write_text(content)
    with pytest.raises(ConfigError, match=f"recording file {bad} .*{named}"):
        ReplayTransport(rec)


# -- byte parity with Tongyi ---------------------------------------------------------------------------


def test_an_empty_organic_list_prints_tongyis_zero_results_header(make_env, serper):
    env = make_env()
    env.reset(seed=0)
    serper.inject(Fault(kind="empty"), Fault(kind="empty"))
    obs, *_ = env.step(call("search", query=["zzqx"]))
    assert body(obs) == "A Google search for 'zzqx' found 0 results:\n\n## Web Results\n"
    obs, *_ = env.step(call("google_scholar", query=["zzqx"]))
    assert body(obs) == "A Google scholar for 'zzqx' found 0 results:\n\n## Scholar Results\n"
    serper.inject(
        Fault(body=b'{"searchParameters": {"q": "none"}, "credits": 1}')
    )  # no organic at all: Tongyi's no-results text
    obs, *_ = env.step(call("search", query=["none"]))
    assert body(obs) == "No results found for 'none'. Try with a more general query."


def test_an_empty_snippet_prints_its_empty_line(serper):
    serper.inject(
        Fault(
            body=json.dumps(
                {
                    "organic": [
                        {"title": "T", "link": "https://x.example", "snippet": ""},
                        {"title": "U", "link": "https://y.example"},
                    ]
                }
            ).encode()
        ),
        Fault(body=json.dumps({"organic": [{"title": "P", "snippet": ""}]}).encode()),
    )
    b = make_serper(serper)
    assert format_search("q", b.search("q", 10)) == (
        "A Google search for 'q' found 2 results:\n\n## Web Results\n"
        "1. [T](https://x.example)\n\n\n\n2. [U](https://y.example)\n"
    )
    assert format_scholar("q", b.scholar("q", 10)) == (
        "A Google scholar for 'q' found 1 results:\n\n## Scholar Results\n1. [P](no available link)\n\n"
    )


def test_a_text_cited_by_is_printed_as_given(serper):
    serper.inject(
        Fault(
            body=json.dumps(
                {
                    "organic": [
                        {"title": "P", "year": 2020, "citedBy": "1,234", "snippet": "s"},
                        {"title": "Q", "citedBy": 7},
                    ]
                }
            ).encode()
        )
    )
    assert format_scholar("q", make_serper(serper).scholar("q", 10)) == (
        "A Google scholar for 'q' found 2 results:\n\n## Scholar Results\n"
        "1. [P](no available link)\nDate published: 2020\ncitedBy: 1,234\n\ns"
        "\n\n"
        "2. [Q](no available link)\ncitedBy: 7\n"
    )
