"""Links from title mentions, for text that has no wikilinks (the bundled lead sections).

Matching rules (chosen for precision over recall, since these links become graph edges):

* a title matches only as a whole run of tokens (``\\w+`` words and single punctuation marks),
  so ``"Inca"`` never matches inside ``"Incan"`` while ``"Apple"`` matches in ``"Apple's"``;
* case-sensitive, as the title is written (first letter upper-case): ``"Water"`` matches at the
  start of a sentence but not in ``"... of water"``; proper names, which carry most of the
  useful edges, are capitalised wherever they appear;
* the longest title wins at each position (``"New York City"`` over ``"New York"``), and
  matching resumes after it (no overlapping matches);
* a one-word title is not linked inside a longer capitalised name: ``"Rain"`` in ``"Douglas
  Rain"``, ``"Saint"`` in ``"Saint Lucia"`` (a capitalised function word opening the sentence
  does not count, so ``"In France, ..."`` still links ``"France"``);
* never the page's own title; titles shorter than ``min_chars`` or made only of digits
  (``"0"``, ``"1"``) are not linked;
* links come in order of first mention, without duplicates.

The index maps each title's first token to its token sequences, longest first, so one pass
over the text's tokens costs a dictionary lookup per token.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass
class MentionLinker:
    """Find mentions of known titles in plain text.

    Attributes:
        titles: The titles that may be linked (normalised page titles).
        min_chars: Shorter titles are never linked.
    """

    titles: Iterable[str]
    min_chars: int = 2
    _index: dict[str, list[tuple[tuple[str, ...], str]]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        index: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        for title in set(self.titles):
            if len(title) < self.min_chars or title.isdigit():
                continue
            toks = tuple(_TOKEN.findall(title))
            if toks:
                index.setdefault(toks[0], []).append((toks, title))
        for cands in index.values():
            cands.sort(key=lambda c: (-len(c[0]), c[1]))
        self._index = index
        self.titles = tuple(sorted(t for cands in index.values() for _, t in cands))

    def links(self, text: str, exclude: str = "") -> tuple[str, ...]:
        """Titles mentioned in ``text``, in order of first mention, without duplicates.

        Args:
            text: Plain text.
            exclude: A title never to return (the page's own).

        Returns:
            The linked titles.
        """
        toks = _TOKEN.findall(text)
        index = self._index
        found: dict[str, None] = {}
        i, n = 0, len(toks)
        while i < n:
            cands = index.get(toks[i])
            if cands is None:
                i += 1
                continue
            for seq, title in cands:
                k = len(seq)
                if k == 1 and _inside_name(toks, i):
                    continue
                if k == 1 or tuple(toks[i : i + k]) == seq:
                    if title != exclude:
                        found.setdefault(title, None)
                    i += k
                    break
            else:
                i += 1
        return tuple(found)


_SENTENCE_END = frozenset(".!?:;\"'(\u201c")
_FUNCTION_WORDS = frozenset(
    "A An The In On At By For From To With Of As After Before During Since Until Under Over Between Both While When "
    "Where Its His Her Their Our This That These Those Unlike Like Although Though However Because If In Into "
    "Throughout Within Without Across Along Around Among Against Near Outside Inside Beyond Despite Following "
    "Today Since And But Or Neither Either Only Also Some Many Most Several All Each Every Other".split()
)


def _inside_name(toks: list[str], i: int) -> bool:
    """Whether token ``i`` is glued to a capitalised neighbour (part of a longer name).

    A capitalised word before it does not count when it opens a sentence and is a function word
    (``"In France"``), but does when it is a name (``"Douglas Rain"``).
    """
    nxt = toks[i + 1] if i + 1 < len(toks) else ""
    if nxt[:1].isupper():
        return True
    prev = toks[i - 1] if i > 0 else ""
    if not prev[:1].isupper():
        return False
    return not ((i == 1 or toks[i - 2] in _SENTENCE_END) and prev in _FUNCTION_WORDS)
