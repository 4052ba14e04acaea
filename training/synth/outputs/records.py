"""Task records: one verified question with its subgraph, provenance, evidence and difficulty.

The record schema is what the env (:func:`sim_web.env.tasks.load_tasks`) and the oracle agent read:
``id, question, answer, aliases, split`` plus the metadata documented in :func:`build_record`.
Every nested dict has a fixed set of keys (``None`` where a value is missing) so that the same
records load into Hugging Face ``datasets`` and DuckDB without schema drift.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import networkx as nx

from training.synth.compose.constraints import NodeSpec, flatten, walk
from training.synth.compose.naming import name_variants
from training.synth.compose.templates import QuestionDraft
from training.synth.compose.transfer import link_dependent
from training.synth.graph.orbits import node_orbits
from training.synth.graph.sampling import Subgraph
from training.synth.graph.store_source import StoreSource
from training.synth.verify.clue_evidence import clue_evidence
from training.synth.verify.gates import Retrieval
from wiki_index.types import title_to_url

LEVELS = ("easy", "medium", "hard")
#: A hard question chains at least this many typed facts (its hops) ...
HARD_HOPS = 3
#: ... and the oracle needs at least this many searches to reach its answer.
HARD_SEARCHES = 4
_CHECKED = (
    "relational",
    "counting",
    "intersection",
    "negation",
    "fuzzy_date",
    "fuzzy_number",
    "partial_name",
    "temporal_order",
)
_PROVENANCE_KEYS = ("page", "passage", "anchor", "ordinal", "evidence", "query")


@dataclass(frozen=True)
class Difficulty:
    """Difficulty of a question: its shape, and how hard the simulator's search finds its answer (measured).

    Measured per question: ``oracle_searches`` (the searches a provenance-following oracle needs to
    reach the answer page: the answerability solver's winning query for the answer and,
    recursively, those of the entities that query needed, :meth:`~training.synth.verify.gates.Retrieval.searches_needed`),
    ``search_tries`` (every query that solver tried, failures included), and whether the answer
    page is in the sim's top 10 for the question itself (``top10_question``) or for any single
    clue about the answer (``top10_clue``). The level follows the measurements: ``easy`` when one
    search of a single clue already shows the answer page, when the oracle needs at most one search, or when the
    question has a single constraint (a one-clue question is a lookup, whatever the search engine does); ``hard`` when neither the question nor a
    single clue does, the question chains at least :data:`HARD_HOPS` typed facts and the oracle needs
    at least :data:`HARD_SEARCHES` searches; ``medium`` otherwise. ``score = hops + cycle rank + constraints / 4`` is the shape alone,
    kept for comparison with the older sets (whose level was that score cut at 4.5 and 6.25).
    """

    nodes: int
    edges: int
    hops: int
    constraints: int
    level: str
    score: float = 0.0
    oracle_searches: int = 0
    search_tries: int = 0
    top10_question: bool = False
    top10_clue: bool = False
    best_clue_rank: int | None = None

    @classmethod
    def of(
        cls,
        nodes: int,
        edges: int,
        hops: int,
        constraints: int,
        *,
        searches: int = 0,
        tries: int = 0,
        reach: dict[str, Any] | None = None,
    ) -> Difficulty:
        """The shape score and the measured level (see the class docstring)."""
        reach = reach or {}
        score = hops + (edges - nodes + 1) + constraints / 4
        top_q, top_c = bool(reach.get("top10_question")), bool(reach.get("top10_clue"))
        deep = hops >= HARD_HOPS and searches >= HARD_SEARCHES
        one_step = top_c or 0 < searches <= 1 or constraints <= 1
        level = "easy" if one_step else "hard" if deep and not top_q else "medium"
        return cls(
            nodes, edges, hops, constraints, level, score, searches, tries, top_q, top_c, reach.get("best_clue_rank")
        )

    def as_dict(self) -> dict[str, Any]:
        """The record's ``difficulty`` field."""
        return {
            "nodes": self.nodes,
            "edges": self.edges,
            "hops": self.hops,
            "constraints": self.constraints,
            "score": self.score,
            "level": self.level,
            "oracle_searches": self.oracle_searches,
            "search_tries": self.search_tries,
            "top10_question": self.top10_question,
            "top10_clue": self.top10_clue,
            "best_clue_rank": self.best_clue_rank,
        }


def task_id(seed: int, question: str) -> str:
    """Stable id of a question: ``sfqa-`` + 12 hex digits of SHA-1 over the seed and the text."""
    return "sfqa-" + hashlib.sha1(f"{seed}|{question}".encode()).hexdigest()[:12]


def target_orbit(g: nx.Graph, target: str) -> tuple[int, list[list[str]]]:
    """Index of the target's automorphism orbit in :func:`node_orbits` order, and the orbits as sorted title lists."""
    orbits = [sorted(map(str, o)) for o in node_orbits(g)]
    return next(i for i, o in enumerate(orbits) if target in o), orbits


def _edge(g: nx.Graph, u: str, v: str) -> dict[str, Any]:
    d = g.edges[u, v]
    src, dst = d.get("source_page", u), d.get("target_page", v)
    prov = {k: d.get(k) for k in _PROVENANCE_KEYS}
    prov["page"] = prov["page"] or src
    prov["ordinal"] = int(prov["ordinal"]) if prov["ordinal"] is not None else None
    prov["evidence"] = (prov["evidence"] or "")[:400]
    return {
        "source": src,
        "target": dst,
        "relation": str(d.get("relation", d.get("kind", "link"))),
        "kind": str(d.get("kind", "link")),
        "reciprocal": bool(d.get("reciprocal", False)),
        "provenance": prov,
    }


def _docids(src: StoreSource, node: NodeSpec | None, title: str, edges: list[dict[str, Any]]) -> list[str]:
    """Passages that back what the question says about ``title``: its lead, the passages holding its
    relations, and those stating its facts."""
    pid = src.resolve(title)
    if pid is None:
        return []
    order = {d: i for i, (d, _) in enumerate(src.passages(pid))}
    found = [d for d, _ in src.passages(pid)[:1]]
    found += [e["provenance"]["passage"] for e in edges if e["source"] == title and e["provenance"]["passage"]]
    for f in node.facts if node else []:
        if f.original:
            docid, _ = src.find_passage(pid, [f.original])
            if docid:
                found.append(docid)
    return sorted(set(found) & set(order), key=order.get)


def build_record(
    *,
    draft: QuestionDraft,
    question: str,
    root: NodeSpec,
    sub: Subgraph,
    src: StoreSource,
    retrieval: Retrieval,
    shortcut: bool,
    generator: str,
    seed: int,
    split: str,
    weight: float = 1.0,
    candidates: int = 1,
    reach: dict[str, Any] | None = None,
    transfer: dict[str, Any] | None = None,
    checker: Any = None,
) -> dict[str, Any]:
    """Assemble one task record.

    Args:
        draft: The template draft (structure, clues, uncertainty types, hops).
        question: The final question text (the draft's, or the LLM's rewrite of it).
        root: The parsed constraint tree of the draft.
        sub: The sampled subgraph (with KG node and edge attributes).
        src: The store, for aliases, URLs and passage ids.
        retrieval: The answerability gate's outcome (its queries become ``clues[].query``).
        shortcut: Whether BM25 top-1 on the question is the answer page.
        generator: ``"template"`` or ``"llm"``.
        seed: The generation seed.
        split: ``"train"`` or ``"test"``.
        weight: Sampling weight (below 1 for down-weighted shortcut questions).
        candidates: Size of the uniqueness check's final candidate set.
        reach: Where the answer page ranks for the question and its single clues
            (:meth:`~training.synth.verify.gates.SearchGates.reach`), for the measured difficulty.
        transfer: :func:`~training.synth.compose.transfer.transfer_check`'s counts (relations and facts whose evidence page
            the sim's search finds for the clue's own words).
        checker: The run's :class:`~training.synth.verify.clue_check.ClueChecker` (the facts' evidence sentences), if any.

    Returns:
        The record: ``id, question, answer, aliases, split, answer_url, evidence, clues,
        uncertainty_types, structure, subgraph, target, target_orbit, difficulty, shortcut,
        generator, seed`` and ``template, weight, verification, transfer``.
    """
    g = sub.graph
    answer = draft.answer
    pid = src.resolve(answer)
    aliases = sorted({a for a in (src.aliases(pid) if pid is not None else []) + name_variants(answer) if a != answer})
    edges = [_edge(g, u, v) for u, v in sorted(g.edges, key=lambda e: (str(e[0]), str(e[1])))]
    specs = {n.entity: n for n in walk(root)}
    orbit, orbits = target_orbit(g, answer)
    nodes = sorted(map(str, g.nodes))
    node_info = []
    for t in nodes:
        a = g.nodes[t]
        node_info.append(
            {
                "title": t,
                "page_id": a.get("page_id"),
                "url": title_to_url(t),
                "description": a.get("description", ""),
                "kg_degree": int(a.get("degree", 0)),
                "corpus_degree": a.get("corpus_degree"),
                "page_len": int(a.get("page_len", 0)),
                "found_by": a.get("found_by", ""),
                "query": a.get("query"),
            }
        )
    evidence = [{"title": t, "url": title_to_url(t), "docids": _docids(src, specs.get(t), t, edges)} for t in nodes]
    clues = [
        {**c, "query": retrieval.queries.get(c["entity"], ""), "evidence": clue_evidence(c, specs, g, src, checker)}
        for c in flatten(root, draft.head)
    ]
    searches = retrieval.searches_needed(answer)
    checked = [c for c in clues if c["type"] in _CHECKED]
    tr = {"clues": 0, "evidence_found": 0, **(transfer or {})}
    tr = {
        "clues": int(tr["clues"]),
        "evidence_found": int(tr["evidence_found"]),
        "evidence_share": tr["evidence_found"] / tr["clues"] if tr["clues"] else 0.0,
        "link_graph": sum(map(link_dependent, checked)),
        "link_share": sum(map(link_dependent, checked)) / len(checked) if checked else 0.0,
    }
    diff = Difficulty.of(
        g.number_of_nodes(),
        g.number_of_edges(),
        draft.hops,
        root.constraint_count(),
        searches=searches,
        tries=retrieval.tries,
        reach=reach,
    )
    return {
        "id": task_id(seed, question),
        "question": question,
        "answer": answer,
        "aliases": aliases,
        "split": split,
        "answer_url": title_to_url(answer),
        "evidence": evidence,
        "clues": clues,
        "uncertainty_types": list(draft.uncertainty_types),
        "structure": draft.structure,
        "subgraph": {"nodes": nodes, "edges": edges, "node_info": node_info, "orbits": orbits, "wl_hash": sub.wl_hash},
        "target": answer,
        "target_orbit": orbit,
        "difficulty": diff.as_dict(),
        "shortcut": shortcut,
        "generator": generator,
        "seed": seed,
        "template": draft.template,
        "weight": float(weight),
        "verification": {
            "unique": True,
            "candidates": int(candidates),
            "answerable": retrieval.answerable,
            "resolution_order": list(retrieval.order),
        },
        "transfer": tr,
    }
