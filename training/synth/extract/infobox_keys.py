"""Which infobox fields of a page are facts, which are relations, and how a field's value is split into names.

The rules :class:`~training.synth.graph.store_source.StoreSource` reads a page's infobox with: keys that are layout or
media (never relations), keys that hold a date or a quantity worth a clue, keys whose page-valued fields are
layout rather than relations, and the separators between several values of one field. Plain data, kept apart
from the store reader so its class stays the module's whole body.
"""

from __future__ import annotations

import re

#: Infobox keys whose values are not relations (media, layout, codes).
SKIP_INFOBOX_KEYS = frozenset(
    {
        "name",
        "image",
        "caption",
        "alt",
        "image_map",
        "map_caption",
        "image_flag",
        "image_coat",
        "signature",
        "website",
        "logo",
        "footnotes",
        "native_name",
        "conventional_long_name",
        "common_name",
        "latd",
        "latm",
        "longd",
        "longm",
        "longew",
        "latns",
        "cctld",
        "calling_code",
        "iso3166code",
        "image_size",
        "alt_map",
    }
)
#: Infobox keys that hold codes, coordinates, ranks or layout, not facts worth a clue.
NO_FACT_KEY = re.compile(
    r"lat|long|image|caption|coord|code|rank|_ref|footnote|^alt|size|width|map|flag|zoom|cctld|utc"
    r"|iso|_id$|^id$|db$|omim|icd|mesh|medline|emedicine|website|year$|_note|population_as_of"
)
#: Infobox keys that state a date or a quantity worth a clue (``tz1where`` or ``awards`` do not).
FACT_KEY = re.compile(
    r"date|born|birth|death|died|founded|established|formed|released|opened|built|completed"
    r"|discovered|published|area|population|length|height|elevation|depth|gdp|gini|hdi|density"
    r"|speakers|members|employees|volume|mass|weight|diameter|width|capacity|discharge|revenue"
    r"|budget|students|staff|distance|radius|temperature"
)
#: Infobox keys whose page-valued fields are layout, not relations ("flaglink", "seal_type").
NO_RELATION_KEY = re.compile(r"flag|seal|link|logo|coat|anthem|motto|symbol|image|map|caption|blank|_type$|footnote")
SPLIT_VALUE = re.compile(r"\s*(?:[,;\n]|\band\b)\s*")
#: Keys that name no field: a template's positional parameter ("1 = name" of an award's infobox) or an empty key; its
#: value is a template argument, so "whose 1 is ..." states nothing.
NO_FIELD_KEY = re.compile(r"^[\s\d]*$")


def is_field(key: str) -> bool:
    """Whether an infobox ``key`` names a field (not a positional parameter or an empty key)."""
    return NO_FIELD_KEY.match(key) is None
