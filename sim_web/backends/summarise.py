"""From a fetched page to ``visit``'s evidence and summary: parse Jina's text, cut to a token budget, extract.

Two extractors with one contract (``(title, content, goal) -> (evidence, summary)``):

* :class:`DeterministicExtractor`: the sim backend's goal-conditioned extraction (BM25 over the
  page's own ~100-word chunks, the best sentences as the summary), applied to fetched text. No
  model, no randomness.
* :class:`LLMSummariser`: an OpenAI-compatible model asked, as Tongyi's ``EXTRACTOR_PROMPT`` asks,
  for a JSON object with ``rational``, ``evidence`` and ``summary`` (temperature 0 by default, so
  that cached summaries are reproducible). A reply without a usable summary is a failure; the Jina
  backend then runs the deterministic extractor instead.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from sim_web.backends.extract import bm25_rank, summarize, top_indices
from sim_web.backends.upstream import UpstreamError
from simweb_core.errors import ConfigError
from simweb_core.secret import scrub
from wiki_index.parse.text import split_sentences

_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_MARKDOWN_HEADER = "Markdown Content:\n"

#: The instruction sent to the summariser: the semantics of Tongyi's EXTRACTOR_PROMPT (locate the
#: goal-relevant part, quote it in full as evidence, summarise it), answered as JSON.
EXTRACTOR_INSTRUCTIONS = """Extract the information that serves the user goal from the webpage below.

## Webpage
{content}

## User goal
{goal}

## What to do
1. Rational: find the sections and data of the page that bear directly on the goal.
2. Evidence: copy the most relevant parts of the page, with their full original context; miss nothing important (several paragraphs are fine).
3. Summary: one concise paragraph, in logical order, that says what the evidence contributes to the goal.

Reply with a JSON object with exactly the fields "rational", "evidence" and "summary"."""


class SummariserError(Exception):
    """The summariser gave no usable answer (unreachable, refused, or not the expected JSON)."""


def parse_jina_text(body: str) -> tuple[str, str]:
    """Split a Jina Reader text reply into ``(title, content)``.

    The reply is ``Title: ...\\n\\nURL Source: ...\\n[Published Time: ...]\\n[Warning: ...]\\nMarkdown Content:\\n...``;
    a body without those headers is taken as content with no title.
    """
    title = ""
    first = body.split("\n", 1)[0]
    if first.startswith("Title:"):
        title = first[len("Title:") :].strip()
    _, sep, content = body.partition(_MARKDOWN_HEADER)
    return title, (content if sep else body).strip()


def target_error(body: str) -> str | None:
    """The ``Warning:`` line of a Jina reply when it says the target page itself failed (e.g. its 404)."""
    head = body.partition(_MARKDOWN_HEADER)[0]
    for line in head.splitlines():
        if line.startswith("Warning:") and "error" in line.lower():
            return line[len("Warning:") :].strip()
    return None


def cut_to_tokens(text: str, max_tokens: int, tokenizer: str = "approx") -> str:
    """The longest prefix of ``text`` within ``max_tokens`` tokens.

    Args:
        text: Page text.
        max_tokens: The budget (Tongyi: 95,000 cl100k_base tokens).
        tokenizer: ``"approx"`` (words and punctuation marks: deterministic, no download; close
            to BPE counts for English) or ``"tiktoken:<encoding>"`` (e.g. ``tiktoken:cl100k_base``,
            Tongyi's; its encoding file must be available to tiktoken offline).

    Raises:
        ConfigError: For an unknown tokenizer or a tiktoken encoding that cannot be loaded.
    """
    if tokenizer == "approx":
        for i, m in enumerate(_TOKEN.finditer(text)):
            if i == max_tokens:
                return text[: m.start()].rstrip()
        return text
    if tokenizer.startswith("tiktoken:"):
        enc = _tiktoken(tokenizer.split(":", 1)[1])
        ids = enc.encode(text, disallowed_special=())
        return text if len(ids) <= max_tokens else enc.decode(ids[:max_tokens])
    raise ConfigError(f"tokenizer must be 'approx' or 'tiktoken:<encoding>', got {tokenizer!r}")


def _tiktoken(name: str) -> Any:  # a tiktoken.Encoding (tiktoken is imported lazily)
    try:
        import tiktoken

        return tiktoken.get_encoding(name)
    except Exception as e:  # noqa: BLE001 - no network, unknown name, package missing: all the same fix
        raise ConfigError(
            f"tiktoken encoding {name!r} cannot be loaded ({type(e).__name__}); put its file in "
            "$TIKTOKEN_CACHE_DIR or use tokenizer='approx'"
        ) from None


def chunks(content: str, words: int = 100) -> list[str]:
    """Paragraphs of ``content`` merged into chunks of about ``words`` words (the unit of evidence)."""
    out: list[str] = []
    cur: list[str] = []
    n = 0
    for para in (p.strip() for p in re.split(r"\n\s*\n", content)):
        if not para:
            continue
        cur.append(para)
        n += len(para.split())
        if n >= words:
            out.append("\n".join(cur))
            cur, n = [], 0
    if cur:
        out.append("\n".join(cur))
    return out


@dataclass(frozen=True)
class DeterministicExtractor:
    """Goal-conditioned extraction without a model (the sim backend's method on fetched text).

    Attributes:
        evidence_chunks: Chunks quoted as evidence.
        summary_sentences: Sentences in the summary.
        max_evidence_chars: Cap on the evidence text.
    """

    evidence_chunks: int = 3
    summary_sentences: int = 3
    max_evidence_chars: int = 3000

    def __call__(self, title: str, content: str, goal: str) -> tuple[str, str]:
        """``(evidence, summary)`` for ``goal``; ``("", "")`` for an empty page."""
        parts = chunks(content)
        if not parts:
            return "", ""
        scores = bm25_rank(goal, parts)
        chosen = (
            [parts[i] for i in top_indices(scores, self.evidence_chunks)]
            if any(scores)
            else parts[: self.evidence_chunks]
        )
        evidence = "\n\n".join(chosen)
        if len(evidence) > self.max_evidence_chars:
            evidence = evidence[: self.max_evidence_chars].rsplit(" ", 1)[0] + " ..."
        sentences = [s for c in chosen for s in split_sentences(c)]
        summary = summarize(sentences, goal, self.summary_sentences)
        return evidence, f"{title}: {summary}" if title else summary


def parse_extraction(reply: str) -> tuple[str, str]:
    """``(evidence, summary)`` from a summariser reply: the JSON object in it, fences and chatter allowed.

    Raises:
        SummariserError: With no JSON object, or a summary under 10 characters (Tongyi's threshold).
    """
    start, end = reply.find("{"), reply.rfind("}")
    try:
        obj = json.loads(reply[start : end + 1]) if start != -1 and end > start else None
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        raise SummariserError(f"summariser reply holds no JSON object: {reply[:120]!r}")
    ev, summary = obj.get("evidence", ""), obj.get("summary", "")
    evidence = "\n".join(map(str, ev)) if isinstance(ev, list) else str(ev)
    summary = str(summary)
    if len(summary.strip()) < 10:
        raise SummariserError(f"summariser gave a summary under 10 characters: {summary!r}")
    return evidence, summary


def _replay_miss(e: BaseException | None) -> bool:
    """Whether ``e`` or an exception it was raised from is a replay miss (the OpenAI client wraps transport errors)."""
    seen = 0
    while e is not None and seen < 10:
        if getattr(e, "replay_miss", False):
            return True
        e, seen = e.__cause__ or e.__context__, seen + 1
    return False


class LLMSummariser:
    """Evidence and summary from an OpenAI-compatible chat model (``$API_BASE``, ``$API_KEY``, ``$SUMMARY_MODEL_NAME``).

    Args:
        base_url: The endpoint (``.../v1``).
        api_key: Its key.
        model: The model name.
        temperature: Sampling temperature (0: reproducible).
        timeout_s: Per-request timeout.
        http_client: An httpx client (recording / replaying transport), or ``None``.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        *,
        temperature: float = 0.0,
        timeout_s: float = 60.0,
        http_client: object | None = None,
    ) -> None:
        from openai import OpenAI

        self.model, self.temperature = model, temperature
        self._client = OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0, http_client=http_client
        )

    def __call__(self, title: str, content: str, goal: str) -> tuple[str, str]:
        """``(evidence, summary)`` for ``goal``.

        Raises:
            SummariserError: When the model is unreachable or its reply is unusable.
        """
        prompt = EXTRACTOR_INSTRUCTIONS.format(content=content, goal=goal)
        try:
            r = self._client.chat.completions.create(
                model=self.model, temperature=self.temperature, messages=[{"role": "user", "content": prompt}]
            )
            reply = r.choices[0].message.content or ""
        except Exception as e:  # noqa: BLE001 - any client failure falls back to the deterministic extractor
            if _replay_miss(e):  # ... but not a request missing from a replayed recording: that would be different data
                raise UpstreamError(
                    f"summariser {self.model}: {scrub(str(e.__cause__ or e))}", retryable=False, fatal=True
                ) from None
            raise SummariserError(f"summariser {self.model} failed: {type(e).__name__}: {scrub(str(e))}") from None
        return parse_extraction(reply)

    def close(self) -> None:
        """Close the client's HTTP connection pool."""
        self._client.close()
