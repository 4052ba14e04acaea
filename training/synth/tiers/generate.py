"""Curriculum tiers below SailorFog-QA: ``lookup`` (one typed relation, the entity named) and ``bridge`` (two hops).

Search-R1 and ZeroSearch start small models on one- and two-hop questions (NQ, HotpotQA) and raise the difficulty
from there; a 135M model cannot chain the six hops of a SailorFog-QA question. Both tiers are read off every page's
relations as the SailorFog-QA knowledge graph sees them (:meth:`~training.synth.graph.store_source.StoreSource.neighbours`),
*typed* relations only: an infobox field or a relation phrase read from a sentence (:mod:`training.synth.extract.relations`),
each backed by the sentence or field that states it (the record's ``provenance``):

* ``lookup``: "Bucharest is the capital of which country?" One fact of page S about O; S is named and O is asked.
  Gates: the relation is *functional* on S (S's page states it for one target only, it is not a relation that
  holds for several objects at once such as "bordered by", and O is not one item of a list in its sentence), the answer
  is not in the question, and one search shows the answer page in the top ``k`` (the point of
  this tier: the oracle needs one search): the question itself, else the subject's name with the relation's words
  ("Bucharest capital").
* ``bridge``: "Bucharest is the capital of a country. What is the currency of that country?" Two facts A -> B -> C,
  each functional (forward or reverse, :mod:`training.synth.tiers.facts`); A is named, B and C are not. Gates: the
  question's own search does *not* show C's page (a defect for this tier: the first search must not answer it), the
  question's first sentence (else A's name with the relation's words) shows B, and its second sentence with B named
  (else B's name with the relation's words) shows C (the oracle needs two searches). A search *shows* an entity when
  its page is among the top ``k`` results or its name is in a result's snippet, as the agent reads them.

The held-out split is answer-disjoint by default (:mod:`training.synth.tiers.split`): no held-out answer is a train
answer, so a model cannot score by recalling frequent train answers.

Each lookup and bridge question is written in every surface form that applies (:mod:`training.synth.tiers.forms`: the
clue sentence after the question, a relative clause, a description, other words) and one form is drawn per question;
some forms are never drawn for a train record (the form-disjoint held-out families). The ``intersection`` tier (two
or three clues about one country, :mod:`training.synth.tiers.intersection`) is generated through the same entry point.

Records carry the fields the env, the oracle (``clues[].query`` / ``clues[].entity``, ``evidence``, ``answer_url``)
and the feedback loop (``difficulty.score`` / ``oracle_searches``: lookup 1, bridge 2, below every SailorFog-QA
question) read, plus ``tier``. Everything is deterministic for a seed.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from simweb_core.fields import help_field
from training.synth.compose.naming import head_noun, leaks
from training.synth.compose.uncertainty import relation_label
from training.synth.extract.relations import SRC, fill, infobox_template, is_text_relation, relation_words
from training.synth.tiers.card import render_tier_card, tier_card
from training.synth.tiers.facts import Fact, all_facts
from training.synth.tiers.forms import (
    FORMS,
    UNSEEN_FORMS,
    bridge_forms,
    forms_problem,
    lookup_forms,
    settle_forms,
    short_description,
)
from training.synth.tiers.view import ResultView, aliases
from wiki_index.types import bare_title, title_to_url

TIERS = ("lookup", "bridge", "intersection", "sailorfog")
__all__ = ["TIERS", "ResultView", "TierConfig", "TierReport", "ask", "generate_tier", "render_tier_card", "tier_card"]


@dataclass
class TierConfig:
    """Settings of one ``lookup`` / ``bridge`` / ``intersection`` synthesis run."""

    tier: str = help_field(
        "lookup", "'lookup' (one relation), 'bridge' (two hops) or 'intersection' (two or three clues, one answer)."
    )
    n: int = help_field(600, "Questions wanted (fewer when the graph runs out).")
    seed: int = help_field(0, "Seed of the graph growth and of the question order.")
    test_fraction: float = help_field(0.25, "Share of ids in the held-out 'test' split.")
    k: int = help_field(10, "Search results an agent sees (the gates look in the top k).")
    snippet_chars: int = help_field(240, "Snippet length of a search result, as the env shows it (SimConfig).")
    split: str = help_field(
        "answer", "'answer': no held-out answer (or alias) is a train answer; 'id': hashed ids (older sets)."
    )
    forms: tuple[str, ...] = help_field(
        FORMS,
        "Question forms drawn per question (training/synth/tiers/forms.py: FORMS, and the opt-in EXTRA_FORMS); "
        "('template',): the older sets.",
    )
    unseen_forms: tuple[str, ...] = help_field(
        UNSEEN_FORMS, "Forms never drawn for a train record (the form-disjoint held-out families); () for none."
    )
    settle: bool = help_field(
        True,
        "Draw each record's form at the end; False keeps every form's variant (record['variants']) for a caller "
        "that splits the records again and then calls tier_forms.settle_forms (sim-web learn).",
    )
    progress: bool = help_field(False, "Show a progress bar.")

    def __post_init__(self) -> None:
        if self.tier not in ("lookup", "bridge", "intersection"):
            raise ValueError(
                f"TierConfig.tier must be 'lookup', 'bridge' or 'intersection', found {self.tier!r}; 'sailorfog' is "
                "training.synth.pipeline.generate"
            )
        self.forms, self.unseen_forms = tuple(self.forms), tuple(self.unseen_forms)
        if problem := forms_problem(self.forms, self.unseen_forms):
            raise ValueError(f"TierConfig.{problem}")
        if self.split not in ("answer", "id"):
            raise ValueError(f"TierConfig.split must be 'answer' or 'id', found {self.split!r}")
        if self.n < 1 or self.k < 1 or not 0 <= self.test_fraction < 1:
            raise ValueError(
                f"TierConfig needs n >= 1, k >= 1 and 0 <= test_fraction < 1; found n={self.n}, k={self.k}, "
                f"test_fraction={self.test_fraction}"
            )


@dataclass
class TierReport:
    """What a tier run did: the facts found and the funnel through every gate."""

    config: dict[str, Any] = field(default_factory=dict)
    facts: Counter = field(default_factory=Counter)
    funnel: Counter = field(default_factory=Counter)


def ask(fact: Fact, subject_ref: str, asked: str) -> str:
    """The fact as a clause with the subject's reference and the asked role's phrase (``"which country"``)."""
    rel = fact.relation
    if not is_text_relation(rel):
        label = relation_label(rel, camel=False)
        template = infobox_template(label)
        if template.startswith(SRC + " is"):
            return fill(template, subject_ref, asked)
        if asked.startswith(("which ", "who")):
            return f"{'who' if asked.startswith('who') else 'what'} is the {label} of {subject_ref}"
        return fill(template, subject_ref, asked)
    return fill(rel, subject_ref, asked)


def _question_case(clause: str) -> str:
    return clause[:1].upper() + clause[1:].rstrip(".") + "?"


def _wh(head: str) -> str:
    return "who" if head == "person" else f"which {head}"


def lookup_question(fact: Fact, src: Any) -> str:
    """``"Bucharest is the capital of which country?"``: the subject named, the object asked."""
    head = head_noun(src.entity(fact.obj), forbidden=[fact.subject])
    return _question_case(ask(fact, bare_title(fact.subject), _wh(head)))


def bridge_parts(first: Fact, second: Fact, src: Any) -> tuple[str, str]:
    """The bridge question, A named and B described (``"Bucharest is the capital of a country. What is the currency
    of that country?"``), and its second sentence with B named (``"What is the currency of Romania?"``): the search
    a solver writes once the first search has shown B."""
    head_b = head_noun(src.entity(first.obj), forbidden=[first.subject, second.obj])
    head_c = head_noun(src.entity(second.obj), forbidden=[first.subject, first.obj])
    art = "an" if head_b[:1] in "aeiou" else "a"
    intro = ask(first, bare_title(first.subject), f"{art} {head_b}")
    question = f"{intro[:1].upper()}{intro[1:]}. {_question_case(ask(second, f'that {head_b}', _wh(head_c)))}"
    return question, _question_case(ask(second, bare_title(first.obj), _wh(head_c)))


def _query(subject: str, fact: Fact) -> str:
    return f"{bare_title(subject)} {relation_words(fact.relation)}".strip()


def _leaks(question: str, *titles: str) -> bool:
    return any(leaks(question, [t, bare_title(t)]) for t in titles)


def _record(
    tier: str,
    question: str,
    answer: str,
    facts: list[Fact],
    queries: list[str],
    searches: int,
    top_q: bool,
    cfg: TierConfig,
    src: Any,
    variants: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A tier record asked as ``question`` (its template form: the id), with each form's ``variants`` when given."""
    from sim_web.env.tasks import split_of

    rid = f"{tier}-" + hashlib.sha1(f"{cfg.seed}|{question}".encode()).hexdigest()[:12]
    hops = len(facts)
    steps = question.split(". ", 1) if hops > 1 else [question]  # what each search looks for, in the question's words
    return {
        "id": rid,
        "question": question,
        "answer": answer,
        "aliases": aliases(src, answer),
        "split": split_of(rid, cfg.test_fraction),
        "tier": tier,
        "answer_url": title_to_url(answer),
        "evidence": [{"title": f.obj, "url": title_to_url(f.obj)} for f in facts],
        "clues": [
            {"entity": f.obj, "query": q, "text": t, "type": "relational"} for f, q, t in zip(facts, queries, steps)
        ],
        "provenance": [
            {
                "page": f.subject,
                "relation": f.relation,
                "kind": f.kind,
                "sentence": f.evidence,
                "passage": f.passage,
                "object": f.obj,
            }
            for f in facts
        ],
        "uncertainty_types": ["relational"] if hops > 1 else [],
        "difficulty": {
            "score": float(hops),
            "hops": hops,
            "level": "easy" if hops == 1 else "medium",
            "oracle_searches": searches,
            "top10_question": top_q,
            "nodes": hops + 1,
            "edges": hops,
        },
        "generator": f"tier:{tier}",
        "seed": cfg.seed,
        "weight": 1.0,
        "form": "template",
        **({"variants": variants} if variants else {}),
    }


def _lookups(
    by_subject: dict[str, list[Fact]], view: ResultView, cfg: TierConfig, src: Any, rep: TierReport, rng: random.Random
) -> list[dict[str, Any]]:
    facts = [f for s in sorted(by_subject) for f in by_subject[s] if f.direction == "forward"]
    rng.shuffle(facts)
    out, seen = [], set()
    for f in facts:
        if len(out) >= cfg.n:
            break
        rep.funnel["candidates"] += 1
        q = lookup_question(f, src)
        if q in seen or _leaks(q, f.obj):
            rep.funnel["duplicate_or_leak"] += 1
            continue
        seen.add(q)
        top = view.titles(q)
        rep.funnel["question_finds_answer"] += f.obj in top
        rep.funnel["question_finds_subject"] += f.subject in top
        query = q if f.obj in top else _query(f.subject, f)
        if query != q and f.obj not in view.titles(query):
            rep.funnel["unanswerable"] += 1
            continue
        variants = _lookup_variants(f, src, cfg, view, rep) if len(cfg.forms) > 1 else None
        out.append(_record("lookup", q, f.obj, [f], [query], 1, f.obj in top, cfg, src, variants))
    return out


def _lookup_variants(f: Fact, src: Any, cfg: TierConfig, view: ResultView, rep: TierReport) -> dict[str, Any]:
    """Each form of a lookup question that names neither answer nor itself twice, with its own search's reach."""
    head = head_noun(src.entity(f.obj), forbidden=[f.subject])
    desc = short_description(src.entity(f.obj), [f.subject, f.obj])
    forms = lookup_forms(lambda s, a: ask(f, s, a), bare_title(f.subject), head, _wh(head), desc)
    out = {}
    for form, text in forms.items():
        if form not in cfg.forms or (form != "template" and _leaks(text, f.obj)):
            rep.funnel[f"form_leak_{form}"] += form in cfg.forms
            continue
        out[form] = {"question": text, "top10_question": f.obj in view.titles(text)}
    return out


def _bridges(
    by_subject: dict[str, list[Fact]], view: ResultView, cfg: TierConfig, src: Any, rep: TierReport, rng: random.Random
) -> list[dict[str, Any]]:
    """A -> B -> C chains; each hop is answerable when its search shows the next entity (a result, or its name in a
    snippet): the question's first sentence (else A's name with the relation's words) for B, then the second
    sentence with B named (else B's name with the relation's words, else B's name) for C."""
    pairs = [
        (a, b)
        for s in sorted(by_subject)
        for a in by_subject[s]
        for b in by_subject.get(a.obj, [])
        if b.obj not in (a.subject, a.obj)
    ]
    rng.shuffle(pairs)
    out, seen, used = [], set(), Counter()
    for a, b in pairs:
        if len(out) >= cfg.n:
            break
        if used[a.subject] >= 2:  # spread the set over many named entities
            continue
        rep.funnel["candidates"] += 1
        q, named = bridge_parts(a, b, src)
        if q in seen or _leaks(q, a.obj, b.obj):
            rep.funnel["duplicate_or_leak"] += 1
            continue
        seen.add(q)
        if b.obj in view.titles(q):
            rep.funnel["question_finds_answer"] += 1
            continue
        intro = q.split(". ", 1)[0]
        q1 = next((x for x in (intro, _query(a.subject, a), q) if view.shows(x, a.obj)), None)
        q2 = next((x for x in (named, _query(a.obj, b), bare_title(a.obj)) if view.shows(x, b.obj)), None)
        if q1 is None or q2 is None:
            rep.funnel["unanswerable"] += 1
            continue
        used[a.subject] += 1
        variants = _bridge_variants(a, b, src, cfg, view, rep, rng) if len(cfg.forms) > 1 else None
        rec = _record("bridge", q, b.obj, [a, b], [q1, q2], 2, False, cfg, src, variants)
        rec["difficulty"]["question_snippet_names_answer"] = view.shows(q, b.obj)
        rep.funnel["question_snippet_names_answer"] += rec["difficulty"]["question_snippet_names_answer"]
        rep.funnel["reverse_hops"] += (a.direction == "reverse") + (b.direction == "reverse")
        out.append(rec)
    return out


def _bridge_variants(
    a: Fact, b: Fact, src: Any, cfg: TierConfig, view: ResultView, rep: TierReport, rng: random.Random
) -> dict[str, Any]:
    """Each form of a bridge question that names neither B nor C and whose own search does not show C's page (the
    tier's gate, per form); the hops' searches are the template's (the facts do not change with the wording)."""
    head_b = head_noun(src.entity(a.obj), forbidden=[a.subject, b.obj])
    head_c = head_noun(src.entity(b.obj), forbidden=[a.subject, a.obj])
    desc = short_description(src.entity(a.obj), [a.subject, a.obj, b.obj])
    forms = bridge_forms(
        lambda s, x: ask(a, s, x), lambda s, x: ask(b, s, x), bare_title(a.subject), head_b, _wh(head_c), desc, rng
    )
    out = {}
    for form, text in forms.items():
        if form not in cfg.forms:
            continue
        if form != "template" and (_leaks(text, a.obj, b.obj) or b.obj in view.titles(text)):
            rep.funnel[f"form_dropped_{form}"] += 1
            continue
        out[form] = {"question": text, "question_snippet_names_answer": view.shows(text, b.obj)}
    return out


def generate_tier(
    index_dir: str | Path | None = None, config: TierConfig | None = None
) -> tuple[list[dict[str, Any]], TierReport]:
    """Synthesise a ``lookup`` or ``bridge`` task set from an index.

    Args:
        index_dir: The index directory (default: the sample index under ``$SIM_WEB_HOME``).
        config: The tier and its settings.

    Returns:
        ``(records, report)``; fewer than ``config.n`` records when the graph has no more facts that pass the gates.
    """
    from sim_web.backends.sim import SimBackend, SimConfig
    from training.synth.graph.store_source import StoreSource
    from training.synth.tiers.split import answer_disjoint_split
    from wiki_index.search.index import WikiIndex

    cfg = config or TierConfig()
    rep = TierReport(config=asdict(cfg))
    if cfg.tier == "intersection":
        from training.synth.tiers.intersection import generate_intersection

        return generate_intersection(index_dir, cfg, rep)
    index = WikiIndex.from_dir(index_dir)
    src = StoreSource(index.store)
    view = ResultView(SimBackend(index, SimConfig(snippet_chars=cfg.snippet_chars)), cfg.k)
    titles = sorted(src.title(p) for p in src.page_ids())
    rep.facts["pages"] = len(titles)
    by_subject = all_facts(src, titles, rep, progress=cfg.progress)
    make = _lookups if cfg.tier == "lookup" else _bridges
    records = make(by_subject, view, cfg, src, rep, random.Random(f"{cfg.seed}:{cfg.tier}"))
    if cfg.split == "answer":
        answer_disjoint_split(records, cfg.test_fraction, cfg.seed)
    if cfg.settle:
        records = settle_forms(records, cfg.unseen_forms, cfg.seed, rep.funnel)
    rep.funnel["accepted"] = len(records)
    rep.funnel["searches"] = view.searches
    return records, rep
