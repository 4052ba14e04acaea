"""GRPO rollouts: our own ReAct loop over :class:`sim_web.env.WebResearchEnv`, as a TRL ``rollout_func``.

The sequence a rollout builds is the wire format of :mod:`training.wire`, token for token what SFT trains
on and ``sim-web eval`` prompts with:

- ``prompt_ids`` = the env's chat (Tongyi system prompt with the tool schemas and date, then the question)
  rendered with the generation prompt;
- per turn, the policy's sampled ids up to and including its end-of-turn token (``env_mask`` 1, real
  per-token logprobs), then :func:`training.wire.tool_suffix_ids` of the env's chat: the end of the turn,
  the ``<tool_response>`` user turn and the next assistant header (``env_mask`` 0, logprob 0.0).

``max_completion_length`` is the budget of the whole multi-turn completion, tool tokens included. An
episode ends with a final answer (scored by the env: :func:`sim_web.env.rewards.score_answer`, the code
``sim-web eval`` uses), or without one: ``length`` (a turn hit the token budget before its end-of-turn
token), ``env_truncated:max_turns`` / ``env_truncated:max_obs_chars`` (the env's budgets, named as ``sim-web eval``
names them: :data:`agents.turn.TERMINATIONS`) or ``rollback`` (the next tool output would overflow the budget, so it
is left out and the completion ends after the assistant's end-of-turn token, a stop that TRL's own truncation test
cannot see).

Generation (:func:`training.grpo.generation.generate`): with ``use_vllm`` through TRL's
``trainer.vllm_generation.generate`` (one completion per context), else ``generate`` on ``trainer.model`` with the
trainer's temperature / top_p / top_k, seeded per call inside :func:`torch.random.fork_rng` (the global RNG is left alone). On that
path the episodes' keys and values are kept between turns (``RolloutConfig.reuse_kv``,
:mod:`agents.policies.kv_reuse`): a turn prefills only what its episode added since the last one (its last
sampled token and the tool suffix), still one batched ``generate`` per turn, and a group's shared prompt is
prefilled once for all its episodes. The store lives for one rollout call, so it never outlives the weights
that computed it.
Sampling follows the trainer, not ``sim-web eval``'s Tongyi settings: no presence penalty and no stop
strings (a turn ends at the end-of-turn token). Each turn is read, stepped and counted by :mod:`agents.turn`, the
code the eval loop uses, so a hallucinated ``<tool_response>`` is cut before the env reads the turn (it stays in the
trained ids) and ``tool_errors`` means what ``sim-web eval``'s ``tool_error_rate`` counts. What an episode did is read
from the env's ``info`` (its chat, counters and verdict on each turn), never from the env's attributes. Each
episode's outcome is an :class:`agents.episode.Episode` (:attr:`AgentRollout.last_episodes` after a call).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.episode import Episode
from agents.policies.compact_decode import DecodeStats
from agents.policies.kv_reuse import PrefixKV, supports
from agents.turn import ANSWER, ERROR, LENGTH, ROLLBACK, clean_turn, env_truncation, play_turn
from sim_web.env import EnvConfig, Task, WebResearchEnv, read_action
from sim_web.serve.trl import task_dataset  # noqa: F401  (the GRPO dataset of a task set: same rows as TRL's)
from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from training.grpo.engine import ENGINES, RolloutEngine
from training.grpo.generation import generate
from training.grpo.trainer_config import check_sandbox
from training.wire import render, tokenize, tool_suffix_ids

log = logging.getLogger(__name__)


def env_reward(
    completions: list[Any], env_reward: list[float | None] | None = None, **kwargs: Any
) -> list[float | None]:
    """The env's own score of each episode (``None`` = unscorable), as a pure TRL reward function.

    Args:
        completions: The decoded completions (unused: the env already scored the answer).
        env_reward: The rollout's per-episode reward field.
        **kwargs: Other dataset / rollout columns (ignored).

    Returns:
        One reward per completion.

    Raises:
        ConfigError: When the rollout did not provide ``env_reward``.
    """
    if env_reward is None:
        raise ConfigError(
            "env_reward needs the 'env_reward' field: use training.grpo.rollout.AgentRollout as rollout_func"
        )
    return [None if r is None else float(r) for r in env_reward]


@dataclass(frozen=True)
class RolloutConfig:
    """Limits of one rollout episode (the completion budget is the trainer's ``max_completion_length``)."""

    max_turn_tokens: int = help_field(512, "Most new tokens of one assistant turn.")
    seed: int = help_field(0, "Base seed of the sampling (each generate call derives its own).")
    batch_size: int = help_field(16, "Most contexts per HF generate() call (CPU path).")
    reuse_kv: bool = help_field(
        True,
        (
            "HF path: keep each episode's keys and values between turns and "
            "prefill only the new tokens (off: every turn prefills its whole "
            "context again)."
        ),
    )
    fast_decode: bool = help_field(
        True,
        (
            "HF path: decode with agents.policies.fast_decode (a key/value cache written in place and one-token "
            "attention as batched matrix products; same weights and layers, logits equal up to float rounding)."
        ),
    )
    engine: str = help_field(
        "trainer",
        (
            "HF path: 'trainer' samples with the trainer's model and precision; 'bf16' with a bfloat16 copy of its "
            "current weights, refreshed every rollout call (faster on a CPU with native bf16; the logprob gap is "
            "corrected by the trainer's rollout_is settings)."
        ),
    )

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ConfigError(f"RolloutConfig.engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.max_turn_tokens < 1 or self.batch_size < 1:
            raise ConfigError(
                f"RolloutConfig needs max_turn_tokens >= 1 and batch_size >= 1, got {self.max_turn_tokens}, {self.batch_size}"
            )


@dataclass
class TokenTrace:
    """One rollout episode in progress: its env, the ids built so far, and the :class:`~agents.episode.Episode` it plays.

    ``info`` is the env's latest info (reset's, then each step's): the chat and running counters the trace reads.
    """

    env: WebResearchEnv
    prompt_ids: list[int]
    episode: Episode
    info: dict[str, Any] = field(default_factory=dict)
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    done: bool = False
    generated: int = 0

    def end(self, termination: str, reward: float | None = 0.0, prediction: str | None = None) -> None:
        """Close the episode: how it ended, its reward, and the env's counters (from its latest info)."""
        ep = self.episode
        self.done, ep.termination, ep.reward, ep.prediction = True, termination, reward, prediction
        ep.tool_calls, ep.env_errors = dict(self.info.get("tool_calls", {})), dict(self.info.get("errors", {}))


def _seed(*parts: Any) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


class AgentRollout:
    """``rollout_func(prompts, trainer)`` for :class:`~training.grpo.trainer.AgentGRPOTrainer`.

    Args:
        env_config: The env of every episode (tools, budgets, reward); PythonInterpreter needs its sandbox.
        tasks: The task set; a prompt's last user message is a task's question.
        config: Turn budget, seed, batch size.
        judge: Optional judge callable for ``RewardConfig.kind="judge"``.
    """

    def __init__(
        self, env_config: EnvConfig, tasks: Sequence[Task], config: RolloutConfig | None = None, judge: Any = None
    ) -> None:
        check_sandbox(env_config.tools)
        self.env_config, self.tasks, self.config, self.judge = env_config, list(tasks), config or RolloutConfig(), judge
        self.by_question = {t.question: t for t in reversed(self.tasks)}
        self._envs: list[WebResearchEnv] = []
        self._engine = RolloutEngine(self.config.engine)
        self.last_episodes: list[Episode] = []

    def add_tasks(self, tasks: Sequence[Task]) -> None:
        """Make more tasks playable (the feedback loop's fresh ones); a known question keeps its first task."""
        for t in tasks:
            if t.question not in self.by_question:
                self.tasks.append(t)
                self.by_question[t.question] = t

    def _env(self, i: int) -> WebResearchEnv:
        while len(self._envs) <= i:
            self._envs.append(WebResearchEnv(self.env_config, tasks=self.tasks, judge=self.judge))
        return self._envs[i]

    def _task(self, prompt: Any) -> Task:
        question = prompt[-1]["content"] if isinstance(prompt, list) else str(prompt)
        task = self.by_question.get(question)
        if task is None:
            raise ConfigError(
                f"the prompt {question[:80]!r} is not a question of the rollout's task set: build the dataset with "
                "training.grpo.rollout.task_dataset from the same tasks"
            )
        return task

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        """Play one episode per prompt, in lockstep (one batched generate per turn), and return TRL's fields."""
        tok = trainer.processing_class
        budget = int(trainer.max_completion_length)
        step = getattr(getattr(trainer, "state", None), "global_step", 0)
        rank = getattr(getattr(trainer, "accelerator", None), "process_index", 0)
        episodes = []
        samples: Counter[str] = Counter()  # the episodes of a GRPO group play the same task
        for i, prompt in enumerate(prompts):
            env, task, seed = self._env(i), self._task(prompt), _seed(self.config.seed, step, rank, i)
            _, info = env.reset(seed=seed, options={"task": task})
            played = Episode(
                task_id=task.id,
                sample=samples[task.id],
                seed=seed,
                question=task.question,
                gold=task.answer,
                aliases=list(task.aliases),
            )
            samples[task.id] += 1
            prompt_ids = tokenize(tok, render(tok, info["messages"][:2], add_generation_prompt=True))
            episodes.append(TokenTrace(env, prompt_ids, played, info=info))
        kv = self._kv_store(trainer)
        if self._engine.kind != self.config.engine:
            self._engine = RolloutEngine(self.config.engine)
        engine = None if getattr(trainer, "use_vllm", False) else self._engine.for_call(trainer)
        gen_s = self._engine.sync_seconds if engine is not None else 0.0
        tool_s = 0.0
        turn = 0
        decoded = DecodeStats()
        while active := [(k, e) for k, e in enumerate(episodes) if not e.done]:
            turn += 1
            t = time.perf_counter()
            reuse: dict[str, Any] = {"kv": kv, "keys": [k for k, _ in active]} if kv is not None else {}
            outs = generate(
                trainer,
                [e.prompt_ids + e.completion_ids for _, e in active],
                [min(self.config.max_turn_tokens, budget - len(e.completion_ids)) for _, e in active],
                _seed(self.config.seed, step, rank, "turn", turn),
                self.config.batch_size,
                engine=engine,
                fast=self.config.fast_decode,
                stats=decoded,
                **reuse,
            )
            gen_s += time.perf_counter() - t
            tool_s += sum(
                self._advance(e, ids, lps, ended, tok, budget) for (_, e), (ids, lps, ended) in zip(active, outs)
            )
        timing = {"generation_seconds": gen_s, "tool_seconds": tool_s, "turns": turn, **_split(decoded)}
        if engine is not None:
            timing["engine_sync_seconds"] = self._engine.sync_seconds
        if kv is not None:
            timing.update(reused_tokens=kv.reused_tokens, prefilled_tokens=kv.prefilled_tokens)
        self.last_episodes = [e.episode for e in episodes]
        out = _fields(episodes, timing)
        out["rollout_exact"] = [engine is None] * len(episodes)  # False: the trainer corrects the logprob gap
        return out

    def _kv_store(self, trainer: Any) -> PrefixKV | None:
        """A fresh key/value store for one rollout, or None where reuse is off or cannot apply (vLLM, a static cache,
        a model whose cache layers cannot be re-sliced)."""
        model = getattr(trainer, "model", None)
        if (
            not self.config.reuse_kv
            or model is None
            or getattr(trainer, "use_vllm", False)
            or getattr(trainer.generation_config, "cache_implementation", None) is not None
        ):
            return None
        return PrefixKV() if supports(model) else None

    def _advance(self, e: TokenTrace, ids: list[int], lps: list[float], ended: bool, tok: Any, budget: int) -> float:
        """Append one generated turn, play it in the env (:func:`agents.turn.play_turn`), append the tool suffix or end
        the episode; returns the env's seconds."""
        e.completion_ids += ids
        e.env_mask += [1] * len(ids)
        e.logprobs += lps
        e.generated += len(ids)
        text = tok.decode(ids, skip_special_tokens=True)
        if not ended:
            e.episode.counts.add(None, read_action(clean_turn(text), self.env_config))
            e.end(LENGTH)
            return 0.0
        t = time.perf_counter()
        try:
            turn = play_turn(e.env, text)
        except Exception as exc:  # a judge or backend failure: the episode is unscorable, the batch goes on
            log.warning("episode of task %s could not be scored: %s", e.episode.task_id, exc)
            e.episode.counts.add(None, read_action(clean_turn(text), self.env_config))
            e.end(ERROR, reward=None)
            return time.perf_counter() - t
        e.info = turn.info
        e.episode.counts.add(turn)
        if turn.terminated:
            e.end(ANSWER, turn.reward, turn.info.get("answer"))
        elif turn.truncated:
            e.end(env_truncation(turn.info))
        else:
            suffix = tool_suffix_ids(tok, turn.info["messages"])
            if len(e.completion_ids) + len(suffix) >= budget:  # no room for the tool output and one more token
                e.end(ROLLBACK)
            else:
                e.completion_ids += suffix
                e.env_mask += [0] * len(suffix)
                e.logprobs += [0.0] * len(suffix)
        return turn.seconds


def _split(stats: DecodeStats) -> dict[str, float]:
    """The compact decoder's share of a rollout's generation time: its prefill passes (seconds, the columns they ran
    with padding, the tokens without) and its one-token steps; empty where it did not run (``generate``, vLLM)."""
    if not stats.steps:
        return {}
    return {
        "prefill_seconds": stats.prefill_seconds,
        "prefill_columns": stats.prefill_columns,
        "prefill_new_tokens": stats.prefill_tokens,
        "decode_seconds": stats.decode_seconds,
        "decode_steps": sum(s - 1 for s in stats.steps),  # one-token passes (a call's first token is its prefill's)
        "decode_row_steps": stats.row_steps,
    }


def _fields(traces: list[TokenTrace], timing: dict[str, float]) -> dict[str, Any]:
    """TRL's required keys, ``env_mask``, and the per-episode fields the reward function and metrics read."""
    eps = [t.episode for t in traces]
    return {
        "prompt_ids": [t.prompt_ids for t in traces],
        "completion_ids": [t.completion_ids for t in traces],
        "logprobs": [t.logprobs for t in traces],
        "env_mask": [t.env_mask for t in traces],
        "env_reward": [e.reward for e in eps],
        "answered": [e.answered for e in eps],
        "no_answer": ["" if e.answered else e.termination for e in eps],
        "turns": [e.counts.turns for e in eps],
        "tool_calls": [dict(e.tool_calls) for e in eps],
        "tool_errors": [e.counts.tool_errors for e in eps],
        "action_errors": [sum(e.env_errors.values()) for e in eps],
        "generated_tokens": [t.generated for t in traces],
        "rollout_timing": timing,
    }
