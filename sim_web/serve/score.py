"""``POST /score``: the env's answer scoring over HTTP, so that a rollout written against the HTTP tools (an ART
rollout, any trainer's own loop) gets the reward ``WebResearch-v0`` would give instead of re-implementing it.

The body names the final answer and the gold answers; the reply is :func:`sim_web.env.score_answer`'s scores.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Request
from pydantic import BaseModel, ConfigDict, Field

from sim_web.serve.guards import GOAL_MAX, K_MAX, ToolPool

#: Longest prediction, gold answer or alias accepted (characters).
TEXT_MAX = GOAL_MAX


class ScoreRequest(BaseModel):
    """One final answer to score against its gold answers."""

    model_config = ConfigDict(extra="forbid")

    prediction: str = Field(max_length=TEXT_MAX, description="The agent's final answer (the text of <answer>).")
    answer: str = Field(min_length=1, max_length=TEXT_MAX, description="The gold answer.")
    aliases: list[Annotated[str, Field(max_length=TEXT_MAX)]] = Field(
        default_factory=list, max_length=K_MAX, description="Other accepted answers."
    )
    kind: Literal["em", "f1"] = Field("em", description="Which score is the reward: exact match or token F1.")
    use_aliases: bool = Field(True, description="Whether the aliases count as gold answers.")


class ScoreReply(BaseModel):
    """The scores of one answer (the env's ``info["em"]``, ``info["f1"]`` and answer reward)."""

    reward: float
    em: float
    f1: float


def add_score_route(app: FastAPI, authorized: Callable[[Request], None], pool: ToolPool) -> None:
    """``POST /score`` behind ``authorized`` (the token of the other routes); a large body decoded on ``pool``.

    Args:
        app: The FastAPI app.
        authorized: The token dependency of the other routes.
        pool: The tool threads (:func:`~sim_web.serve.bodies.read_model`).
    """
    from fastapi import Depends

    from sim_web.env import RewardConfig, score_answer
    from sim_web.serve.bodies import body_doc, read_model

    doc = body_doc(ScoreRequest)

    @app.post("/score", dependencies=[Depends(authorized)], response_model=ScoreReply, openapi_extra=doc)
    async def score(request: Request) -> dict[str, Any]:
        """The env's scores of a final answer: exact match and token F1 after SQuAD normalisation; the reward is
        the one ``kind`` names (the env's answer reward, before its call-cost and format terms)."""
        req = await read_model(request, ScoreRequest, pool.run)
        config = RewardConfig(kind=req.kind, use_aliases=req.use_aliases)
        return score_answer(req.prediction, req.answer, req.aliases, config=config)
