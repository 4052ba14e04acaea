"""The records that flow through :mod:`wiki_index`: pages, passages and search hits."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote

WIKI_URL_PREFIX = "https://en.wikipedia.org/wiki/"


def normalize_title(title: str) -> str:
    """Normalise a MediaWiki title the way MediaWiki does for the main namespace.

    Underscores become spaces, runs of whitespace collapse, the ``#fragment`` is dropped
    and the first letter is upper-cased.

    Args:
        title: A raw title or link target, e.g. ``"united_states#History"``.

    Returns:
        The canonical title, e.g. ``"United states"``; ``""`` for an empty target.
    """
    title = title.split("#", 1)[0].replace("_", " ")
    title = " ".join(title.split())
    if title.startswith(":"):
        title = title[1:].lstrip()
    return title[:1].upper() + title[1:]


_QUALIFIER = re.compile(r"\s*\([^)]*\)$")


def bare_title(title: str) -> str:
    """The title without its trailing bracketed qualifier, as a reader names the page.

    >>> bare_title("Georgia (country)")
    'Georgia'
    """
    return _QUALIFIER.sub("", title)


def title_to_url(title: str) -> str:
    """Return the real English Wikipedia URL of a page title."""
    return WIKI_URL_PREFIX + quote(title.replace(" ", "_"), safe="/:()',!*$;@&=+-._~")


@dataclass(frozen=True)
class Section:
    """One section of a page: its heading (``""`` for the lead), level and clean text."""

    title: str
    level: int
    text: str


@dataclass(frozen=True)
class Passage:
    """A retrieval unit: a ~100-word chunk of one page.

    ``text`` is the chunk body without the title; retrieval indexes ``title + "\\n" + text``.
    """

    docid: str
    page_id: int
    title: str
    text: str
    section: str = ""
    ordinal: int = 0

    @property
    def contents(self) -> str:
        """The text that the retrievers index: the title on the first line, then the chunk."""
        return f"{self.title}\n{self.text}"


@dataclass(frozen=True)
class Page:
    """One article, parsed into clean text with its structure.

    Attributes:
        page_id: Stable numeric id (the dump's page id, or assigned in input order).
        title: Canonical title (see :func:`normalize_title`).
        url: The real Wikipedia URL of the page.
        text: Clean plain text of the whole page, sections separated by blank lines.
        sections: The sections in page order; the first is the lead (title ``""``).
        links: Outgoing wikilink targets, normalised, in order of first appearance, no duplicates.
        categories: Category names without the ``Category:`` prefix.
        infobox: Infobox fields, key -> clean value text.
        infobox_type: The infobox template name (e.g. ``"Infobox country"``), or ``""``.
        description: A short description when the source has one.
        source: Which source produced the page (``"dump"``, ``"lead"``, ``"jsonl"``).
        passages: Pre-chunked passages (JSONL corpora keep their own ids); empty means chunk ``text``.
    """

    page_id: int
    title: str
    text: str
    url: str = ""
    sections: tuple[Section, ...] = ()
    links: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    infobox: dict[str, str] = field(default_factory=dict, hash=False, compare=True)
    infobox_type: str = ""
    description: str = ""
    source: str = ""
    passages: tuple[Passage, ...] = ()

    def __post_init__(self) -> None:
        if not self.url:
            object.__setattr__(self, "url", title_to_url(self.title))

    @property
    def lead(self) -> str:
        """The lead section text (everything before the first heading)."""
        return self.sections[0].text if self.sections else self.text

    @property
    def first_sentence(self) -> str:
        """The first sentence of the lead (a simple, abbreviation-aware split)."""
        from wiki_index.parse.text import first_sentence

        return first_sentence(self.lead)


@dataclass(frozen=True)
class Hit:
    """One search result: a passage id and its score (higher is better)."""

    docid: str
    score: float


_WIKI_HOSTS = ("en.wikipedia.org", "en.m.wikipedia.org", "wikipedia.org", "www.wikipedia.org")


def url_to_title(url: str) -> str | None:
    """Return the page title a Wikipedia URL points to, or ``None`` for a non-Wikipedia URL.

    Handles ``https``/``http``/no scheme, ``en.m.`` hosts, percent-encoding, underscores,
    ``#fragment`` and ``?query``, ``/w/index.php?title=...``, and the case of the first letter.

    Args:
        url: e.g. ``"https://en.m.wikipedia.org/wiki/Albert_einstein#Life"``.

    Returns:
        The normalised title (``"Albert einstein"``), or ``None``.
    """
    from urllib.parse import parse_qs, unquote, urlsplit

    url = url.strip()
    if "://" not in url:
        url = "https://" + url
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if (parts.hostname or "").lower() not in _WIKI_HOSTS:
        return None
    if parts.path.startswith("/wiki/"):
        raw = parts.path[len("/wiki/") :]
    elif parts.path in ("/w/index.php", "/index.php"):
        raw = (parse_qs(parts.query).get("title") or [""])[0]
    else:
        return None
    title = normalize_title(unquote(raw))
    return title or None
