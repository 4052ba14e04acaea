"""ReSum: condense the history into a ``<summary>`` reasoning state and continue from it.

When the context grows past a fraction of its budget (and/or every N turns), the agent's
context is replaced by the system prompt plus one user message: the question and a summary
(what is known, what is verified, what is still open, next leads), as in ReSum /
WebResummer. Three summarisers: the acting policy itself (the loop sends it the request, so
local models batch it with other episodes), a separate OpenAI-compatible model
(:class:`ModelSummariser`), and :class:`ExtractiveSummariser`, deterministic and model-free,
which is also the fallback when a model's summary has no ``<summary>`` block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agents.config import ReSumConfig, SamplingConfig
from agents.policies.base import Messages, Policy
from agents.prompts import RESUM_CONTINUE, RESUM_PROMPT, RESUM_SYSTEM
from sim_web.protocol.formatting import INACCESSIBLE_EVIDENCE

_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)
_SEARCH_HEAD = re.compile(r"A Google (?:search|scholar) for '(.*?)' found \d+ results:")
_LINK = re.compile(r"^\d+\. \[(.*)\]\((https?://(?:[^()\s]|\([^()\s]*\))+)\)$", re.MULTILINE)
_NO_RESULTS = re.compile(r"^No results found for '(.*?)'\. Try with a more general query\.")
_VISIT_HEAD = re.compile(r"The useful information in (\S+) for user goal (.*?) as follows:")


def extract_summary(text: str) -> str | None:
    """The ``<summary>...</summary>`` block of a model's reply (tags included), or ``None``."""
    m = _SUMMARY.search(text or "")
    return f"<summary>\n{m.group(1).strip()}\n</summary>" if m and m.group(1).strip() else None


def render_history(messages: Messages, max_chars: int) -> str:
    """The agent's history (everything after the system prompt) as plain text for a summariser.

    Args:
        messages: The agent's context.
        max_chars: Cap; beyond it the middle of the history is cut (the start and the latest turns stay).
    """
    parts = []
    for m in messages[1:]:
        role = {
            "assistant": "Agent",
            "user": "Tool response" if m["content"].startswith("<tool_response>") else "User",
        }.get(m["role"], m["role"])
        parts.append(f"[{role}]\n{m['content']}")
    text = "\n\n".join(parts)
    if len(text) > max_chars:
        head = max_chars // 3
        text = (
            text[:head]
            + f"\n\n[... {len(text) - max_chars} characters of history omitted ...]\n\n"
            + text[-(max_chars - head) :]
        )
    return text


def summary_request(question: str, messages: Messages, config: ReSumConfig) -> Messages:
    """The chat that asks a model for the summary."""
    return [
        {"role": "system", "content": RESUM_SYSTEM},
        {
            "role": "user",
            "content": RESUM_PROMPT.format(
                question=question, history=render_history(messages, config.max_history_chars)
            ),
        },
    ]


def continue_messages(system: str, question: str, summary: str) -> Messages:
    """The context the agent continues from: the system prompt, then the question with the summary."""
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": RESUM_CONTINUE.format(question=question, summary=summary)},
    ]


@dataclass
class _Search:
    query: str
    results: list[tuple[str, str]]  # (title, url)


class ExtractiveSummariser:
    """A deterministic summary from the tool calls and tool responses of the history (no model).

    Known: each search with its results (as Markdown links) and each page read with its summary
    line; Verified: the pages read successfully; Open: the question, unreadable pages; Next
    leads: the best results not visited yet. A previous summary in the context is carried over.
    """

    name = "extractive"

    def __init__(self, max_leads: int = 5, max_fact_chars: int = 400) -> None:
        self.max_leads, self.max_fact_chars = max_leads, max_fact_chars

    def summarise(self, question: str, messages: Messages) -> str:
        """Summarise the history in ``messages`` (the agent's context) for ``question``."""
        searches: list[_Search] = []
        visited: dict[str, tuple[bool, str]] = {}
        carried = ""
        for m in messages[1:]:
            content = m["content"]
            if m["role"] == "user" and "<summary>" in content:
                prev = extract_summary(content)
                carried = prev[len("<summary>\n") : -len("\n</summary>")] if prev else ""
            elif m["role"] == "user" and content.startswith("<tool_response>"):
                for block in content.split("\n=======\n"):
                    self._read_block(block, searches, visited)
        known = [
            f'- Searched "{s.query}": ' + (", ".join(f"[{t}]({u})" for t, u in s.results) or "no results")
            for s in searches
        ]
        known += [f"- Visited {u}: {fact}" for u, (ok, fact) in visited.items() if ok]
        verified = [f"- Read successfully: {u}" for u, (ok, _) in visited.items() if ok]
        failed = [u for u, (ok, _) in visited.items() if not ok]
        open_ = [f"- The answer to the question is not confirmed yet: {question}"]
        open_ += [f"- Could not read {u}" for u in failed]
        leads, seen = [], set(visited)
        for s in searches:
            for t, u in s.results:
                if u not in seen and len(leads) < self.max_leads:
                    seen.add(u)
                    leads.append(f'- Visit {u} ({t}), a result of "{s.query}"')
        if not leads:
            leads = ["- Search with other keywords from the question"]
        body = (
            (f"Earlier summary:\n{carried}\n" if carried else "")
            + "Known:\n"
            + ("\n".join(known) or "- Nothing yet")
            + "\nVerified:\n"
            + ("\n".join(verified) or "- Nothing yet")
            + "\nOpen:\n"
            + "\n".join(open_)
            + "\nNext leads:\n"
            + "\n".join(leads)
        )
        return f"<summary>\n{body}\n</summary>"

    def _read_block(self, block: str, searches: list[_Search], visited: dict[str, tuple[bool, str]]) -> None:
        block = block.removeprefix("<tool_response>\n").removesuffix("\n</tool_response>")
        none = _NO_RESULTS.match(block.strip())
        if none:
            searches.append(_Search(none.group(1), []))
            return
        head = _SEARCH_HEAD.search(block)
        if head:
            searches.append(_Search(head.group(1), [(t, u) for t, u in _LINK.findall(block)]))
            return
        visit = _VISIT_HEAD.search(block)
        if visit:
            url = visit.group(1)
            if INACCESSIBLE_EVIDENCE in block:
                visited.setdefault(url, (False, ""))
                return
            summary = (
                block.split("Summary: \n", 1)[1].strip() if "Summary: \n" in block else block[visit.end() :].strip()
            )
            if len(summary) > self.max_fact_chars:
                summary = summary[: self.max_fact_chars].rsplit(" ", 1)[0] + " ..."
            visited[url] = (True, " ".join(summary.split()))


class ModelSummariser:
    """Summaries from a separate model (e.g. an :class:`~agents.policies.openai_policy.OpenAIPolicy`).

    Falls back to :class:`ExtractiveSummariser` when the reply has no ``<summary>`` block.

    Args:
        policy: The summarising model.
        config: Prompt size settings.
        sampling: Its sampling parameters (default: greedy, ``summary_max_tokens`` new tokens).
    """

    def __init__(self, policy: Policy, config: ReSumConfig, sampling: SamplingConfig | None = None) -> None:
        self.policy, self.config = policy, config
        self.name = f"model:{policy.name}"
        self.sampling = sampling or SamplingConfig(
            temperature=0.0, presence_penalty=0.0, max_tokens=config.summary_max_tokens, stop=("</summary>",)
        )
        self.fallback = ExtractiveSummariser()

    def summarise(self, question: str, messages: Messages) -> str:
        """Ask the model; its ``<summary>`` block, or the extractive one when it wrote none."""
        gen = self.policy.generate([summary_request(question, messages, self.config)], self.sampling)[0]
        return extract_summary(close_summary(gen.text)) or self.fallback.summarise(question, messages)


def close_summary(text: str) -> str:
    """Re-add a ``</summary>`` that a stop sequence removed."""
    return text + "</summary>" if "<summary>" in text and "</summary>" not in text else text
