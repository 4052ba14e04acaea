"""The data-policy feedback loop (WebSailor-V2): training dynamics curate the training set while GRPO runs.

:mod:`~training.loop.outcomes` records every rollout; :mod:`~training.loop.curate` retires tasks whose recent pass rate
is 0 or 1 and lets too-hard ones return later; :mod:`~training.loop.steer` aims fresh SailorFog-QA tasks (from
:mod:`training.synth`, new seeds, same gates) at the band where the policy learns; :mod:`~training.loop.pool` swaps
them into the running trainer's slots; :mod:`~training.loop.loop` ties the rounds together and logs them
(``rounds.jsonl``, ``rounds.png``). Switch it on with the GRPO recipe's ``loop.enabled: true``.
"""

from training.loop.curate import CurationConfig, Decision, curate
from training.loop.loop import FeedbackLoop
from training.loop.outcomes import Outcome, OutcomeLog
from training.loop.pool import TaskPool
from training.loop.steer import SynthSource, Target, target_of

__all__ = [
    "CurationConfig",
    "Decision",
    "FeedbackLoop",
    "Outcome",
    "OutcomeLog",
    "SynthSource",
    "Target",
    "TaskPool",
    "curate",
    "target_of",
]
