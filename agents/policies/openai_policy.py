"""A policy behind any OpenAI-compatible chat-completions endpoint (vLLM, SGLang, llama.cpp, hosted APIs).

Uses the ``openai`` client. Transient failures (connection errors, timeouts, HTTP 408/409/429/5xx,
an empty reply, an HTTP 200 whose body is not a chat completion) are retried with exponential backoff,
or after the delay the server asks for in ``Retry-After`` (capped by ``max_backoff``). A rejected key
(HTTP 401/403) raises :class:`EndpointAuthError`, which stops an evaluation run at once; any other
refusal (a bad request) raises :class:`EndpointError` with the server's message. Every error names
the endpoint (model and base URL). A ``reasoning_content`` / ``reasoning`` field (vLLM's reasoning
parsers) is put back as ``<think>...</think>`` in front of the content, as upstream does.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from agents.config import SamplingConfig
from agents.policies.base import FatalPolicyError, Generation, Messages, Policy, cut_at_stop
from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from simweb_core.secret import Secret, as_secret, redact_url, register, reveal
from simweb_core.settings import env

log = logging.getLogger(__name__)
TRANSIENT_STATUS = (408, 409, 429)
AUTH_STATUS = (401, 403)
BODY_CHARS = 200  # how much of an unreadable reply an error shows
KEY_VAR = "OPENAI_API_KEY"
BASE_URL_VAR = "OPENAI_BASE_URL"


class EndpointError(RuntimeError):
    """An OpenAI-compatible endpoint failed: transient errors past the retries, or a request it refused."""


class EndpointReplyError(EndpointError):
    """An HTTP 200 whose body is no chat completion (a proxy's HTML page, cut JSON) or is empty; retried."""


class EndpointAuthError(FatalPolicyError, ConfigError):
    """The endpoint rejected the API key (HTTP 401/403): no later request can succeed, so a run stops."""


def _check_requests(timeout: float, max_retries: int, backoff: float, max_backoff: float) -> None:
    if timeout <= 0 or max_retries < 0 or backoff < 0 or max_backoff < 0:
        raise ConfigError(
            f"the endpoint settings need timeout > 0, max_retries >= 0, backoff >= 0, max_backoff >= 0; got "
            f"{timeout}, {max_retries}, {backoff}, {max_backoff} (--timeout, --max-retries, --backoff, --max-backoff)"
        )


@dataclass(frozen=True)
class RequestConfig:
    """Timeout and retries of requests to an endpoint (the fields of :class:`OpenAIConfig` a run sets for all its models)."""

    timeout: float = help_field(600.0, "Seconds per request.")
    max_retries: int = help_field(
        6, "Retries of a transient failure (HTTP 408/409/429/5xx, connection errors, empty or unreadable replies)."
    )
    backoff: float = help_field(
        1.0, "First retry delay in seconds (doubles each time); a server's Retry-After replaces it."
    )
    max_backoff: float = help_field(60.0, "Longest retry delay in seconds, a server's Retry-After included.")

    def __post_init__(self) -> None:
        _check_requests(self.timeout, self.max_retries, self.backoff, self.max_backoff)


@dataclass(frozen=True)
class OpenAIConfig:
    """Where and how to call the endpoint."""

    model: str = help_field("", "Model name as the server knows it.")
    base_url: Secret | None = help_field(
        None, "Endpoint ending in /v1 (default: $OPENAI_BASE_URL, else OpenAI's); a string becomes a Secret."
    )
    api_key: Secret | None = help_field(
        None,
        (
            "API key (default: $OPENAI_API_KEY, else 'EMPTY' for local servers); a string becomes a Secret "
            "that never prints, logs or serialises (copies read $OPENAI_API_KEY)."
        ),
    )
    timeout: float = help_field(RequestConfig.timeout, "Seconds per request.")
    max_retries: int = help_field(RequestConfig.max_retries, "Retries of a transient failure (see RequestConfig).")
    backoff: float = help_field(
        RequestConfig.backoff, "First retry delay in seconds (doubles each time); a server's Retry-After replaces it."
    )
    max_backoff: float = help_field(RequestConfig.max_backoff, "Longest retry delay in seconds, Retry-After included.")
    concurrency: int = help_field(8, "Parallel requests within one generate() batch.")
    extra_body: dict[str, Any] = help_field(
        help="Extra request fields (e.g. top_k, repetition_penalty).", default_factory=dict
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", as_secret(self.base_url, env=BASE_URL_VAR))
        object.__setattr__(self, "api_key", as_secret(self.api_key, env=KEY_VAR))
        if not self.model:
            raise ConfigError("OpenAIConfig.model is empty: name the served model, e.g. --policy openai:Qwen/Qwen3-8B")
        _check_requests(self.timeout, self.max_retries, self.backoff, self.max_backoff)
        if self.concurrency < 1:
            raise ConfigError(f"OpenAIConfig.concurrency must be >= 1, got {self.concurrency} (--workers)")


def _transient(exc: Exception) -> bool:
    import openai

    if isinstance(
        exc, (openai.APIConnectionError, openai.APITimeoutError)
    ):  # APITimeoutError is a connection error too
        return True
    status = getattr(exc, "status_code", None)
    return (
        isinstance(exc, openai.APIStatusError) and status is not None and (status in TRANSIENT_STATUS or status >= 500)
    )


def retry_after(headers: Mapping[str, str] | None, now: float) -> float | None:
    """The delay in seconds a server asks for before the next attempt, or ``None`` when it names none.

    Reads ``retry-after-ms`` (OpenAI's) and ``Retry-After`` as seconds or as an HTTP date.

    Args:
        headers: The error response's headers (case-insensitive, as httpx's).
        now: The current Unix time, to turn an HTTP date into a delay.
    """
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = (headers.get(name) or "").strip()
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        if math.isfinite(seconds):
            return max(0.0, seconds)
    value = (headers.get("retry-after") or "").strip()
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000": HTTP dates are GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


def _headers(exc: Exception) -> Mapping[str, str] | None:
    return getattr(getattr(exc, "response", None), "headers", None)


def _message(exc: Exception) -> str:
    """The server's own error message (``{"error": {"message": ...}}``) when it sent one."""
    body = getattr(exc, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    return str(message) if message else str(exc)


def _start(text: str) -> str:
    return repr(text[:BODY_CHARS]) + (f" ... ({len(text)} characters)" if len(text) > BODY_CHARS else "")


class OpenAIPolicy(Policy):
    """Chat completions from an OpenAI-compatible server.

    Args:
        config: Endpoint, model and retry settings.
        sampling: Default sampling parameters (a call may pass others).
        sleep: Waits between attempts (tests pass a recorder instead of sleeping).
        clock: The current Unix time (turns a ``Retry-After`` HTTP date into a delay).
    """

    def __init__(
        self,
        config: OpenAIConfig,
        sampling: SamplingConfig | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.sampling = sampling or SamplingConfig()
        self.name = f"openai:{config.model}"
        self.key_source = (
            "--api-key" if config.api_key else "$OPENAI_API_KEY" if env(KEY_VAR) else "none (sent 'EMPTY')"
        )
        self._client: Any = None
        self._client_lock = threading.Lock()
        self.endpoint = f"{self.name} at {redact_url(str(self.client.base_url)).rstrip('/')}"
        self.retries = 0  # transient failures retried so far (all threads)
        self._sleep, self._clock = sleep, clock

    @property
    def client(self) -> Any:
        """The ``openai.OpenAI`` client, built on first use (the key is read then, and again in a copy)."""
        with self._client_lock:
            if self._client is None:
                import openai

                cfg = self.config
                base_url = reveal(cfg.base_url) or env(BASE_URL_VAR)
                key = reveal(cfg.api_key) or env(KEY_VAR) or "EMPTY"
                register(key)  # an endpoint that echoes it back: scrubbed from logs and printed errors
                self._client = openai.OpenAI(base_url=base_url, api_key=key, timeout=cfg.timeout, max_retries=0)
            return self._client

    def __getstate__(self) -> dict[str, Any]:
        """Everything but the client (its lock does not pickle, its key must not): a copy builds its own."""
        state = dict(self.__dict__)
        state["_client"], state["_client_lock"] = None, None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._client_lock = threading.Lock()

    def generate(
        self,
        batch: Sequence[Messages],
        sampling: SamplingConfig | None = None,
        seeds: Sequence[int | None] | None = None,
    ) -> list[Generation]:
        """One request per chat (in parallel up to ``concurrency``)."""
        s = sampling or self.sampling
        seeds = list(seeds) if seeds is not None else [s.seed] * len(batch)
        if len(batch) == 1:
            return [self._one(batch[0], s, seeds[0])]
        with ThreadPoolExecutor(min(len(batch), self.config.concurrency)) as pool:
            return list(pool.map(lambda ms: self._one(ms[0], s, ms[1]), zip(batch, seeds)))

    def _one(self, messages: Messages, s: SamplingConfig, seed: int | None) -> Generation:
        cfg = self.config
        body: dict[str, Any] = {
            "model": cfg.model,
            "messages": messages,
            "temperature": s.temperature,
            "top_p": s.top_p,
            "presence_penalty": s.presence_penalty,
            "max_tokens": s.max_tokens,
        }
        if s.stop:
            body["stop"] = list(s.stop)
        if seed is not None:
            body["seed"] = seed
        if cfg.extra_body:
            body["extra_body"] = dict(cfg.extra_body)
        delay = min(cfg.backoff, cfg.max_backoff)
        for attempt in range(cfg.max_retries + 1):
            t = time.perf_counter()
            try:
                resp = self.client.chat.completions.create(**body)
                gen = self._generation(resp, s, time.perf_counter() - t)
                if gen.text.strip():
                    return gen
                err: Exception = EndpointReplyError("the endpoint returned an empty reply")
            except Exception as e:
                err = self._retryable(e)
            if attempt == cfg.max_retries:
                raise EndpointError(
                    f"{self.endpoint}: {cfg.max_retries + 1} attempts failed; last error: {err}"
                ) from err
            wait = self._wait(err, delay)
            self.retries += 1
            log.warning("%s: attempt %d failed (%s); retrying in %.2f s", self.endpoint, attempt + 1, err, wait)
            self._sleep(wait)
            delay = min(delay * 2, cfg.max_backoff)
        raise AssertionError("unreachable")

    def _retryable(self, exc: Exception) -> Exception:
        """The error to retry after; raises at once what no retry can fix (a rejected key, a refused request)."""
        import openai

        if isinstance(exc, json.JSONDecodeError):  # an HTTP 200 announced as JSON whose body is not
            return EndpointReplyError(f"HTTP 200 with a body that is not JSON ({exc.msg}): {_start(exc.doc)}")
        if isinstance(exc, EndpointReplyError) or _transient(exc):
            return exc
        status = getattr(exc, "status_code", None)
        if status in AUTH_STATUS:
            raise EndpointAuthError(
                f"{self.endpoint} rejected the API key (HTTP {status}: {_message(exc)}); key from {self.key_source}. "
                "Pass the endpoint's key with --api-key or $OPENAI_API_KEY"
            ) from exc
        if isinstance(exc, openai.APIStatusError):
            raise EndpointError(f"{self.endpoint} refused the request (HTTP {status}: {_message(exc)})") from exc
        raise exc

    def _wait(self, err: Exception, delay: float) -> float:
        """The server's ``Retry-After`` when it sent one (capped by ``max_backoff``), else the backoff delay."""
        asked = retry_after(_headers(err), self._clock())
        return delay if asked is None else min(asked, self.config.max_backoff)

    def _generation(self, resp: Any, s: SamplingConfig, seconds: float) -> Generation:
        """The turn in a reply; an unreadable reply raises :class:`EndpointReplyError` (retried; the last one is named)."""
        if isinstance(resp, str):  # the client returns a body that is not announced as JSON as text
            raise EndpointReplyError(f"HTTP 200 with a body that is not JSON: {_start(resp)}")
        if not getattr(resp, "choices", None):
            dump = resp.model_dump_json() if hasattr(resp, "model_dump_json") else repr(resp)
            raise EndpointReplyError(f"HTTP 200 without choices: {_start(dump)}")
        choice = resp.choices[0]
        msg = choice.message
        text = msg.content or ""
        reasoning = getattr(msg, "reasoning_content", None) or getattr(msg, "reasoning", None)
        if isinstance(reasoning, str) and reasoning.strip() and "<think>" not in text:
            text = f"<think>\n{reasoning.strip()}\n</think>{text}"
        usage = getattr(resp, "usage", None)
        return Generation(
            text=cut_at_stop(text, s.stop),
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            finish_reason=choice.finish_reason,
            seconds=seconds,
        )

    def close(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            self._client.close()
