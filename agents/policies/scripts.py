"""``rule:script``: the strongest zero-parameter script for each tier's generator, the baseline a learning claim beats.

``rule:first-title`` searches the question once; a model that only learnt to copy the question into a search scores
that. The tiers are built so that more than one search is needed, and a script that knows how the generator writes
questions can take those searches without learning anything. This one reads the question's shape and acts:

* **intersection** ("Which country borders Laos and lies in Southeast Asia?"): one search of every clue together
  ("country borders Laos and lies in Southeast Asia": a page that says several clues ranks high), then one per clue
  (one call each: the env cuts a long response), then the name that the most of these searches show, as a result
  title or in a snippet (ties: the better summed title rank), not named in the question;
* **bridge** (two facts, in any of the tier's forms: two sentences either way round, a leading, parenthetical or
  relative clause, a description, other words): search the clue about the named entity, read the bridge entity from
  the results (the name that follows the relation's last words in a snippet, else the first title the question does
  not name), search the question's other part with that name in place of its reference, and answer the first title
  that is neither the bridge nor named in the question;
* **lookup** (one fact): search the question (or its clue sentence), answer the first title it does not name.

It is stateless and deterministic (each turn re-reads the chat), like every baseline here.
"""

from __future__ import annotations

import json
import re
from collections import Counter

from agents.policies.base import FunctionPolicy, Messages
from agents.policies.baselines import _answer, _names
from sim_web.protocol.formatting import OBSERVATION_SEPARATOR
from wiki_index.types import bare_title

_ITEM = re.compile(r"^\d+\. \[([^\n]*)\]\((https?://[^\n]*)\)\n(.*?)(?=^\d+\. \[|\Z)", re.MULTILINE | re.DOTALL)
_CLUE = re.compile(r",? (?:and )?(?=borders |lies in |has a coast on the |is landlocked|is an island country)")
_CLUE_QUERY = (
    ("borders ", "country bordering {}"),
    ("lies in ", "country in {}"),
    ("has a coast on the ", "country with a coast on the {}"),
)
#: the phrases by which the tiers' forms point at the bridge entity
_REF = re.compile(
    r"\b(?:the [\w-]+ (?:described next|in the next sentence)|the following [\w-]+|(?:that|this) [\w -]+?"
    r"(?=\?|,| is | was | has | had |$))",
    re.IGNORECASE,
)
_RELATIVE = re.compile(r"\bthe ([\w-]+) that (.+)$", re.IGNORECASE)
#: a one-sentence bridge question whose clue opens it as a clause ("Given that Kabul is ..., which city ...?")
_JOINED = re.compile(r"^(?:Given that|If|Knowing that) (.+?), (.+\?)$")
#: a one-sentence bridge question whose clue follows its noun in parentheses ("... in the country (Kabul is ...)?")
_PAREN = re.compile(r"^(.*?)\b[Tt]he ([\w-]+) \((.+?)\)(.*\?)$")
_STOP = set("a an the of in on at by to from for is was are were that this which what who it its".split())


def result_items(reply: str) -> list[list[tuple[str, str, str]]]:
    """``[(title, url, snippet), ...]`` per search block of a tool response."""
    reply = reply.replace("<tool_response>", "").replace("</tool_response>", "")
    return [[(t, u, s.strip()) for t, u, s in _ITEM.findall(block)] for block in reply.split(OBSERVATION_SEPARATOR)]


def results(reply: str) -> list[list[tuple[str, str]]]:
    """``[(title, snippet), ...]`` per search block of a tool response."""
    return [[(t, s) for t, _, s in block] for block in result_items(reply)]


def _search(queries: list[str], think: str) -> str:
    call = {"name": "search", "arguments": {"query": queries}}
    return f"<think>{think}</think>\n<tool_call>\n{json.dumps(call, ensure_ascii=False)}\n</tool_call>"


def intersection_queries(question: str) -> list[str] | None:
    """One search per clue of an intersection question, or ``None`` when the question is not of that shape.

    >>> intersection_queries("Which country borders Greece and Romania, and is landlocked?")
    ['country bordering Greece', 'country bordering Romania', 'landlocked country']
    """
    m = re.match(r"^Which country (.+)\?$", question.strip())
    if not m:
        return None
    out = []
    for part in _CLUE.split(m.group(1)):
        part = part.strip().rstrip(",")
        if part.startswith("is landlocked"):
            out.append("landlocked country")
        elif part.startswith("is an island country"):
            out.append("island country")
        else:
            lead = next(((p, t) for p, t in _CLUE_QUERY if part.startswith(p)), None)
            if lead is None:
                return None
            names = re.split(r", | and ", part[len(lead[0]) :])
            out += [lead[1].format(n.strip()) for n in names if n.strip()]
    return out if len(out) >= 2 else None


def joint_query(question: str) -> str:
    """Every clue of an intersection question in one search: the question without "Which" and its question mark.

    >>> joint_query("Which country borders Laos and is landlocked?")
    'country borders Laos and is landlocked'
    """
    return question.strip().removeprefix("Which ").removesuffix("?")


def intersection_searches(question: str) -> list[str] | None:
    """The script's searches for an intersection question: every clue together, then each clue alone.

    >>> intersection_searches("Which country borders Laos and is landlocked?")
    ['country borders Laos and is landlocked', 'country bordering Laos', 'landlocked country']
    """
    clues = intersection_queries(question)
    return None if clues is None else [joint_query(question), *clues]


def bridge_parts(question: str) -> tuple[str, str] | None:
    """``(clue, ask)`` of a two-fact question in any of the tiers' forms, or ``None`` for a one-fact question.

    >>> bridge_parts("Which city is the largest city in the country described next? Kabul is the capital of that country.")
    ('Kabul is the capital of that country.', 'Which city is the largest city in the country described next?')
    >>> bridge_parts("Which city is the largest city in the country that Kabul is the capital of?")
    ('Kabul is the capital of', 'Which city is the largest city in the country that Kabul is the capital of?')
    >>> bridge_parts("If Kabul is the capital of a country, which city is the largest city in that country?")
    ('Kabul is the capital of a country', 'which city is the largest city in that country?')
    >>> bridge_parts("Which city is the largest city in the country (Kabul is the capital of that country)?")
    ('Kabul is the capital of that country', 'Which city is the largest city in that country?')
    >>> bridge_parts("The country (Kabul is the capital of that country) is a country in which region?")[1]
    'That country is a country in which region?'
    >>> bridge_parts("Bucharest is the capital of a country. Which country is it?") is None
    True
    """
    sents = [s for s in re.split(r"(?<=[.?])\s+", question.strip()) if s]
    if len(sents) >= 2:
        ask = next((s for s in sents if s.endswith("?")), sents[-1])
        clue = " ".join(s for s in sents if s is not ask)
        if re.fullmatch(r"(?:Which|What) [\w -]+ is it\?|Who is that person\?", ask):
            return None  # lookup, clue first
        return clue, ask
    if (joined := _JOINED.match(question.strip())) is not None:
        return joined.group(1), joined.group(2)
    if (paren := _PAREN.match(question.strip())) is not None:
        lead, head, clue, rest = paren.groups()
        return clue, f"{lead}{'that' if lead else 'That'} {head}{rest}"
    if re.match(r"^(?:What|Who) is the [\w-]+ that ", question):
        return None  # lookup, relative clause
    m = _RELATIVE.search(question.rstrip("?"))
    if m is None:
        return None
    clause = m.group(2)
    if question.startswith(("The ", "the ")):  # "The country that Gaborone is the capital of is a ... in which region?"
        cut = max(clause.rfind(" is "), clause.rfind(" was "))
        clause = clause[:cut] if cut > 0 else clause
    return clause, question


def read_bridge(clue: str, hits: list[tuple[str, str]], question: str) -> str | None:
    """The bridge entity in the clue search's results: the capitalised name after the relation's last words in a
    snippet, else the first result title the question does not name."""
    relation = re.sub(r"\b(?:a|an|that|this)\s+[\w-]+\W*$", "", re.sub(_REF, " ", clue).strip())
    words = [w for w in re.findall(r"[\w-]+", relation) if w.lower() not in _STOP]
    if words:
        cue = re.compile(
            rf"\b{re.escape(words[-1])}\b[^.]{{0,40}}?\b(?:of|in|by|on|from|to|with)\s+(?:the\s+)?((?:[A-Z][\w'-]+ ?)+)"
        )
        for _, snippet in hits:
            for m in cue.finditer(snippet):
                name = m.group(1).strip()
                if not _names(question, name) and len(name) > 2:
                    return name
    return next((bare_title(t) for t, _ in hits if not _names(question, t)), None)


def second_query(ask: str, bridge: str) -> str:
    """The question's other part with the bridge named in place of its reference."""
    base = ask.rstrip("?")
    m = _RELATIVE.search(base)
    if m is not None and not re.search(r"\b(?:that|this) [\w-]+\b", base[: m.start()]):
        if base.startswith(("The ", "the ")):  # "The country that Kabul is the capital of is a country in which ...?"
            cut = max(m.group(2).rfind(" is "), m.group(2).rfind(" was "))
            return f"{bridge}{m.group(2)[cut:]}?" if cut > 0 else f"{bridge} {base}?"
        return f"{base[: m.start()]}{bridge}?"
    new, n = _REF.subn(bridge, ask, count=1)
    return new if n else f"{ask} {bridge}"


class ScriptPolicy(FunctionPolicy):
    """``rule:script``: the per-tier script of the module docstring."""

    def __init__(self) -> None:
        super().__init__(self._next, name="rule:script")

    def _next(self, messages: Messages) -> str:
        question = messages[1]["content"] if len(messages) > 1 else ""
        replies = [m["content"] for m in messages[2:] if m["role"] == "user" and "<tool_response>" in m["content"]]
        if (queries := intersection_searches(question)) is not None:
            if len(replies) < len(queries) and not _forced(messages):  # one call each: a long response is cut
                think = "I search the next clue." if replies else "I search the clues together."
                return _search([queries[len(replies)]], think)
            blocks = [b for reply in replies for b in results(reply)]
            return _answer(self._overlap(blocks, question), "The name most searches show.")
        parts = bridge_parts(question)
        if parts is None:
            if not replies:
                return _search([question], "I search the question.")
            hits = results(replies[0])[0]
            pick = next((t for t, _ in hits if not _names(question, t)), hits[0][0] if hits else "unknown")
            return _answer(bare_title(pick), "The first result the question does not name.")
        clue, ask = parts
        if not replies:
            return _search([re.sub(r"\bthat\b(?= [\w-]+\b)", "a", clue, count=1)], "I search the clue.")
        bridge = read_bridge(clue, results(replies[0])[0], question)
        if len(replies) == 1 and bridge:
            return _search([second_query(ask, bridge)], f"The results show {bridge}. I search the next fact.")
        hits = results(replies[-1])[0] if len(replies) > 1 else []
        pick = next(
            (t for t, _ in hits if not _names(question, t) and not _names(bridge or "", t)),
            hits[0][0] if hits else (bridge or "unknown"),
        )
        return _answer(bare_title(pick), "The first new title of the second search.")

    @staticmethod
    def _overlap(blocks: list[list[tuple[str, str]]], question: str) -> str:
        """The result title that the most searches show (as a title, or named in a snippet), not named in the
        question; ties go to a title whose snippet says the asked kind ("country"), then to the better summed rank."""
        kind = (re.match(r"^Which ([\w-]+)", question) or re.match(r"(.*)", "")).group(1) or ""
        titles = {t for block in blocks for t, _ in block if not _names(question, t)}
        count, rank, typed = Counter(), Counter(), Counter()
        for block in blocks:
            text = " ".join(f"{t} {s}" for t, s in block)
            for n in titles:
                count[n] += _names(text, n)
            for i, (t, snip) in enumerate(block):
                rank[t] += i
                typed[t] |= bool(kind) and _names(snip, kind)
        if not count:
            return "unknown"
        return bare_title(min(count, key=lambda n: (-count[n], -typed[n], rank[n], n)))


def _forced(messages: Messages) -> bool:
    """Whether the last turn is the forced-answer prompt."""
    from agents.prompts import FORCE_ANSWER_PROMPT

    return bool(messages) and messages[-1]["role"] == "user" and messages[-1]["content"] == FORCE_ANSWER_PROMPT
