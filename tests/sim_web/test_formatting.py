"""The Tongyi wire formats, pinned with literal strings derived from upstream's code.

Each expected string below was worked out by hand from github.com/Alibaba-NLP/DeepResearch
``inference/tool_search.py`` (``google_search_with_serp``), ``tool_scholar.py``
(``google_scholar_with_serp``), ``tool_visit.py`` (``readpage_jina`` + ``call``'s strip) and
``react_agent.py`` (the ``<tool_response>`` wrapper) for the Serper / Jina replies noted.
"""

from __future__ import annotations

import pytest

from sim_web.protocol.formatting import (
    format_scholar,
    format_search,
    format_tool_response,
    format_unavailable,
    format_visit,
    format_visits,
    join_observations,
    truncate,
)
from sim_web.protocol.results import ScholarResult, SearchResult, VisitResult


def test_search_all_fields_and_missing_fields() -> None:
    # Serper organic: [{title, link, snippet, date, source}, {title, link, snippet}, {title, link}]
    results = [
        SearchResult(
            title="Paris - Wikipedia",
            link="https://en.wikipedia.org/wiki/Paris",
            snippet="Paris is the capital of France.",
            date="Mar 3, 2024",
            source="Wikipedia",
        ),
        SearchResult(title="Paris travel", link="https://example.org/paris", snippet="Visit Paris."),
        SearchResult(title="No snippet", link="https://example.org/x"),
    ]
    assert format_search("capital of France", results) == (
        "A Google search for 'capital of France' found 3 results:\n\n## Web Results\n"
        "1. [Paris - Wikipedia](https://en.wikipedia.org/wiki/Paris)\nDate published: Mar 3, 2024\nSource: Wikipedia\n"
        "\nParis is the capital of France."
        "\n\n"
        "2. [Paris travel](https://example.org/paris)\n\nVisit Paris."
        "\n\n"
        "3. [No snippet](https://example.org/x)\n"
    )


def test_search_source_without_date_and_video_boilerplate_removed() -> None:
    results = [
        SearchResult(
            title="Clip",
            link="https://v.example/1",
            source="YouTube",
            snippet="Your browser can't play this video. Learn more",
        )
    ]
    assert format_search("q", results) == (
        "A Google search for 'q' found 1 results:\n\n## Web Results\n"
        "1. [Clip](https://v.example/1)\nSource: YouTube\n\n Learn more"
    )


def test_search_no_results_and_quotes_echoed_verbatim() -> None:
    assert format_search("who's 'there'", []) == "No results found for 'who's 'there''. Try with a more general query."


def test_several_queries_joined() -> None:
    a = format_search("a", [SearchResult("A", "https://a")])
    b = format_search("b", [])
    assert join_observations([a, b]) == (
        "A Google search for 'a' found 1 results:\n\n## Web Results\n1. [A](https://a)\n"
        "\n=======\n"
        "No results found for 'b'. Try with a more general query."
    )


def test_scholar_all_fields() -> None:
    r = ScholarResult(
        title="Attention Is All You Need",
        pdf_url="https://arxiv.org/pdf/1706.03762",
        link="https://arxiv.org/abs/1706.03762",
        publication_info="A Vaswani, N Shazeer - NeurIPS, 2017",
        year=2017,
        cited_by=100000,
        snippet="The dominant sequence transduction models ...",
    )
    assert format_scholar("transformer", [r]) == (
        "A Google scholar for 'transformer' found 1 results:\n\n## Scholar Results\n"
        "1. [Attention Is All You Need](pdfUrl: https://arxiv.org/pdf/1706.03762)"
        "\npublicationInfo: A Vaswani, N Shazeer - NeurIPS, 2017\nDate published: 2017\ncitedBy: 100000\n"
        "\nThe dominant sequence transduction models ..."
    )


def test_scholar_minimal_fields_and_link_not_printed() -> None:
    # upstream prints only pdfUrl; a landing-page link alone gives "no available link"
    results = [
        ScholarResult(
            title="Anarchism",
            link="https://en.wikipedia.org/wiki/Anarchism",
            publication_info="Wikipedia",
            snippet="Anarchism is a political philosophy.",
        ),
        ScholarResult(title="Bare", year="2001"),
    ]
    assert format_scholar("anarchism", results) == (
        "A Google scholar for 'anarchism' found 2 results:\n\n## Scholar Results\n"
        "1. [Anarchism](no available link)\npublicationInfo: Wikipedia\n\nAnarchism is a political philosophy."
        "\n\n"
        "2. [Bare](no available link)\nDate published: 2001\n"
    )
    assert format_scholar("x", []) == "No results found for 'x'. Try with a more general query."


def test_visit_ok_and_inaccessible() -> None:
    ok = VisitResult(
        url="https://en.wikipedia.org/wiki/Paris",
        goal="population",
        ok=True,
        evidence="Paris has 2.1 million residents.",
        summary="About 2.1 million people live in Paris.",
    )
    assert format_visit(ok) == (
        "The useful information in https://en.wikipedia.org/wiki/Paris for user goal population as follows: \n\n"
        "Evidence in page: \nParis has 2.1 million residents.\n\n"
        "Summary: \nAbout 2.1 million people live in Paris.\n\n"
    )
    bad = VisitResult(url="https://nowhere.invalid/x", goal="anything", ok=False, evidence="ignored")
    assert format_visit(bad) == (
        "The useful information in https://nowhere.invalid/x for user goal anything as follows: \n\n"
        "Evidence in page: \nThe provided webpage content could not be accessed. Please check the URL or file format.\n\n"
        "Summary: \nThe webpage content could not be processed, and therefore, no information is available.\n\n"
    )


def test_visits_joined_then_stripped() -> None:
    a = VisitResult(url="u1", goal="g", ok=True, evidence="e1", summary="s1")
    b = VisitResult(url="u2", goal="g", ok=True, evidence="e2", summary="s2")
    assert format_visits([a, b]) == (
        "The useful information in u1 for user goal g as follows: \n\nEvidence in page: \ne1\n\nSummary: \ns1\n\n"
        "\n=======\n"
        "The useful information in u2 for user goal g as follows: \n\nEvidence in page: \ne2\n\nSummary: \ns2"
    )
    assert (
        format_visits([a])
        == "The useful information in u1 for user goal g as follows: \n\nEvidence in page: \ne1\n\nSummary: \ns1"
    )


def test_degradation_texts() -> None:
    assert format_unavailable("search", "q") == "Google search Timeout, return None, Please try again later."
    assert format_unavailable("google_scholar", "q") == "Google Scholar Timeout, return None, Please try again later."
    assert format_unavailable("scholar", "q") == "Google Scholar Timeout, return None, Please try again later."
    assert format_unavailable("visit", "https://x", "g") == format_visit(
        VisitResult(url="https://x", goal="g", ok=False)
    )
    with pytest.raises(ValueError, match="expected tool 'search'"):
        format_unavailable("browse", "q")


def test_tool_response_wrapper() -> None:
    assert format_tool_response("hello") == "<tool_response>\nhello\n</tool_response>"
    assert format_tool_response("") == "<tool_response>\n\n</tool_response>"


def test_truncate_keeps_limit_and_says_how_much() -> None:
    text = "x" * 1000
    out = truncate(text, 200)
    assert len(out) <= 200
    prefix, marker = out.split("\n[... ", 1)
    assert prefix == text[: len(prefix)] and len(prefix) > 100
    assert marker == f"{1000 - len(prefix)} characters truncated ...]"
    assert truncate("short", 200) == "short"
    assert truncate(text, 1000) == text
    with pytest.raises(ValueError, match=">= 64"):
        truncate(text, 10)
