"""One wire format from SFT data to GRPO rollouts to evaluation: a chat rendered to token ids with role spans.

The chat is exactly what :class:`sim_web.env.WebResearchEnv` records in ``info["messages"]`` (and what
``sim-web eval`` feeds the policy): the Tongyi system prompt (tool schemas and date), the question as a
user turn, assistant turns as raw text (``<think>``, ``<tool_call>{json}</tool_call>``, ``<answer>``) and
tool output as user turns ``<tool_response>\\n...\\n</tool_response>``. It is rendered with the model's
own chat template and *no* ``tools=`` argument (the tools are already in the system prompt, as in
Tongyi's agent), the same call :class:`agents.policies.hf_policy.HFPolicy` makes.

Token ids come from tokenising each message's rendered segment on its own and concatenating them; for
templates whose turns are delimited by special tokens (ChatML: SmolLM2, Qwen) this equals tokenising the
whole string, and :func:`encode_chat` checks that it does, so SFT labels, GRPO ``env_mask`` and eval
prompts cannot drift apart silently.

Example:
    >>> from training.wire import CHATML
    >>> CHATML.startswith("{% for m in messages %}")
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from simweb_core.errors import ConfigError

Messages = Sequence[dict[str, str]]
#: A minimal ChatML template (SmolLM2's and Qwen's turn format), for tokenizers that ship none.
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass(frozen=True)
class Span:
    """A run of token ids in an encoded chat.

    Attributes:
        role: ``system``, ``user`` (question or tool response), ``tool`` (a user turn holding a
            ``<tool_response>``), ``assistant`` (the trained tokens: content and end-of-turn) or
            ``header`` (template text before an assistant's content, e.g. ``<|im_start|>assistant\\n``) or
            ``sep`` (template text after an assistant's end-of-turn token, e.g. the newline after ``<|im_end|>``).
        message: Index of the message this span belongs to.
        start: First token (inclusive).
        end: Last token (exclusive).
    """

    role: str
    message: int
    start: int
    end: int


@dataclass(frozen=True)
class EncodedChat:
    """A chat as token ids, with the spans that say which tokens are trained.

    Attributes:
        ids: Every token of the rendered chat.
        spans: Contiguous, in order, covering ``ids``.
    """

    ids: list[int]
    spans: list[Span]

    @property
    def assistant_mask(self) -> list[int]:
        """1 on assistant tokens (trained), 0 on system, user, tool-response and header tokens."""
        mask = [0] * len(self.ids)
        for s in self.spans:
            if s.role == "assistant":
                mask[s.start : s.end] = [1] * (s.end - s.start)
        return mask

    def span_ids(self, role: str) -> list[list[int]]:
        """The token ids of every span of ``role``, in order."""
        return [self.ids[s.start : s.end] for s in self.spans if s.role == role]


def render(tokenizer: Any, messages: Messages, add_generation_prompt: bool = False) -> str:
    """The chat as text under the tokenizer's template, without a ``tools=`` argument.

    Args:
        tokenizer: A Hugging Face tokenizer with a chat template.
        messages: OpenAI-format messages (``role``, ``content``).
        add_generation_prompt: End with the assistant header (what a policy generates after).

    Returns:
        The rendered text.

    Raises:
        ConfigError: When the tokenizer has no chat template.
    """
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError("the tokenizer has no chat template; set tokenizer.chat_template (e.g. training.wire.CHATML)")
    if not messages:
        return tokenizer.apply_chat_template([{"role": "user", "content": ""}], tokenize=False)[:0]
    return tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=add_generation_prompt)


def tokenize(tokenizer: Any, text: str) -> list[int]:
    """Token ids of ``text`` without added special tokens (the template writes them)."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _role(message: dict[str, str]) -> str:
    content = message.get("content") or ""
    if message["role"] == "user" and content.startswith("<tool_response>"):
        return "tool"
    return message["role"]


def _segments(tokenizer: Any, messages: Messages) -> list[tuple[str, int, str]]:
    """``(role, message index, text)`` pieces whose concatenation is the rendered chat."""
    pieces: list[tuple[str, int, str]] = []
    done = ""
    for i, m in enumerate(messages):
        if m["role"] == "assistant":
            head = render(tokenizer, messages[:i], add_generation_prompt=True)
            if not head.startswith(done):
                raise ConfigError(
                    "the chat template is not prefix-preserving: adding the generation prompt rewrote earlier "
                    "turns; use a ChatML-style template (training.wire.CHATML)"
                )
            pieces.append(("header", i, head[len(done) :]))
            done = head
        full = render(tokenizer, messages[: i + 1])
        if not full.startswith(done):
            raise ConfigError(
                f"the chat template is not prefix-preserving at message {i} ({m['role']}): rendering one more "
                "message rewrote earlier text; use a ChatML-style template (training.wire.CHATML)"
            )
        text = full[len(done) :]
        cut = text.rfind(_eos(tokenizer)) if m["role"] == "assistant" else -1
        if cut >= 0:  # the end-of-turn token is trained (the policy generates it); what follows is template glue
            end = cut + len(_eos(tokenizer))
            pieces += [("assistant", i, text[:end]), ("sep", i, text[end:])]
        else:
            pieces.append((_role(m), i, text))
        done = full
    return pieces


def _eos(tokenizer: Any) -> str:
    eos = getattr(tokenizer, "eos_token", None)
    if not eos:
        raise ConfigError("the tokenizer has no eos_token: set the end-of-turn token (e.g. '<|im_end|>') as eos_token")
    return eos


def encode_chat(tokenizer: Any, messages: Messages) -> EncodedChat:
    """Render and tokenise a chat, keeping each message's span.

    Args:
        tokenizer: A Hugging Face tokenizer with a prefix-preserving chat template.
        messages: The chat (system, question, assistant turns, ``<tool_response>`` user turns).

    Returns:
        The ids and spans; ``assistant_mask`` marks what SFT trains and GRPO optimises.

    Raises:
        ConfigError: When the template is not prefix-preserving, or segment-wise tokenisation differs
            from tokenising the whole rendered chat (token boundaries would drift between SFT, GRPO and eval).
    """
    ids: list[int] = []
    spans: list[Span] = []
    for role, i, text in _segments(tokenizer, messages):
        piece = tokenize(tokenizer, text)
        if piece:
            spans.append(Span(role, i, len(ids), len(ids) + len(piece)))
            ids += piece
    whole = tokenize(tokenizer, render(tokenizer, messages))
    if whole != ids:
        at = next((k for k, (a, b) in enumerate(zip(whole, ids)) if a != b), min(len(whole), len(ids)))
        raise ConfigError(
            f"tokenising the chat turn by turn differs from tokenising it whole at token {at}: the template's "
            "turns must end on special tokens (ChatML's <|im_end|>) for one wire format across SFT, GRPO and eval"
        )
    return EncodedChat(ids, spans)


def tool_suffix_ids(tokenizer: Any, messages: Messages) -> list[int]:
    """Tokens between an assistant turn's end and the next assistant content, for a GRPO rollout.

    ``messages`` ends with ``[..., assistant, user(<tool_response>...)]``; the result is the rendered text
    after the assistant's own turn (whose end-of-turn token the policy generated and is trained) through the
    tool response and the next assistant header: exactly the tokens a rollout appends with ``env_mask`` 0.

    Args:
        tokenizer: The policy's tokenizer.
        messages: The chat up to and including the tool response.

    Returns:
        The token ids (not trained).

    Raises:
        ConfigError: When the last two messages are not an assistant turn and a user turn.
    """
    if len(messages) < 2 or messages[-2]["role"] != "assistant" or messages[-1]["role"] != "user":
        raise ConfigError(
            "tool_suffix_ids needs messages ending with an assistant turn and the user turn that answers it"
        )
    before = render(tokenizer, messages[:-1])
    after = render(tokenizer, messages, add_generation_prompt=True)
    if not after.startswith(before):
        raise ConfigError(
            "the chat template is not prefix-preserving; use a ChatML-style template (training.wire.CHATML)"
        )
    cut = before.rfind(_eos(tokenizer))
    glue = before[cut + len(_eos(tokenizer)) :] if cut >= 0 else ""
    return tokenize(tokenizer, glue + after[len(before) :])
