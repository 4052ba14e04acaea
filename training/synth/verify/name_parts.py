"""A question that shows part of its answer's name: "A Mediterranean island country is located in this sea" asks for
the Mediterranean Sea. The answer-leak check of the composer looks for the whole name (and its derived forms); this
one, run on the finished question, looks for a distinctive word of a name of two words or more."""

from __future__ import annotations

import re

from wiki_index.types import bare_title

#: Words of a name that say what kind it is, not which one ("Sea", "Republic", "United"), and continents, which a
#: place's name carries ("South Africa") as its questions do ("the southernmost country in Africa"): seen elsewhere
#: in a question they give nothing away.
_KIND_PARTS = frozenset(
    "ocean river mountain mountains island islands republic kingdom empire united states federation democratic "
    "people's union province region county city north south east west northern southern eastern western central "
    "great greater lesser little upper lower new africa america americas asia europe australia antarctica".split()
)


def name_part_shown(question: str, title: str) -> bool:
    """Whether the question shows a distinctive word of the answer's name (six letters or more, capitalised, not a
    kind word): "A Mediterranean island country" in a question whose answer is the Mediterranean Sea."""
    name = bare_title(title)
    if len(re.findall(r"\w+", name)) < 2:
        return False  # a one-word name: the answer leak check sees it whole
    words = [w for w in re.findall(r"[A-Z][\w'-]+", name) if len(w) >= 6 and w.lower() not in _KIND_PARTS]
    return any(re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", question) for w in words)
