"""Kept for the import path the README documents: the code lives in :mod:`sim_web.serve.trl`."""

from sim_web.serve.trl import WebResearchToolEnv, answer_reward, tasks_dataset

__all__ = ["WebResearchToolEnv", "answer_reward", "tasks_dataset"]
