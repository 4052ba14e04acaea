"""The Taskset: rows from any sim-web task set (or one tier of it), the reward from sim-web's own scoring.

Each row is one :class:`sim_web.env.Task`; its id is the task key. The reward is exact match against the answer and
its aliases (:func:`sim_web.env.score_answer`, the env's scoring), with F1, turns and tool calls recorded as
metrics. The model answers in ``<answer>...</answer>`` (a reply without the tags is scored whole).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import verifiers.v1 as vf

from sim_web_tasks.toolset import SimWebToolsConfig, SimWebToolset

SYSTEM_PROMPT = (
    "You answer questions by researching them on the web with the tools: `search` to find pages, `visit` to read "
    "them. Search and read until you are sure, then reply with the final answer alone inside <answer></answer>, "
    "as short as possible (a name, a number, a date)."
)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S | re.I)


def final_answer(reply: str) -> str:
    """The text inside the last ``<answer>...</answer>`` of ``reply``, or the whole reply without the tags.

    >>> final_answer("I checked. <answer> Black Sea </answer>")
    'Black Sea'
    """
    found = _ANSWER.findall(reply)
    return (found[-1] if found else reply).strip()


class SimWebTaskData(vf.TaskData):
    """One sim-web question."""

    question: str
    answer: str
    aliases: list[str] = []
    tier: str | None = None


class SimWebTask(vf.Task[SimWebTaskData, vf.State, vf.TaskConfig]):
    """One question, scored as sim-web's env scores an answer."""

    @property
    def key(self) -> str:
        """The sim-web task id (unique within a task set)."""
        return self.data.id or self.hash

    def _scores(self, trace: vf.Trace) -> dict[str, float]:
        from sim_web.env import RewardConfig, score_answer

        reply = final_answer(trace.last_reply)
        return score_answer(reply, self.data.answer, self.data.aliases, self.data.question, RewardConfig(kind="em"))

    @vf.reward
    async def exact_match(self, trace: vf.Trace) -> float:
        """1.0 when the final answer equals the answer or an alias (after SQuAD normalisation)."""
        return self._scores(trace)["em"]

    @vf.metric
    async def f1(self, trace: vf.Trace) -> float:
        """The best token F1 of the final answer against the answer and its aliases."""
        return self._scores(trace)["f1"]

    @vf.metric
    async def turns(self, trace: vf.Trace) -> float:
        """Model turns the rollout took."""
        return float(trace.num_turns)

    @vf.metric
    async def tool_calls(self, trace: vf.Trace) -> float:
        """Tool calls the model made."""
        return float(len(trace.tool_messages))


class SimWebConfig(vf.TasksetConfig):
    """Which sim-web questions load, and where the tools come from (``--env.taskset.*``)."""

    tools: SimWebToolsConfig = SimWebToolsConfig()
    """The tools: this package's MCP server over ``tools.index_dir`` (default: ``index_dir``), or ``tools.url`` (a running sim-web serve's
    /mcp, http://user:TOKEN@host:port/mcp when it wants a token)."""
    index_dir: str | None = None
    """The index whose task sets are read (default: the sample index under $SIM_WEB_HOME)."""
    tasks: str = "default"
    """The task set: default, derived, sailorfog, a task file, or NAME for <index>/tasks/NAME.jsonl."""
    split: str | None = None
    """Keep one split only (train / test); empty: all."""
    tier: str | None = None
    """Keep one tier only (the tasks' `tier`, e.g. lookup / bridge of the cpu-learn set); empty: all."""


class SimWebTaskset(vf.Taskset[SimWebTask, SimWebConfig]):
    """sim-web's questions over its simulated web (search and visit tools, exact-match reward)."""

    @classmethod
    def toolsets(cls, config: SimWebConfig) -> list[vf.Toolset]:
        """One tool server per worker, shared by its rollouts (or none, with ``tools.url``); its index is the
        taskset's ``index_dir`` unless ``tools.index_dir`` names another, so questions and pages come from one index."""
        tools = config.tools
        if tools.index_dir is None and config.index_dir is not None:
            tools = tools.model_copy(update={"index_dir": config.index_dir})
        return [SimWebToolset(tools)]

    def load(self) -> Iterator[SimWebTask]:
        """The rows of the configured task set, in file order (ids as task keys)."""
        from sim_web.env import resolve_tasks
        from wiki_index.search.index import WikiIndex

        index = WikiIndex.from_dir(self.config.index_dir)
        for task in resolve_tasks(index, self.config.tasks, self.config.split):
            tier = task.metadata.get("tier")
            if self.config.tier and tier != self.config.tier:
                continue
            data = SimWebTaskData(
                id=task.id,
                prompt=task.question,
                system_prompt=SYSTEM_PROMPT,
                question=task.question,
                answer=task.answer,
                aliases=list(task.aliases),
                tier=str(tier) if tier is not None else None,
            )
            yield SimWebTask(data, self.config.task)
