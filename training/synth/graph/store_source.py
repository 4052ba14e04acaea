"""Entities and relations read from an index's DuckDB page store (the KG builder's data source).

:class:`StoreSource` gives :func:`training.synth.graph.kg_build.build_dense_kg` its two callables over a
built ``wiki_index`` store, and the verifier (:mod:`training.synth.verify.uniqueness`) the corpus-wide
adjacency it needs to check that a question's clues single out one entity:

* ``neighbours(title)``: the page's outgoing relations, redirect-resolved (the store resolved
  every link target through ``redirects`` at build time): a wikilink (``kind="link"``, full
  articles from a dump), a title mention (``kind="mention"``, pages of the lead corpus, whose
  links the sample derived from title mentions) or an infobox field whose value names a page
  (``kind="infobox"``, ``relation`` = the key, e.g. ``capital``). Each carries its provenance:
  ``page`` (the source page), ``passage`` (the docid of the first passage of the source page
  that names the target, when one does), ``ordinal`` (position of the link on the page) and
  ``anchor`` (the link target as written).
* ``entity(title)``: the :class:`~training.synth.graph.kg.Entity` with its statistics (description,
  lead, infobox, categories, page length, dates, numbers).
* ``out_ids / in_ids / box_out / box_in / degree``: corpus adjacency by page id.

Small stores (``preload``; by default up to 300k pages) are read in a handful of full-table
queries at construction (the 10k-page sample: ~0.3 s); bigger ones are read lazily, one batch
of queries per page touched, and cached. Nothing is ever written to the store.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from training.synth.extract.infobox_keys import (
    FACT_KEY,
    NO_FACT_KEY,
    NO_RELATION_KEY,
    SKIP_INFOBOX_KEYS,
    SPLIT_VALUE,
    is_field,
)
from training.synth.extract.relations import Names, extract_relation
from training.synth.graph.kg import Entity, make_entity, reads_as_biography
from wiki_index.types import normalize_title, title_to_url

log = logging.getLogger(__name__)

_QUALIFIER = re.compile(r"\s*\([^()]*\)$")


@dataclass(frozen=True)
class PageRow:
    """The page-level fields the synthesis needs (one row of ``pages`` plus its lead section)."""

    page_id: int
    title: str
    description: str
    source: str
    page_len: int
    lead: str

    @property
    def url(self) -> str:
        """The real Wikipedia URL."""
        return title_to_url(self.title)


class StoreSource:
    """Read-only view of a page store for knowledge-graph synthesis.

    Args:
        store: A :class:`wiki_index.store.store.Store` (its named read methods are all this class uses).
        preload: Read the whole store up front (``None``: when it has at most ``preload_max_pages`` pages).
        preload_max_pages: Size limit of the automatic preload.
    """

    def __init__(self, store: Any, *, preload: bool | None = None, preload_max_pages: int = 300_000) -> None:
        self.store = store
        self.n_pages = store.page_count()
        self.preloaded = self.n_pages <= preload_max_pages if preload is None else preload
        self._rows: dict[int, PageRow] = {}
        self._ids: dict[str, int] = {}
        self._lower: dict[str, list[int]] | None = None
        self._out: dict[int, list[tuple[int, int, str]]] = {}  # src -> [(dst, ordinal, anchor)]
        self._in: dict[int, list[int]] = {}
        self._box: dict[int, dict[str, str]] = {}
        self._cats: dict[int, tuple[str, ...]] = {}
        self._passages: dict[int, list[tuple[str, str]]] = {}  # page -> [(docid, text)] in order
        self._box_out: dict[int, list[tuple[int, str]]] = {}
        self._box_in: dict[int, list[tuple[int, str]]] | None = None
        self._entities: dict[int, Entity] = {}
        self._lowered: dict[int, list[tuple[str, str, str]]] = {}  # page -> [(docid, text, lower-cased text)]
        self._sents: dict[tuple[int, int], list[str]] = {}  # (page, passage index) -> sentences
        self._nbrs: dict[int, list[tuple[str, dict[str, Any]]]] = {}
        self.passage_found = 0
        self.passage_missing = 0
        self.typed_relations = 0
        if self.preloaded:
            self._preload()

    # --- loading ------------------------------------------------------------------------------

    def _preload(self) -> None:
        store = self.store
        for row in store.page_infos():
            self._add_row(row)
        for title, dst in store.redirect_targets():
            self._ids.setdefault(title, int(dst))
        out: dict[int, list] = defaultdict(list)
        inc: dict[int, list] = defaultdict(list)
        for src, dst, ordinal, anchor in store.link_edges():
            out[int(src)].append((int(dst), int(ordinal), anchor))
            inc[int(dst)].append(int(src))
        self._out = {pid: out.get(pid, []) for pid in self._rows}
        self._in = {pid: sorted(inc.get(pid, [])) for pid in self._rows}
        box: dict[int, dict[str, str]] = defaultdict(dict)
        for pid, key, value in store.infobox_rows():
            if is_field(key):
                box[int(pid)].setdefault(key, value)
        cats: dict[int, list[str]] = defaultdict(list)
        for pid, cat in store.category_rows():
            cats[int(pid)].append(cat)
        self._box = {pid: box.get(pid, {}) for pid in self._rows}
        self._cats = {pid: tuple(cats.get(pid, ())) for pid in self._rows}
        psg: dict[int, list] = defaultdict(list)
        for batch in store.iter_passages():
            for p in batch:
                psg[int(p.page_id)].append((p.docid, p.text))
        self._passages = {pid: psg.get(pid, []) for pid in self._rows}
        log.info(
            "store source: preloaded %d pages, %d links, %d infobox pages",
            len(self._rows),
            sum(map(len, self._out.values())),
            sum(1 for b in self._box.values() if b),
        )

    def _add_row(self, row: tuple) -> PageRow:
        pid, title, desc, source, plen, lead = row
        r = PageRow(int(pid), title, desc, source, int(plen or 0), lead)
        self._rows[r.page_id] = r
        self._ids[title] = r.page_id
        return r

    def _ensure(self, pid: int) -> bool:
        """Load one page's rows (lazy mode); ``False`` when there is no such page."""
        if pid in self._rows and pid in self._out:
            return True
        if self.preloaded:
            return pid in self._rows
        store = self.store
        info = store.page_info(pid)
        if info is None:
            return False
        self._add_row(info)
        self._out[pid] = [(int(d), int(o), a) for d, o, a in store.links_from(pid)]
        self._box[pid] = {k: v for k, v in store.infobox_facts(pid).items() if is_field(k)}
        self._cats[pid] = tuple(store.categories(pid))
        self._passages[pid] = [(p.docid, p.text) for p in store.passages(pid)]
        return True

    # --- lookups ------------------------------------------------------------------------------

    def resolve(self, title: str) -> int | None:
        """Page id of a title or redirect title (normalised), else ``None``."""
        t = normalize_title(title)
        pid = self._ids.get(t)
        if pid is not None or self.preloaded:
            return pid
        pid = self.store.resolve(t)
        if pid is not None:
            self._ids[t] = pid
        return pid

    def row(self, pid: int) -> PageRow | None:
        """The page row, or ``None``."""
        return self._rows[pid] if self._ensure(pid) else None

    def title(self, pid: int) -> str:
        """The title of a page id (``KeyError`` if unknown)."""
        r = self.row(pid)
        if r is None:
            raise KeyError(f"no page with id {pid} in the store")
        return r.title

    def page_ids(self) -> list[int]:
        """All page ids (preloaded stores only), sorted."""
        if not self.preloaded:
            return self.store.page_ids()
        return sorted(self._rows)

    def rows(self) -> list[PageRow]:
        """Every page row (preloaded stores only; a lazy store raises, as listing it would read it all)."""
        if not self.preloaded:
            raise RuntimeError("StoreSource.rows() needs a preloaded store (StoreSource(store, preload=True))")
        return [self._rows[p] for p in sorted(self._rows)]

    def aliases(self, pid: int) -> list[str]:
        """Redirect titles leading to the page, sorted (natural answer aliases)."""
        return self.store.aliases(pid)

    def out_ids(self, pid: int) -> list[int]:
        """Pages this page links to or mentions, in link order."""
        return [d for d, _, _ in self._out.get(pid, [])] if self._ensure(pid) else []

    def in_ids(self, pid: int) -> list[int]:
        """Pages that link to or mention this page, sorted."""
        if pid not in self._in:
            self._in[pid] = self.store.in_links(pid)
        return self._in[pid]

    def degree(self, pid: int) -> int:
        """Number of distinct pages linked with this one, in either direction."""
        return len(set(self.out_ids(pid)) | set(self.in_ids(pid)))

    def passages(self, pid: int) -> list[tuple[str, str]]:
        """``[(docid, text)]`` of the page, in order."""
        return self._passages.get(pid, []) if self._ensure(pid) else []

    def categories(self, pid: int) -> tuple[str, ...]:
        """Category names of the page."""
        return self._cats.get(pid, ()) if self._ensure(pid) else ()

    def has_field(self, pid: int, key: str) -> bool:
        """Whether the page's infobox has the field ``key`` (of the fields the source reads: those of its relations)."""
        return key in self._box.get(pid, {}) if self._ensure(pid) else False

    def box_out(self, pid: int) -> list[tuple[int, str]]:
        """``[(dst, key)]``: infobox fields of this page whose value names another page."""
        if pid not in self._box_out:
            out: list[tuple[int, str]] = []
            for key, value in sorted(self._box.get(pid, {}).items()) if self._ensure(pid) else []:
                if (
                    key.lower() in SKIP_INFOBOX_KEYS
                    or NO_RELATION_KEY.search(key.lower())
                    or not isinstance(value, str)
                ):
                    continue
                for part in SPLIT_VALUE.split(value):
                    dst = self.resolve(part) if 2 < len(part) < 80 else None
                    if dst is not None and dst != pid and (dst, key) not in out:
                        out.append((dst, key))
            self._box_out[pid] = out
        return self._box_out[pid]

    def box_in(self, pid: int) -> list[tuple[int, str]]:
        """``[(src, key)]``: infobox fields of other pages naming this one (preloaded stores: all; else those seen)."""
        if self._box_in is None:
            self._box_in = defaultdict(list)
            for src in sorted(p for p, b in self._box.items() if b):
                for dst, key in self.box_out(src):
                    self._box_in[dst].append((src, key))
        return self._box_in.get(pid, [])

    def find_passage(self, pid: int, names: Iterable[str]) -> tuple[str | None, str]:
        """The first passage of page ``pid`` naming any of ``names`` (case-sensitive first), with the sentence.

        Returns:
            ``(docid, sentence)``, or ``(None, "")`` when no passage names it.
        """
        return next(self.sentences_naming(pid, names), (None, ""))

    def sentences_naming(self, pid: int, names: Iterable[str]) -> Iterator[tuple[str, str]]:
        """``(docid, sentence)`` of every sentence of page ``pid`` naming any of ``names`` as whole words, in page
        order; the case-sensitive matches first, then those only a case-folded match finds."""
        names = [n for n in dict.fromkeys(names) if n and len(n) >= 3]
        exact, folded = Names(names), Names([n.lower() for n in names])
        seen: set[tuple[int, int]] = set()
        for fold, finder in ((False, exact), (True, folded)):
            for i, (docid, text, low) in enumerate(self._passage_texts(pid)):
                hay = low if fold else text
                if not any(n in hay for n in finder.names) or finder.search(hay) is None:
                    continue
                for j, sent in enumerate(self._split(pid, i)):
                    if (i, j) not in seen and finder.search(sent.lower() if fold else sent) is not None:
                        seen.add((i, j))
                        yield docid, sent

    def _passage_texts(self, pid: int) -> list[tuple[str, str, str]]:
        """``(docid, text, lower-cased text)`` of the page's passages (cached)."""
        if pid not in self._lowered:
            self._lowered[pid] = [(d, t, t.lower()) for d, t in self.passages(pid)]
        return self._lowered[pid]

    def _split(self, pid: int, i: int) -> list[str]:
        """The sentences of the page's ``i``-th passage (cached)."""
        key = (pid, i)
        if key not in self._sents:
            from wiki_index.parse.text import split_sentences

            self._sents[key] = split_sentences(self._passage_texts(pid)[i][1])
        return self._sents[key]

    def typed_relation(
        self, pid: int, names: list[str], sentences: Iterable[tuple[str, str]]
    ) -> tuple[str, str, str] | None:
        """``(template, docid, sentence)`` of the first of ``sentences`` (sentences of page ``pid`` naming the target by
        one of ``names``) that states a typed relation between the page and the target
        (:func:`~training.synth.extract.relations.extract_relation`), else ``None``."""
        src = self._rows[pid].title
        own = [src, _QUALIFIER.sub("", src)]
        ent = self.entity(src)
        if ent is not None and ent.is_person and len(own[1].split()) > 1 and len(own[1].split()[-1]) >= 4:
            own.append(own[1].split()[-1])  # "Einstein" for Albert Einstein
        for docid, sent in sentences:
            template = extract_relation(sent, own, names, person=self._personal(pid, ent))
            if template is not None:
                self.typed_relations += 1
                return template, docid, sent
        return None

    def _personal(self, pid: int, ent: Entity | None) -> bool:
        """Whether "he" or "she" can stand for page ``pid``'s subject: a biography, or a lead that says "He ..." (the
        sample's pages often have no infobox or category to tell)."""
        if ent is None or ent.is_person:
            return True
        psg = self._passage_texts(pid)
        return bool(psg) and reads_as_biography(psg[0][1])

    # --- the build_dense_kg callables ---------------------------------------------------------

    def entity(self, title: str) -> Entity | None:
        """The entity of a page title (redirects resolved), or ``None`` when it is not a page."""
        pid = self.resolve(title)
        if pid is None or not self._ensure(pid):
            return None
        if pid not in self._entities:
            r = self._rows[pid]
            box = {
                k: v
                for k, v in self._box.get(pid, {}).items()
                if FACT_KEY.search(k.lower()) and not NO_FACT_KEY.search(k.lower())
            }
            self._entities[pid] = make_entity(
                r.title,
                description=r.description,
                lead=r.lead,
                infobox=box,
                categories=self._cats.get(pid, ()),
                page_len=r.page_len,
            )
        return self._entities[pid]

    def neighbours(self, title: str) -> list[tuple[str, dict[str, Any]]]:
        """Outgoing relations of a page with their provenance (see the module docstring)."""
        pid = self.resolve(title)
        if pid is None or not self._ensure(pid):
            return []
        if pid not in self._nbrs:
            src = self._rows[pid]
            kind = "mention" if src.source == "lead" else "link"
            out: dict[str, dict[str, Any]] = {}  # one relation per target: an infobox field wins over a link
            for dst, key in self.box_out(pid):
                out.setdefault(
                    self.title(dst),
                    {
                        "kind": "infobox",
                        "relation": key,
                        "page": src.title,
                        "passage": None,
                        "ordinal": None,
                        "anchor": self._box[pid].get(key, "")[:120],
                        "evidence": f"{key} = {self._box[pid].get(key, '')[:200]}",
                    },
                )
            for dst, ordinal, anchor in self._out.get(pid, []):
                tgt = self.title(dst)
                names = [anchor, tgt, _QUALIFIER.sub("", tgt)]
                tries = list(islice(self.sentences_naming(pid, names), 3))  # the first names it: the edge's evidence
                docid, sent = tries[0] if tries else (None, "")
                if docid is None:
                    self.passage_missing += 1
                else:
                    self.passage_found += 1
                if tgt in out:  # also linked in the text: the passage naming it backs the infobox relation
                    out[tgt].update(passage=docid, ordinal=ordinal)
                    continue
                typed = self.typed_relation(pid, names, tries)
                relation = kind
                if typed is not None:  # the sentence stating the relation is the edge's evidence
                    relation, docid, sent = typed
                out[tgt] = {
                    "kind": kind,
                    "relation": relation,
                    "page": src.title,
                    "passage": docid,
                    "ordinal": ordinal,
                    "anchor": anchor,
                    "evidence": sent,
                }
            self._nbrs[pid] = list(out.items())
        return self._nbrs[pid]

    def node_stats(self, title: str) -> dict[str, Any]:
        """Store-level statistics of a node: page id, URL, source, in/out/total corpus degree, lead docid."""
        pid = self.resolve(title)
        if pid is None or not self._ensure(pid):
            return {}
        r = self._rows[pid]
        psg = self.passages(pid)
        return {
            "page_id": pid,
            "url": r.url,
            "source": r.source,
            "out_degree": len(self.out_ids(pid)),
            "in_degree": len(self.in_ids(pid)),
            "corpus_degree": self.degree(pid),
            "lead_passage": psg[0][0] if psg else None,
        }
