import subprocess
import sys

from wiki_index import Page, normalize_title, title_to_url
from wiki_index.parse.text import first_sentence, split_sentences


def test_normalize_title():
    assert normalize_title("united_states#History") == "United states"
    assert normalize_title("  Albert   Einstein ") == "Albert Einstein"
    assert normalize_title(":Category_talk:x") == "Category talk:x"
    assert normalize_title("") == ""


def test_title_to_url_is_real_wikipedia_url():
    assert title_to_url("Albert Einstein") == "https://en.wikipedia.org/wiki/Albert_Einstein"
    assert title_to_url("AC/DC") == "https://en.wikipedia.org/wiki/AC/DC"
    assert title_to_url("Café") == "https://en.wikipedia.org/wiki/Caf%C3%A9"


def test_page_defaults_and_first_sentence():
    p = Page(page_id=1, title="Anarchism", text="Anarchism is a philosophy. It is old.")
    assert p.url.endswith("/Anarchism")
    assert p.first_sentence == "Anarchism is a philosophy."


def test_split_sentences_keeps_abbreviations():
    s = split_sentences("Dr. Smith went to St. Louis in 1990. He met J. Doe there! Then he left.")
    assert s == ["Dr. Smith went to St. Louis in 1990.", "He met J. Doe there!", "Then he left."]
    assert first_sentence("") == ""


def test_import_is_light():
    code = "import sys, wiki_index; print(any(m in sys.modules for m in ('torch', 'pyserini', 'jnius')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_url_to_title_variants():
    from wiki_index.types import url_to_title

    assert url_to_title("https://en.wikipedia.org/wiki/Albert_Einstein") == "Albert Einstein"
    assert url_to_title("https://en.m.wikipedia.org/wiki/albert_einstein#Life") == "Albert einstein"
    assert url_to_title("en.wikipedia.org/wiki/Caf%C3%A9") == "Café"
    assert url_to_title("https://en.wikipedia.org/w/index.php?title=AC/DC&oldid=1") == "AC/DC"
    assert url_to_title("https://example.com/wiki/Albert_Einstein") is None
    assert url_to_title("https://en.wikipedia.org/") is None
    assert url_to_title("http://[::1") is None
    assert url_to_title(title_to_url("Café (film)")) == "Café (film)"
