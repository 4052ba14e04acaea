"""wiki_index.sources: streaming corpus readers (MediaWiki XML dump, JSONL passages, bundled sample).

``open_source(spec)`` picks the reader from the registry :data:`READERS`; every reader yields
:class:`~wiki_index.types.Page` and :class:`~wiki_index.sources.base.Redirect` records and keeps
:class:`~wiki_index.sources.base.SourceStats`. The readers import :mod:`.base`, never the reverse.
"""

from __future__ import annotations

import os
from pathlib import Path

from simweb_core.errors import CorpusError
from simweb_core.settings import SAMPLE_NAME
from wiki_index.sources.base import DUMP_SUFFIXES, JSONL_SUFFIXES, CorpusSource, Redirect, SourceStats
from wiki_index.sources.dump import DumpSource
from wiki_index.sources.jsonl import JsonlSource
from wiki_index.sources.sample import SampleSource

#: File-backed readers by kind (the sample is opened by name).
READERS: dict[str, type] = {"dump": DumpSource, "jsonl": JsonlSource}


def open_source(spec: str | os.PathLike, *, workers: int = 1) -> CorpusSource:
    """Open a corpus by name or path.

    Args:
        spec: ``"sample"`` (the bundled sample), a MediaWiki XML dump (``*.xml``, ``*.xml.bz2``,
            any ``*.bz2``, multistream included) or a JSONL passage corpus (``*.jsonl``,
            ``*.jsonl.gz``, ``*.json.gz``).
        workers: Parser processes for XML dumps (1 parses in this process; more start from a
            forkserver, so a script that builds with workers > 1 needs the ``__main__`` guard).

    Returns:
        The source; nothing is read until :meth:`CorpusSource.records` is iterated.

    Raises:
        CorpusError: The file does not exist or its name matches no known format.
    """
    if str(spec) == SAMPLE_NAME:
        return SampleSource()
    path = Path(spec).expanduser()
    low = path.name.lower()
    kind = "dump" if low.endswith(DUMP_SUFFIXES) else "jsonl" if low.endswith(JSONL_SUFFIXES) else None
    if kind is None:
        raise CorpusError(
            f"unknown corpus {str(spec)!r}: expected {SAMPLE_NAME!r}, a MediaWiki XML dump "
            f"({', '.join('*' + s for s in DUMP_SUFFIXES)}) or a JSONL corpus "
            f"({', '.join('*' + s for s in JSONL_SUFFIXES)}); found a file name ending in "
            f"{''.join(path.suffixes) or 'no suffix'!r}. Rename the file or convert it to one of these formats."
        )
    if not path.is_file():
        raise CorpusError(f"corpus file {str(path)!r} does not exist (or is not a file); check the path")
    return READERS[kind](path, workers=workers) if kind == "dump" else READERS[kind](path)


__all__ = [
    "READERS",
    "CorpusSource",
    "DumpSource",
    "JsonlSource",
    "Redirect",
    "SampleSource",
    "SourceStats",
    "open_source",
]
