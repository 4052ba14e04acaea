"""An OpenPipe ART rollout over a running ``sim-web serve``: ART's own types, sim-web's tools and reward over HTTP.

ART has no environment class: a rollout is a coroutine that plays one episode with the model's OpenAI client
(``model.openai_client()`` in ART; any ``AsyncOpenAI`` here) and returns an ``art.Trajectory``; trajectories of
one question form an ``art.TrajectoryGroup`` for ``backend.train``. This one offers the server's tools
(``GET /tools``: OpenAI function schemas) as native tool calls, runs each call with ``POST /tools/{name}``, and
takes the reward from ``POST /score`` (the env's exact match and F1), so nothing of sim-web is re-implemented.

The server may want a token: pass it in the URL (``http://user:TOKEN@host:port``), sent as HTTP Basic auth.

Run (with ``pip install openpipe-art``, Python >= 3.12, and an OpenAI-compatible model endpoint)::

    python examples/art_rollout.py --server http://127.0.0.1:8000 --base-url http://127.0.0.1:8001/v1 \\
        --model my-model --question "..." --answer "..."
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from dataclasses import dataclass, field
from typing import Any

import httpx

SYSTEM_PROMPT = (
    "You answer questions by researching them on the web with the tools: `search` to find pages, `visit` to read "
    "them. Then reply with the final answer alone inside <answer></answer>."
)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S | re.I)


@dataclass
class Episode:
    """What one rollout produced: ART's ``messages_and_choices`` (the model's turns as its ``Choice`` objects, the
    rest as message dicts), the tools offered, the reward and the metrics."""

    messages_and_choices: list[Any]
    tools: list[dict[str, Any]]
    reward: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)


async def play(
    client: Any, model: str, server: str, question: str, answer: str, aliases: list[str], max_turns: int = 4
) -> Episode:
    """Play one episode: the model calls the server's tools until it answers (or ``max_turns`` model turns).

    Args:
        client: An ``openai.AsyncOpenAI`` (ART: ``model.openai_client()``).
        model: The model name to request.
        server: The sim-web server's base URL (``http://user:TOKEN@host:port`` when it wants a token).
        question: The question.
        answer: Its gold answer (sent to ``POST /score`` only).
        aliases: Other accepted answers.
        max_turns: Most model turns.

    Returns:
        The :class:`Episode`, its reward the server's score of the final answer.
    """
    async with httpx.AsyncClient(base_url=server, timeout=120) as web:
        tools = (await web.get("/tools")).raise_for_status().json()
        episode = Episode([{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}], tools)
        messages: list[Any] = list(episode.messages_and_choices)
        calls = turns = 0
        reply = ""
        while turns < max_turns:
            turns += 1
            completion = await client.chat.completions.create(model=model, messages=messages, tools=tools)
            choice = completion.choices[0]
            episode.messages_and_choices.append(choice)
            messages.append(choice.message.model_dump(exclude_none=True))
            reply = choice.message.content or ""
            if not choice.message.tool_calls:
                break
            for call in choice.message.tool_calls:
                calls += 1
                text = await _run_tool(web, call.function.name, call.function.arguments)
                result = {"role": "tool", "tool_call_id": call.id, "content": text}
                episode.messages_and_choices.append(result)
                messages.append(result)
        found = _ANSWER.findall(reply)
        body = {"prediction": (found[-1] if found else reply).strip(), "answer": answer, "aliases": aliases}
        scores = (await web.post("/score", json=body)).raise_for_status().json()
    episode.reward = scores["reward"]
    episode.metrics = {"em": scores["em"], "f1": scores["f1"], "turns": float(turns), "tool_calls": float(calls)}
    return episode


async def _run_tool(web: httpx.AsyncClient, name: str, arguments: str) -> str:
    """One tool call through ``POST /tools/{name}``; a refused call comes back as text for the model."""
    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return "Error: the tool arguments are not JSON"
    r = await web.post(f"/tools/{name}", json={"arguments": args})
    return r.json()["result"] if r.status_code == 200 else f"Error: {r.status_code} {r.text[:300]}"


async def rollout(client: Any, model: str, server: str, task: dict[str, Any]) -> Any:
    """One ``art.Trajectory`` for ``task`` (a sim-web task record: ``question``, ``answer``, ``aliases``)."""
    import art

    episode = await play(client, model, server, task["question"], task["answer"], list(task.get("aliases") or []))
    return art.Trajectory(
        messages_and_choices=episode.messages_and_choices,
        tools=episode.tools,
        reward=episode.reward,
        metrics=episode.metrics,
        metadata={"task_id": str(task.get("id", ""))},
    )


async def groups(client: Any, model: str, server: str, tasks: list[dict[str, Any]], per_task: int) -> list[Any]:
    """``per_task`` trajectories per task, one ``art.TrajectoryGroup`` per task (what ``backend.train`` takes)."""
    import art

    return [
        art.TrajectoryGroup([await rollout(client, model, server, task) for _ in range(per_task)]) for task in tasks
    ]


def main(argv: list[str] | None = None) -> int:
    """Play one group for one question and print its rewards."""
    from openai import AsyncOpenAI

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", required=True, help="sim-web serve's URL (http://user:TOKEN@host:port with a token)")
    ap.add_argument("--base-url", required=True, help="the model's OpenAI-compatible endpoint (.../v1)")
    ap.add_argument("--model", required=True)
    ap.add_argument("--question", required=True)
    ap.add_argument("--answer", required=True)
    ap.add_argument("--per-task", type=int, default=4)
    args = ap.parse_args(argv)
    client = AsyncOpenAI(base_url=args.base_url, api_key="unused")
    task = {"id": "cli", "question": args.question, "answer": args.answer}
    (group,) = asyncio.run(groups(client, args.model, args.server, [task], args.per_task))
    print([t.reward for t in group.trajectories])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
