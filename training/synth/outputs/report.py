"""What a synthesis run did: :class:`SynthReport`, filled by :mod:`training.synth.pipeline`, written into the
dataset card by :mod:`training.synth.outputs.write`.

Kept apart from :mod:`training.synth.config` (the run's settings, at the top level) so that the outputs stage reads
the report without importing the top level.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SynthReport:
    """What a run did: the funnel through every gate, the graph, the timings."""

    config: dict[str, Any] = field(default_factory=dict)
    index: str = ""
    kg: dict[str, Any] = field(default_factory=dict)
    sampling: dict[str, Any] = field(default_factory=dict)
    funnel: Counter = field(default_factory=Counter)
    uniqueness: Counter = field(default_factory=Counter)
    timings: dict[str, float] = field(default_factory=dict)
    llm: dict[str, Any] = field(default_factory=dict)
    clue_checks: dict[str, int] = field(default_factory=dict)  # the verification stage's counts per reason

    def rate(self, num: str, den: str) -> float:
        """``funnel[num] / funnel[den]`` (0 when nothing reached the gate)."""
        return self.funnel[num] / self.funnel[den] if self.funnel[den] else 0.0
