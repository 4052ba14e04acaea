"""The error hierarchy of :mod:`wiki_index`.

Every message says what was expected, what was found and how to fix it.
"""

from __future__ import annotations


class WikiIndexError(Exception):
    """Base class of every error raised by :mod:`wiki_index`."""


class CorpusError(WikiIndexError):
    """A corpus source cannot be read (corrupt archive, not XML, unknown format)."""


class IndexNotFoundError(WikiIndexError):
    """An index directory does not exist or holds no complete index."""


class IndexMismatchError(WikiIndexError):
    """An index directory exists but does not match what the caller asked for."""


class ConfigError(WikiIndexError, ValueError):
    """A configuration value is out of range or inconsistent."""
