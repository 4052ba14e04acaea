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
from typing import Any

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

CALL_PENALTY_CAP = 0.5
"""The most ``call_penalty`` takes off an episode's reward, however many tool calls it took."""

ECHO_PENALTY_CAP = 0.5
"""The most ``echo_penalty`` takes off a wrong answer that restates the question."""


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
        call_penalty: Subtracted from an answered episode's reward per tool call, right or wrong answer alike, at
            most ``CALL_PENALTY_CAP`` in all (0 = off; not together with ``call_cost``). ``call_cost`` leaves every
            wrong answer at 0 however many calls it took, so a group whose right answers all made the same calls
            gets no signal about calls; the penalty ranks wrong answers by their calls too.
        free_calls: Which tool calls ``call_cost`` or ``call_penalty`` leaves free: ``none`` (every call is charged)
            or ``oracle`` (the first ``difficulty.oracle_searches`` calls of the task, the searches a
            provenance-following oracle needs, are free). With ``oracle`` the charge falls only on calls past what
            the task needs, so a two-hop question's second search costs nothing while a one-hop question's does.
        subgoal_credit: Partial credit for the way to a wrong answer: an answered episode earns up to this much of what
            its answer's score leaves (all of it with ``em``, a wrong answer scoring 0) in proportion to the share
            of the task's subgoals (:attr:`~sim_web.env.tasks.Task.subgoals`: the bridge of a two-hop question)
            that its own tool calls named (0 = off; below 0.5, so a right answer outscores every wrong one). A
            right answer's reward is unchanged, so a group whose answers are all wrong still ranks the episodes that
            found the bridge above those that did not.
        echo_penalty: Taken off an answer that scores 0 and restates the question: its words, as whole words, are
            in the question (``"Egypt"`` for "Which country borders Egypt ...?"; 0 = off, at most
            ``ECHO_PENALTY_CAP``). The tiers' and SailorFog-QA's questions never name their answer, so such an
            answer repeats a clue instead of answering; the penalty ranks it below other wrong answers, which gives a
            group whose answers are all wrong a gradient away from it. Off for task sets whose questions may name
            their answer (a choice between two named things).
    """

    kind: str = "em"
    use_aliases: bool = True
    format_penalty: float = 0.0
    call_cost: float = 0.0
    call_penalty: float = 0.0
    free_calls: str = "none"
    subgoal_credit: float = 0.0
    echo_penalty: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in ("em", "f1", "judge"):
            raise ConfigError(f"RewardConfig.kind must be 'em', 'f1' or 'judge', got {self.kind!r}")
        if not 0.0 <= self.call_cost <= 1.0 - CALL_COST_FLOOR:
            raise ConfigError(
                f"RewardConfig.call_cost must be in [0, {1.0 - CALL_COST_FLOOR}] (a share of the answer's reward per "
                f"tool call), got {self.call_cost!r}"
            )
        if not 0.0 <= self.call_penalty <= CALL_PENALTY_CAP:
            raise ConfigError(
                f"RewardConfig.call_penalty must be in [0, {CALL_PENALTY_CAP}] (reward taken off per tool call), "
                f"got {self.call_penalty!r}"
            )
        if not 0.0 <= self.subgoal_credit < 0.5:
            raise ConfigError(
                f"RewardConfig.subgoal_credit must be in [0, 0.5) (the most a wrong answer earns for the subgoals its "
                f"tool calls named, below a right answer's least), got {self.subgoal_credit!r}"
            )
        if not 0.0 <= self.echo_penalty <= ECHO_PENALTY_CAP:
            raise ConfigError(
                f"RewardConfig.echo_penalty must be in [0, {ECHO_PENALTY_CAP}] (reward taken off a wrong answer that "
                f"restates the question), got {self.echo_penalty!r}"
            )
        if self.call_cost and self.call_penalty:
            raise ConfigError(
                f"RewardConfig sets both call_cost={self.call_cost} and call_penalty={self.call_penalty}: they are two "
                "ways of charging the same calls, set one of them to 0"
            )
        if self.free_calls not in ("none", "oracle"):
            raise ConfigError(f"RewardConfig.free_calls must be 'none' or 'oracle', got {self.free_calls!r}")
        if self.free_calls != "none" and not self.charges_calls:
            raise ConfigError(
                f"RewardConfig.free_calls={self.free_calls!r} only changes which calls call_cost or call_penalty "
                "charges, and both are 0: set one of them > 0 (e.g. call_cost=0.1) or free_calls='none'"
            )

    @property
    def charges_calls(self) -> bool:
        """Whether the reward depends on how many tool calls the episode made."""
        return bool(self.call_cost or self.call_penalty)

    @property
    def lowest_right(self) -> float:
        """The least reward a right answer (score 1) can get under the call charge, without format errors."""
        if self.call_cost:
            return CALL_COST_FLOOR
        return 1.0 - (CALL_PENALTY_CAP if self.call_penalty else 0.0)


def free_calls(oracle_searches: Any, config: RewardConfig) -> int:
    """How many of a task's tool calls ``config.call_cost`` or ``config.call_penalty`` leaves free.

    Args:
        oracle_searches: The task's ``difficulty.oracle_searches`` (:attr:`Task.oracle_searches`), or ``None``.
        config: The reward settings.

    Returns:
        0 with ``free_calls="none"``; the task's oracle searches with ``free_calls="oracle"``.

    Raises:
        ConfigError: With ``free_calls="oracle"`` when the task does not carry a positive whole number of oracle
            searches (task sets written by ``sim-web synth`` and ``sim-web learn`` do).

    >>> free_calls(2, RewardConfig(call_cost=0.1, free_calls="oracle"))
    2
    >>> free_calls(None, RewardConfig(call_cost=0.1))
    0
    """
    if config.free_calls == "none":
        return 0
    ok = isinstance(oracle_searches, (int, float)) and not isinstance(oracle_searches, bool)
    if not ok or oracle_searches < 1 or oracle_searches != int(oracle_searches):
        raise ConfigError(
            "RewardConfig.free_calls='oracle' needs each task's difficulty.oracle_searches (a whole number >= 1), "
            f"found {oracle_searches!r}: use a task set written by `sim-web synth` or `sim-web learn --stages tasks`, "
            "or set free_calls='none'"
        )
    return int(oracle_searches)


def call_text(arguments: Any) -> str:
    """The words of one tool call's arguments (strings, and the strings of lists: a ``search`` call's queries),
    joined with " | " so that two queries never join into one name.

    >>> call_text({"query": ["Titan moon", "Solar System planets"]})
    'Titan moon | Solar System planets'
    """
    if isinstance(arguments, str):
        return arguments
    if isinstance(arguments, dict):
        arguments = list(arguments.values())
    if isinstance(arguments, (list, tuple)):
        return " | ".join(t for t in (call_text(a) for a in arguments) if t)
    return ""


def subgoal_share(subgoals: Sequence[str], named_text: str) -> float:
    """The share of ``subgoals`` that ``named_text`` (what an episode's tool calls said) names, as whole words.

    Args:
        subgoals: The task's subgoals (:attr:`~sim_web.env.tasks.Task.subgoals`).
        named_text: The text of the episode's tool-call arguments.

    Returns:
        0.0 without subgoals, else the named share, in [0, 1].

    >>> subgoal_share(["Solar System"], "Titan moon | Which planet is the fourth-largest planet in the solar system?")
    1.0
    >>> subgoal_share(["Solar System", "Mali"], "Titan moon system")
    0.0
    """
    if not subgoals:
        return 0.0
    text = f" {normalize_answer(named_text)} "
    return sum(f" {normalize_answer(s)} " in text for s in subgoals) / len(subgoals)


def echoes_question(prediction: str, question: str) -> bool:
    """Whether ``prediction`` restates the question: its normalised words are, as whole words, in the question's.

    >>> echoes_question("Egypt", "Which country borders Egypt and lies in North Africa?")
    True
    >>> echoes_question("Libya", "Which country borders Egypt and lies in North Africa?")
    False
    >>> echoes_question("", "Which country borders Egypt?")
    False
    """
    said = normalize_answer(prediction)
    return bool(said) and f" {said} " in f" {normalize_answer(question)} "


def episode_reward(
    answer_reward: float,
    errors: int,
    calls: int,
    config: RewardConfig,
    free: int = 0,
    subgoals: float = 0.0,
    echo: bool = False,
) -> float:
    """The reward of a finished episode: the answer's score with its subgoal credit, less the call charge, the echo
    penalty and the format penalty.

    Args:
        answer_reward: :func:`score_answer`'s ``"reward"``.
        errors: Malformed actions in the episode (``format_penalty`` each).
        calls: Tool calls the episode made (the final answer is not one).
        config: The reward settings.
        free: Calls not charged (:func:`free_calls`).
        subgoals: The share of the task's subgoals the episode's tool calls named (:func:`subgoal_share`).
        echo: Whether the answer restates the question (:func:`echoes_question`); it costs ``echo_penalty`` when
            the answer scored 0.

    Returns:
        ``base * max(CALL_COST_FLOOR, 1 - call_cost * extra) - min(CALL_PENALTY_CAP, call_penalty * extra)
        - echo_penalty * (echo and answer_reward == 0) - format_penalty * errors``, where
        ``extra = max(0, calls - free)`` and ``base = answer_reward + (1 - answer_reward) * subgoal_credit * subgoals``.

    >>> episode_reward(1.0, errors=0, calls=2, config=RewardConfig(call_cost=0.1))
    0.8
    >>> episode_reward(1.0, errors=0, calls=2, config=RewardConfig(call_cost=0.1, free_calls="oracle"), free=2)
    1.0
    >>> episode_reward(0.0, errors=1, calls=9, config=RewardConfig(call_cost=0.1, format_penalty=0.1))
    -0.1
    >>> episode_reward(0.0, errors=0, calls=2, config=RewardConfig(call_penalty=0.2, free_calls="oracle"), free=1)
    -0.2
    >>> episode_reward(0.0, errors=0, calls=2, config=RewardConfig(subgoal_credit=0.2), subgoals=1.0)
    0.2
    >>> episode_reward(1.0, errors=0, calls=2, config=RewardConfig(subgoal_credit=0.2), subgoals=1.0)
    1.0
    >>> episode_reward(0.0, errors=0, calls=2, config=RewardConfig(echo_penalty=0.2), echo=True)
    -0.2
    """
    extra = max(0, calls - free)
    base = answer_reward
    if config.subgoal_credit and subgoals:
        base = round(answer_reward + (1.0 - answer_reward) * config.subgoal_credit * subgoals, 12)
    kept = max(CALL_COST_FLOOR, 1.0 - config.call_cost * extra)
    scaled = base if kept == 1.0 else round(base * kept, 12)  # 1 - 0.1 x 3 is 0.7, not 0.69999...
    charged = round(min(CALL_PENALTY_CAP, config.call_penalty * extra), 12)
    if echo and answer_reward == 0.0:
        charged = round(charged + config.echo_penalty, 12)
    return scaled - charged - config.format_penalty * errors


def finished_reward(
    prediction: str,
    answer_reward: float,
    question: str,
    subgoals: Sequence[str],
    called: Sequence[str],
    errors: int,
    calls: int,
    config: RewardConfig,
    free: int = 0,
) -> float:
    """The reward of an episode that answered: :func:`episode_reward` with the subgoal share and the echo read from
    what the episode said, so the gym env and the TRL tool env score an episode alike.

    Args:
        prediction: The submitted answer.
        answer_reward: :func:`score_answer`'s ``"reward"`` for it.
        question: The task's question.
        subgoals: The task's subgoals (:attr:`~sim_web.env.tasks.Task.subgoals`).
        called: The text of each tool call's arguments (:func:`call_text`), in order.
        errors: Malformed actions in the episode.
        calls: Tool calls the episode made.
        config: The reward settings.
        free: Calls not charged (:func:`free_calls`).

    Returns:
        The episode's reward.

    >>> finished_reward("Egypt", 0.0, "Which country borders Egypt?", (), [], 0, 1, RewardConfig(echo_penalty=0.1))
    -0.1
    """
    share = subgoal_share(subgoals, " | ".join(called)) if config.subgoal_credit else 0.0
    echo = bool(config.echo_penalty) and echoes_question(prediction, question)
    return episode_reward(answer_reward, errors, calls, config, free, share, echo)


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
