"""Split pages into ~100-word passages on sentence boundaries, section by section."""

from __future__ import annotations

from dataclasses import dataclass

from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from wiki_index.parse.text import split_sentences
from wiki_index.types import Page, Passage, Section


@dataclass(frozen=True)
class ChunkConfig:
    """How pages are cut into passages."""

    words: int = help_field(100, "Target passage length in words (DPR / wiki-18 use 100).")
    min_words: int = help_field(20, "A trailing piece shorter than this is merged into the previous passage.")

    def __post_init__(self) -> None:
        if self.words < 10:
            raise ConfigError(f"ChunkConfig.words must be >= 10, got {self.words}; use e.g. 100")
        if not 0 <= self.min_words < self.words:
            raise ConfigError(f"ChunkConfig.min_words must be in [0, words={self.words}), got {self.min_words}")


def _pack(sentences: list[str], words: int) -> list[list[str]]:
    """Greedily pack sentences into groups of about ``words`` words (long sentences are split)."""
    groups: list[list[str]] = []
    cur: list[str] = []
    n = 0
    for sent in sentences:
        toks = sent.split()
        while len(toks) > words:  # a sentence longer than a passage: hard split on words
            if cur:
                groups.append(cur)
                cur, n = [], 0
            groups.append([" ".join(toks[:words])])
            toks = toks[words:]
        if not toks:
            continue
        if n and n + len(toks) > words:
            groups.append(cur)
            cur, n = [], 0
        cur.append(" ".join(toks))
        n += len(toks)
    if cur:
        groups.append(cur)
    return groups


def chunk_page(page: Page, config: ChunkConfig = ChunkConfig()) -> list[Passage]:
    """Cut one page into passages.

    Pages that arrive pre-chunked (JSONL corpora) keep their passages and ids. Otherwise each
    section is packed separately, so a passage never spans two sections; the docid is
    ``"{page_id}-{ordinal}"``.

    Args:
        page: The parsed page.
        config: Passage length settings.

    Returns:
        The passages in page order (empty for a page with no text).
    """
    if page.passages:
        return list(page.passages)
    sections = page.sections or (Section("", 0, page.text),)
    out: list[Passage] = []
    for section in sections:
        sentences = [s for para in section.text.split("\n") for s in split_sentences(para)]
        groups = _pack(sentences, config.words)
        if len(groups) > 1 and sum(len(s.split()) for s in groups[-1]) < config.min_words:
            groups[-2].extend(groups.pop())
        for group in groups:
            n = len(out)
            out.append(Passage(f"{page.page_id}-{n}", page.page_id, page.title, " ".join(group), section.title, n))
    return out
