"""wiki_index.parse.wikitext on real articles of the gensim enwiki dump and on small crafted pages."""

from __future__ import annotations

import bz2
import time
import xml.etree.ElementTree as ET

import pytest

from wiki_index.parse.wikitext import Namespaces, ParseConfig, ParseTimeoutError, parse_wikitext
from wiki_index.sources.base import time_limit
from wiki_index.sources.dump import RawPage, Skip, process_page

MARKUP = ("<ref", "</ref", "{{", "}}", "[[", "]]", "cite journal", "thumb|", "<!--", "'''")


@pytest.fixture(scope="module")
def raw_pages(gensim_dump) -> dict[str, str]:
    """Title -> raw wikitext of the dump's articles, read with the standard library only."""
    out, title = {}, None
    with bz2.open(gensim_dump) as f:
        for _, el in ET.iterparse(f):
            tag = el.tag.rpartition("}")[2]
            if tag == "title":
                title = el.text
            elif tag == "text" and el.text and not el.text.lstrip().lower().startswith("#redirect"):
                out[title] = el.text
    return out


@pytest.fixture(scope="module")
def anarchism(raw_pages):
    return parse_wikitext("Anarchism", raw_pages["Anarchism"])


@pytest.fixture(scope="module")
def alabama(raw_pages):
    return parse_wikitext("Alabama", raw_pages["Alabama"])


def test_anarchism_text_is_clean(anarchism):
    assert anarchism.text.startswith("Anarchism is a political philosophy that advocates self-governed societies")
    for bad in MARKUP:
        assert bad not in anarchism.text, bad
    # an image caption ([[File:ChicagoAnarchists.jpg|...A sympathetic engraving by [[Walter Crane]]...]]) is dropped
    assert "sympathetic engraving" not in anarchism.text


def test_anarchism_links(anarchism):
    links = anarchism.links
    # "'''Anarchism''' is a [[political philosophy]] that advocates [[self-governance|self-governed]]
    #  societies ... described as [[stateless society|stateless societies]]"
    assert links[:3] == ("Political philosophy", "Self-governance", "Stateless society")
    assert {"Pierre-Joseph Proudhon", "Mikhail Bakunin", "Anarcho-syndicalism", "State (polity)"} <= set(links)
    assert len(links) == len(set(links))
    assert "Anarchism" not in links  # no self-link
    assert "Walter Crane" not in links  # only linked from an image caption
    assert "Growing Up Absurd" not in links  # only linked inside an HTML comment
    assert not [t for t in links if t.split(":")[0].lower() in ("file", "image", "category", "wikt")]


def test_anarchism_categories_and_sections(anarchism):
    assert anarchism.categories[0] == "Anarchism"  # [[Category:Anarchism| ]]: the sort key is dropped
    assert "Political ideologies" in anarchism.categories
    secs = [(s.title, s.level) for s in anarchism.sections]
    assert secs[0] == ("", 0)
    for want in [("Etymology and terminology", 2), ("Origins", 3), ("Mutualism", 4), ("Collectivist anarchism", 5)]:
        assert want in secs
    assert secs.index(("Etymology and terminology", 2)) < secs.index(("Origins", 3))
    assert not {"References", "External links", "Further reading"} & {t for t, _ in secs}
    assert all(s.text for s in anarchism.sections)
    assert "\n\nEtymology and terminology\nThe term anarchism is a compound word" in anarchism.text


def test_alabama_infobox(alabama):
    assert alabama.infobox_type == "Infobox U.S. state"
    box = alabama.infobox
    assert box["Capital"] == "Montgomery"  # |Capital = [[Montgomery, Alabama|Montgomery]]
    assert box["Governor"] == "Robert J. Bentley (R)"
    assert box["PostalAbbreviation"] == "AL"
    assert box["Demonym"] == "Alabaman or Alabamian"  # the <ref>{{cite web...}}</ref> after it is gone
    assert all(v.strip() for v in box.values())
    assert "Montgomery, Alabama" in alabama.links
    assert "Infobox" not in alabama.text and "Yellowhammer" in alabama.text
    assert ("Etymology", 2) in [(s.title, s.level) for s in alabama.sections]


def test_every_real_article_parses_cleanly(raw_pages):
    assert len(raw_pages) == 106
    for title, text in raw_pages.items():
        page = parse_wikitext(title, text)
        assert page.sections and page.sections[0].title == "", title
        assert page.text, title
        assert "<ref" not in page.text and "[[" not in page.text, title


CRAFTED = """{{Short description|Test city in Examplia}}
{{Infobox settlement
| name = Foo
| founded = {{start date|1850|3|7}}
| area = {{convert|12|km2}}
| leader = [[Jane Doe]]<ref>{{cite web|title=x}}</ref>
| empty =
}}
'''Foo''' ({{lang|de|Fuh}}) is a [[city]] in [[Examplia (country)|Examplia]].<!-- hidden [[Secret]] -->
It is on the [[River Bar|]] near [[Foo]] (self) and [[:Category:Towns|the towns list]].
See [http://example.com the site] or http://example.com/bare. Tags: <nowiki>[[not a link]]</nowiki>.
[[File:Foo.jpg|thumb|A caption with [[Hidden Link]]]]
{| class="wikitable"
| cell with [[Table Link]]
|}
Unbalanced {{ braces stay.
== History ==
Founded in {{birth date|1850|3|7}}; see [[wikt:foo|foo]] and [[History of Foo#Early|early history]].
=== Early ===
Short.
== References ==
{{reflist}}
* [[Referenced Book]]
[[Category:Cities|Foo]]
[[Category:Examples]]
[[de:Foo]]
"""


def test_crafted_page():
    p = parse_wikitext("Foo", CRAFTED)
    assert p.description == "Test city in Examplia"
    assert p.infobox_type == "Infobox settlement"
    assert p.infobox == {"name": "Foo", "founded": "1850-03-07", "area": "12 km2", "leader": "Jane Doe"}
    assert p.links == ("Jane Doe", "City", "Examplia (country)", "River Bar", "History of Foo")
    assert p.categories == ("Cities", "Examples")
    lead = p.sections[0].text
    assert lead.startswith("Foo (Fuh) is a city in Examplia.")
    assert "on the River Bar near Foo (self) and the towns list." in lead
    assert "See the site or." in lead and "http" not in lead
    assert "[[not a link]]" in lead
    assert "caption" not in lead and "cell" not in lead
    assert "Unbalanced {{ braces stay." in lead
    assert [(s.title, s.level, s.text) for s in p.sections[1:]] == [
        ("History", 2, "Founded in 1850-03-07; see foo and early history."),
        ("Early", 3, "Short."),
    ]


def test_localised_namespaces_from_siteinfo():
    ns = Namespaces.from_siteinfo({6: "Datei", 14: "Kategorie", 10: "Vorlage"})
    p = parse_wikitext(
        "X",
        "Text [[Datei:a.png|thumb|cap]] [[Vorlage:Foo]] [[Berlin]].\n[[Kategorie:Städte]]",
        ParseConfig(namespaces=ns),
    )
    assert p.categories == ("Städte",)
    assert p.links == ("Berlin",)
    assert "cap" not in p.text


def test_time_limit_and_size_limit(raw_pages):
    with pytest.raises(ParseTimeoutError):
        parse_wikitext("Anarchism", raw_pages["Anarchism"], ParseConfig(time_limit_s=1e-9))
    with pytest.raises(ParseTimeoutError, match="max_chars"):
        parse_wikitext("Anarchism", raw_pages["Anarchism"], ParseConfig(max_chars=1000))


def test_pathological_page_is_cut_off():
    """A page that makes mwparserfromhell crawl is interrupted at the time limit, not hours later."""
    t0 = time.perf_counter()
    with pytest.raises(ParseTimeoutError):
        with time_limit(0.5, lambda: ParseTimeoutError("slow")):
            parse_wikitext("X", "<span>" * 100_000, ParseConfig(time_limit_s=0.5))
    assert time.perf_counter() - t0 < 10
    # the sources do the same, and count the page instead of failing
    skip = process_page(RawPage("X", 0, 1, None, "<span>" * 100_000), ParseConfig(time_limit_s=0.5))
    assert isinstance(skip, Skip) and skip.reason == "parse_timeout"


def test_time_limit_restores_an_outer_timer():
    import signal

    fired = []
    old = signal.signal(signal.SIGALRM, lambda *_: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with time_limit(5, lambda: ParseTimeoutError("x")):
            parse_wikitext("X", "short [[page]]")
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 0.3
        time.sleep(0.5)
        assert fired == [1]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize(
    "text",
    [
        "{{" * 100_000,
        "[[" * 100_000,
        "<ref>" * 100_000,
        "<!--" * 100_000,
        "a|}" * 100_000,
        "{{a|" * 30_000 + "}}" * 30_000,
    ],
)
def test_unbalanced_markup_is_linear(text):
    cpu0 = time.process_time()  # CPU time, so a busy machine does not fail it
    parse_wikitext("X", text, ParseConfig(time_limit_s=30))
    assert time.process_time() - cpu0 < 5


def test_parser_exception_becomes_a_counted_skip():
    """Any exception inside the parser (here: a broken config) skips the page with the reason and error."""
    skip = process_page(RawPage("X", 0, 1, None, "a [[File:x.png]] b"), ParseConfig(namespaces=None))
    assert isinstance(skip, Skip) and skip.reason == "parse_error" and "AttributeError" in skip.detail
