"""Drafting one question for a target: the generator, parsing, dedup, the uniqueness and look-alike checks, the
optional LLM rewrite, and the shortcut gate with its rewordings (:func:`draft_question`). :mod:`training.synth.pipeline`
runs it over the targets of a run, with :class:`Ctx`, what every gate of that run shares.
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from training.synth.compose.clue_builder import AnswerLeakError
from training.synth.compose.constraints import ParseError, flatten, parse_clues
from training.synth.compose.llm import LLMGenerator
from training.synth.compose.steering import rewrites
from training.synth.compose.templates import excluding, extend, generate_question
from training.synth.config import SynthConfig
from training.synth.graph.store_source import StoreSource
from training.synth.outputs.report import SynthReport
from training.synth.verify.clue_check import ClueChecker
from training.synth.verify.gates import Deduper, SearchGates
from training.synth.verify.lookalikes import page_lookalikes, thin_lookalikes, unruled
from training.synth.verify.pinning import pin
from training.synth.verify.uniqueness import Verifier

log = logging.getLogger(__name__)

#: Look-alikes the uniqueness check may leave that a draft then names in a negation, at most.
MAX_EXCLUDED = 2


@dataclass
class Ctx:
    """What every gate of one run shares."""

    cfg: SynthConfig
    kg: Any
    src: StoreSource
    gates: SearchGates
    verifier: Verifier
    llm: LLMGenerator | None
    rep: SynthReport
    dedup: Deduper = field(default_factory=Deduper)
    timing: Counter = field(default_factory=Counter)
    checker: ClueChecker | None = None  # the verification stage (question-level checks, look-alike counts)
    steer: frozenset = frozenset()  # the uncertainty types the accepted questions are short of
    easy: set = field(default_factory=set)  # targets one search answered


#: The look-alike checks of the verification stage, in order, by the reason a draft they catch is dropped for.
_LOOK_ALIKES = (
    ("look_alike", unruled),  # a sibling the question's own pages name fits every clue
    ("page_look_alike", page_lookalikes),  # a page of the answer's kind that a page of the question links fits too
    ("thin_answer", thin_lookalikes),  # pinned by one relation whose sentence lists a name that fits as well
)


def _dropped(ctx: Ctx, why: str) -> None:
    """Count a draft the verification stage drops for ``why`` (the funnel's ``<why>_dropped``, the card's
    ``dropped_<why>``)."""
    ctx.rep.funnel[f"{why}_dropped"] += 1
    ctx.checker.counts[f"dropped_{why}"] += 1


def _draft(ctx: Ctx, i: int, sub: Any, target: Any, named_prob: float, tag: str, quote: bool = True) -> tuple | None:
    """One draft through the generator, parsing, dedup, uniqueness and the optional LLM rewrite:
    ``(draft, root, question, uniqueness)`` or ``None`` (counted in the funnel)."""
    f, cfg = ctx.rep.funnel, ctx.cfg
    f["drafts"] += 1
    try:
        draft = generate_question(
            sub,
            target,
            ctx.kg.entities,
            random.Random(f"{cfg.seed}:{i}:{target}{tag}"),
            kg=ctx.kg,
            named_prob=named_prob,
            quote_answer=quote,
            steer=ctx.steer,
        )
        root = parse_clues(draft.answer, draft.clues)
    except AnswerLeakError:
        f["answer_leak"] += 1
        return None
    except ParseError as e:
        f["parse_error"] += 1
        log.debug("unparsable draft for %r: %s", target, e)
        return None
    if ctx.dedup.seen(draft.question, draft.answer, [str(x) for x in sub.nodes] + [tag]):
        f["duplicate"] += 1
        return None
    if ctx.checker is not None and ctx.checker.draft(
        draft.question, draft.head, ctx.kg.graph.nodes[target].get("entity")
    ):
        f["clue_check_dropped"] += 1
        return None
    s = time.perf_counter()
    u, k = ctx.verifier.check_extending(root, draft.head, draft.extras)
    added = k
    if u.reason == "ambiguous" and 0 < u.candidates - 1 <= MAX_EXCLUDED:
        # a look-alike or two left: name them in a negation, as a near miss ("It is not Geology"), and check again
        try:
            wider = excluding(draft, k, u.others)
            again = ctx.verifier.check(parse_clues(wider.answer, wider.clues), wider.head)
        except AnswerLeakError:
            again = None
        if again is not None and again.unique:
            draft, u, k = wider, again, 0
            f["look_alikes_excluded"] += 1
    ctx.timing["unique"] += time.perf_counter() - s
    ctx.rep.uniqueness[u.reason] += 1
    f["checked_unique"] += 1
    if not u.unique:
        return None
    try:
        draft = extend(draft, k)
    except AnswerLeakError:
        f["answer_leak"] += 1
        return None
    if ctx.checker is not None:  # a region, an answer of no kind, or one with too few clues of its own
        draft, why = pin(draft, ctx.kg.graph.nodes[target].get("entity"))
        if why:
            return _dropped(ctx, why)
    root = parse_clues(draft.answer, draft.clues)
    for why, fits_too in _LOOK_ALIKES if ctx.checker is not None else ():
        if fits_too(ctx.src, ctx.verifier, root, draft.head, sub.graph):
            return _dropped(ctx, why)
    f["unique"] += 1
    f[f"facts_added_{added}"] += 1
    question = draft.question
    if ctx.llm is not None:
        s = time.perf_counter()
        question = ctx.llm.rewrite(draft, root, sub.graph, flatten(root, draft.head), seed=cfg.seed)
        ctx.timing["llm"] += time.perf_counter() - s
        if question is None or (question != draft.question and ctx.dedup.seen_text(question)):
            f["llm_rejected"] += 1
            return None
    return draft, root, question, u


def _shortcut(ctx: Ctx, question: str, answer: str) -> bool:
    s = time.perf_counter()
    out = ctx.gates.shortcut(question, answer)
    ctx.timing["shortcut"] += time.perf_counter() - s
    return out


def draft_question(ctx: Ctx, i: int, sub: Any, target: Any) -> tuple | None:
    """A verified draft for one target, whether a single search answers it, and the subgraph it was written from.

    A draft that one search answers is written again (:func:`~training.synth.compose.steering.rewrites`; counted as
    ``shortcut_reworded``, and as ``shortcut_branch_dropped`` when a branch had to go) until a version is not; the
    shortcut gate counts the final version, and every version passes the uniqueness check on its own."""
    got = _draft(ctx, i, sub, target, 0.25, "")
    if got is None:
        return None
    f = ctx.rep.funnel
    shortcut = _shortcut(ctx, got[2], got[1].entity)
    used = sub
    if shortcut and ctx.cfg.shortcut_policy == "drop":
        f["shortcut_first"] += 1
        for tag, quote, version in rewrites(sub, target, got[2]):
            again = _draft(ctx, i, version, target, 0.0, tag, quote)
            if again is not None and not _shortcut(ctx, again[2], again[1].entity):
                got, shortcut, used = again, False, version
                f["shortcut_reworded"] += 1
                f["shortcut_branch_dropped"] += tag.startswith(":without")
                break
    f["checked_shortcut"] += 1
    f["shortcut"] += shortcut
    return (*got, shortcut, used)
