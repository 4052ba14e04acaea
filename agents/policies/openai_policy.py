"""A policy behind any OpenAI-compatible chat-completions endpoint (vLLM, SGLang, llama.cpp, hosted APIs).

Uses the ``openai`` client. Transient failures (connection errors, timeouts, HTTP 408/409/429/5xx,
an empty reply) are retried with exponential backoff; anything else (a bad request, a wrong key)
fails at once with the server's message. A ``reasoning_content`` / ``reasoning`` field (vLLM's
reasoning parsers) is put back as ``<think>...</think>`` in front of the content, as upstream does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from agents.config import SamplingConfig
from agents.policies.base import Generation, Messages, Policy, cut_at_stop
from wiki_index.errors import ConfigError
from wiki_index.settings import env

log = logging.getLogger(__name__)
TRANSIENT_STATUS = (408, 409, 429)


@dataclass(frozen=True)
class OpenAIConfig:
    """Where and how to call the endpoint."""

    model: str = field(default="", metadata={"help": "Model name as the server knows it."})
    base_url: str | None = field(default=None, metadata={"help": "Endpoint ending in /v1 (default: $OPENAI_BASE_URL, else OpenAI's)."})
    api_key: str | None = field(default=None, metadata={"help": "API key (default: $OPENAI_API_KEY, else 'EMPTY' for local servers)."})
    timeout: float = field(default=600.0, metadata={"help": "Seconds per request."})
    max_retries: int = field(default=6, metadata={"help": "Retries of a transient failure."})
    backoff: float = field(default=1.0, metadata={"help": "First retry delay in seconds (doubles each time)."})
    max_backoff: float = field(default=60.0, metadata={"help": "Longest retry delay."})
    concurrency: int = field(default=8, metadata={"help": "Parallel requests within one generate() batch."})
    extra_body: dict[str, Any] = field(default_factory=dict, metadata={"help": "Extra request fields (e.g. top_k, repetition_penalty)."})

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigError("OpenAIConfig.model is empty: name the served model, e.g. --policy openai:Qwen/Qwen3-8B")
        if self.timeout <= 0 or self.max_retries < 0 or self.backoff < 0 or self.concurrency < 1:
            raise ConfigError(f"OpenAIConfig needs timeout > 0, max_retries >= 0, backoff >= 0, concurrency >= 1; got "
                              f"{self.timeout}, {self.max_retries}, {self.backoff}, {self.concurrency}")


def _transient(exc: Exception) -> bool:
    import openai

    if isinstance(exc, (openai.APIConnectionError, openai.APITimeoutError)):  # APITimeoutError is a connection error too
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(exc, openai.APIStatusError) and status is not None and (status in TRANSIENT_STATUS or status >= 500)


class OpenAIPolicy(Policy):
    """Chat completions from an OpenAI-compatible server.

    Args:
        config: Endpoint, model and retry settings.
        sampling: Default sampling parameters (a call may pass others).
    """

    def __init__(self, config: OpenAIConfig, sampling: SamplingConfig | None = None) -> None:
        import openai

        self.config = config
        self.sampling = sampling or SamplingConfig()
        self.name = f"openai:{config.model}"
        base_url = config.base_url or env("OPENAI_BASE_URL")
        key = config.api_key or env("OPENAI_API_KEY") or "EMPTY"
        self.client = openai.OpenAI(base_url=base_url, api_key=key, timeout=config.timeout, max_retries=0)
        self.retries = 0  # transient failures retried so far (all threads)

    def generate(self, batch: Sequence[Messages], sampling: SamplingConfig | None = None,
                 seeds: Sequence[int | None] | None = None) -> list[Generation]:
        """One request per chat (in parallel up to ``concurrency``)."""
        s = sampling or self.sampling
        seeds = list(seeds) if seeds is not None else [s.seed] * len(batch)
        if len(batch) == 1:
            return [self._one(batch[0], s, seeds[0])]
        with ThreadPoolExecutor(min(len(batch), self.config.concurrency)) as pool:
            return list(pool.map(lambda ms: self._one(ms[0], s, ms[1]), zip(batch, seeds)))

    def _one(self, messages: Messages, s: SamplingConfig, seed: int | None) -> Generation:
        cfg = self.config
        body: dict[str, Any] = {"model": cfg.model, "messages": messages, "temperature": s.temperature, "top_p": s.top_p,
                                "presence_penalty": s.presence_penalty, "max_tokens": s.max_tokens}
        if s.stop:
            body["stop"] = list(s.stop)
        if seed is not None:
            body["seed"] = seed
        if cfg.extra_body:
            body["extra_body"] = dict(cfg.extra_body)
        delay = cfg.backoff
        for attempt in range(cfg.max_retries + 1):
            t = time.perf_counter()
            try:
                resp = self.client.chat.completions.create(**body)
                gen = self._generation(resp, s, time.perf_counter() - t)
                if gen.text.strip():
                    return gen
                err: Exception = RuntimeError("the endpoint returned an empty reply")
            except Exception as e:
                if not _transient(e):
                    raise
                err = e
            if attempt == cfg.max_retries:
                raise RuntimeError(f"{self.name}: {cfg.max_retries + 1} attempts failed; last error: {err}") from err
            self.retries += 1
            log.warning("%s: attempt %d failed (%s); retrying in %.2f s", self.name, attempt + 1, err, delay)
            time.sleep(delay)
            delay = min(delay * 2, cfg.max_backoff)
        raise AssertionError("unreachable")

    @staticmethod
    def _generation(resp: Any, s: SamplingConfig, seconds: float) -> Generation:
        choice = resp.choices[0]
        msg = choice.message
        text = msg.content or ""
        reasoning = getattr(msg, "reasoning_content", None) or getattr(msg, "reasoning", None)
        if isinstance(reasoning, str) and reasoning.strip() and "<think>" not in text:
            text = f"<think>\n{reasoning.strip()}\n</think>{text}"
        usage = getattr(resp, "usage", None)
        return Generation(text=cut_at_stop(text, s.stop), prompt_tokens=getattr(usage, "prompt_tokens", None),
                          completion_tokens=getattr(usage, "completion_tokens", None), finish_reason=choice.finish_reason,
                          seconds=seconds)

    def close(self) -> None:
        """Close the HTTP client."""
        self.client.close()
