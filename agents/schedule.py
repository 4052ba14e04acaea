"""How the evaluation harness schedules its episodes: :func:`run_threaded` (a thread pool, one env per thread, for
remote and deterministic policies) and :func:`run_lockstep` (up to ``width`` episodes in flight, their waiting requests
batched into one ``Policy.generate`` call per sampling setting, for local models).

Both report each episode through the ``finish`` / ``fail`` callbacks of :func:`agents.harness.run_eval` and stop
starting episodes once ``halted()``; they hold no output or scoring logic, so they live apart from the harness.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agents.config import SamplingConfig
from agents.episode import Episode
from agents.loop import ReactAgent, Request, run_episode
from agents.policies.base import Generation
from sim_web.env.tasks import Task


def run_threaded(
    agent: ReactAgent,
    make_env: Callable[[], Any],
    todo: list[tuple[Task, int]],
    workers: int,
    finish: Callable[[Episode], None],
    fail: Callable[[str, BaseException], None],
    halted: Callable[[], bool],
) -> None:
    """Play ``todo`` on ``workers`` threads, one env per thread (built by ``make_env`` on first use); no episode starts
    once ``halted()``."""
    local = threading.local()

    def one(job: tuple[Task, int]) -> None:
        task, sample = job
        if halted():
            return
        try:
            if not hasattr(local, "env"):
                local.env = make_env()  # the searchers serialise their JVM calls themselves
            finish(run_episode(agent, local.env, task, sample))
        except Exception as e:  # one failed episode must not stop the others; it is rerun on resume
            fail(f"{task.id}#{sample}", e)

    if workers == 1:
        for job in todo:
            one(job)
        return
    with ThreadPoolExecutor(workers, thread_name_prefix="episode") as pool:
        list(pool.map(one, todo))


def run_lockstep(
    agent: ReactAgent,
    make_env: Callable[[], Any],
    todo: list[tuple[Task, int]],
    width: int,
    finish: Callable[[Episode], None],
    fail: Callable[[str, BaseException], None],
    halted: Callable[[], bool],
) -> None:
    """Keep up to ``width`` episodes in flight (no new one once ``halted()``); every round, all waiting requests go to the policy in batches."""
    envs = [make_env() for _ in range(min(width, len(todo)))]
    free = list(range(len(envs)))[::-1]
    queue = list(todo)[::-1]
    active: dict[int, tuple[Any, Request, str]] = {}
    while (queue and not halted()) or active:
        while free and queue and not halted():
            slot, (task, sample) = free.pop(), queue.pop()
            key = f"{task.id}#{sample}"
            ep = agent.episode(envs[slot], task, sample)
            try:
                active[slot] = (ep, next(ep), key)
            except StopIteration as stop:
                finish(stop.value)
                free.append(slot)
            except Exception as e:
                fail(key, e)
                free.append(slot)
        groups: dict[SamplingConfig, list[int]] = {}
        for slot, (_, req, _) in active.items():
            groups.setdefault(req.sampling, []).append(slot)
        for sampling, slots in groups.items():
            try:
                gens: list[Generation] = agent.policy.generate(
                    [active[s][1].messages for s in slots], sampling, [active[s][1].seed for s in slots]
                )
            except Exception as e:
                for s in slots:
                    fail(active.pop(s)[2], e)
                    free.append(s)
                continue
            for s, gen in zip(slots, gens):
                ep, _, key = active[s]
                try:
                    active[s] = (ep, ep.send(gen), key)
                except StopIteration as stop:
                    del active[s]
                    free.append(s)
                    finish(stop.value)
                except Exception as e:
                    del active[s]
                    free.append(s)
                    fail(key, e)
