"""The LLM question writer: any OpenAI-compatible chat endpoint turns a verified clue set into prose.

The template generator decides *what* a question says (the subgraph, the target, the blurred
facts, the uncertainty types) and the verifier checks that those clues single out the answer.
The LLM only decides *how* it is said: it is prompted with the subgraph (nodes with their facts,
edges with their relations), the clues to use verbatim in meaning, the uncertainty types to
apply and the answer to hide, and must reply with ``{"question": "..."}``. A reply is accepted
only if it does not contain the answer's name and keeps every load-bearing token of the clues
(the names the question reveals and the blurred numbers and dates), so the verified clue set
still describes it; otherwise the item is skipped and counted (``rejected``).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from simweb_core.secret import Secret, as_secret, reveal
from training.synth.compose.constraints import NodeSpec, walk
from training.synth.compose.naming import leaks, name_variants
from training.synth.compose.templates import QuestionDraft

log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You write hard research questions for training web-browsing agents (WebSailor / SailorFog-QA style). "
    "You are given a small knowledge graph, the answer entity, and a list of clues that together identify the "
    "answer uniquely. Write ONE fluent English question that uses every clue and no other information, keeps "
    "every number, date range and proper name in the clues exactly as written, applies the requested kinds of "
    "uncertainty, and never mentions the answer or any part of its name. "
    'Reply with JSON only: {"question": "..."}'
)


@dataclass
class LLMConfig:
    """Endpoint and sampling settings of the LLM generator.

    Attributes:
        base_url: The OpenAI-compatible API root (ends in ``/v1``); ``None`` uses the ``openai`` default. A string
            becomes a :class:`~simweb_core.secret.Secret` (it may carry credentials).
        model: Model name sent with each request.
        api_key: Key; ``None`` reads ``OPENAI_API_KEY`` (an empty one is sent as ``"EMPTY"`` for local servers). A
            string becomes a :class:`~simweb_core.secret.Secret`: it never prints, logs or serialises.
        temperature: Sampling temperature (0 for reproducible rewrites).
        max_tokens: Reply length cap.
        timeout: Seconds per request.
        max_retries: Retries of a failed request (the client's exponential backoff).
    """

    base_url: Secret | None = None
    model: str = "gpt-4o-mini"
    api_key: Secret | None = None
    temperature: float = 0.0
    max_tokens: int = 400
    timeout: float = 60.0
    max_retries: int = 2
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("LLMConfig.model is empty; pass the served model's name (--model)")
        self.base_url = as_secret(self.base_url, env="OPENAI_BASE_URL")
        self.api_key = as_secret(self.api_key, env="OPENAI_API_KEY")
        if self.base_url is not None and not re.match(r"https?://", reveal(self.base_url) or ""):
            raise ValueError(
                "LLMConfig.base_url must be an http(s) URL such as http://localhost:8000/v1, got "
                f"{self.base_url.shown()!r}"
            )
        if not 0 <= self.temperature <= 2 or self.max_tokens < 16 or self.timeout <= 0 or self.max_retries < 0:
            raise ValueError(
                f"LLMConfig: need 0 <= temperature <= 2, max_tokens >= 16, timeout > 0, max_retries >= 0; "
                f"got {self.temperature}, {self.max_tokens}, {self.timeout}, {self.max_retries}"
            )


def must_keep(root: NodeSpec) -> list[str]:
    """Tokens a faithful rewrite keeps: the names the question reveals and the numbers in its clues."""
    out: list[str] = []
    for node in walk(root):
        if node.identity is not None and node.source == "title":
            out.append(node.entity)
        for f in node.facts:
            out.extend(re.findall(r"\d[\d,.]*", f.text))
    return list(dict.fromkeys(out))


def build_prompt(draft: QuestionDraft, root: NodeSpec, graph: Any, clues: list[dict[str, str]]) -> str:
    """The user message: the subgraph with facts, the clues, the uncertainty types and the answer to hide."""
    nodes = []
    for n in sorted(graph.nodes, key=str):
        a = graph.nodes[n]
        ent = a.get("entity")
        nodes.append(
            {
                "title": str(n),
                "description": a.get("description", ""),
                "dates": [d.text for d in getattr(ent, "dates", ())][:4],
                "numbers": [x.text for x in getattr(ent, "numbers", ())][:4],
            }
        )
    edges = [
        {"source": d.get("source_page", u), "target": d.get("target_page", v), "relation": d.get("relation", "link")}
        for u, v, d in sorted(graph.edges(data=True), key=lambda e: (str(e[0]), str(e[1])))
    ]
    payload = {
        "answer_to_hide": draft.answer,
        "answer_type": draft.head,
        "structure": draft.structure,
        "uncertainty_types": list(draft.uncertainty_types),
        "graph": {"nodes": nodes, "edges": edges},
        "clues": [c["text"] for c in clues],
        "keep_verbatim": must_keep(root),
        "reference_question": draft.question,
    }
    return (
        "Write the question for this subgraph. The clues have already been blurred; keep them blurred.\n"
        + json.dumps(payload, ensure_ascii=False, indent=1)
    )


def parse_reply(text: str) -> str:
    """The question from a reply: ``{"question": ...}`` (possibly fenced), else the whole reply."""
    text = (text or "").strip()
    m = re.search(r"\{.*\}", text, re.DOTALL)
    if m:
        try:
            q = json.loads(m.group(0)).get("question", "")
            if isinstance(q, str):
                return " ".join(q.split())
        except (json.JSONDecodeError, AttributeError):
            pass
    return " ".join(text.strip("`").split())


class LLMGenerator:
    """Rewrites verified template drafts through an OpenAI-compatible endpoint.

    Args:
        config: Endpoint and sampling settings.
    """

    name = "llm"

    def __init__(self, config: LLMConfig) -> None:
        import openai

        from simweb_core.settings import env

        self.config = config
        key = reveal(config.api_key) or env("OPENAI_API_KEY") or "EMPTY"
        self.client = openai.OpenAI(
            base_url=reveal(config.base_url), api_key=key, timeout=config.timeout, max_retries=config.max_retries
        )
        self.requests = 0
        self.rejected: dict[str, int] = {"error": 0, "empty": 0, "leak": 0, "unfaithful": 0}

    def rewrite(
        self, draft: QuestionDraft, root: NodeSpec, graph: Any, clues: list[dict[str, str]], seed: int = 0
    ) -> str | None:
        """One question for the draft, or ``None`` (counted in ``rejected``) when the reply is unusable."""
        import openai

        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": build_prompt(draft, root, graph, clues)},
        ]
        self.requests += 1
        try:
            resp = self.client.chat.completions.create(
                model=self.config.model,
                messages=messages,
                temperature=self.config.temperature,
                max_tokens=self.config.max_tokens,
                seed=seed,
                **self.config.extra,
            )
            text = resp.choices[0].message.content or ""
        except openai.OpenAIError as e:
            self.rejected["error"] += 1
            log.warning("LLM request failed (%s: %s); skipping this question", type(e).__name__, e)
            return None
        q = parse_reply(text)
        if len(q) < 15:
            self.rejected["empty"] += 1
            return None
        if leaks(q, name_variants(draft.answer)):
            self.rejected["leak"] += 1
            return None
        low = q.lower()
        if any(tok.lower() not in low for tok in must_keep(root)):
            self.rejected["unfaithful"] += 1
            return None
        return q
