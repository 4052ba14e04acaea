"""Fixtures of the agent tests: the sample's held-out tasks, envs over the sample, scripted policies."""

from __future__ import annotations

import json

import pytest

from agents.policies.base import FunctionPolicy
from agents.prompts import FORCE_ANSWER_PROMPT


@pytest.fixture(scope="session")
def test_tasks(sample_index):
    """The derived held-out tasks of the sample index."""
    from sim_web.env.tasks import derive_tasks
    from wiki_index.search.index import WikiIndex

    return [t for t in derive_tasks(WikiIndex.from_dir(sample_index).store) if t.metadata["split"] == "test"]


@pytest.fixture()
def make_env(sample_index, test_tasks):
    """``make_env(**overrides)``: a fresh env over the sample with the held-out tasks."""
    from sim_web.env import EnvConfig, WebResearchEnv

    def make(**overrides):
        cfg = {"index_dir": str(sample_index), "max_turns": 200, **overrides}
        return WebResearchEnv(EnvConfig(**cfg), tasks=test_tasks)

    return make


def call(name: str, **arguments) -> str:
    """An assistant turn with one tool call."""
    return f"<think>step</think>\n<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


class CountingPolicy(FunctionPolicy):
    """A scripted policy whose context size is 100 tokens per message (easy thresholds) and which logs its requests."""

    def __init__(self, fn, name: str = "scripted") -> None:
        super().__init__(fn, name)
        self.seen: list[list[dict]] = []

    def generate(self, batch, sampling=None, seeds=None):
        self.seen.extend([[dict(m) for m in ms] for ms in batch])
        return super().generate(batch, sampling, seeds)

    def count_tokens(self, messages) -> int:
        return 100 * len(messages)


def searcher_until_forced(answer: str):
    """Searches forever; answers ``answer`` only when Tongyi's forcing prompt is the last message."""

    def act(messages):
        if FORCE_ANSWER_PROMPT in messages[-1]["content"]:
            return f"<think>forced</think>\n<answer>{answer}</answer>"
        return call("search", query=[f"query {len(messages)}"])

    return act
