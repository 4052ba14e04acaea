"""``WebResearchEnv``: a Gymnasium environment where an LLM agent researches a question on the simulated web."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import gymnasium as gym

from sim_web.backends.real import WikipediaFallback, build_real_backends
from sim_web.backends.sim import SimBackend
from sim_web.env.config import REAL_POLICIES, EnvConfig
from sim_web.env.config_data import env_config_from, tasks_from
from sim_web.env.rewards import Judge, call_text, finished_reward, free_calls, score_answer
from sim_web.env.spaces import TextSpace
from sim_web.env.step_info import action_info, parse_turn
from sim_web.env.tasks import Task, resolve_tasks
from sim_web.executor import SqliteCache, ToolExecutor
from sim_web.protocol.arguments import valid_unicode
from sim_web.protocol.errors import ActionError
from sim_web.protocol.formatting import format_tool_response, truncate
from sim_web.protocol.results import Backend
from sim_web.tools import Toolbox, system_prompt
from simweb_core.errors import ConfigError
from simweb_core.settings import sim_web_home

_shared_lock = threading.Lock()
_shared: dict[str, Any] = {}

#: The episode attributes a copy of the env carries over (see ``WebResearchEnv.__getstate__``).
_EPISODE_STATE = ("task", "messages", "turn", "obs_chars", "errors", "tool_calls", "done")
#: How long ``close`` waits for the executor's idle worker threads to exit.
_CLOSE_WAIT_S = 5.0


def _shared_index(path: str | None) -> Any:
    """One opened index per path per process, shared by all envs (safe across threads: the searchers serialise their JVM calls)."""
    from wiki_index.search.index import WikiIndex

    key = str(path)
    with _shared_lock:
        if key not in _shared:
            _shared[key] = WikiIndex.from_dir(path)
        return _shared[key]


def make_toolbox(config: EnvConfig) -> Toolbox:
    """The enabled tools of ``config`` over its backend (the index is opened once per process).

    ``backend="sim"``: the sim backend of the index. ``backend="real"``: Serper (search, scholar) and
    Jina (visit) with keys from the environment (a missing key is a ``ConfigError`` now, not
    mid-episode), then the index as fallback; executor policies from ``REAL_POLICIES`` unless
    ``config.executor.policies`` names the backend. The persistent cache (``executor.cache_dir``,
    default ``$SIM_WEB_HOME/cache/real-web``) holds raw replies and results; recording and replaying
    bypass it, so that a recording is complete and a replay is byte for byte.

    Args:
        config: The env configuration (backend, index, retrieval mode, executor, tools, response cap, results per query).

    Returns:
        A :class:`~sim_web.tools.Toolbox` with its own executor (and so its own per-episode stats).
    """
    index = _shared_index(config.index_dir)
    sim = SimBackend(index, config.sim)
    if config.backend == "sim":
        executor = ToolExecutor([sim], config.executor)
    else:
        ex_cfg = config.executor
        recording = bool(config.record_dir or config.replay_dir)
        cache_dir = (
            None if recording or not ex_cfg.cache else (ex_cfg.cache_dir or str(sim_web_home() / "cache" / "real-web"))
        )
        raw = SqliteCache(f"{cache_dir}/raw.sqlite") if cache_dir else None
        serper, jina = build_real_backends(
            config.serper, config.jina, record_dir=config.record_dir, replay_dir=config.replay_dir, raw_cache=raw
        )
        backends: list[Backend] = [serper, jina, *([WikipediaFallback(sim)] if config.real_fallback else [])]
        ex_cfg = replace(ex_cfg, cache_dir=cache_dir, policies={**REAL_POLICIES, **ex_cfg.policies})
        executor = ToolExecutor(backends, ex_cfg)
    return Toolbox(executor, enabled=config.tools, max_chars=config.max_response_chars, k=config.search_results)


class WebResearchEnv(gym.Env[str, str]):
    """Answer a question by searching and reading a simulated web built from Wikipedia.

    ## Description
    Each episode poses one question with a known answer. The agent acts in the Tongyi
    DeepResearch / WebSailor text format: ``<think>...</think>`` then one
    ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (tools ``search``, ``visit``,
    ``google_scholar``, ``PythonInterpreter`` with ``<code>...</code>``), or ``<answer>...</answer>``
    to finish. Tool output comes back as ``<tool_response>...</tool_response>``, byte-identical
    to what the real-web backend (Serper + Jina) would print for the same results.

    ## Action Space
    ``TextSpace(max_action_chars)``: any string (one assistant turn).

    ## Observation Space
    ``TextSpace``: the question on reset, then each tool response (or an error message). Any Unicode
    text, which Gymnasium's shared memory cannot carry: an async vector env needs
    ``gym.make_vec(..., vectorization_mode="async", vector_kwargs={"shared_memory": False})`` (without it,
    building one raises an error naming that fix).

    ## Rewards
    0 on every step; on ``<answer>``, the answer's score against the gold answer and its aliases
    (``RewardConfig.kind``: normalised exact match, token F1, or an LLM judge), scaled down by
    ``call_cost`` per tool call (never below half), or less ``call_penalty`` per tool call whatever the answer
    (at most half in all; with ``free_calls="oracle"`` either charges only the calls past the task's
    ``difficulty.oracle_searches``), and less ``format_penalty`` per malformed action. With ``subgoal_credit``
    a wrong answer earns that much times the share of the task's ``subgoals`` its tool calls named (below half);
    with ``echo_penalty`` a wrong answer that restates the question (a name the question itself gives) loses that much.

    ## Episode End
    Terminated on ``<answer>``. Truncated (reward 0) after ``max_turns`` turns or when tool output
    exceeds ``max_obs_chars``.

    ## Arguments
    ``gym.make("WebResearch-v0", config=EnvConfig(...), tasks=[Task, ...], judge=callable)``; ``config`` and
    ``tasks`` may be plain dicts too (as ``EnvSpec.from_json`` gives them back), so a spec round-trips.
    The env pickles (``copy.deepcopy``, ``spawn`` workers): a copy reopens the index and backends and
    carries the seeding and the episode so far. ``close()`` stops its threads and HTTP clients.
    ``reset(seed=..., options={"task": Task | dict | task id})``.
    ``info`` always holds ``messages`` (the OpenAI-format chat so far, with the system prompt of
    ``config.prompt``: Tongyi's by default, ``"compact"`` for small models), ``task_id``, ``turn``,
    ``errors`` (count per mistake kind), ``tool_calls`` and the executor's per-episode
    ``tool_stats`` (counts only, so that infos are deterministic); the final step adds ``answer``,
    ``em``, ``f1`` and ``timings`` (episode wall time, tool latency).
    Each step also says how it read the turn: ``action`` (``kind`` ``tool_call``/``answer``/``invalid``, ``tools``,
    ``calls``, the mistake ``error`` or None, and the call's ``tool``/``arguments``/``code`` or the ``answer``;
    None after reset), ``step_tool_calls`` and ``step_errors`` (this step's share of ``tool_calls`` and ``errors``).
    An agent loop reads these instead of parsing the turn again or reading the env's attributes, so that the
    env's settings decide and a wrapper may sit in between (:mod:`sim_web.env.step_info`).

    ## Example
    >>> import gymnasium as gym
    >>> import sim_web
    >>> env = gym.make("WebResearch-v0")              # the sample index and its default task set
    >>> question, info = env.reset(seed=0)
    >>> [m["role"] for m in info["messages"]], info["turn"]
    (['system', 'user'], 0)
    >>> obs, reward, terminated, truncated, info = env.step(
    ...     '<tool_call>{"name": "search", "arguments": {"query": ["Paris"]}}</tool_call>')
    >>> obs.startswith("<tool_response>\\nA Google search for 'Paris' found"), reward, info["tool_calls"]
    (True, 0.0, {'search': 1})
    >>> info["action"]["kind"], info["action"]["tools"], info["step_tool_calls"], info["step_errors"]
    ('tool_call', ['search'], {'search': 1}, {})
    >>> obs, reward, terminated, truncated, info = env.step("<answer>Paris</answer>")
    >>> terminated, sorted(k for k in ("answer", "em", "f1") if k in info)
    (True, ['answer', 'em', 'f1'])

    ## Version History
    * v0: initial version.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        config: EnvConfig | Mapping[str, Any] | None = None,
        tasks: Sequence[Task | Mapping[str, Any]] | None = None,
        judge: Judge | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        cfg = env_config_from(config, overrides)  # plain data too: what EnvSpec.from_json gives back
        tasks = self._given_tasks = tasks_from(tasks)
        self.config = cfg
        self._closed = False
        self.render_mode = render_mode
        self.judge = judge
        self.toolbox = make_toolbox(cfg)
        self.executor = self.toolbox.executor
        self.backend = self.executor.backends[0]
        self.index = _shared_index(cfg.index_dir)  # the task corpus, whichever backend answers the tools
        self.system_prompt = system_prompt(self.toolbox.schemas(), cfg.date, style=cfg.prompt)
        if tasks is None:
            tasks = resolve_tasks(self.index, cfg.tasks, cfg.split)
        if not tasks:
            raise ConfigError(f"WebResearchEnv got an empty task set (tasks={cfg.tasks!r}, split={cfg.split!r})")
        self.tasks = list(tasks)
        # one step's observation: the question, or one tool response per call (each capped) plus wrappers
        per_step = cfg.max_response_chars * (cfg.max_calls_per_turn if cfg.allow_multiple_calls else 1) + 1024
        self.max_obs_len = max(per_step, max(len(t.question) for t in self.tasks))
        self.observation_space = TextSpace(self.max_obs_len)
        self.action_space = TextSpace(cfg.max_action_chars)
        self.task: Task | None = None
        self._new_episode()

    def _new_episode(self) -> None:
        self.messages: list[dict[str, str]] = []
        self.turn = 0
        self.obs_chars = 0
        self.errors: Counter[str] = Counter()
        self.tool_calls: Counter[str] = Counter()
        self.called: list[str] = []  # the words of every tool call's arguments, for the subgoal credit
        self._new_step()
        self.done = False
        self.executor.stats.reset()
        self.episode_t0 = time.perf_counter()

    def _new_step(self) -> None:
        """Start a step's report (``info["action"]``, ``step_tool_calls``, ``step_errors``): nothing read yet."""
        self.step_action: dict[str, Any] | None = None
        self.step_tool_calls: Counter[str] = Counter()
        self.step_errors: Counter[str] = Counter()

    def _mistake(self, kind: str) -> None:
        """Count an agent mistake in the episode and in this step."""
        self.errors[kind] += 1
        self.step_errors[kind] += 1

    def _info(self, **extra: Any) -> dict[str, Any]:
        info = {
            "messages": [dict(m) for m in self.messages],
            "task_id": self.task.id if self.task else None,
            "turn": self.turn,
            "errors": dict(sorted(self.errors.items())),
            "error_count": sum(self.errors.values()),
            "tool_calls": dict(sorted(self.tool_calls.items())),
            "obs_chars": self.obs_chars,
            "tool_stats": self.executor.stats.counts(),
            "action": dict(self.step_action) if self.step_action is not None else None,
            "step_tool_calls": dict(sorted(self.step_tool_calls.items())),
            "step_errors": dict(sorted(self.step_errors.items())),
        }
        info.update(extra)
        return info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode on a task drawn with ``self.np_random`` (or ``options["task"]``)."""
        if self._closed:
            raise gym.error.ClosedEnvironmentError(
                "this WebResearchEnv is closed (its tool threads and HTTP clients are shut down); make a new one"
            )
        super().reset(seed=seed)
        self._new_episode()
        task = (options or {}).get("task")
        if task is None:
            task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        elif isinstance(task, dict):
            task = Task.from_record(task, "options['task']")
        elif isinstance(task, str):
            found = [t for t in self.tasks if t.id == task]
            if not found:
                raise ConfigError(f"options['task']={task!r} is not a task id of this env's task set")
            task = found[0]
        if len(task.question) > self.max_obs_len:
            raise ConfigError(
                f"options['task'] has a {len(task.question)}-character question; this env's observations hold at most "
                f"{self.max_obs_len} (raise EnvConfig.max_response_chars or pass the task in the task set)"
            )
        free_calls(task.oracle_searches, self.config.reward)  # a task the reward cannot score fails now, not later
        self.task = task
        self.messages = [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": task.question}]
        return task.question, self._info()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Apply one assistant turn: run its tool call, or score its answer."""
        if self.task is None or self.done:
            raise gym.error.ResetNeeded("call reset() before step() (the episode is over or never started)")
        action = valid_unicode(
            action if isinstance(action, str) else str(action)
        )  # the stored chat must encode as UTF-8
        self.turn += 1
        self.messages.append({"role": "assistant", "content": action})
        self._new_step()
        try:
            act = parse_turn(action, self.config, self.toolbox.enabled)
        except ActionError as e:
            self.step_action = action_info(error=e.kind)
            self._mistake(e.kind)
            return self._observe(f"Error: {e}")
        self.step_action = action_info(act)
        if act.kind == "answer":
            return self._finish(act.answer or "")
        tools = self.step_action["tools"]  # every call of a multi-call turn, as action_info listed them
        self.called += [call_text(c.arguments) for c in act.calls or (act,)]
        self.tool_calls.update(tools)
        self.step_tool_calls.update(tools)
        try:
            text = self.toolbox.call(act)
        except ActionError as e:
            self.step_action = action_info(act, e.kind)
            self._mistake(e.kind)
            text = f"Error: {e}"
        return self._observe(text)

    def _observe(self, text: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs = format_tool_response(truncate(text, self.max_obs_len - 64))
        self.obs_chars += len(obs)
        self.messages.append({"role": "user", "content": obs})
        truncated = self.turn >= self.config.max_turns or self.obs_chars > self.config.max_obs_chars
        self.done = truncated
        info = self._info()
        if truncated:
            info.update(
                answer=None,
                em=0.0,
                f1=0.0,
                truncated_by="max_turns" if self.turn >= self.config.max_turns else "max_obs_chars",
                timings=self._timings(),
            )
        return obs, 0.0, False, truncated, info

    def _finish(self, answer: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        assert self.task is not None
        scores = score_answer(
            answer, self.task.answer, self.task.aliases, self.task.question, self.config.reward, self.judge
        )
        calls, errors = sum(self.tool_calls.values()), sum(self.errors.values())
        free = free_calls(self.task.oracle_searches, self.config.reward)
        t = self.task
        reward = finished_reward(
            answer, scores["reward"], t.question, t.subgoals, self.called, errors, calls, self.config.reward, free
        )
        self.done = True
        return (
            "",
            float(reward),
            True,
            False,
            self._info(answer=answer, timings=self._timings(), **{k: v for k, v in scores.items() if k != "reward"}),
        )

    def _timings(self) -> dict[str, Any]:
        """Wall-clock figures of the episode; only in the final info, so step infos stay deterministic."""
        return {"episode_seconds": round(time.perf_counter() - self.episode_t0, 6), **self.executor.stats.timings()}

    def render(self) -> str | None:
        """The transcript so far as text (``render_mode="ansi"``)."""
        if self.render_mode != "ansi":
            return None
        return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in self.messages[1:])

    def close(self) -> None:
        """Stop the executor's worker threads and close the backends' HTTP clients and persistent caches.

        Calling it again does nothing. The index stays open: every env of the process shares it.
        """
        if self._closed:
            return
        self._closed = True
        self.executor.close(wait_s=_CLOSE_WAIT_S)
        backends = self.executor.backends
        resources = [*backends, self.executor.persistent, *(getattr(b, "raw_cache", None) for b in backends)]
        for res in {id(r): r for r in resources if r is not None}.values():  # a raw cache is shared by serper and jina
            close = getattr(res, "close", None)
            if callable(close):
                close()
        super().close()

    def __getstate__(self) -> dict[str, Any]:
        """What a copy needs (config, tasks, seeding, the episode so far); the copy reopens the index and backends.

        This makes the env picklable (``copy.deepcopy``, ``multiprocessing`` with ``spawn``). The executor's
        in-process cache comes along; its rate limiters and circuit breakers start afresh in the copy.
        """
        return {
            "config": self.config,
            "tasks": self._given_tasks,
            "judge": self.judge,
            "render_mode": self.render_mode,
            "spec": self.spec,
            "np_random": (self._np_random, self._np_random_seed),
            "spaces": (self.observation_space, self.action_space),
            "closed": self._closed,
            "episode": {name: getattr(self, name) for name in _EPISODE_STATE},
            "elapsed_s": time.perf_counter() - self.episode_t0,
            "stats": self.executor.stats,
            "cache": self.executor.cache,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Rebuild the env from :meth:`__getstate__`'s state: a fresh toolbox over the same config, then the episode so far."""
        self.__init__(state["config"], state["tasks"], state["judge"], state["render_mode"])  # type: ignore[misc]
        self.spec = state["spec"]
        self._np_random, self._np_random_seed = state["np_random"]
        self.observation_space, self.action_space = state["spaces"]
        for name, value in state["episode"].items():
            setattr(self, name, value)
        self.episode_t0 = time.perf_counter() - state["elapsed_s"]
        self.executor.stats.load(state["stats"])
        self.executor.cache = state["cache"]
        if state["closed"]:
            self.close()
