"""One tool server holds the real web's budget for a fleet: two client *processes* using the remote backend share its
QPS limit and its cache. Checked on what the mock upstream recorded (which queries arrived, and when) and on the server's
token-bucket grants, not on how long the test took."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from sim_web.executor import BackendPolicy
from sim_web.executor.policy import TokenBucket
from sim_web.serve.http import create_app
from tests.sim_web.real_mocks import jina, real_keys, serper, sim_backend  # noqa: F401 - fixtures
from tests.sim_web.test_real_env import FAST, real_config

ROOT = Path(__file__).resolve().parents[2]
QPS, BURST = 10.0, 2
QUERIES = [
    "Danube",
    "Paris",
    "Albert Einstein",
    "relativity",
    "Rhine",
    "Vienna",
    "Berlin",
    "Mozart",
    "Alps",
    "Europe",
    "river",
    "music",
]
#: A client process: its own executor (no cache) over the remote backend, its queries on 6 threads at once.
CLIENT = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
from sim_web.backends.remote import RemoteBackend
from sim_web.executor import ExecutorConfig, ToolExecutor
ex = ToolExecutor([RemoteBackend(sys.argv[1])], ExecutorConfig(cache=False))
with ThreadPoolExecutor(6) as pool:
    print(json.dumps(list(pool.map(lambda q: len(ex.search(q)), json.loads(sys.argv[2])))))
"""


@pytest.fixture()
def server_url(sample_index, serper, jina, tmp_path, real_keys):
    """``sim-web serve --backend real``'s app on an ephemeral loopback port (uvicorn in a thread), Serper at QPS / BURST."""
    import uvicorn

    cfg = real_config(sample_index, serper, jina, tmp_path / "cache")
    policies = {**cfg.executor.policies, "serper": BackendPolicy(qps=QPS, burst=BURST, max_retries=0, **FAST)}
    app = create_app(env_config=replace(cfg, executor=replace(cfg.executor, policies=policies)))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        thread.join(0.02)
    assert server.started, "the tool server did not start"
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    thread.join(10)
    sock.close()


def clients(url: str, *query_lists: list[str]) -> list[list[int]]:
    """Run one client process per query list, all at once; their result counts."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLIENT, url, json.dumps(qs)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for qs in query_lists
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    return [json.loads(out) for out, _ in outs]


def upstream_queries(serper) -> list[tuple[float, str]]:
    return sorted((r["t"], json.loads(r["body"])["q"]) for r in serper.requests if r["path"] == "/search")


@pytest.fixture()
def grants(monkeypatch) -> list[float]:
    """The times the server's token buckets granted (lock-time clock + the wait they set), recorded in this process.

    Grant times are the bucket's own schedule, so the budget check on them holds whatever the scheduler does; arrival
    times at the mock upstream add the scheduler's jitter (a stall on a busy 2-core machine bunches requests granted
    100 ms apart)."""
    recorded: list[float] = []
    local = threading.local()
    acquire = TokenBucket.acquire

    def clock() -> float:
        local.now = time.monotonic()
        return local.now

    def recording(self: TokenBucket) -> float:
        self._clock = clock  # the same monotonic timeline, remembered per thread
        wait = acquire(self)
        recorded.append(local.now + wait)
        return wait

    monkeypatch.setattr(TokenBucket, "acquire", recording)
    return recorded


def test_two_client_processes_share_the_servers_cache_and_qps_budget(server_url, serper, grants):
    half = len(QUERIES) // 2
    first, second = QUERIES[:half], QUERIES[half:]
    a, b = clients(server_url, first, second)
    n = dict(zip(first + second, a + b))
    assert min(n.values()) > 0
    # each client now asks for everything, the other's queries included: the server's cache answers all of it
    assert clients(server_url, second + first, first + second) == [
        [n[q] for q in second + first],
        [n[q] for q in first + second],
    ]
    seen = upstream_queries(serper)
    assert Counter(q for _, q in seen) == Counter(QUERIES)  # every distinct query reached Serper once, for both clients
    # both processes' requests went through one token bucket: one grant per upstream request, and the grants keep the
    # bucket's budget, at most BURST + QPS * window in any window
    assert len(grants) == len(seen)
    due = sorted(grants)
    for i in range(len(due)):
        for j in range(i + 1, len(due)):
            assert j - i + 1 <= BURST + QPS * (due[j] - due[i]) + 1e-6, (i, j, due[j] - due[i])
    # and nothing reached Serper before the bucket let it: the k-th arrival comes no sooner than the k-th grant
    assert all(t >= g - 1e-6 for (t, _), g in zip(seen, due))
