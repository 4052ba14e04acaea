"""An ASGI app served for real (uvicorn on a free loopback port, in a thread), for tests that need a socket."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def running(app: Any, config: Any = None) -> Iterator[str]:
    """``app`` served by uvicorn on a free loopback port in a thread (with ``config``, a ``uvicorn.Config`` for
    port 0, when given); yields its base URL."""
    import uvicorn

    server = uvicorn.Server(config or uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def wait_for(predicate: Any, what: str, deadline_s: float = 60.0) -> None:
    """Wait until the server has done something asynchronous (a bound on a hang, not a timing assertion)."""
    end = time.monotonic() + deadline_s
    while not predicate():
        assert time.monotonic() < end, f"the server never {what}"
        time.sleep(0.01)
