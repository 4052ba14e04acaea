"""TRL's GRPOTrainer on WebResearch-v0 through OpenEnv: one smoke step against a running ``sim-web serve``.

Start the server, then run this script (CPU float32 or GPU bf16)::

    sim-web serve --port 8000 &
    SIM_WEB_OPENENV_URL=http://127.0.0.1:8000 python examples/trl_openenv.py

Each rollout holds one OpenEnv session (OpenEnv's own ``GenericEnvClient`` over ``/ws``): ``reset`` starts the
row's task on the server, the tools TRL exposes (``search``, ``visit``, ``google_scholar``, ``answer``) are env
turns, and the reward is the one the server's env returns on ``<answer>``. Raise ``max_steps``, the sizes and the
dataset to train. ``tests/sim_web/test_openenv_trl.py`` runs this file as written.
"""

from __future__ import annotations

import logging
import os

import torch
from openenv.core.generic_client import GenericEnvClient
from transformers import AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

from agents.models import smollm2_path
from sim_web.serve.trl import tasks_dataset, with_tool_template

URL = os.environ.get("SIM_WEB_OPENENV_URL", "http://127.0.0.1:8000")
TOKEN = os.environ.get("SIM_WEB_SERVER_TOKEN")  # when the server has one
log = logging.getLogger("trl_openenv")


class OpenEnvResearch:
    """One rollout's OpenEnv session; TRL calls ``reset(**row)``, the tool methods, then ``get_reward()``."""

    def __init__(self) -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"} if TOKEN else None
        self.client = GenericEnvClient(base_url=URL, headers=headers).sync()
        self.reward = 0.0

    def reset(self, **row: object) -> str | None:
        """Start the row's task on the server (the row's prompt already holds the question)."""
        task = {"id": row["task_id"], "question": row["question"], "answer": row["answer"], "aliases": row["aliases"]}
        self.client.reset(options={"task": task})
        self.reward = 0.0
        return None

    def _call(self, name: str, arguments: dict) -> str:
        result = self.client.step({"type": "call_tool", "tool_name": name, "arguments": arguments})
        return str(result.observation["text"])

    def search(self, query: list[str]) -> str:
        """Search the web and return the top results.

        Args:
            query: The search queries.
        """
        return self._call("search", {"query": query})

    def visit(self, url: list[str], goal: str) -> str:
        """Visit web pages and return what they say about the goal.

        Args:
            url: The URLs to visit.
            goal: What to look for on the pages.
        """
        return self._call("visit", {"url": url, "goal": goal})

    def google_scholar(self, query: list[str]) -> str:
        """Search academic publications.

        Args:
            query: The search queries.
        """
        return self._call("google_scholar", {"query": query})

    def answer(self, answer: str) -> str:
        """Submit the final answer; call it once, when the research is done.

        Args:
            answer: The final answer, as short as possible.
        """
        result = self.client.step({"message": f"<answer>{answer}</answer>"})
        self.reward = float(result.reward or 0.0)
        return "Answer recorded."

    def get_reward(self) -> float:
        """The reward the server's env gave the submitted answer (0.0 without one)."""
        return self.reward


def main() -> GRPOTrainer:
    """Train one GRPO step on two tasks; returns the trainer."""
    model = str(smollm2_path())  # the bundled SmolLM2-135M-Instruct; any ChatML model folder works the same
    tokenizer = with_tool_template(AutoTokenizer.from_pretrained(model))
    args = GRPOConfig(loss_type="dapo", mask_truncated_completions=True, bf16=torch.cuda.is_available(),
                      max_steps=1, per_device_train_batch_size=2, num_generations=2, max_completion_length=64,
                      save_strategy="no", report_to="none")  # fmt: skip
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=args, environment_factory=OpenEnvResearch,
                          train_dataset=tasks_dataset(split="train").select(range(2)))  # fmt: skip
    trainer.train()
    return trainer


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    trained = main()
    log.info("trained %d step(s): %s", trained.state.global_step, trained.state.log_history[0])
