"""wiki_index.sources: streaming corpus readers (MediaWiki XML dump, JSONL passages, bundled sample).

``open_source(spec)`` picks the reader; every reader yields :class:`~wiki_index.types.Page` and
:class:`~wiki_index.sources.base.Redirect` records and keeps :class:`~wiki_index.sources.base.SourceStats`.
"""

from wiki_index.sources.base import CorpusSource, Redirect, SourceStats, open_source

__all__ = ["CorpusSource", "Redirect", "SourceStats", "open_source"]
