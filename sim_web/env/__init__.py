"""The ``WebResearch-v0`` environment: its config, text spaces, rewards and task sets.

``from sim_web.env import EnvConfig, WebResearchEnv`` is the public path.
"""

from sim_web.env.config import EnvConfig
from sim_web.env.research_env import WebResearchEnv, make_toolbox
from sim_web.env.rewards import Judge, RewardConfig, exact_match, f1_score, normalize_answer, score_answer
from sim_web.env.spaces import TextSpace
from sim_web.env.step_info import read_action
from sim_web.env.tasks import Task, default_task_path, derive_tasks, load_tasks, resolve_tasks, split_of

__all__ = [
    "EnvConfig",
    "Judge",
    "RewardConfig",
    "Task",
    "TextSpace",
    "WebResearchEnv",
    "default_task_path",
    "derive_tasks",
    "exact_match",
    "f1_score",
    "load_tasks",
    "make_toolbox",
    "normalize_answer",
    "read_action",
    "resolve_tasks",
    "score_answer",
    "split_of",
]
