"""Zero-parameter baselines every learning table is read against: a rule that reads one search, and an answer prior.

* ``rule:first-title`` (:class:`FirstTitlePolicy`): search the question once, then answer the title of the first
  result the question does not name. A model that only learnt "search, copy a title" scores what this rule scores;
  a learning claim is its margin over it.
* ``prior`` (:class:`AnswerPriorPolicy`): no tool at all; answer the most frequent *train* answer of questions of the
  same form ("which country", "who", "what is the capital"). On an answer-disjoint split it scores 0 by design; on an
  id-hashed split it measures how much recall of frequent train answers alone is worth.

Both are stateless and deterministic: each turn re-reads the chat, so they are thread-safe and run through the same
eval harness as every model.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence

from agents.policies.base import FunctionPolicy, Messages
from sim_web.env.rewards import normalize_answer
from sim_web.env.tasks import Task
from wiki_index.types import bare_title

_RESULT_TITLE = re.compile(r"^\d+\. \[(.*)\]\(https?://", re.MULTILINE)
_FORM = re.compile(r"\b(?:which [\w-]+|who|what is the [\w-]+|what)\b")


def question_form(question: str) -> str:
    """The question's form: the wh-phrase of its last sentence (``"which country"``, ``"who"``), else ``"other"``.

    >>> question_form("Kabul is the capital of a country. That country is part of which region?")
    'which region'
    >>> question_form("What is the capital of Peru?")
    'what is the capital'
    """
    last = question.rstrip("?").split(". ")[-1].lower()
    m = _FORM.search(last)
    return m.group(0) if m else "other"


def _names(text: str, title: str) -> bool:
    """Whether ``text`` names ``title`` (or the title without its qualifier) as whole words, case-insensitively."""
    hay = f" {normalize_answer(text)} "
    return any(f" {n} " in hay for n in {normalize_answer(title), normalize_answer(bare_title(title))} if n)


def _answer(text: str, think: str) -> str:
    return f"<think>{think}</think>\n<answer>{text}</answer>"


class FirstTitlePolicy(FunctionPolicy):
    """``rule:first-title``: one search of the question, then the first result title the question does not name."""

    def __init__(self) -> None:
        super().__init__(self._next, name="rule:first-title")

    def _next(self, messages: Messages) -> str:
        question = messages[1]["content"] if len(messages) > 1 else ""
        replies = [m["content"] for m in messages[2:] if m["role"] == "user"]
        if not replies:
            call = {"name": "search", "arguments": {"query": [question]}}
            return f"<think>I search the question.</think>\n<tool_call>\n{json.dumps(call, ensure_ascii=False)}\n</tool_call>"
        titles = _RESULT_TITLE.findall(replies[0])
        pick = next((t for t in titles if not _names(question, t)), titles[0] if titles else "unknown")
        return _answer(bare_title(pick), "The first result the question does not name.")


class AnswerPriorPolicy(FunctionPolicy):
    """``prior``: the most frequent train answer of the question's form, without any tool call.

    Args:
        train: The train tasks whose answers make the prior.
    """

    def __init__(self, train: Sequence[Task]) -> None:
        super().__init__(self._next, name="prior")
        by_form: dict[str, Counter] = {}
        for t in train:
            by_form.setdefault(question_form(t.question), Counter())[t.answer] += 1
        overall = Counter(t.answer for t in train)
        self.fallback = min(overall.items(), key=lambda kv: (-kv[1], kv[0]))[0] if overall else "unknown"
        self.by_form = {f: min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] for f, c in by_form.items()}

    def _next(self, messages: Messages) -> str:
        form = question_form(messages[1]["content"] if len(messages) > 1 else "")
        return _answer(self.by_form.get(form, self.fallback), f"The usual answer to '{form}'.")
