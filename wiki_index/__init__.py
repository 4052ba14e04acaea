"""wiki_index: Wikipedia dump -> DuckDB store -> BM25 (Lucene) + dense (FAISS) + hybrid search.

Importing this package is cheap: it pulls in neither torch nor pyserini; heavy modules load
when first used.
"""

from importlib import metadata as _metadata

from simweb_core.errors import ConfigError, CorpusError, IndexMismatchError, IndexNotFoundError, WikiIndexError
from wiki_index.types import Hit, Page, Passage, Section, normalize_title, title_to_url

__all__ = [
    "ConfigError",
    "CorpusError",
    "Hit",
    "IndexMismatchError",
    "IndexNotFoundError",
    "Page",
    "Passage",
    "Section",
    "WikiIndexError",
    "normalize_title",
    "title_to_url",
]
__version__ = _metadata.version("sim-web")  # the one version: pyproject.toml
