"""Wikitext -> clean text, sections, links, categories, infobox (a fast pre-pass, then mwparserfromhell).

mwparserfromhell's tree builder is Python and most of an article is references, citation
templates and links, so a linear pre-pass (:mod:`wiki_index.parse.prepass`) first removes what never becomes text: comments,
``<ref>``/``<math>``/``<gallery>``-like elements, tables and templates (the first ``{{Infobox...}}``
and ``{{Short description|...}}`` are set aside; a few inline templates such as ``{{lang}}``,
``{{convert}}`` or ``{{birth date}}`` are kept and rendered). The page is split at its headings;
in each section wikilinks become their display text (targets and categories are recorded),
image links are dropped with their captions, external links become their label. mwparserfromhell
parses what is left (tags, kept templates) and the infobox.

Links are in order of first appearance (infobox links first), deduplicated, never the page
itself. Links inside ``<ref>``, comments, image captions and dropped boilerplate sections
("References", "External links", ...) are not recorded; categories are, wherever they are.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

import mwparserfromhell as mwp
from mwparserfromhell import nodes as N

from simweb_core.errors import WikiIndexError
from wiki_index.parse.prepass import DATES, FIRST_ARG, LISTS, norm_name, strip_comments_and_tags, strip_templates, tidy
from wiki_index.types import Page, Section, normalize_title

_OTHER_NS = frozenset(
    (
        "media|special|talk|user|user talk|wikipedia|wikipedia talk|wp|wt|project|project talk|file talk|image talk|"
        "mediawiki|mediawiki talk|template|template talk|help|help talk|category talk|portal|portal talk|book|book talk|"
        "draft|draft talk|education program|education program talk|timedtext|timedtext talk|module|module talk|gadget|"
        "gadget talk|gadget definition|gadget definition talk|topic|wikt|wiktionary|w|q|wikiquote|s|wikisource|b|"
        "wikibooks|n|wikinews|v|wikiversity|voy|wikivoyage|c|commons|m|meta|metawikimedia|species|wikispecies|d|"
        "wikidata|mw|mediawikiwiki|foundation|wmf|phab|doi|incubator|outreach"
    ).split("|")
)
DROP_SECTIONS = frozenset(
    "references|external links|further reading|notes|footnotes|citations|sources|bibliography|notes and references|"
    "references and notes|works cited|general references|general and cited references|cited sources|"
    "explanatory notes".split("|")
)
_LINK_RE = re.compile(r"\[\[|\]\]")
_SIMPLE_LINK_RE = re.compile(r"\[\[([^\[\]\n]*)\]\]")
_PREFIXED_LINK_RE = re.compile(r"\[\[[ \t]*([^\[\]|:\n]{1,40}?)[ \t]*:")
_EXT_LINK_RE = re.compile(
    r"\[(?:[a-zA-Z][a-zA-Z+.-]*:)?//[^\s\[\]]*(?:[ \t]+([^\[\]\n]*))?\]"  # [url label] -> label
    r"|(?<![\w/\[])(?:https?|ftp)://[^\s<>\[\]\"]*[^\s<>\[\]\".,;:!?)']"
)  # a bare URL, without trailing punctuation
_LANG_PREFIX = re.compile(r"^[a-z]{2,3}(?:-[a-z0-9]{2,8})*$|^simple$")
_BAD_TITLE = re.compile(r"[<>\[\]{}|\n]")
_HEADING_RE = re.compile(r"^(={1,6})(.+?)(={1,6})[ \t]*$", re.M)
_LIST_RE = re.compile(r"^[*#:;]+[ \t]*", re.M)
_MARKUP_RE = re.compile(r"[\[{<'&]|__")
_PARSE_RE = re.compile(r"[{<]")  # what still needs mwparserfromhell after the regex passes
_BREAK_TAGS = frozenset("br hr li dd dt p div tr blockquote poem center ul ol dl table".split())
_SKIP_TAGS = frozenset("table ref references math gallery timeline imagemap score".split())
_RANGE = frozenset(["-", "\u2013", "to", "and", "or", "by", "x", "\u00d7", "+/-"])

_norm_title = lru_cache(maxsize=1 << 16)(normalize_title)


@lru_cache(maxsize=1 << 16)
def _link_title(target: str) -> str:
    """The normalised link target, or ``""`` when it cannot be a title (``<``, ``{``, ``|`` ...)."""
    t = normalize_title(target)
    return "" if _BAD_TITLE.search(t) else t


class ParseTimeoutError(WikiIndexError):
    """A page is over :attr:`ParseConfig.max_chars` or took longer than :attr:`ParseConfig.time_limit_s`."""


@dataclass(frozen=True)
class Namespaces:
    """Lower-case namespace names that decide what a ``[[Prefix:...]]`` link is.

    Attributes:
        file: Image/file namespaces (the whole link, caption included, is dropped).
        category: Category namespaces (the link becomes a category of the page).
        other: Every other namespace or interwiki prefix (text kept, no link recorded).
    """

    file: frozenset[str] = frozenset({"file", "image", "media"})
    category: frozenset[str] = frozenset({"category"})
    other: frozenset[str] = _OTHER_NS

    @classmethod
    def from_siteinfo(cls, names: dict[int, str]) -> Namespaces:
        """Extend the English defaults with a dump's ``<namespaces>`` (key -> localised name)."""
        low = {k: v.strip().lower() for k, v in names.items() if v.strip()}
        return cls(
            file=cls.file | {low[k] for k in (6, -2) if k in low},
            category=cls.category | ({low[14]} if 14 in low else set()),
            other=cls.other | {v for k, v in low.items() if k not in (0, 6, -2, 14)},
        )


@dataclass(frozen=True)
class ParseConfig:
    """How :func:`parse_wikitext` treats one page.

    Attributes:
        time_limit_s: Wall-clock limit per page; a slower page raises :class:`ParseTimeoutError`.
        max_chars: Pages with more wikitext than this are rejected up front (:class:`ParseTimeoutError`).
        drop_sections: Section headings (lower-case) whose text and links are left out.
        namespaces: Namespace prefixes used to classify links.
    """

    time_limit_s: float = 5.0
    max_chars: int = 5_000_000
    drop_sections: frozenset[str] = DROP_SECTIONS
    namespaces: Namespaces = field(default_factory=Namespaces)


@dataclass(frozen=True)
class ParsedPage:
    """What :func:`parse_wikitext` extracts from one page (see :class:`wiki_index.types.Page`)."""

    sections: tuple[Section, ...]
    links: tuple[str, ...]
    categories: tuple[str, ...]
    infobox: dict[str, str]
    infobox_type: str
    description: str

    @property
    def text(self) -> str:
        """The whole clean text: the lead, then each section as ``heading\\ntext``, blank-line separated."""
        return "\n\n".join(p for p in (s.text if not s.title else f"{s.title}\n{s.text}" for s in self.sections) if p)

    def to_page(self, page_id: int, title: str, source: str = "dump") -> Page:
        """Build the :class:`Page` record for this parse."""
        return Page(
            page_id=page_id,
            title=title,
            text=self.text,
            sections=self.sections,
            links=self.links,
            categories=self.categories,
            infobox=self.infobox,
            infobox_type=self.infobox_type,
            description=self.description,
            source=source,
        )


class _Ctx:
    """Per-page state: the deadline and the links and categories collected so far."""

    def __init__(self, title: str, cfg: ParseConfig) -> None:
        self.title, self.cfg, self.deadline = normalize_title(title), cfg, time.perf_counter() + cfg.time_limit_s
        self.links: dict[str, None] = {}
        self.categories: dict[str, None] = {}

    def check(self) -> None:
        if time.perf_counter() > self.deadline:
            raise ParseTimeoutError(f"parsing {self.title!r} took longer than {self.cfg.time_limit_s}s")


def _template_text(tpl: N.Template, ctx: _Ctx) -> str:
    """What a kept template shows: ``{{lang|fr|x}}`` -> ``x``, ``{{convert|5|km}}`` -> ``5 km``,
    ``{{birth date|1879|3|14}}`` -> ``1879-03-14``, list templates -> ``"a, b"``; others ``""``."""
    raw = str(tpl.name).strip()
    low = norm_name(raw).lower()
    args = [p.value for p in tpl.params if not p.showkey]

    def arg(i: int) -> str:
        return _clean_fragment(str(args[i]), ctx) if 0 <= i < len(args) else ""

    if low == "lang":
        return arg(1)
    if low.startswith("lang-") or low in FIRST_ARG:
        return arg(0)
    if low in ("transl", "transliteration"):
        return arg(len(args) - 1)
    if low.startswith("formatnum:"):
        return _clean_fragment(raw.split(":", 1)[1], ctx)
    if low in ("circa", "c."):
        return ("c. " + arg(0)).strip()
    if low in ("convert", "cvt"):
        vals = [arg(i) for i in range(min(len(args), 4))]
        return " ".join(vals if len(vals) == 4 and vals[1] in _RANGE else vals[:2])
    if low in DATES:
        nums = [str(a).strip() for a in args if str(a).strip().isdigit()][:3]
        return "-".join([nums[0]] + [n.zfill(2) for n in nums[1:]]) if nums else arg(0)
    if low in LISTS:
        return ", ".join(i for i in (arg(k).replace("\n", ", ") for k in range(len(args))) if i)
    return "|" if low == "!" else ""


def _drop_files(s: str, ctx: _Ctx) -> str:
    """Remove ``[[File:...]]``/``[[Image:...]]`` links, nested caption links included."""
    out, pos = [], 0
    for m in _PREFIXED_LINK_RE.finditer(s):
        if m.start() < pos or " ".join(m.group(1).replace("_", " ").split()).lower() not in ctx.cfg.namespaces.file:
            continue
        depth = 0
        for t in _LINK_RE.finditer(s, m.start()):
            depth += 1 if t.group() == "[[" else -1
            if depth == 0:
                out.append(s[pos : m.start()])
                pos = t.end()
                break
    return "".join(out) + s[pos:] if out else s


def _resolve_links(s: str, ctx: _Ctx, record: bool = True) -> str:
    """Replace wikilinks by their display text, recording categories and (if ``record``) link targets.

    Links are resolved innermost first: a label that holds links takes a second pass.
    """
    if "[[" not in s:
        return s
    s = _drop_files(s, ctx) if ":" in s else s
    ns = ctx.cfg.namespaces

    def repl(m: re.Match) -> str:
        target, pipe, label = m.group(1).partition("|")
        target = rest = target.strip()
        linkable = True
        if ":" in target:
            colon = target.startswith(":")  # [[:Category:X]] links to the category page
            target = target.lstrip(":").strip()
            prefix, _, rest = target.partition(":")
            pre = " ".join(prefix.replace("_", " ").split()).lower()
            if not colon and pre in ns.category:
                if cat := _norm_title(rest):
                    ctx.categories.setdefault(cat, None)
                return ""
            if not colon and (pre in ns.file or _LANG_PREFIX.match(prefix.strip())):
                return ""  # an image inside a label, or an interlanguage link (not shown)
            linkable = pre not in ns.other and pre not in ns.category and pre not in ns.file
            rest = target if linkable else rest
        if record and linkable and (t := _link_title(target)) and t != ctx.title:
            ctx.links.setdefault(t, None)
        if pipe and not label.strip():  # pipe trick: [[Paris, Texas|]] -> "Paris"
            label = re.sub(r"\s*\(.*\)\s*$", "", rest).split(",")[0]
        return label if pipe else target

    for _ in range(4):
        s, n = _SIMPLE_LINK_RE.subn(repl, s)
        if not n or "[[" not in s:
            break
    return s


def _walk(nodes: list, out: list[str], ctx: _Ctx) -> None:
    """Append the plain text of mwparserfromhell nodes to ``out``."""
    for node in nodes:
        t = type(node)
        if t is N.Text:
            out.append(node.value)
        elif t is N.Tag:
            tag = str(node.tag).strip().lower()
            if node.self_closing or node.contents is None:
                out.append("\n" if tag in _BREAK_TAGS else "")
            elif tag not in _SKIP_TAGS:
                out.append("\n" if tag in _BREAK_TAGS else "")
                _walk(node.contents.nodes, out, ctx)
                out.append("\n" if tag in _BREAK_TAGS else "")
        elif t is N.HTMLEntity:
            out.append(node.normalize())
        elif t is N.ExternalLink and node.title is not None:
            _walk(node.title.nodes, out, ctx)
        elif t is N.Wikilink:  # only left when mwparserfromhell built one inside a kept template
            out.append(_resolve_links(str(node), ctx))
        elif t is N.Template:
            out.append(_template_text(node, ctx))
        elif t is N.Heading:
            out.append("\n")
            _walk(node.title.nodes, out, ctx)
            out.append("\n")


def _clean_fragment(src: str, ctx: _Ctx) -> str:
    """Clean a small fragment (a heading, a template argument) to plain text."""
    if not _MARKUP_RE.search(src):
        return tidy(src)
    out: list[str] = []
    _walk(mwp.parse(_resolve_links(strip_templates(src, None), ctx), skip_style_tags=True).nodes, out, ctx)
    return tidy("".join(out))


def _infobox(src: str, ctx: _Ctx) -> tuple[str, dict[str, str]]:
    """Parse the infobox template into ``(type, {param: clean value})``, empty values dropped."""
    tpls = mwp.parse(_resolve_links(src, ctx), skip_style_tags=True).filter_templates(recursive=False)
    fields: dict[str, str] = {}
    for p in tpls[0].params if tpls else ():
        out: list[str] = []
        _walk(p.value.nodes, out, ctx)
        key, value = " ".join(str(p.name).split()), " ".join(tidy("".join(out)).split("\n"))
        if key and value:
            fields[key] = value
    return (norm_name(str(tpls[0].name)), fields) if tpls else ("", {})


def _sections(s: str, ctx: _Ctx) -> Iterator[Section]:
    """Split at headings and clean each section; boilerplate ones (and their subsections) only give categories."""
    heads = [(m.start(), m.end(), len(m.group(1)), m.group(2), len(m.group(3))) for m in _HEADING_RE.finditer(s)]
    dropping: int | None = None  # level of the dropped heading we are under
    for k in range(len(heads) + 1):
        ctx.check()
        if k == 0:
            title, level, body = "", 0, s[: heads[0][0] if heads else len(s)]
        else:
            _, end, left, raw, right = heads[k - 1]
            level = min(left, right)  # "==a===" is a level-2 heading "a="
            title = " ".join(_clean_fragment("=" * (left - level) + raw + "=" * (right - level), ctx).split())
            body = s[end : heads[k][0] if k < len(heads) else len(s)]
            if dropping is not None and level <= dropping:
                dropping = None
            if dropping is None and title.lower() in ctx.cfg.drop_sections:
                dropping = level
        if dropping is not None:
            _resolve_links(body, ctx, record=False)
            continue
        body = _LIST_RE.sub("", _resolve_links(body, ctx))
        body = _EXT_LINK_RE.sub(lambda m: m.group(1) or "", body) if "//" in body else body
        if _PARSE_RE.search(body):
            out: list[str] = []
            _walk(mwp.parse(body, skip_style_tags=True).nodes, out, ctx)
            body = "".join(out)
        elif "&" in body:
            body = html.unescape(body)
        yield Section(title, level, tidy(body))


def parse_wikitext(title: str, wikitext: str, config: ParseConfig | None = None) -> ParsedPage:
    """Parse one article's wikitext.

    The time limit is checked between stages (cooperatively); to also interrupt a single slow
    stage, run the call under :func:`wiki_index.sources.base.time_limit` as the sources do.

    Args:
        title: The page title (self-links to it are not recorded).
        wikitext: The raw wikitext (XML entities already decoded).
        config: Time limit, size limit, dropped sections, namespaces.

    Returns:
        The clean sections (the lead first, with title ``""`` and level 0; empty sections
        after it are left out), links, categories, infobox and short description.

    Raises:
        ParseTimeoutError: The page is larger than ``max_chars`` or took longer than ``time_limit_s``.
    """
    cfg = config or ParseConfig()
    if len(wikitext) > cfg.max_chars:
        raise ParseTimeoutError(f"{title!r} has {len(wikitext):,} chars of wikitext, over max_chars={cfg.max_chars:,}")
    ctx = _Ctx(title, cfg)
    found: dict[str, str] = {}
    s = strip_comments_and_tags(wikitext)
    ctx.check()
    s = strip_templates(s, found)
    ctx.check()
    ib_type, infobox = _infobox(found["infobox"], ctx) if "infobox" in found else ("", {})
    description = ""
    if tpl := mwp.parse(found.get("description", "")).filter_templates(recursive=False):
        description = _clean_fragment(str(tpl[0].get(1).value), ctx) if tpl[0].has(1) else ""
        description = "" if description.lower() == "none" else " ".join(description.split())
    sections = list(_sections(s, ctx))
    body = tuple(sec for sec in sections[1:] if sec.text)
    return ParsedPage((sections[0],) + body, tuple(ctx.links), tuple(ctx.categories), infobox, ib_type, description)
