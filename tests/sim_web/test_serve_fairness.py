"""No route starves the others (issue 38, item 3): every tool call runs on the pool, and clients share it fairly.

Nothing here measures wall time: the tests block the tool threads on purpose and check what is answered meanwhile,
which thread ran each call, and in what order waiting calls get a thread.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from fastapi import HTTPException
from live_server import running

from sim_web.executor.executor import ToolExecutor
from sim_web.serve.config import LOCAL_TOOL_THREADS, WAITING_TOOL_THREADS, ServeConfig, default_tool_threads
from sim_web.serve.http import create_app
from sim_web.serve.pool import THREAD_PREFIX, ToolPool
from wiki_index.search.index import WikiIndex

#: One call per route that runs a tool (a search, visit or scholar of the executor, or the index's search).
CALLS = [
    ("/tools/search", {"arguments": {"query": ["Danube river"]}}),
    ("/tools/google_scholar", {"arguments": {"query": ["number theory"]}}),
    ("/tools/visit", {"arguments": {"url": ["https://en.wikipedia.org/wiki/Danube"], "goal": "length"}}),
    ("/backend/search", {"query": "Einstein relativity", "k": 3}),
    ("/backend/search", {"queries": ["Alps", "Volga"], "k": 3}),
    ("/backend/scholar", {"query": "algebra"}),
    ("/backend/visit", {"url": "https://en.wikipedia.org/wiki/Danube", "goal": "source"}),
    ("/retrieve", {"queries": ["Danube"], "topk": 2}),
    ("/retrieve", {"query": "Danube", "topk": 2}),
]


@pytest.fixture()
def spy(monkeypatch):
    """Every executor call and index search records the thread it ran on; ``gate`` (set) lets them through."""
    seen: list[str] = []
    gate = threading.Event()
    gate.set()

    def wrap(cls, name):
        original = getattr(cls, name)

        def recorded(self, *args, **kwargs):
            seen.append(threading.current_thread().name)
            assert gate.wait(60), "the test never opened the gate"
            return original(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, recorded)

    for name in ("search", "scholar", "visit"):
        wrap(ToolExecutor, name)
    wrap(WikiIndex, "search")
    return seen, gate


@pytest.mark.parametrize("fast_routes", [True, False])
def test_no_tool_call_runs_on_the_event_loop(sample_index, spy, fast_routes):
    seen, _ = spy
    with running(create_app(str(sample_index), fast_routes=fast_routes)) as url:
        for path, body in CALLS:
            before = len(seen)
            r = httpx.post(url + path, json=body, timeout=60)
            assert r.status_code == 200, (path, r.text)
            assert len(seen) > before, path  # the spy saw the call
    on_loop = [name for name in seen if not name.startswith(THREAD_PREFIX)]
    assert on_loop == [] and seen


def test_health_is_answered_while_every_tool_thread_is_blocked(sample_index, spy):
    _, gate = spy
    gate.clear()
    threads, clients = 2, 16  # 16 senders; 8 calls in progress, 2 running and blocked, 6 waiting: the bound
    app = create_app(str(sample_index), tool_threads=threads, max_in_progress=4 * threads, token="tok")
    auth = {"Authorization": "Bearer tok"}
    with running(app) as url, ThreadPoolExecutor(clients) as senders:
        calls = [CALLS[i % len(CALLS)] for i in range(4 * threads)]
        pending = [senders.submit(httpx.post, url + p, json=b, headers=auth, timeout=120) for p, b in calls]
        with httpx.Client(base_url=url, headers=auth, timeout=60) as c:
            assert _until(c, 4 * threads), [f.result().text for f in pending if f.done()]
            health = c.get("/health")
            over = c.post("/tools/search", json={"arguments": {"query": ["x"]}})
        assert health.status_code == 200 and health.json()["tool_calls_in_progress"] == 4 * threads
        assert over.status_code == 503 and over.headers["retry-after"] == "1"  # bounded: no queue without end
        gate.set()
        assert [f.result().status_code for f in pending] == [200] * len(calls)


def test_a_client_over_its_share_gets_429_and_others_still_get_in(sample_index, spy):
    _, gate = spy
    gate.clear()
    app = create_app(str(sample_index), tool_threads=1, max_calls_per_client=2)
    with running(app) as url, ThreadPoolExecutor(2) as senders:
        body = {"arguments": {"query": ["Danube"]}}
        held = [senders.submit(httpx.post, f"{url}/tools/search", json=body, timeout=120) for _ in range(2)]
        with httpx.Client(base_url=url, timeout=60) as c:
            assert _until(c, 2)
            third = c.post("/tools/search", json=body)
        gate.set()
        assert [f.result().status_code for f in held] == [200, 200]
    assert third.status_code == 429 and third.headers["retry-after"] == "1"
    assert "too many calls from this client: 2 in progress" in third.json()["detail"]
    assert "--max-calls-per-client" in third.json()["detail"]


def _until(c: httpx.Client, calls: int, polls: int = 3000) -> bool:
    """Whether ``/health`` reports ``calls`` in progress within ``polls`` requests (each one answered by the event
    loop while the tool calls wait on the gate)."""
    for _ in range(polls):
        if c.get("/health").json()["tool_calls_in_progress"] >= calls:
            return True
        threading.Event().wait(0.01)
    return False


def test_waiting_calls_get_threads_in_round_robin_over_clients():
    async def main() -> list[str]:
        pool, gate, order = ToolPool(1), threading.Event(), []

        def work(tag: str) -> str:
            order.append(tag)
            gate.wait(30)
            return tag

        first = asyncio.create_task(pool.run(work, "a0", client="a"))
        for _ in range(10):
            await asyncio.sleep(0)
        assert pool.running == 1
        tasks = [asyncio.create_task(pool.run(work, f"a{i}", client="a")) for i in (1, 2)]
        tasks.append(asyncio.create_task(pool.run(work, "b0", client="b")))  # the pool's 4th: 4 x threads
        for _ in range(10):
            await asyncio.sleep(0)
        assert pool.in_progress == 4 and pool.running == 1
        gate.set()
        await asyncio.gather(first, *tasks)
        assert pool.running == 0 and pool.in_progress == 0
        return order

    # "a" queued two calls before "b" queued one: b's call does not wait for all of a's.
    assert asyncio.run(main()) == ["a0", "a1", "b0", "a2"]


def test_a_cancelled_caller_gives_its_turn_back():
    async def main() -> ToolPool:
        pool, gate = ToolPool(1, per_client=3), threading.Event()
        busy = asyncio.create_task(pool.run(gate.wait, 30, client="a"))
        for _ in range(10):
            await asyncio.sleep(0)
        assert pool.running == 1
        waiting = asyncio.create_task(pool.run(lambda: "never", client="a"))
        await asyncio.sleep(0)
        waiting.cancel()  # a client that hung up while its call waited
        gate.set()
        assert await busy is True
        assert await pool.run(lambda: "next", client="b") == "next"
        with pytest.raises(asyncio.CancelledError):
            await waiting
        return pool

    pool = asyncio.run(main())
    assert (pool.running, pool.in_progress, pool._by_client, dict(pool._waiting)) == (0, 0, {}, {})


def test_the_per_client_cap_counts_one_client_only():
    async def main() -> None:
        pool, gate = ToolPool(4, per_client=1), threading.Event()
        held = asyncio.create_task(pool.run(gate.wait, 30, client="a"))
        for _ in range(10):
            await asyncio.sleep(0)
        assert pool.running == 1
        with pytest.raises(HTTPException) as refused:
            await pool.run(lambda: None, client="a")
        assert refused.value.status_code == 429
        assert await pool.run(lambda: "b served", client="b") == "b served"
        gate.set()
        await held

    asyncio.run(main())


def test_the_503_bound_is_its_own_setting_not_a_multiple_of_the_threads():
    async def main() -> None:
        pool, gate = ToolPool(1, max_in_progress=6), threading.Event()
        held = [asyncio.create_task(pool.run(gate.wait, 30, client=f"c{i}")) for i in range(6)]
        for _ in range(10):
            await asyncio.sleep(0)
        assert (pool.running, pool.in_progress) == (1, 6)  # 4 x threads would have refused the 5th
        with pytest.raises(HTTPException) as refused:
            await pool.run(lambda: None, client="late")
        assert refused.value.status_code == 503
        gate.set()
        assert await asyncio.gather(*held) == [True] * 6

    asyncio.run(main())


def test_a_sim_server_runs_few_tool_threads_and_queues_the_rest_without_503(sample_index, spy):
    """Calls computed in process hold the GIL: by default only LOCAL_TOOL_THREADS of them run at once, so the event
    loop does not queue for the GIL behind dozens; the others wait in the pool, not in 503s."""
    seen, gate = spy
    gate.clear()
    calls = 3 * LOCAL_TOOL_THREADS
    with running(create_app(str(sample_index))) as url, ThreadPoolExecutor(calls) as senders:
        body = {"arguments": {"query": ["Danube"]}}
        pending = [senders.submit(httpx.post, f"{url}/tools/search", json=body, timeout=120) for _ in range(calls)]
        with httpx.Client(base_url=url, timeout=60) as c:
            assert _until(c, calls)
            running_now = len(seen)
        gate.set()
        assert [f.result().status_code for f in pending] == [200] * calls
    assert running_now == LOCAL_TOOL_THREADS
    assert ServeConfig().tool_threads is None  # create_app picks by backend, as for the app above
    assert default_tool_threads("sim", enable_python=False) == LOCAL_TOOL_THREADS
    assert default_tool_threads("real", False) == default_tool_threads("sim", True) == WAITING_TOOL_THREADS
