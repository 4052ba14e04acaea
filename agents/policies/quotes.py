"""Quoted evidence for the search-only oracle's thoughts (``oracle:quote``).

``oracle:plan``'s later thoughts say only what was found ("The results show Italy."), so a model trained on them
learns to name an entity after a search but not where in the results it read it: held out, it names the wrong one of
the five results even when the right one is shown. ``oracle:quote`` demonstrations first copy the words of the result
that carry the fact (``Milan: "the second-most populous city in Italy"``), then name what they found, and count the
facts the first thought planned ("Fact 1 of 2"), so each turn says whether a search is still owed. The idea: copying a
span the question's words point at is what a small model does well, and the entity then follows from the copied
words. For SmolLM2-135M it did not hold (docs/experiments/2026-12-07-quoted-demos.md); ``oracle:plan`` stays the
default.

>>> block = ("1. [Milan](https://en.wikipedia.org/wiki/Milan)\\n\\nIt is the second-most populous city in Italy after "
...          "Rome.\\n\\n2. [Naples](https://en.wikipedia.org/wiki/Naples)\\n\\nIt is the third-largest city in Italy.")
>>> fact_quote(block, ["Italy"], "Milan is the second-most populous city in a country", lambda url: False)
'Milan: "the second-most populous city in Italy"'
>>> fact_quote(block, ["Naples"], "Which city is the third-largest city in Italy?", lambda url: url.endswith("Naples"))
'Naples: "is the third-largest city in Italy"'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from agents.policies.scripts import result_items

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an the of in on at to for by with and or is was are which what who that this it its".split())
QUOTE_WORDS = 6  # the longest quote: room for a relation's words and its entity, and short enough to copy


def _content(text: str) -> set[str]:
    """The lower-cased words of ``text`` that are not function words."""
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _window_ending_at(snippet: str, start: int, end: int, words: int) -> str:
    """The snippet's words up to ``end``, at most ``words`` of them, the last being those of ``snippet[start:end]``."""
    name = snippet[start:end]
    before = snippet[:start].split()
    keep = max(0, words - len(name.split()))
    return " ".join([*before[-keep:], name] if keep else [name])


def _best_window(snippet: str, query_words: set[str], words: int) -> str:
    """The run of at most ``words`` snippet words sharing the most content words with the query (the earliest wins)."""
    tokens = snippet.split()
    if len(tokens) <= words:
        return " ".join(tokens)
    best = max(
        range(len(tokens) - words + 1), key=lambda i: (len(_content(" ".join(tokens[i : i + words])) & query_words), -i)
    )
    return " ".join(tokens[best : best + words])


def fact_quote(
    block: str, names: Sequence[str], query: str, is_entity: Callable[[str], bool], words: int = QUOTE_WORDS
) -> str | None:
    """``Title: "words"``: where the results of ``query`` state a fact about the entity the search was for.

    The entity's own result (``is_entity(url)``) gives its snippet's words closest to the query; another result whose
    snippet names the entity (one of ``names``, whole words, any case) gives the words ending at the name. Of those, the
    quote sharing the most content words with the query wins, the higher-ranked result on a tie.

    Args:
        block: One search's observation (Tongyi's result list: ``N. [Title](url)``, a blank line, the snippet).
        names: The entity's names (title, aliases); empty names are ignored.
        query: The search's query: its words pick the quote.
        is_entity: Whether a result URL is the entity's own page.
        words: The most words a quote keeps.

    Returns:
        The attributed quote, or ``None`` when no result names the entity or is its page, or when no candidate shares
        a content word with the query (a quote that says nothing of the fact).
    """
    query_words = _content(query)
    patterns = [re.compile(rf"(?<!\w){re.escape(n)}(?!\w)", re.IGNORECASE) for n in names if n.strip()]
    best: tuple[int, int, str] | None = None
    for rank, (title, url, snippet) in enumerate(item for items in result_items(block) for item in items):
        snippet = " ".join(snippet.replace('"', "'").split()).removesuffix(" ...")
        quote = _best_window(snippet, query_words, words) if is_entity(url) else None
        for pattern in patterns if quote is None else ():
            if m := pattern.search(snippet):
                quote = _window_ending_at(snippet, m.start(), m.end(), words)
                break
        if quote is None:
            continue
        quote = quote.rstrip(".,;: ")
        score = len(_content(f"{title} {quote}") & query_words)
        if score and (best is None or (score, -rank) > (best[0], -best[1])):
            best = (score, rank, f'{title}: "{quote}"')
    return best[2] if best else None


def step_thought(fact: int, facts: int, quote: str | None, found: str) -> str:
    """The thought after fact ``fact`` of a chain of ``facts``, before the search for the next.

    >>> step_thought(1, 2, 'Milan: "the second-most populous city in Italy"', "Italy")
    'Fact 1 of 2: Milan: "the second-most populous city in Italy", so Italy.'
    """
    said = quote or "the results show it"
    return f"Fact {fact} of {facts}: {said}, so {found}."


def answer_thought(facts: int, quote: str | None, answer: str) -> str:
    """The thought before the answer, after the last of ``facts`` facts.

    >>> answer_thought(1, None, "Paris")
    'Fact 1 of 1: the results show it, so the answer is Paris.'
    """
    said = quote or "the results show it"
    return f"Fact {facts} of {facts}: {said}, so the answer is {answer}."
