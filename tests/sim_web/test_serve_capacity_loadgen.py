"""The server benchmark's C load generator (benchmarks/loadgen.c): it builds, counts answers and errors, keeps its schedule."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.loadgen import compile_loadgen, httpx_phase, loadgen_phase
from tests.sim_web.test_server import running


@pytest.fixture(scope="module")
def binary() -> Path:
    built = compile_loadgen()
    if built is None:
        pytest.skip("no C compiler: bench_server falls back to Python clients")
    return built


def _app(status: int) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = (await receive()).get("body", b"")
        reply = json.dumps({"got": json.loads(body)}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(reply)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": reply})

    return app


@contextlib.contextmanager
def serving(status: int) -> Iterator[int]:
    """An echo app answering ``status`` on a free loopback port (uvicorn in a thread); yields the port."""
    with running(_app(status)) as url:
        yield int(url.rsplit(":", 1)[1])


def _bodies(tmp_path: Path, n: int = 5) -> Path:
    file = tmp_path / "bodies.tsv"
    file.write_text("".join(f"/tools/search\t{json.dumps({'arguments': {'query': [f'q{i}']}})}\n" for i in range(n)))
    return file


def test_closed_open_and_think_phases_count_answers(binary, tmp_path):
    bodies = _bodies(tmp_path)
    with serving(200) as port:
        closed = loadgen_phase(binary, port, bodies, 4, 0.5)
        scheduled = loadgen_phase(binary, port, bodies, 4, 1, rate=40)
        paused = loadgen_phase(binary, port, bodies, 4, 0.5, think_ms=20)
    assert closed.requests > 0 and closed.errors == 0 and 0 < closed.p50 <= closed.p99
    assert 0 < scheduled.requests <= 40 and scheduled.errors == 0  # the schedule, not the server, sets the count
    assert 0 < paused.requests < closed.requests and paused.errors == 0
    assert closed.client_cpu_s is not None and closed.client_cpu_s >= 0


def test_error_statuses_and_refused_connections_are_errors(binary, tmp_path):
    bodies = _bodies(tmp_path)
    with serving(503) as port:
        busy = loadgen_phase(binary, port, bodies, 2, 0.3)
    assert busy.requests > 0 and busy.errors == busy.requests
    with serving(200) as port:
        pass  # the port is free again
    refused = loadgen_phase(binary, port, bodies, 2, 0.3)
    assert refused.requests == 0 and refused.errors > 0


def test_python_clients_measure_the_same_phases():
    bodies = [("/tools/search", {"arguments": {"query": ["q"]}})]
    with serving(200) as port:
        closed = httpx_phase(port, bodies, 3, 0.5)
        scheduled = httpx_phase(port, bodies, 3, 1, rate=20)
    assert closed.requests > 0 and closed.errors == 0 and closed.p50 <= closed.p99
    assert 0 < scheduled.requests <= 20 and scheduled.errors == 0
