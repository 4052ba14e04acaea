"""The ablation harness (``sim-web ablate``, ``make ablate``): short GRPO runs that differ in one switch at a time.

:mod:`~training.ablate.grid` defines the baseline and its one-switch variants (advantage, truncation rule, DUPO, the
feedback loop), :mod:`~training.ablate.runner` runs and evaluates them (resumable), :mod:`~training.ablate.report`
writes the table (terminal, markdown, JSON) and the reward-vs-step plot.
"""

from training.ablate.grid import GRID, NAMES, Variant, select
from training.ablate.report import format_table, write_report
from training.ablate.runner import AblateConfig, run_grid

__all__ = ["GRID", "NAMES", "AblateConfig", "Variant", "format_table", "run_grid", "select", "write_report"]
