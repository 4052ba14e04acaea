"""Date and number facts pulled out of infobox values, descriptions and lead text.

The extractors are regular expressions tuned on Wikipedia prose (full dates such as
``"14 March 1879"`` or ``"March 14, 1879"``, year ranges ``"1879–1955"``, decades, centuries,
``BC`` years, numbers with thousands separators, ``million``/``billion`` multipliers and units).
Each fact keeps the *attribute* it belongs to: the infobox key, or a cue word found just
before the match in prose (``born``, ``founded``, ``population`` ...), so that question
templates can say "founded in the early 1700s" rather than "associated with 1703".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_RE = r"(January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
_ERA = r"(?:\s?(BCE|BC|CE|AD))?"
_DASH = r"\s?[–—-]\s?"

# (pattern, kind) in priority order: earlier patterns claim their span first.
_DATE_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b(\d{{1,2}}) {_MONTH_RE},? (\d{{1,4}}){_ERA}"), "dmy"),
    (re.compile(rf"\b{_MONTH_RE} (\d{{1,2}}), (\d{{1,4}}){_ERA}"), "mdy"),
    (
        re.compile(rf"\b(?:(c\.|circa|r\.|fl\.) ?)?(\d{{1,4}})(s)?{_ERA}{_DASH}(\d{{1,4}})(s)?{_ERA}(?![\d,.]\d)"),
        "range",
    ),
    (re.compile(rf"\b{_MONTH_RE} (\d{{4}})\b"), "my"),
    (re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)[ -]century(?:\s?(BCE|BC))?"), "century"),
    (re.compile(r"\b(\d{3}0)s\b"), "decade"),
    (re.compile(r"\b(\d{1,4}) ?(BCE|BC|CE|AD)\b"), "era_year"),
    (re.compile(r"(?<![\d,.])\b(1\d{3}|20\d{2})\b(?![\d,.]\d|\s?(?:km|m\b|kg|%|people|inhabitants))"), "year"),
]

_DATE_KEY = re.compile(r"date|born|birth|death|died|year|established|founded|formed|released|opened|_event")
#: The date of a numbered row of an infobox's establishment history ("established_date1: 1190").
_HISTORY_DATE = re.compile(r"established_date(\d+)", re.IGNORECASE)
#: A row's event that names a polity ("Principality of Arbanon", "Anjou Kingdom of Albania") or an occupation ("Under
#: Italy"): a predecessor state, whose date is not the page's founding ("First Afghan state" is the page's own, and
#: "Proclamation of independence from the Ottoman Empire" names the empire it left).
_PREDECESSOR = re.compile(
    r"^under\b|\b(principality|princedom|kingdom|empire|republic|duchy|caliphate|sultanate|league|khanate|emirate|"
    r"dynasty|confederation|federation|union|commonwealth|protectorate|colony|dominion)\b",
    re.IGNORECASE,
)
_STAMP = re.compile(r"(?:as of|as at|estimated in|census of)\s*$", re.IGNORECASE)
_MULT = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_UNITS = (
    r"km2|km²|sq\s?mi|square kilometres|square kilometers|square miles|km/h|mph|km|kilometres|kilometers"
    r"|miles|mi|metres|meters|m|cm|mm|ft|feet|kg|kilograms|tonnes|tons|t|g|%|percent|per cent|°C|°F|K"
    r"|AU|light-years|ly|years|people|inhabitants|residents|speakers|species|members|employees|USD|US\$|\$"
)
MEASURE_UNITS = frozenset(u.replace("\\s?", " ").replace("\\$", "$") for u in _UNITS.split("|"))
"""Units of measure known to :func:`extract_numbers` (a count noun such as ``"states"`` is not one)."""
_NUMBER_RE = re.compile(
    r"(?<![\w.,/])(US\$|\$|£|€)?\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?"
    r"(?:\s?(thousand|million|billion|trillion)\b)?"
    rf"(?:\s?({_UNITS})(?![\w]))?"
    r"(?:\s([a-z]{3,}s)\b)?"
)

_DATE_CUES = [
    ("birth", ("born", "birth")),
    ("death", ("died", "death", "killed")),
    ("founded", ("founded", "established", "formed", "incorporated", "created")),
    ("built", ("built", "constructed", "completed", "erected")),
    ("released", ("released", "premiered")),
    ("published", ("published", "written")),
    ("discovered", ("discovered", "first described")),
    ("invented", ("invented", "patented")),
    ("independence", ("independence",)),
    ("opened", ("opened", "inaugurated")),
    ("signed", ("signed",)),
    ("start", ("began", "started", "since")),
    # not "ended" or "until": in a page's prose they end some event ("a civil war until 2002"), rarely the page's
    # own subject, and "This country ended in the 2020s" is what came of reading them as the subject's end
    ("end", ("dissolved", "abolished")),
]
_NUMBER_CUES = [
    ("population", ("population", "residents", "inhabitants", "people", "populous")),
    ("area", ("area", "km2", "km²", "sq mi", "square")),
    ("height", ("height", "tall", "high", "elevation")),
    ("length", ("length", "long")),
    ("speakers", ("speakers", "speak")),
    ("members", ("members",)),
]


@dataclass(frozen=True)
class DateFact:
    """A date found in a page.

    Attributes:
        attr: What the date is about: an infobox key or a prose cue (``"birth"``, ``"founded"``,
            ``"start"``, ``"end"``, ``"date"`` when nothing better was found).
        text: The matched text, e.g. ``"14 March 1879"``.
        year: The year, negative for BC (``-500`` for ``500 BC``); for a decade or a century the
            first year of it (``1860`` for ``1860s``, ``1801`` for the 19th century).
        month: 1-12 or ``None``.
        day: 1-31 or ``None``.
        precision: ``"day"``, ``"month"``, ``"year"``, ``"decade"`` or ``"century"``.
        approximate: The source said ``c.``/``circa``/``fl.``.
    """

    attr: str
    text: str
    year: int
    month: int | None = None
    day: int | None = None
    precision: str = "year"
    approximate: bool = False


@dataclass(frozen=True)
class NumberFact:
    """A quantity found in a page: ``value`` in plain units (multipliers applied), its unit and attribute."""

    attr: str
    text: str
    value: float
    unit: str = ""


def _cue(text: str, start: int, cues: list[tuple[str, tuple[str, ...]]], default: str, window: int = 48) -> str:
    before = text[max(0, start - window) : start].lower()
    best, best_pos = default, -1
    for attr, words in cues:
        for w in words:
            pos = before.rfind(w)
            if pos > best_pos:
                best, best_pos = attr, pos
    return best


def _year(raw: str, era: str | None) -> int:
    y = int(raw)
    return -y if era in ("BC", "BCE") else y


def _month(name: str) -> int:
    name = name.lower().rstrip(".")
    return next(i + 1 for i, m in enumerate(MONTHS) if m.startswith(name[:3]))


def extract_dates(text: str, attr: str | None = None, *, person: bool = False) -> list[DateFact]:
    """Extract dates from a string, in text order.

    Args:
        text: An infobox value, a description or lead prose.
        attr: The attribute name to give every date (an infobox key); ``None`` infers it from a
            cue word before each match (``"born in"`` -> ``"birth"``), else ``"date"``.
        person: The text describes a person: a bracketed range ``(1879–1955)`` then means
            birth and death (``(r. 912–929)`` a reign), otherwise start and end.

    Returns:
        The dates; a year range gives two facts (start and end).
    """
    text = text.replace("\xa0", " ")
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, int, DateFact]] = []

    def free(s: int, e: int) -> bool:
        return all(e <= a or s >= b for a, b in taken)

    for pattern, kind in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            if not free(m.start(), m.end()):
                continue
            if _STAMP.search(text[max(0, m.start() - 12) : m.start()]):
                taken.append((m.start(), m.end()))  # "as of 2023": when a figure was measured, not a fact
                continue
            name = attr or _cue(text, m.start(), _DATE_CUES, "date")
            facts = _date_from_match(m, kind, name, text, person)
            if facts:
                taken.append((m.start(), m.end()))
                found.extend((m.start() + i, m.end(), f) for i, f in enumerate(facts))
    found.sort(key=lambda p: p[0])
    if person and attr is None:
        _mark_lifespan(text, found)
    return [f for _, _, f in found]


def _mark_lifespan(text: str, found: list[tuple[int, int, DateFact]]) -> None:
    """``(14 March 1879 – 18 April 1955)`` after a person's name: birth and death dates."""
    for i in range(len(found) - 1):
        (s1, e1, a), (s2, e2, b) = found[i], found[i + 1]
        if (
            a.attr == b.attr == "date"
            and re.fullmatch(r"\s?[–—-]\s?", text[e1:s2])
            and re.search(r"\(\s*;?\s*$", text[:s1])
            and text[e2:].lstrip().startswith(")")
        ):  # "(; 14 March 1879 –"
            found[i] = (s1, e1, replace(a, attr="birth"))
            found[i + 1] = (s2, e2, replace(b, attr="death"))


def _date_from_match(m: re.Match[str], kind: str, name: str, text: str, person: bool) -> list[DateFact]:
    g = m.groups()
    t = m.group(0).strip()
    try:
        if kind == "dmy":
            day, month = int(g[0]), _month(g[1])
            return [DateFact(name, t, _year(g[2], g[3]), month, day, "day")] if 1 <= day <= 31 else []
        if kind == "mdy":
            day, month = int(g[1]), _month(g[0])
            return [DateFact(name, t, _year(g[2], g[3]), month, day, "day")] if 1 <= day <= 31 else []
        if kind == "my":
            return [DateFact(name, t, int(g[1]), _month(g[0]), None, "month")]
        if kind == "century":
            c = int(g[0])
            year = -(c * 100) if g[1] else (c - 1) * 100 + 1
            return [DateFact(name, t, year, precision="century")] if 1 <= c <= 21 else []
        if kind == "decade":
            return [DateFact(name, t, int(g[0]), precision="decade")]
        if kind == "era_year":
            return [DateFact(name, t, _year(g[0], g[1]))]
        if kind == "year":
            return [DateFact(name, t, int(g[0]))]
        return _range(m, text, person)
    except (ValueError, StopIteration):
        return []


def _range(m: re.Match[str], text: str, person: bool) -> list[DateFact]:
    prefix, a, a_dec, a_era, b, b_dec, b_era = m.groups()
    if len(b) < len(a) and not b_era and not a_era and len(a) == 4:
        b = a[: len(a) - len(b)] + b  # "1961–62" -> 1962
    era_a = a_era or (b_era if b_era in ("BC", "BCE") and not a_era else None)
    ya, yb = _year(a, era_a), _year(b, b_era)
    plain = not (a_era or b_era or a_dec or b_dec)
    if plain and not (1000 <= ya <= 2100 and 1000 <= yb <= 2100):
        return []  # page ranges, scores and the like ("12-14", "3–1")
    if yb < ya:
        return []
    bracketed = m.start() > 0 and text[m.start() - 1] == "(" and text[m.end() : m.end() + 1] == ")"
    bracketed = bracketed and _after_the_name(text, m.start() - 1)
    if prefix == "r.":
        lo, hi = "reign_start", "reign_end"
    elif bracketed and person:
        lo, hi = "birth", "death"
    elif bracketed:  # "Cold War barrier (1961–1989)": the description's convention for a lifetime
        lo, hi = "start", "end"
    else:  # a range inside prose can be about anything
        lo, hi = "date", "date"
    approx = prefix in ("c.", "circa", "fl.")
    prec_a, prec_b = ("decade" if a_dec else "year"), ("decade" if b_dec else "year")
    return [
        DateFact(lo, f"{a}{a_dec or ''}{' ' + era_a if era_a else ''}", ya, precision=prec_a, approximate=approx),
        DateFact(hi, f"{b}{b_dec or ''}{' ' + b_era if b_era else ''}", yb, precision=prec_b, approximate=approx),
    ]


def _after_the_name(text: str, bracket: int) -> bool:
    """Whether the bracket at ``bracket`` follows the text's first few words, where a page or description names its
    subject ("Berlin Wall (1961–1989)", "Cold War barrier (1961–1989)"); later in a sentence a bracketed range dates the
    noun before it ("Europe was divided by the Iron Curtain (1945–1991)"), not the page's subject."""
    before = text[:bracket]
    return len(before.split()) <= 10 and not re.search(r"[.;:!?]\s", before)


def _value(num: str, frac: str | None, mult: str | None) -> float:
    v = float(num.replace(",", "") + (frac or ""))
    return v * _MULT[mult] if mult else v


def extract_numbers(text: str, attr: str | None = None) -> list[NumberFact]:
    """Extract quantities (not years, not dates, not ordinals) from a string, in text order.

    Args:
        text: An infobox value or prose, e.g. ``"with 33 million residents"``.
        attr: The attribute to give every number (an infobox key); ``None`` infers it from the
            unit or a cue word before the match (``"population"``, ``"area"`` ...), else
            ``"quantity"``.

    Returns:
        The numbers; e.g. ``NumberFact("population", "33 million residents", 3.3e7, "residents")``.
    """
    text = text.replace("\xa0", " ")
    date_spans: list[tuple[int, int]] = []
    for pattern, _ in _DATE_PATTERNS:
        date_spans.extend(m.span() for m in pattern.finditer(text))
    out: list[NumberFact] = []
    for m in _NUMBER_RE.finditer(text):
        cur, num, frac, mult, unit, noun = m.groups()
        s, e = m.start(2), m.end(3) if frac else m.end(2)
        if any(a <= s < b or a < e <= b for a, b in date_spans) and not (mult or unit or "," in num):
            continue
        if e < len(text) and text[e : e + 2].lower() in ("st", "nd", "rd", "th") and not unit:
            continue
        if noun and noun.endswith(("ous", "ss", "us", "is")):
            noun = None  # "48 contiguous states": an adjective, not the counted noun
        unit = (cur or "") + (unit or "") if (cur or unit) else (noun or "")
        value = _value(num, frac, mult)
        if not unit and not mult and value < 10:
            continue  # small bare counts ("one of 3") are too vague to make a clue from
        name = attr or _number_attr(text, m.start(), unit, text[m.end() :])
        out.append(NumberFact(name, m.group(0).strip(), value, unit.strip()))
    return out


#: A quantity per unit of area after a number: "578 people per square kilometre" is a density, not a head count.
_PER_AREA = re.compile(r"^\s*(?:per|a|/)\s*(?:square|sq\b|km2|km²|mi2|hectare|acre)", re.IGNORECASE)


_BASIN = re.compile(r"\b(?:drainage|basin|catchment|watershed)\b", re.IGNORECASE)


def _number_attr(text: str, start: int, unit: str, after: str = "") -> str:
    u = unit.lower()
    if _PER_AREA.match(after):
        return "density"
    if u in ("km2", "km²", "sq mi", "sqmi", "square kilometres", "square kilometers", "square miles"):
        # "Its drainage basin is 2,117,700 km2 in area" is the basin's area, not the river's
        return "basin area" if _BASIN.search(text[max(0, start - 60) : start]) else "area"
    if u == "%":
        return "share"  # "90% of the population" is a share, not a head count
    if u in ("people", "inhabitants", "residents"):
        before = text[max(0, start - 60) : start].lower()
        return (
            "deaths"
            if re.search(r"kill|die|death|casualt|victim|fatalit", before)
            else "people affected"
            if re.search(r"affect|suffer|infect", before)
            else "employees"
            if re.search(r"employ|workforce|staff|hired", before)  # "employed nearly 130,000 people": no population
            else "population"
        )
    if u in ("speakers", "species", "members", "employees"):
        return u
    return _cue(text, start, _NUMBER_CUES, "quantity", window=40)


def _once_family(attr: str) -> str:
    """``"birth"`` for ``birth``/``birth_date``/``born``, likewise ``death`` and ``founded``; ``""`` otherwise."""
    a = attr.lower()
    for fam, stems in (("birth", ("birth", "born")), ("death", ("death", "died")), ("founded", ("found", "establish"))):
        if any(st in a for st in stems):
            return fam
    return ""


def _predecessor_row(infobox: dict[str, str], key: str) -> bool:
    """Whether ``key`` is the date of an establishment-history row whose event names a polity (a predecessor state)."""
    m = _HISTORY_DATE.fullmatch(key)
    event = infobox.get(f"established_event{m.group(1)}") if m else None
    return isinstance(event, str) and bool(_PREDECESSOR.search(re.split(r"\bfrom\b", event)[0].strip()))


def facts_from_fields(
    description: str, lead: str, infobox: dict[str, str] | None = None, *, person: bool = False
) -> tuple[tuple[DateFact, ...], tuple[NumberFact, ...]]:
    """Collect the dates and numbers of one page: infobox first (named attributes), then the
    description and the lead prose; duplicates (same attribute and value) are dropped, and so are the dates of an
    establishment history's predecessor states (:func:`_predecessor_row`).

    Args:
        description: The short description (``"German-born theoretical physicist (1879–1955)"``).
        lead: The lead section text.
        infobox: Infobox key -> value text.
        person: The page is about a person (see :func:`extract_dates`).

    Returns:
        ``(dates, numbers)``.
    """
    dates: list[DateFact] = []
    numbers: list[NumberFact] = []
    for key, value in (infobox or {}).items():
        if not isinstance(value, str) or _predecessor_row(infobox or {}, key):
            continue
        dates.extend(extract_dates(value, key, person=person))
        if not _DATE_KEY.search(key.lower()):  # "18 April 1955 (aged 76)" holds a date, not a quantity
            numbers.extend(extract_numbers(value, key))
    dates.extend(extract_dates(description, None, person=person))
    numbers.extend(extract_numbers(description))
    dates.extend(extract_dates(lead, None, person=person))
    numbers.extend(extract_numbers(lead))
    seen_d: set[tuple[str, int]] = set()
    seen_n: set[tuple[str, float]] = set()
    once: set[str] = set()  # a page has one birth, one death, one founding: the first source wins (infobox first)
    kept = []
    for d in dates:
        fam = _once_family(d.attr)
        if fam and fam in once:
            continue
        if fam:
            once.add(fam)
        kept.append(d)
    ud = [d for d in kept if (d.attr, d.year) not in seen_d and not seen_d.add((d.attr, d.year))]
    un = [n for n in numbers if (n.attr, n.value) not in seen_n and not seen_n.add((n.attr, n.value))]
    return tuple(ud), tuple(un)
