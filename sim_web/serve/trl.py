"""The simulated web in TRL's ``environment_factory`` shape, for ``GRPOTrainer`` multi-turn rollouts.

TRL (>= 1.x) builds one instance per rollout, calls ``reset(**row)`` with the dataset row,
exposes every public method but ``reset`` / ``get_reward`` as a tool (schemas read from the
type hints and Google docstrings with ``transformers.utils.get_json_schema``), and, when the
class has ``get_reward()``, calls it once per finished rollout.

The tools are the same methods as everywhere else (:class:`~sim_web.tools.ToolMethods`):
``search``, ``visit``, ``google_scholar``, ``PythonInterpreter``, plus ``answer``, through
which the policy submits its final answer (TRL's tool loop cannot see text after the last
tool call, so an environment-owned reward needs the answer as a call). Models trained in the
Tongyi format that end with ``<answer>...</answer>`` in plain text are scored instead by the
pure reward function :func:`answer_reward`; use one of the two, not both.

TRL only accepts a tokenizer whose chat template renders tool calls: for ChatML models without
one (the bundled SmolLM2-135M-Instruct, the tiny smoke-test model) :func:`with_tool_template`
installs one (:mod:`sim_web.serve.chat_template`).

Example (the README's "With TRL" snippet is the runnable version)::

    from trl import GRPOConfig, GRPOTrainer
    from sim_web.serve.trl import WebResearchToolEnv, tasks_dataset, with_tool_template

    trainer = GRPOTrainer(model=path, processing_class=with_tool_template(AutoTokenizer.from_pretrained(path)),
                          args=GRPOConfig(...), train_dataset=tasks_dataset(split="train"),
                          environment_factory=WebResearchToolEnv)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sim_web.env import EnvConfig, Task, make_toolbox
from sim_web.env.rewards import RewardConfig, call_text, finished_reward, free_calls, score_answer
from sim_web.protocol.actions import parse_action
from sim_web.protocol.errors import ActionError
from sim_web.serve.chat_template import with_tool_template
from sim_web.tools import ToolMethods
from simweb_core.errors import ConfigError

__all__ = ["WebResearchToolEnv", "answer_reward", "task_dataset", "tasks_dataset", "with_tool_template"]


class WebResearchToolEnv(ToolMethods):
    """One research episode for TRL: the tools, the submitted answer and its reward.

    The tool methods (``search``, ``visit``, ``google_scholar``, ``PythonInterpreter``) are
    inherited from :class:`~sim_web.tools.ToolMethods`, the single definition of their schemas.

    Args:
        config: The env configuration (index, tools, retrieval mode, reward kind, caps); the
            default opens the sample index. Tools disabled in ``config.tools`` answer with an
            error text, as the gym env does.
    """

    def __init__(self, config: EnvConfig | None = None) -> None:
        self.config = config or EnvConfig()
        self._toolbox = make_toolbox(self.config)
        self._gold: tuple[str, tuple[str, ...], str] = ("", (), "")
        self._submitted: str | None = None
        self.errors = self.calls = self._free = 0
        self._subgoals: tuple[str, ...] = ()
        self._called: list[str] = []

    def reset(self, **row: Any) -> str | None:
        """Start an episode for one dataset row (``question``, ``answer``, optional ``aliases``, ``oracle_searches``
        and ``subgoals``).

        Returns:
            ``None``: the question is already the row's prompt, so nothing is appended to it.
        """
        aliases = row.get("aliases") or ()
        self._gold = (
            str(row.get("answer") or ""),
            tuple(aliases if not isinstance(aliases, str) else [aliases]),
            str(row.get("question") or ""),
        )
        self._submitted = None
        self.errors = self.calls = 0
        self._free = free_calls(row.get("oracle_searches"), self.config.reward)
        self._subgoals = tuple(str(s) for s in row.get("subgoals") or ())
        self._called = []
        self._toolbox.executor.stats.reset()
        return None

    def answer(self, answer: str) -> str:
        """Submit the final answer to the question; call it once, when the research is done.

        Args:
            answer: The final answer, as short as possible (e.g. a name, a date, a number).
        """
        if self._submitted is not None:
            self.errors += 1
            return "Error: an answer was already submitted; only the first one counts."
        self._submitted = str(answer)
        return "Answer recorded."

    def get_reward(self) -> float:
        """The reward of the submitted answer (0.0 when none was submitted), per ``config.reward``."""
        if self._submitted is None:
            return 0.0
        gold, aliases, question = self._gold
        cfg = self.config.reward
        score = float(score_answer(self._submitted, gold, aliases, question, cfg)["reward"])
        return finished_reward(
            self._submitted, score, question, self._subgoals, self._called, self.errors, self.calls, cfg, self._free
        )

    def _dispatch(self, tool: str, arguments: dict[str, Any], code: str | None = None) -> str:
        from sim_web.protocol.actions import Action

        self.calls += 1
        self._called.append(call_text(arguments))
        try:
            return self._toolbox.call(Action(kind="tool_call", tool=tool, arguments=arguments, code=code))
        except ActionError as e:  # an agent mistake is an observation, as in the gym env
            self.errors += 1
            return f"Error: {e}"


def answer_reward(
    completions: Sequence[Any],
    answer: Sequence[str],
    aliases: Sequence[Sequence[str]] | None = None,
    *,
    config: RewardConfig = RewardConfig(),  # noqa: B008 (a frozen dataclass: one shared default is safe)
    question: Sequence[str] | None = None,
    **_: Any,
) -> list[float]:
    """A pure TRL reward function: score each completion's final answer, read by the env's own rule.

    The answer is what :func:`~sim_web.protocol.actions.parse_action` reads (the first complete
    ``<answer>...</answer>``, outside a hallucinated ``<tool_response>``), so this reward and
    ``WebResearchEnv`` score the same text the same way.

    Args:
        completions: TRL's completions: strings, or lists of chat messages (the last
            assistant message is read).
        answer: The gold answer of each row (the dataset column).
        aliases: The accepted aliases of each row (optional column).
        config: EM / F1, alias use and ``echo_penalty`` (``kind="judge"``, ``call_cost``, ``call_penalty`` and
            ``subgoal_credit`` are not available here).
        question: The question of each row (the dataset column; needed for ``echo_penalty``).

    Returns:
        One reward per completion; 0.0 when no ``<answer>`` tag is present.

    Raises:
        ConfigError: When ``config`` charges tool calls or credits subgoals: the final message does not show the tool
            calls that came before it.
    """
    if config.subgoal_credit:
        raise ConfigError(
            f"answer_reward reads only the final message, so it cannot see which subgoals the tool calls named "
            f"(subgoal_credit={config.subgoal_credit}); score with WebResearchToolEnv.get_reward or set it to 0"
        )
    if config.charges_calls:
        raise ConfigError(
            f"answer_reward reads only the final message, so it cannot apply call_cost={config.call_cost} or "
            f"call_penalty={config.call_penalty}; score with WebResearchToolEnv.get_reward (which counts the "
            "episode's tool calls) or set both to 0"
        )
    if config.echo_penalty and question is None:
        raise ConfigError(
            f"answer_reward needs each row's question to apply echo_penalty={config.echo_penalty}: pass the dataset's "
            "`question` column (task_dataset writes one) or set echo_penalty to 0"
        )
    out = []
    for i, completion in enumerate(completions):
        if isinstance(completion, list):
            texts = [m.get("content") or "" for m in completion if isinstance(m, dict) and m.get("role") == "assistant"]
            completion = texts[-1] if texts else ""
        found = _final_answer(str(completion))
        if found is None:
            out.append(0.0)
            continue
        row_aliases = tuple(aliases[i]) if aliases is not None and aliases[i] else ()
        score = float(score_answer(found, answer[i], row_aliases, "", config)["reward"])
        asked = str(question[i]) if question is not None else ""
        out.append(finished_reward(found, score, asked, (), (), 0, 0, config))
    return out


def _final_answer(text: str) -> str | None:
    """The answer the env would score for this turn, or ``None`` when the turn gives none."""
    try:
        action = parse_action(text, max_chars=max(1, len(text)))
    except ActionError:
        return None
    return action.answer if action.kind == "answer" else None


def tasks_dataset(config: EnvConfig | None = None, split: str | None = None) -> Any:
    """The env's task set as a ``datasets.Dataset`` with a chat ``prompt`` column for ``GRPOTrainer``.

    Args:
        config: Which index / task set (default: the sample index and its default tasks).
        split: ``"train"`` / ``"test"`` / ``None`` for all.

    Returns:
        The rows of :func:`task_dataset`.
    """
    from sim_web.env import WebResearchEnv

    return task_dataset(WebResearchEnv(config or EnvConfig(), split=split).tasks)


def task_dataset(tasks: Sequence[Task]) -> Any:
    """A ``datasets.Dataset`` of the given tasks, in order: ``prompt`` (the question as a user turn; the env adds the
    system prompt), ``question``, ``answer``, ``aliases``, ``task_id``, ``oracle_searches`` (``None`` where the task
    does not record it) and ``subgoals`` (:attr:`~sim_web.env.tasks.Task.subgoals`).

    Args:
        tasks: The task set (for a rollout: the same one its env draws from).
    """
    import datasets

    rows = [
        {
            "prompt": [{"role": "user", "content": t.question}],
            "question": t.question,
            "answer": t.answer,
            "aliases": list(t.aliases),
            "task_id": t.id,
            "oracle_searches": t.oracle_searches,
            "subgoals": list(t.subgoals),
        }
        for t in tasks
    ]
    return datasets.Dataset.from_list(rows)
