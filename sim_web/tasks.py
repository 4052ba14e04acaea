"""Kept for the import path the README documents: the code lives in :mod:`sim_web.env.tasks`."""

from sim_web.env.tasks import Task, default_task_path, derive_tasks, load_tasks, resolve_tasks, split_of

__all__ = ["Task", "default_task_path", "derive_tasks", "load_tasks", "resolve_tasks", "split_of"]
