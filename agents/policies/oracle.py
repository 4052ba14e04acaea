"""The oracle policy: searches and visits its way to the answer using the task's provenance.

It reads the plan from the task's metadata, the SailorFog-QA contract when present
(``clues[].query`` / ``clues[].entity``, ``evidence[].url``, ``answer_url``), else the derived
tasks' ``page_id`` and gold answer; then it acts like an honest agent: it only visits pages that
its searches returned, and it answers the gold answer only when the answer page came up in
the results of a clue query (or of the question itself) and could be read, or when those results
name the answer (a result title or a snippet, as a reader of the results sees it). Otherwise it answers
its best guess (the top result), so its success rate is the env's ceiling on a task set, not a
tautology: a task it fails is a task whose answer page the tools do not surface. Asked to
answer now (Tongyi's forced-answer prompt at the last call), it answers from what it has read
so far, the same way.

The oracle is stateless: each turn it re-reads the conversation (and a ReSum summary's
``Searched`` / ``Visited`` lines) to decide the next step, so it is deterministic and
thread-safe. :meth:`OraclePolicy.episode_info` records how the answer page was reached.
Successful oracle trajectories are SFT demonstrations (:func:`agents.trajectory.sft_example`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.config import SamplingConfig
from agents.policies.base import Generation, Messages, Policy
from agents.policies.quotes import answer_thought, fact_quote, step_thought
from agents.policies.scripts import joint_query
from agents.prompts import FORCE_ANSWER_PROMPT
from sim_web.env.rewards import normalize_answer
from sim_web.env.tasks import Task
from sim_web.protocol.formatting import INACCESSIBLE_EVIDENCE, OBSERVATION_SEPARATOR
from wiki_index.types import bare_title, normalize_title, title_to_url, url_to_title

_SEARCH_HEAD = re.compile(r"A Google (?:search|scholar) for '(.*?)' found \d+ results:")
_NO_RESULTS = re.compile(r"No results found for '(.*?)'\. Try with a more general query\.")
_URL = r"(https?://(?:[^()\s]|\([^()\s]*\))+)"  # a URL, allowing balanced parentheses (Rowing_(sport))
_LINK = re.compile(r"\]\(" + _URL + r"\)")
_RESULT = re.compile(r"^\d+\. \[(.*)\]\(" + _URL + r"\)$", re.MULTILINE)
_VISIT_HEAD = re.compile(r"The useful information in (\S+) for user goal")
_SUMMARY_SEARCH = re.compile(r"^- Searched \"(.*?)\": (.*)$", re.MULTILINE)
_SUMMARY_VISIT = re.compile(r"^- Visited (\S+):", re.MULTILINE)
_SUMMARY_FAILED = re.compile(r"^- Could not read (\S+)$", re.MULTILINE)


@dataclass
class _Plan:
    answer_url: str
    clues: list[tuple[str, str | None, str]]  # (query, entity url, clue text)
    evidence: list[str]
    question_queries: list[str]
    title_query: str
    joint_query: str | None = None  # every clue together, searched first (``oracle:joint`` on an overlap plan)


@dataclass
class _State:
    results: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # query -> [(title, url)]
    shown: dict[str, str] = field(default_factory=dict)  # query -> the text of its results (titles and snippets)
    visited: dict[str, bool] = field(default_factory=dict)  # page key -> readable
    text: str = ""


class OraclePolicy(Policy):
    """Deterministic provenance-following policy.

    Args:
        tasks: The task set (the question identifies the task).
        store: Optional :class:`wiki_index.store.store.Store` to resolve redirects when comparing pages.
        title_search: When the clue / question queries do not surface the answer page, also search
            its title (recorded as ``answer_reached_via="title_search"``; the answer is then not given).
        read_pages: Visit the pages it found before answering (``False``: answer as soon as a clue or question
            search shows the answer page, from the results alone: the short demonstrations of the one- and two-hop
            tiers for small models, ``--policy oracle:search``).
        plan_thought: Search-only: the first thought says how many facts the question chains ("The question chains
            two facts. I search for the first fact.") instead of the same words on every tier
            (``--policy oracle:plan``). A model trained on these demonstrations decides at its first turn, with the
            question in front of it, whether one search will do; later turns can follow its own words.
        quote_thought: ``oracle:plan`` whose later thoughts count the facts done and quote the results that state them
            (``--policy oracle:quote``).
        joint_search: ``oracle:plan`` that first searches an intersection question's clues together (the question
            without "Which": a page that says several clues ranks high, as ``rule:script`` does), then its first
            :data:`JOINT_CLUES` clues one by one (``--policy oracle:joint``): three searches and the answer fit the
            recipe's turn cap before its forced answer hides a result.
    """

    name = "oracle"

    def __init__(
        self,
        tasks: Sequence[Task],
        store: Any = None,
        title_search: bool = True,
        read_pages: bool = True,
        plan_thought: bool = False,
        quote_thought: bool = False,
        joint_search: bool = False,
    ) -> None:
        if plan_thought and read_pages:
            raise ValueError("OraclePolicy(plan_thought=True) is the search-only oracle: pass read_pages=False")
        if (quote_thought or joint_search) and not plan_thought:
            raise ValueError(
                "OraclePolicy(quote_thought=True or joint_search=True) builds on the first thought's plan: pass "
                "plan_thought=True"
            )
        self.by_question = {t.question: t for t in tasks}
        self.store = store
        self.title_search = title_search
        self.read_pages = read_pages
        self.plan_thought = plan_thought
        self.quote_thought = quote_thought
        self.joint_search = joint_search
        if not read_pages:
            plan_name = "oracle:joint" if joint_search else "oracle:plan"
            self.name = "oracle:quote" if quote_thought else plan_name if plan_thought else "oracle:search"
        self._keys: dict[str, str] = {}  # memo tables (deterministic values, so thread races are harmless)
        self._plans: dict[str, _Plan] = {}

    # -- the interface ---------------------------------------------------------------------
    def generate(
        self,
        batch: Sequence[Messages],
        sampling: SamplingConfig | None = None,
        seeds: Sequence[int | None] | None = None,
    ) -> list[Generation]:
        """The next oracle turn of each chat."""
        return [Generation(text=self._next(m)) for m in batch]

    def episode_info(self, messages: Messages) -> dict[str, Any]:
        """How the episode went: whether and how the answer page was reached, evidence coverage."""
        task = self._task(messages)
        if task is None:
            return {"task_found": False}
        plan, st = self._plan(task), self._state(messages)
        legit = self._seen(st, plan, legit_only=True)
        anywhere = self._seen(st, plan, legit_only=False)
        akey = self._key(plan.answer_url)
        golds = [normalize_answer(g) for g in (task.answer, *task.aliases)]
        obs = normalize_answer(st.text)
        first = next((q for q, res in st.results.items() if any(self._key(u) == akey for _, u in res)), None)
        by = (
            "clue"
            if first in {q for q, _, _ in plan.clues}
            else "question"
            if first in plan.question_queries
            else "title"
            if first is not None
            else None
        )
        return {
            "task_found": True,
            "answer_url": plan.answer_url,
            "answer_query": first,
            "answer_query_kind": by,
            "answer_reached_via": "search" if akey in legit else "title_search" if akey in anywhere else "none",
            "answer_page_read": st.visited.get(akey, False),
            "evidence_found": sum(self._key(u) in legit for u in plan.evidence),
            "evidence_total": len(plan.evidence),
            "answer_in_observations": any(g and g in obs for g in golds),
            "queries": len(st.results),
        }

    # -- planning ----------------------------------------------------------------------------
    def _task(self, messages: Messages) -> Task | None:
        if len(messages) < 2:
            return None
        q = messages[1]["content"]
        if q in self.by_question:
            return self.by_question[q]
        for question, task in self.by_question.items():  # a ReSum continuation starts with the question
            if q.startswith(question + "\n"):
                return task
        return None

    def _key(self, url: str) -> str:
        """A canonical page key for a URL (the page id when the store resolves it; memoised)."""
        key = self._keys.get(url)
        if key is None:
            key = self._keys[url] = self._resolve_key(url)
        return key

    def _resolve_key(self, url: str) -> str:
        title = normalize_title(url_to_title(url) or "")
        if self.store is not None and title:
            pid = self.store.resolve(title)
            if pid is not None:
                return f"id:{pid}"
        return f"t:{title}"

    def _plan(self, task: Task) -> _Plan:
        """The task's browsing plan (memoised per task id)."""
        plan = self._plans.get(task.id)
        if plan is None:
            plan = self._make_plan(task)
            if self.joint_search and self._overlap(plan):
                plan.joint_query = joint_query(task.question)
                plan.clues = plan.clues[:JOINT_CLUES]
                plan.question_queries = [plan.joint_query, *plan.question_queries]
            self._plans[task.id] = plan
        return plan

    def _make_plan(self, task: Task) -> _Plan:
        md = task.metadata
        answer_url = md.get("answer_url")
        if not answer_url and self.store is not None and md.get("page_id") is not None:
            answer_url = self.store.url(int(md["page_id"]))
        answer_url = answer_url or title_to_url(task.answer)
        clues = []
        for c in md.get("clues") or []:
            if isinstance(c, dict) and c.get("query"):
                clues.append(
                    (
                        str(c["query"]),
                        title_to_url(c["entity"]) if c.get("entity") else None,
                        str(c.get("text") or c["query"]),
                    )
                )
        evidence = [
            e["url"] if e.get("url") else title_to_url(e["title"])
            for e in md.get("evidence") or []
            if isinstance(e, dict) and (e.get("url") or e.get("title"))
        ]
        quoted = re.search(r'"(.+)"', task.question)
        queries = []
        if quoted:
            queries.append(re.sub(r"^This subject\b,?\s*", "", quoted.group(1)).strip())
        queries.append(task.question)
        return _Plan(answer_url, clues, evidence, [q for q in dict.fromkeys(queries) if q], task.answer)

    def _clue_thought(self, plan: _Plan, st: _State, i: int) -> str:
        """The thought before the search of clue ``i``."""
        if self.read_pages:
            return f"I look for the page behind this clue: {plan.clues[i][2]}"
        if plan.joint_query is not None:
            return f"I search for the {_ORDINALS[i + 1]} clue."
        overlap = self._overlap(plan)
        if i and st.results:
            if overlap:
                return f"I search for the {_ORDINALS.get(i + 1, 'next')} clue."
            if self.quote_thought:
                query, entity_url, _ = plan.clues[i - 1]
                name = _found_name(entity_url)
                quote = self._quote(st, query, [name], entity_url) if name else None
                return step_thought(i, len(plan.clues), quote, name or "it")
            return _next_fact(plan.clues[i - 1][1])
        return _first_fact(len(plan.clues) if self.plan_thought else 0, overlap)

    def _quote(self, st: _State, query: str, names: list[str], entity_url: str | None) -> str | None:
        """The quote of ``query``'s results that states the fact about the entity (:func:`quotes.fact_quote`)."""
        key = self._key(entity_url) if entity_url else None
        return fact_quote(st.shown.get(query, ""), names, query, lambda url: key is not None and self._key(url) == key)

    def _overlap(self, plan: _Plan) -> bool:
        """Whether the plan is two or more clues about the answer itself (the intersection tier): its searches do not
        chain, and the answer is what their results share, so a thought between them names nothing as found."""
        akey = self._key(plan.answer_url)
        return len(plan.clues) >= 2 and all(e is not None and self._key(e) == akey for _, e, _ in plan.clues)

    def _state(self, messages: Messages) -> _State:
        st = _State()
        texts = []
        for m in messages[1:]:
            content = m["content"]
            if m["role"] != "user":
                continue
            texts.append(content)
            for q, links in _SUMMARY_SEARCH.findall(content):  # a ReSum summary
                st.results.setdefault(q, [(url_to_title(u) or u, u) for u in _LINK.findall(links)])
            for u in _SUMMARY_VISIT.findall(content):
                st.visited[self._key(u)] = True
            for u in _SUMMARY_FAILED.findall(content):
                st.visited.setdefault(self._key(u), False)
            if not content.startswith("<tool_response>"):
                continue
            for block in content.split(OBSERVATION_SEPARATOR):
                if h := _SEARCH_HEAD.search(block):
                    st.results[h.group(1)] = _RESULT.findall(block)
                    st.shown[h.group(1)] = block
                elif n := _NO_RESULTS.search(block):
                    st.results[n.group(1)] = []
                elif v := _VISIT_HEAD.search(block):
                    st.visited[self._key(v.group(1))] = INACCESSIBLE_EVIDENCE not in block
        st.text = "\n".join(texts)
        return st

    def _seen(self, st: _State, plan: _Plan, legit_only: bool) -> set[str]:
        """Page keys that came up in search results (of clue / question queries only, when ``legit_only``)."""
        legit = {q for q, _, _ in plan.clues} | set(plan.question_queries)
        return {self._key(u) for q, res in st.results.items() if not legit_only or q in legit for _, u in res}

    def _in_every_search(self, st: _State, plan: _Plan, task: Task) -> bool:
        """Whether every clue search ran and listed the answer page or named the answer in a snippet: on an overlap
        plan (:meth:`_overlap`), the answer is what their results share."""
        akey = self._key(plan.answer_url)
        queries = [q for q in [plan.joint_query] if q] + [q for q, _, _ in plan.clues]
        return len(queries) >= 2 and all(
            q in st.results
            and (akey in {self._key(u) for _, u in st.results[q]} or self._names_answer(st.shown.get(q, ""), task))
            for q in queries
        )

    def _answer_shown(self, st: _State, plan: _Plan, task: Task) -> bool:
        """Whether the results of a clue or question search name the answer (as a result title or in a snippet):
        the answer can then be read off the results."""
        legit = {q for q, _, _ in plan.clues} | set(plan.question_queries)
        return any(self._names_answer(t, task) for q, t in st.shown.items() if q in legit)

    @staticmethod
    def _names_answer(text: str, task: Task) -> bool:
        """Whether ``text`` names the answer (or an alias) as whole words."""
        golds = (normalize_answer(x) for x in (task.answer, bare_title(task.answer), *task.aliases))
        padded = f" {normalize_answer(text)} "
        return any(g and f" {g} " in padded for g in golds)

    def _next(self, messages: Messages) -> str:
        task = self._task(messages)
        if task is None:
            return "<think>I cannot identify the question.</think>\n<answer>unknown</answer>"
        plan, st = self._plan(task), self._state(messages)
        if messages[-1]["role"] == "user" and messages[-1]["content"] == FORCE_ANSWER_PROMPT:
            return self._final(plan, st, task)
        if plan.joint_query is not None and plan.joint_query not in st.results:
            facts = len(task.metadata.get("clues") or [])
            return _search(_first_fact(facts, overlap=True, together=True), plan.joint_query)
        for i, (query, entity_url, text) in enumerate(plan.clues):
            if query not in st.results:
                return _search(self._clue_thought(plan, st, i), query)
            if (
                self.read_pages
                and entity_url
                and self._key(entity_url) not in st.visited
                and any(self._key(u) == self._key(entity_url) for _, u in st.results[query])
            ):
                return _visit(
                    f'The results of "{query}" include the page the clue is about; I read it.', entity_url, text
                )
        legit = self._seen(st, plan, legit_only=True)
        for url in plan.evidence if self.read_pages else ():
            if self._key(url) in legit and self._key(url) not in st.visited:
                return _visit("This result is one of the pages I need; I read it.", url, task.question)
        akey = self._key(plan.answer_url)
        if akey not in legit and not self._answer_shown(st, plan, task):
            for q in plan.question_queries:
                if q not in st.results:
                    return _search("I search for the description in the question.", q)
            if self.title_search and plan.title_query not in st.results:
                return _search(
                    "The searches so far did not surface the answer page; I check whether it exists.", plan.title_query
                )
        anywhere = self._seen(st, plan, legit_only=False)
        if self.read_pages and akey in anywhere and akey not in st.visited:
            url = next(u for res in st.results.values() for _, u in res if self._key(u) == akey)
            return _visit("This result looks like the answer; I read the page to confirm.", url, task.question)
        return self._final(plan, st, task)

    def _final(self, plan: _Plan, st: _State, task: Task) -> str:
        """The answer turn: the gold answer when the answer page came up in a clue search and was read, else a guess."""
        akey = self._key(plan.answer_url)
        seen = akey in self._seen(st, plan, legit_only=True)
        if (seen and (st.visited.get(akey) or not self.read_pages)) or self._answer_shown(st, plan, task):
            why = f"The page {plan.answer_url} matches every clue" if self.read_pages else "The results show it"
            if not self.read_pages and self._overlap(plan) and self._in_every_search(st, plan, task):
                why = f"{task.answer} is in the results of every search"  # an intersection: name the overlap
            elif self.quote_thought and plan.clues and not self._overlap(plan):
                query = plan.clues[-1][0]
                names = [task.answer, bare_title(task.answer), *task.aliases]
                thought = answer_thought(len(plan.clues), self._quote(st, query, names, plan.answer_url), task.answer)
                return f"<think>{thought}</think>\n<answer>{task.answer}</answer>"
            return f"<think>{why}, so the answer is {task.answer}.</think>\n<answer>{task.answer}</answer>"
        legit_queries = {q for q, _, _ in plan.clues} | set(plan.question_queries)
        guess = next((t for q, res in st.results.items() if q in legit_queries for t, _ in res), "unknown")
        return (
            f"<think>I could not confirm the answer; my best guess is the top result.</think>\n<answer>{guess}</answer>"
        )


_COUNTS = {1: "one", 2: "two", 3: "three", 4: "four"}
_ORDINALS = {1: "first", 2: "second", 3: "third", 4: "fourth"}  # an overlap's searches count up to its plan's clues
#: the clues ``oracle:joint`` searches one by one after all of them together (with the joint search, three searches)
JOINT_CLUES = 2
_PLAN = re.compile(r"The question (?:asks one fact|chains (\w+) facts|gives (\w+) clues about one answer)")


def _first_fact(facts: int, overlap: bool = False, together: bool = False) -> str:
    """The search-only oracle's first thought; with ``facts`` > 0 (``oracle:plan``) it first says how many facts the
    question chains, or with ``overlap`` how many clues it gives about one answer (:func:`planned_facts` reads either
    back): a chain's next search names what the last one found, an overlap's searches each take one clue, after one
    of all of them ``together`` (``oracle:joint``)."""
    count = _COUNTS.get(facts, str(facts))
    if facts > 1 and overlap and together:
        return f"The question gives {count} clues about one answer. I search for them together."
    if facts > 1 and overlap:
        return f"The question gives {count} clues about one answer. I search for the first clue."
    if facts == 1:
        return "The question asks one fact. I search for it."
    if facts > 1:
        return f"The question chains {count} facts. I search for the first fact."
    return "I search for the first fact."


def planned_facts(thought: str) -> int | None:
    """How many searches a thought plans, in ``oracle:plan``'s words (the facts a question chains, or the clues it
    gives about one answer), or ``None`` when it says nothing of the kind.

    >>> planned_facts(_first_fact(2)), planned_facts(_first_fact(7)), planned_facts(_first_fact(3, overlap=True))
    (2, 7, 3)
    >>> planned_facts(_first_fact(0)) is None
    True
    """
    m = _PLAN.search(thought)
    if not m:
        return None
    word = m.group(1) or m.group(2)
    if word is None:
        return 1
    words = {w: n for n, w in _COUNTS.items()}
    return int(word) if word.isdigit() else words.get(word.lower())


def _found_name(entity_url: str | None) -> str:
    """The name of the page a chain's last search was for (the tier's gate puts it in the results), or ``""``."""
    return bare_title(url_to_title(entity_url) or "") if entity_url else ""


def _next_fact(entity_url: str | None) -> str:
    """The search-only oracle's thought before a later search: in a chain it names what the last search showed."""
    name = _found_name(entity_url)
    return f"The results show {name}. I search for the next fact about it." if name else "I search for the next fact."


def _search(think: str, query: str) -> str:
    call = {"name": "search", "arguments": {"query": [query]}}
    return f"<think>{think}</think>\n<tool_call>\n{json.dumps(call, ensure_ascii=False)}\n</tool_call>"


def _visit(think: str, url: str, goal: str) -> str:
    call = {"name": "visit", "arguments": {"url": [url], "goal": goal}}
    return f"<think>{think}</think>\n<tool_call>\n{json.dumps(call, ensure_ascii=False)}\n</tool_call>"
