"""Small text helpers shared by the parser, the chunker and the tools."""

from __future__ import annotations

import re

_ABBREV = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "st",
    "jr",
    "sr",
    "vs",
    "etc",
    "inc",
    "ltd",
    "co",
    "no",
    "mt",
    "ft",
    "gen",
    "col",
    "u.s",
    "c",
    "ca",
}
_SENT_END = re.compile(r"([.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[])")
_WORD = re.compile(r"\w+", re.UNICODE)


def split_sentences(text: str) -> list[str]:
    """Split text into sentences at ``.``/``!``/``?`` followed by a capital, skipping abbreviations.

    Args:
        text: Plain text.

    Returns:
        The sentences, stripped, in order (empty input gives ``[]``).
    """
    out: list[str] = []
    start = 0
    for m in _SENT_END.finditer(text):
        end = m.end(1)
        prev = text[start:end].rstrip(".!?").rsplit(None, 1)
        last = prev[-1].lower() if prev else ""
        if m.group(1) == "." and (last in _ABBREV or (len(last) == 1 and last.isalpha())):
            continue
        piece = text[start : m.end()].strip()
        if piece:
            out.append(piece)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def first_sentence(text: str) -> str:
    """Return the first sentence of ``text`` (``""`` if empty)."""
    sents = split_sentences(text.strip().split("\n", 1)[0] if text.strip() else "")
    return sents[0] if sents else ""


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens (unicode-aware), used for overlap scoring."""
    return _WORD.findall(text.lower())
