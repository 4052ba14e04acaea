"""The base error hierarchy every package shares: :class:`ConfigError` and the index errors.

Every package imports these classes from here, so each exists once (``except ConfigError`` catches a configuration
error of any package); the base keeps the name of the package it started in (:mod:`wiki_index`). Every message says
what was expected, what was found and how to fix it.
"""

from __future__ import annotations


class WikiIndexError(Exception):
    """Base class of the shared errors (and of package errors built on them, such as the bundle's)."""


class CorpusError(WikiIndexError):
    """A corpus source cannot be read (corrupt archive, not XML, unknown format)."""


class IndexNotFoundError(WikiIndexError):
    """An index directory does not exist or holds no complete index."""


class IndexMismatchError(WikiIndexError):
    """An index directory exists but does not match what the caller asked for."""


class ConfigError(WikiIndexError, ValueError):
    """A configuration value is out of range or inconsistent."""
