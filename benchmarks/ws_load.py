"""A WebSocket load generator for ``/ws`` (OpenEnv's protocol), in a process of its own so that it does not share a
GIL with the ``/health`` prober of :mod:`benchmarks.bench_health`.

Run: ``python -m benchmarks.ws_load --port P --clients 64 --seconds 10 --mode open|step|refused``; prints one JSON
line ``{"ops": n, "errors": n, "seconds": s}``.

Modes, each client in a closed loop:

* ``open``: connect, ``reset``, ``close`` (a whole session per operation: the handshake, an env built and closed);
* ``step``: one session per client, a ``search`` tool call per operation (``reset`` again when the episode ends),
  so that the replies carry a chat that grows turn by turn;
* ``refused``: ``--hold`` sockets take every session slot first; then each operation is a handshake that the
  server accepts and refuses (``CAPACITY_REACHED``), the flood of issue 59.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time

TURN = '<tool_call>\n{"name": "search", "arguments": {"query": ["%s"]}}\n</tool_call>'
QUERIES = ("Danube river", "capital of France", "Mount Everest", "photosynthesis", "Roman Empire", "jazz music")


async def _open(url: str, i: int) -> None:
    from websockets.asyncio.client import connect

    async with connect(url, open_timeout=60) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": i}}))
        if json.loads(await ws.recv())["type"] != "observation":
            raise RuntimeError("reset failed")
        await ws.send(json.dumps({"type": "close"}))
        with contextlib.suppress(Exception):
            await ws.recv()


async def _refused(url: str, i: int) -> None:
    from websockets.asyncio.client import connect

    async with connect(url, open_timeout=60) as ws:
        if json.loads(await ws.recv())["data"].get("code") != "CAPACITY_REACHED":
            raise RuntimeError("not refused")


async def _client(url: str, mode: str, i: int, end: float, counts: dict[str, int]) -> None:
    from websockets.asyncio.client import connect

    if mode in ("open", "refused"):
        while time.monotonic() < end:
            try:
                await (_open if mode == "open" else _refused)(url, i)
                counts["ops"] += 1
            except Exception:
                counts["errors"] += 1
        return
    async with connect(url, open_timeout=60, max_size=None) as ws:
        n = 0
        await ws.send(json.dumps({"type": "reset", "data": {"seed": i}}))
        await ws.recv()
        while time.monotonic() < end:
            n += 1
            await ws.send(json.dumps({"type": "step", "data": {"message": TURN % QUERIES[(i + n) % len(QUERIES)]}}))
            reply = json.loads(await ws.recv())
            if reply["type"] != "observation":
                counts["errors"] += 1
                continue
            counts["ops"] += 1
            if reply["data"]["done"]:
                await ws.send(json.dumps({"type": "reset", "data": {"seed": i + n}}))
                await ws.recv()


async def run(port: int, clients: int, seconds: float, mode: str, hold: int) -> dict[str, float]:
    """Load ``/ws`` on ``port`` for ``seconds``; the operations done and the errors."""
    from websockets.asyncio.client import connect

    url = f"ws://127.0.0.1:{port}/ws"
    counts = {"ops": 0, "errors": 0}
    async with contextlib.AsyncExitStack() as held:
        for i in range(hold if mode == "refused" else 0):  # take every slot
            ws = await held.enter_async_context(connect(url, open_timeout=60))
            await ws.send(json.dumps({"type": "reset", "data": {"seed": i}}))
            if json.loads(await ws.recv())["type"] != "observation":
                break  # the slots (or this client's share of them) are all taken
        start = time.monotonic()
        await asyncio.gather(*(_client(url, mode, i, start + seconds, counts) for i in range(clients)))
        return {**counts, "seconds": time.monotonic() - start}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--mode", choices=("open", "step", "refused"), default="step")
    ap.add_argument("--hold", type=int, default=64, help="refused: sockets that take the slots first")
    args = ap.parse_args()
    print(json.dumps(asyncio.run(run(args.port, args.clients, args.seconds, args.mode, args.hold))), flush=True)


if __name__ == "__main__":
    main()
