"""The linear pre-pass of :mod:`wiki_index.parse.wikitext`: what never becomes text goes before mwparserfromhell runs.

Comments, ``<ref>``/``<math>``/``<gallery>``-like elements, tables and templates are removed in one scan each
(balanced ``{{...}}`` and ``{|...|}`` spans found with a stack, closing tags matched without rescans); the
first infobox and short description are set aside, and the few inline templates that render text
(``FIRST_ARG``, ``DATES``, ``LISTS``, ``OTHER_KEPT``; ``wikitext._template_text`` renders them) stay for
the parser. :func:`tidy` cleans the text the parser leaves.
"""

from __future__ import annotations

import re

TAG_RE = re.compile(
    r"<(/?)(ref|references|gallery|timeline|imagemap|math|chem|ce|score|graph|mapframe|maplink|"
    r"templatedata|templatestyles|hiero|inputbox|categorytree|syntaxhighlight|source)\b"
    r"([^<>]{0,2000}?)(/?)>",
    re.I,
)
NOWIKI_RE = re.compile(r"<nowiki\s*>(.*?)</nowiki\s*>|<nowiki\s*/>", re.I | re.S)
BRACE_RE = re.compile(r"\{[{|]|\}\}|\|(?=\})")  # {{ }} and table {| |} tokens
PUNCT_LINE = re.compile(r"^[\W_]*$")
TIDY = [  # (triggers, pattern, replacement): runs only when a trigger substring occurs (None: always)
    (("''", "__", "\u200b"), re.compile(r"''+|__[A-Z]+__|\u200b"), ""),
    (None, re.compile(r"[\t\r\f\v\xa0\u2000-\u200a\u202f\u205f\u3000]"), " "),
    (("  ",), re.compile(r" {2,}"), " "),
    (("(",), re.compile(r"\( ?(?:[,;:.\u2013-] ?)*\)"), ""),  # "( ; )" left by dropped templates
    (("(",), re.compile(r"\( ?[,;] ?"), "("),
    ((" ",), re.compile(r" ([,.;:!?)\]])"), r"\1"),
    (("( ", "[ "), re.compile(r"([(\[]) "), r"\1"),
    (("  ",), re.compile(r" {2,}"), " "),
]
# inline templates that render text (see wikitext._template_text); every other template is dropped
FIRST_ARG = frozenset(
    "nowrap nobr small smaller big larger em strong nobold noitalic sc smallcaps serif abbr var "
    "mvar marriage keypress".split()
)
DATES = frozenset(
    "birth date|death date|start date|end date|birth date and age|death date and age|birth year and age|"
    "death year and age|start date and age|end date and age|dob|dts|film date|release date|date".split("|")
)
LISTS = frozenset(
    "plainlist|plain list|flatlist|flat list|ubl|unbulleted list|hlist|bulleted list|collapsible list|"
    "ordered list|cslist|bulleted".split("|")
)
OTHER_KEPT = frozenset(["lang", "convert", "cvt", "circa", "c.", "!", "transl", "transliteration"])


def strip_comments_and_tags(s: str) -> str:
    """Remove comments (an unclosed one runs to the end, as in MediaWiki) and dropped elements; mask nowiki."""
    if "<!--" in s:
        out, pos = [], 0
        while (i := s.find("<!--", pos)) >= 0:
            out.append(s[pos:i])
            j = s.find("-->", i + 4)
            pos = len(s) if j < 0 else j + 3
        s = "".join(out) + s[pos:]
    if "<nowiki" in s.lower():  # its content is literal text: hide the markup as entities
        s = NOWIKI_RE.sub(lambda m: "".join(f"&#{ord(c)};" if c in "{}[]|<>'=" else c for c in m.group(1) or ""), s)
    toks = list(TAG_RE.finditer(s))
    nxt_close = [-1] * len(toks)  # index of the next closing token of the same name (linear, no rescans)
    last: dict[str, int] = {}
    for i in range(len(toks) - 1, -1, -1):
        nxt_close[i] = last.get(toks[i].group(2).lower(), -1)
        if toks[i].group(1):
            last[toks[i].group(2).lower()] = i
    out, pos, i = [], 0, 0
    while i < len(toks):
        m = toks[i]
        out.append(s[pos : m.start()])
        j = nxt_close[i] if not (m.group(1) or m.group(4)) else -1  # an unclosed element: drop the tag only
        pos, i = (toks[j].end(), j + 1) if j >= 0 else (m.end(), i + 1)
    return "".join(out) + s[pos:]


def brace_spans(s: str) -> list[tuple[int, int]]:
    """Outermost balanced ``{{...}}`` and ``{|...|}`` (at line starts) spans; unbalanced ones stay text."""
    stack: list[tuple[int, int]] = []
    pairs: list[tuple[int, int]] = []
    for m in BRACE_RE.finditer(s):
        start, tok = m.start(), m.group()
        kind = 1 if tok == "{{" else 2 if tok == "}}" else 3 if tok == "{|" else 4
        if kind >= 3:  # a table opens/closes only at the start of a line (after indentation)
            if kind == 4 and s.startswith("}}", m.end()):
                continue
            j = start - 1
            while j >= 0 and s[j] in " \t:":
                j -= 1
            if j >= 0 and s[j] != "\n" or (kind == 4 and ":" in s[j + 1 : start]):
                continue
        if kind in (1, 3):
            stack.append((kind, start))
        elif stack and stack[-1][0] == kind - 1:
            pairs.append((stack.pop()[1], m.end()))
    pairs.sort()
    spans: list[tuple[int, int]] = []
    for a, b in pairs:
        if not spans or a >= spans[-1][1]:
            spans.append((a, b))
    return spans


def norm_name(raw: str) -> str:
    """``" Template:infobox_country "`` -> ``"Infobox country"``."""
    name = " ".join(raw.replace("_", " ").split())
    name = name[9:].strip() if name.lower().startswith("template:") else name
    return name[:1].upper() + name[1:]


def kept(low: str) -> bool:
    return (
        low in FIRST_ARG or low in DATES or low in LISTS or low in OTHER_KEPT or low.startswith(("lang-", "formatnum:"))
    )


def strip_templates(s: str, found: dict[str, str] | None) -> str:
    """Drop tables and templates but the inline ones; set aside the infobox and short description."""
    if "{" not in s:
        return s
    out, pos = [], 0
    for a, b in brace_spans(s):
        out.append(s[pos:a])
        pos, src = b, s[a:b]
        if src.startswith("{|"):
            continue
        low = norm_name(re.split(r"[|}]", src[2:], maxsplit=1)[0]).lower()
        if found is not None and low.startswith("infobox") and "infobox" not in found:
            found["infobox"] = src
        elif found is not None and low == "short description" and "description" not in found:
            found["description"] = src
        elif kept(low):
            out.append(src)
    return "".join(out) + s[pos:]


def tidy(text: str) -> str:
    """Collapse whitespace, remove leftovers of dropped markup and empty or punctuation-only lines."""
    for triggers, rx, rep in TIDY:
        if triggers is None or any(t in text for t in triggers):
            text = rx.sub(rep, text)
    return "\n".join(ln for ln in (x.strip() for x in text.split("\n")) if ln and not PUNCT_LINE.match(ln))
