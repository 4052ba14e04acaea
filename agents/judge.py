"""An LLM judge of final answers through an OpenAI-compatible endpoint.

The prompt is :data:`agents.prompts.JUDGE_PROMPT` (shipped and documented in docs/evaluation.md): the
judge sees the question, the gold answer with its aliases and the prediction, and replies one
word, ``Correct`` or ``Incorrect``. It is called at temperature 0. A reply that is neither is
scored 0 and counted in :attr:`LLMJudge.unparsed`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from agents.config import SamplingConfig
from agents.policies.base import Policy
from agents.prompts import JUDGE_PROMPT

log = logging.getLogger(__name__)
JUDGE_SAMPLING = SamplingConfig(temperature=0.0, top_p=1.0, presence_penalty=0.0, max_tokens=16, stop=("\n\n",))


def parse_verdict(reply: str) -> float | None:
    """1.0 for ``Correct``, 0.0 for ``Incorrect`` (first such word wins), ``None`` when neither appears."""
    m = re.search(r"\b(incorrect|correct)\b", reply or "", re.IGNORECASE)
    if not m:
        return None
    return 0.0 if m.group(1).lower() == "incorrect" else 1.0


class LLMJudge:
    """``judge(question, prediction, golds) -> score`` (the :data:`sim_web.env.rewards.Judge` signature).

    Args:
        policy: The judging model (normally an :class:`~agents.policies.openai_policy.OpenAIPolicy`).
        sampling: Its sampling parameters (default: greedy, 16 tokens).
    """

    def __init__(self, policy: Policy, sampling: SamplingConfig = JUDGE_SAMPLING) -> None:
        self.policy, self.sampling = policy, sampling
        self.name = f"judge:{policy.name}"
        self.unparsed = 0

    def prompt(self, question: str, prediction: str, golds: Sequence[str]) -> str:
        """The judge prompt for one answer."""
        return JUDGE_PROMPT.format(
            question=question, golds=" | ".join(g for g in golds if g), prediction=prediction or "(no answer)"
        )

    def __call__(self, question: str, prediction: str, golds: Sequence[str]) -> float:
        """Score one answer: 1.0 correct, 0.0 incorrect or unparseable."""
        if not prediction or not prediction.strip():
            return 0.0
        msgs = [{"role": "user", "content": self.prompt(question, prediction, golds)}]
        reply = self.policy.generate([msgs], self.sampling, [0])[0].text
        verdict = parse_verdict(reply)
        if verdict is None:
            self.unparsed += 1
            log.warning("%s: unparseable verdict %r; scoring 0", self.name, reply[:200])
            return 0.0
        return verdict
