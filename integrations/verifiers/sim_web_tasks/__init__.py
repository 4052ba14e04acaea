"""sim-web's question sets as a verifiers Taskset (``verifiers.v1``, verifiers >= 0.4).

``vf-eval sim-web-tasks`` finds :class:`SimWebTaskset`, the one Taskset listed here. docs/verifiers.md: install,
``vf-eval``, a prime-rl config block.
"""

from sim_web_tasks.taskset import SimWebTaskset

__all__ = ["SimWebTaskset"]
