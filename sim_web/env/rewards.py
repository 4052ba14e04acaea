"""Answer rewards: normalised exact match and token F1 over the gold answer and its aliases.

Normalisation follows the SQuAD / Search-R1 convention: lower-case, drop punctuation and the
articles a/an/the, collapse whitespace. An LLM judge can be plugged in through ``judge``.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from simweb_core.errors import ConfigError

_PUNCT = set(string.punctuation) | {"–", "—", "‘", "’", "“", "”", "…"}
_ARTICLES = re.compile(r"\b(a|an|the)\b")

Judge = Callable[[str, str, Sequence[str]], float]
"""``judge(question, prediction, golds) -> score in [0, 1]``."""


def normalize_answer(text: str) -> str:
    """SQuAD-style normalisation (with Unicode NFKC and accents kept)."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(" " if ch in _PUNCT else ch for ch in text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer."""
    p = normalize_answer(prediction)
    return float(any(p == normalize_answer(g) for g in golds if g))


def f1_score(prediction: str, golds: Sequence[str]) -> float:
    """The best token-level F1 between the prediction and any gold answer."""
    p = normalize_answer(prediction).split()
    best = 0.0
    for g in golds:
        gt = normalize_answer(g).split()
        common = Counter(p) & Counter(gt)
        same = sum(common.values())
        if same:
            prec, rec = same / len(p), same / len(gt)
            best = max(best, 2 * prec * rec / (prec + rec))
    return best


CALL_COST_FLOOR = 0.5
"""The least share of its reward a scored answer keeps under ``call_cost``, however many tool calls it took."""


@dataclass(frozen=True)
class RewardConfig:
    """How an answer is scored.

    Attributes:
        kind: ``em`` (exact match), ``f1`` (token F1) or ``judge`` (the judge callable).
        use_aliases: Whether aliases count as gold answers.
        format_penalty: Subtracted from the reward per malformed action in the episode (0 = off).
        call_cost: Share of a scored answer's reward taken off per tool call of the episode, down to
            ``CALL_COST_FLOOR`` of it (0 = off). Among right answers the one with fewer calls then scores higher,
            while a right answer always beats a wrong one: the reward says "stop when the answer is found".
    """

    kind: str = "em"
    use_aliases: bool = True
    format_penalty: float = 0.0
    call_cost: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in ("em", "f1", "judge"):
            raise ConfigError(f"RewardConfig.kind must be 'em', 'f1' or 'judge', got {self.kind!r}")
        if not 0.0 <= self.call_cost <= 1.0 - CALL_COST_FLOOR:
            raise ConfigError(
                f"RewardConfig.call_cost must be in [0, {1.0 - CALL_COST_FLOOR}] (a share of the answer's reward per "
                f"tool call), got {self.call_cost!r}"
            )


def episode_reward(answer_reward: float, errors: int, calls: int, config: RewardConfig) -> float:
    """The reward of a finished episode: the answer's score, less the call cost and the format penalty.

    Args:
        answer_reward: :func:`score_answer`'s ``"reward"``.
        errors: Malformed actions in the episode (``format_penalty`` each).
        calls: Tool calls the episode made (the final answer is not one).
        config: The reward settings.

    Returns:
        ``answer_reward * max(CALL_COST_FLOOR, 1 - call_cost * calls) - format_penalty * errors``.

    >>> episode_reward(1.0, errors=0, calls=2, config=RewardConfig(call_cost=0.1))
    0.8
    >>> episode_reward(0.0, errors=1, calls=9, config=RewardConfig(call_cost=0.1, format_penalty=0.1))
    -0.1
    """
    kept = max(CALL_COST_FLOOR, 1.0 - config.call_cost * calls)
    return round(answer_reward * kept, 12) - config.format_penalty * errors


def score_answer(
    prediction: str,
    answer: str,
    aliases: Sequence[str],
    question: str = "",
    config: RewardConfig = RewardConfig(),
    judge: Judge | None = None,
) -> dict[str, float]:
    """Score one final answer.

    Returns:
        ``{"reward", "em", "f1"}`` (plus ``"judge"`` when a judge is used).
    """
    golds = [answer, *aliases] if config.use_aliases else [answer]
    out = {"em": exact_match(prediction, golds), "f1": f1_score(prediction, golds)}
    if config.kind == "judge":
        if judge is None:
            raise ConfigError("RewardConfig.kind='judge' needs a judge callable (WebResearchEnv(judge=...))")
        out["judge"] = float(judge(question, prediction, golds))
    out["reward"] = out[config.kind]
    return out
