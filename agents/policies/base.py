"""The policy interface: ``act(messages) -> str`` and its batched variant.

A policy turns an OpenAI-format chat (``[{"role", "content"}, ...]``, starting with the Tongyi
system prompt) into the next assistant turn. Implementations override :meth:`Policy.generate`
(batched, with token counts); users who only have a function can wrap it in
:class:`FunctionPolicy`. Everything else in :mod:`agents` talks to this interface only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.config import SamplingConfig

Messages = list[dict[str, str]]


class FatalPolicyError(Exception):
    """A policy error that every further request would hit too (e.g. a rejected API key).

    The evaluation harness stops the run at the first one instead of failing each episode with it.
    """


@dataclass
class Generation:
    """One generated assistant turn.

    Attributes:
        text: The text (stop sequences removed).
        prompt_tokens: Tokens in the prompt, when known.
        completion_tokens: Tokens generated, when known.
        finish_reason: ``"stop"``, ``"length"``... when known.
        seconds: Wall time of the call (for a batch: the batch's time).
        extra: Anything else the policy wants recorded.
    """

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def approx_tokens(text: str) -> int:
    """Rough token count (about 4 characters per token, Tongyi's estimate in API mode)."""
    return max(1, len(text) // 4) if text else 0


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """``text`` up to the first occurrence of any stop sequence (all of it when none occurs)."""
    cut = len(text)
    for s in stop:
        i = text.find(s)
        if 0 <= i < cut:
            cut = i
    return text[:cut]


class Policy(ABC):
    """Base class of policies.

    Attributes:
        name: Shown in trajectories and metrics.
        batched: Whether :meth:`generate` benefits from several chats at once (local models); the
            harness then steps episodes in lockstep instead of running them in threads.
        context_window: The model's context size in tokens, when it has a hard one.
    """

    name: str = "policy"
    batched: bool = False
    context_window: int | None = None

    @abstractmethod
    def generate(
        self,
        batch: Sequence[Messages],
        sampling: SamplingConfig | None = None,
        seeds: Sequence[int | None] | None = None,
    ) -> list[Generation]:
        """Generate the next assistant turn of each chat.

        Args:
            batch: The chats.
            sampling: Sampling parameters (``None``: the policy's defaults).
            seeds: One seed per chat for sampling (``None``: unseeded or the policy's default).

        Returns:
            One :class:`Generation` per chat, in order.
        """

    def act(self, messages: Messages) -> str:
        """The next assistant turn of one chat."""
        return self.generate([messages])[0].text

    def act_batch(self, batch: Sequence[Messages]) -> list[str]:
        """The next assistant turn of each chat."""
        return [g.text for g in self.generate(batch)]

    def count_tokens(self, messages: Messages) -> int:
        """Tokens of a chat as the model would see it (default: :func:`approx_tokens` of the contents)."""
        return sum(approx_tokens(m.get("content", "")) + 4 for m in messages)

    def episode_info(self, messages: Messages) -> dict[str, Any]:
        """Policy-specific facts about a finished episode, stored in its trajectory (default: none)."""
        return {}

    def close(self) -> None:  # noqa: B027 (optional hook: most policies hold nothing to release)
        """Release resources (default: nothing)."""


class FunctionPolicy(Policy):
    """A policy from a plain function ``messages -> str`` (or a batched one).

    Args:
        fn: ``fn(messages) -> str``; with ``batched_fn=True``, ``fn(list_of_messages) -> list[str]``.
        name: Name in trajectories.
        batched_fn: Whether ``fn`` takes a batch.
    """

    def __init__(self, fn: Callable[[Any], Any], name: str = "function", batched_fn: bool = False) -> None:
        self.fn, self.name, self.batched_fn = fn, name, batched_fn

    def generate(
        self,
        batch: Sequence[Messages],
        sampling: SamplingConfig | None = None,
        seeds: Sequence[int | None] | None = None,
    ) -> list[Generation]:
        """Call the function (once per chat, or once for the batch)."""
        texts = list(self.fn(list(batch))) if self.batched_fn else [self.fn(m) for m in batch]
        if len(texts) != len(batch):
            raise ValueError(f"{self.name}: the batched function returned {len(texts)} turns for {len(batch)} chats")
        return [Generation(text=str(t)) for t in texts]


def as_policy(obj: Any) -> Policy:
    """Accept a :class:`Policy`, an object with ``act(messages)``, or a callable; return a :class:`Policy`."""
    if isinstance(obj, Policy):
        return obj
    if hasattr(obj, "act") and callable(obj.act):
        return FunctionPolicy(obj.act, name=type(obj).__name__)
    if callable(obj):
        return FunctionPolicy(obj, name=getattr(obj, "__name__", "function"))
    raise TypeError(f"expected a Policy, an object with act(messages) -> str, or a function; got {type(obj).__name__}")
