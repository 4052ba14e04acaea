"""A scripted OpenAI-compatible chat endpoint that makes native tool calls (plain and SSE-streamed replies).

``policy(request_body) -> message`` decides each turn: a dict with ``content`` and/or ``tool_calls`` (OpenAI's
shape, without ids: they are added). Every request body is kept in ``requests``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedModel:
    """``POST /v1/chat/completions`` answered by ``policy``; ``base_url`` ends in ``/v1``."""

    def __init__(self, policy: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.policy, self.requests, self._lock = policy, [], threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, "application/json", b'{"error": {"message": "no such route"}}')
                with model._lock:
                    model.requests.append(body)
                    n = len(model.requests)
                message = model._message(model.policy(body), n)
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
                head = {"id": f"chatcmpl-{n}", "created": 0, "model": body.get("model", "scripted")}
                if not body.get("stream"):
                    choice = {"index": 0, "message": message, "finish_reason": finish}
                    reply = {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
                    return self._send(200, "application/json", json.dumps(reply).encode())
                delta = dict(message)
                if delta.get("tool_calls"):
                    delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(delta["tool_calls"])]
                chunks = [
                    {"index": 0, "delta": delta, "finish_reason": None},
                    {"index": 0, "delta": {}, "finish_reason": finish},
                ]
                events = [{**head, "object": "chat.completion.chunk", "choices": [c]} for c in chunks]
                events.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
                data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
                self._send(200, "text/event-stream", data)

            def _send(self, status: int, content_type: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @staticmethod
    def _message(turn: dict[str, Any], n: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": turn.get("content")}
        if turn.get("tool_calls"):
            message["tool_calls"] = [
                {"id": f"call_{n}_{i}", "type": "function", "function": call}
                for i, call in enumerate(turn["tool_calls"])
            ]
        return message

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
