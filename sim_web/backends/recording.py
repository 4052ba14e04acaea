"""Record / replay of real-web traffic at the HTTP layer (httpx transports).

Recording writes every request and its response (status, headers, body bytes) to one JSON file
per exchange in a directory; replaying answers each request from that directory, so a real-web
run can be repeated offline, byte for byte, without keys.

A recording keeps, by allow-list, only what the replay key needs: the method, the *target* (what was
asked of the upstream, relative to its base URL: ``/search``, ``/https://example.org/page``,
``/chat/completions``) and the body (built by sim-web from the query, never holding a key). Nothing else
of the request is written: no header (``Authorization``, ``X-API-KEY``, ``Cookie``, ``Proxy-Authorization``,
``X-Goog-Api-Key``, whatever a proxy wants), no scheme, host, port, user info, and no path or query of the
base URL (``SERPER_BASE_URL=https://u:p@proxy/KEY/?api%5Fkey=...``). So no credential can reach a
recording whatever it is called, and a run recorded against the loopback mocks (``SIM_TO_REAL_MOCK=1``, a
new random port each run) or through one proxy replays wherever the services are said to be, with another
key or none. The backends mark each request with its target (:class:`RelativeTransport`).
A request recorded several times (a 429, then a 200 on retry) replays its responses in recorded
order and then repeats the last one.

Recordings made before the allow-list (format 1: a redacted ``url`` and headers) still replay: they are
matched by their old key (method, path with query, body), computed for each request in memory.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from simweb_core.errors import ConfigError

#: The format of the exchanges written now (1: the full redacted URL and headers; 2: the allow-list).
FORMAT = 2
#: The request extension naming a request's target relative to its upstream's base URL.
TARGET = "sim_web.target"
#: Request headers a format-1 recording left out (credentials); kept for reading those.
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key"})
#: Response headers kept (the rest vary run to run and no backend reads them).
KEPT_RESPONSE_HEADERS = ("content-type", "retry-after")
#: What a credential in a format-1 URL was replaced with.
REDACTED = "REDACTED"
#: Format 1: query parameters whose value is a credential (only to recompute those recordings' keys).
_SECRET_PARAM = re.compile(r"(?i)(?:.*[-_])?(?:api[-_]?key|apikey|key|token|secret|password|passwd|auth|sig|signature)")


class ReplayMiss(httpx.TransportError):
    """A request that the recording does not hold (not retryable: replaying it again cannot help)."""

    replay_miss = True


class RelativeTransport(httpx.BaseTransport):
    """Mark each request with its target relative to ``base`` (:data:`TARGET`), then pass it to ``inner``.

    The target is the request's path after the base URL's path, and its query without the base URL's own
    parameters (a proxy's ``?apikey=...``); what the upstream is asked (a page URL's query) stays.

    Args:
        inner: The recording or replaying transport.
        base: The upstream's base URL, as the backend joins targets to it (:func:`sim_web.backends.upstream.join_url`).
    """

    def __init__(self, inner: httpx.BaseTransport, base: str) -> None:
        self.inner = inner
        url = httpx.URL(base)
        self._prefix = url.raw_path.split(b"?", 1)[0].rstrip(b"/")
        self._base_params = frozenset(_params(url.query))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Set the target extension and forward."""
        path, _, _ = request.url.raw_path.partition(b"?")
        rel = path[len(self._prefix) :] if self._prefix and path.startswith(self._prefix) else path
        query = "&".join(p for p in _params(request.url.query) if p not in self._base_params)
        target = rel.decode("ascii") + (f"?{query}" if query else "")
        request.extensions = {**request.extensions, TARGET: target}
        return self.inner.handle_request(request)

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()


def _params(query: bytes) -> list[str]:
    """The parameters of a raw query (``&`` and ``;`` both separate them)."""
    return [p for p in re.split(r"[&;]", query.decode("ascii")) if p]


def request_target(request: httpx.Request) -> str:
    """What ``request`` asks of its upstream: its :data:`TARGET` mark, else its path without the query."""
    target = request.extensions.get(TARGET)
    if isinstance(target, str):
        return target
    return request.url.raw_path.split(b"?", 1)[0].decode("ascii")


def request_key(request: httpx.Request) -> str:
    """The content key of a request: method, target and body; never a header, the host or the base URL.

    Example:
        >>> a = httpx.Request("POST", "http://127.0.0.1:40123/search", content=b'{"q": "x"}')
        >>> b = httpx.Request("POST", "https://google.serper.dev/search", content=b'{"q": "x"}')
        >>> request_key(a) == request_key(b)
        True
    """
    return _key(request.method, request_target(request).encode(), request.content)


def _key(method: str, target: bytes, body: bytes) -> str:
    h = hashlib.sha256()
    for part in (method.encode(), target, body):
        h.update(len(part).to_bytes(8, "big") + part)
    return h.hexdigest()


def legacy_key(method: str, url: httpx.URL | str, body: bytes) -> str:
    """The key of a format-1 exchange: method, redacted path with query, body."""
    return _key(method, redact_url(httpx.URL(url)).raw_path, body)


def redact_url(url: httpx.URL) -> httpx.URL:
    """Format 1's redaction: ``url`` without user info, credential query parameters' values replaced by ``REDACTED``.

    Example:
        >>> str(redact_url(httpx.URL("https://u:p@proxy.example/search?apikey=s3cret&q=a%20b")))
        'https://proxy.example/search?apikey=REDACTED&q=a%20b'
    """
    query = url.query.decode("ascii")
    parts = [_redact_param(p) for p in query.split("&")] if query else []
    if not url.userinfo and parts == (query.split("&") if query else []):
        return url
    return url.copy_with(userinfo=b"", query="&".join(parts).encode("ascii") or None)


def _redact_param(part: str) -> str:
    name, eq, _ = part.partition("=")
    return f"{name}={REDACTED}" if eq and _SECRET_PARAM.fullmatch(name) else part


def _recorded_key(record: dict) -> str:
    """The key of a recorded exchange, recomputed from its request (format 1: the old key)."""
    req = record["request"]
    body = base64.b64decode(req["body"])
    if "target" in req:
        if not isinstance(req["target"], str):
            raise TypeError("request.target must be a string")
        return _key(req["method"], req["target"].encode(), body)
    return legacy_key(req["method"], req["url"], body)


class RecordingTransport(httpx.BaseTransport):
    """Pass requests through ``inner`` and write each exchange to ``directory``.

    Args:
        directory: Where to write (created if missing); several processes may record into one.
        inner: The real transport (default: ``httpx.HTTPTransport()``).
    """

    def __init__(self, directory: str | os.PathLike[str], inner: httpx.BaseTransport | None = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Forward the request, record the exchange, return the response (body read in full)."""
        response = self.inner.handle_request(request)
        body = response.read()
        key = request_key(request)
        record = {
            "key": key,
            "time_ns": time.time_ns(),
            "format": FORMAT,
            "request": {  # the allow-list: what the key needs, nothing else
                "method": request.method,
                "target": request_target(request),
                "body": base64.b64encode(request.content).decode(),
            },
            "response": {
                "status": response.status_code,
                "headers": {k: response.headers[k] for k in KEPT_RESPONSE_HEADERS if k in response.headers},
                "body": base64.b64encode(body).decode(),
            },
        }
        name = f"{key[:24]}-{record['time_ns']}-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"  # unique across envs and processes
        tmp = self.directory / (name + ".tmp")
        tmp.write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, self.directory / name)
        return httpx.Response(response.status_code, headers=response.headers, content=body, request=request)

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()


def load_exchange(path: Path) -> dict:
    """One recorded exchange, checked.

    Raises:
        ConfigError: When the file is cut short or not an exchange, naming the file and, for bad JSON, the line.
    """
    fix = "delete it (or record the run again) to replay the rest"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"recording file {path} is not valid JSON at line {e.lineno}, column {e.colno} ({e.msg}); "
            f"it was probably cut short while being written: {fix}"
        ) from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"recording file {path} is not UTF-8 text ({e.reason} at byte {e.start}): {fix}") from None
    try:
        _check_exchange(record)
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(
            f"recording file {path} is not a recorded exchange (expected request.method/url/body, "
            f"response.status/headers/body and time_ns; {type(e).__name__}: {e}): {fix}"
        ) from None
    return record


def _check_exchange(record: Any) -> None:
    """Raise ``KeyError`` / ``TypeError`` / ``ValueError`` unless ``record`` holds what a replay reads."""
    _recorded_key(record)
    response = record["response"]
    if not (
        isinstance(record["time_ns"], int)
        and isinstance(response["status"], int)
        and isinstance(response["headers"], dict)
    ):
        raise TypeError("time_ns and response.status must be integers, response.headers an object")
    base64.b64decode(response["body"], validate=True)


class ReplayTransport(httpx.BaseTransport):
    """Answer requests from a recording made by :class:`RecordingTransport`; nothing goes on the network.

    Args:
        directory: The recording.

    Raises:
        ConfigError: When the directory holds no recording, or a file that is not a recorded exchange (naming it).
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        paths = sorted(self.directory.glob("*.json")) if self.directory.is_dir() else []
        records = [load_exchange(path) for path in paths]
        if not records:
            raise ConfigError(
                f"replay_dir {str(self.directory)!r} holds no recorded exchanges (*.json); "
                "record a run first with record_dir=... (sim-web eval --record DIR)"
            )
        keyed = sorted(((_recorded_key(r), r["time_ns"], r["response"]) for r in records), key=lambda k: k[:2])
        self._responses: dict[str, list[dict]] = {}
        for key, _, response in keyed:
            self._responses.setdefault(key, []).append(response)
        self._legacy = any("target" not in r["request"] for r in records)
        self._served: dict[str, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return sum(len(v) for v in self._responses.values())

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """The recorded response to this request (in recorded order for repeats).

        Raises:
            ReplayMiss: When the recording never saw this request.
        """
        key = request_key(request)
        with self._lock:
            if key not in self._responses and self._legacy:  # a format-1 recording: its old key, made in memory
                key = legacy_key(request.method, request.url, request.content)
            answers = self._responses.get(key)
            if not answers:
                raise ReplayMiss(
                    f"{request.method} {request_target(request)[:300]} is not in the recording "
                    f"{str(self.directory)!r} (record this run again with record_dir=...)",
                    request=request,
                )
            i = self._served.get(key, 0)
            self._served[key] = i + 1
            rec = answers[min(i, len(answers) - 1)]
        return httpx.Response(
            rec["status"], headers=rec["headers"], content=base64.b64decode(rec["body"]), request=request
        )


def make_transport(record_dir: str | None, replay_dir: str | None) -> httpx.BaseTransport | None:
    """The transport for the real backends: replaying, recording, or ``None`` (httpx's default).

    Raises:
        ConfigError: When both directories are given.
    """
    if record_dir and replay_dir:
        raise ConfigError("record_dir and replay_dir are exclusive: record a run, then replay it in another")
    if replay_dir:
        return ReplayTransport(replay_dir)
    if record_dir:
        return RecordingTransport(record_dir)
    return None
