"""OpenEnv sessions: one :class:`~sim_web.env.WebResearchEnv` per session, counted, capped and always freed.

A WebSocket at ``/ws`` owns its session (made when it connects, closed when it closes or drops). An HTTP MCP
session (``openenv/session/create`` on ``POST /mcp``) lives until ``openenv/session/close`` or until it has been
idle for :attr:`OpenEnvLimits.idle_timeout_s`; one WebSocket at a time may attach to it (``/ws?session_id=...``).

One accounting, whichever route made or closed a session: it holds its slot from its creation to the end of its
last attachment. Closing an attached session over ``/mcp`` ends it for its socket (answered ``SESSION_CLOSED`` at
its next message) and frees the slot when the socket lets go, never before. Each client (the caller's peer
address, :func:`~sim_web.serve.pool.client_key`) holds at most :attr:`OpenEnvLimits.max_sessions_per_client`
slots, so one client cannot take them all, and a timer thread drops idle detached sessions (not only the next
:meth:`SessionRegistry.open`).
The payloads are built here too: an episode over OpenEnv gives the same observation text, reward, end and turn
count as ``gym.make("WebResearch-v0")`` for the same seed and actions, because it *is* that env.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from simweb_core.fields import help_field

if TYPE_CHECKING:
    from sim_web.env import WebResearchEnv

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OpenEnvLimits:
    """The guards of the OpenEnv routes (``/ws``, ``POST /mcp``), on top of the tool server's own."""

    max_sessions: int = help_field(64, "Sessions (envs) open at once per worker; more: refused")
    max_message_bytes: int = help_field(1024 * 1024, "Largest WebSocket message accepted; larger: error, socket closed")
    idle_timeout_s: float = help_field(
        600.0, "A socket silent this long is closed, an HTTP MCP session unused this long is dropped"
    )
    max_sessions_per_client: int = help_field(
        0,
        "Sessions one client (peer address) may hold at once; more: refused (0: three quarters of max_sessions, "
        "so that one client cannot take every slot; set it to max_sessions for a server one trainer owns)",
    )

    def __post_init__(self) -> None:
        from simweb_core.errors import ConfigError

        if self.max_sessions < 1 or self.max_message_bytes < 1 or not self.idle_timeout_s > 0:
            raise ConfigError(
                f"OpenEnvLimits needs max_sessions >= 1, max_message_bytes >= 1 and idle_timeout_s > 0, got "
                f"{self.max_sessions}, {self.max_message_bytes}, {self.idle_timeout_s}; e.g. 64, 1048576, 600"
            )
        if self.max_sessions_per_client < 0:
            raise ConfigError(
                f"OpenEnvLimits.max_sessions_per_client must be >= 0 (0: three quarters of max_sessions), got "
                f"{self.max_sessions_per_client}"
            )

    @property
    def client_share(self) -> int:
        """Sessions one client may hold: :attr:`max_sessions_per_client`, or three quarters of the cap (at least 1)."""
        share = self.max_sessions_per_client or self.max_sessions - self.max_sessions // 4
        return max(1, min(share, self.max_sessions))


class CapacityError(Exception):
    """Every session slot is taken (the client may retry later)."""


class SessionError(Exception):
    """A session id that is unknown, closed, or already has a WebSocket attached."""


class EnvSession:
    """One env and its episode id; every method is called from one thread at a time (the session's socket).

    Attributes:
        client: Who opened it (its slot counts towards that client's share).
        attached: A WebSocket holds it now.
        closing: Closed over ``/mcp`` (or owned by its socket): its env closes when the socket lets go.
        close_requested: Closed by a request while a socket held it: the socket is told and let go.
    """

    def __init__(self, env: WebResearchEnv, client: str = "") -> None:
        self.env, self.client = env, client
        self.episode_id: str | None = None
        self.attached = self.closing = self.close_requested = False
        self.last_used = time.monotonic()

    def reset(self, data: dict[str, Any]) -> dict[str, Any]:
        """``env.reset(seed=..., options=...)``; ``episode_id`` is kept for :meth:`state` (default: a new uuid).

        Args:
            data: The ``reset`` message's data: ``seed`` (int), ``episode_id`` (str), ``options`` (``{"task": id}``).

        Returns:
            OpenEnv's observation payload (``observation``, ``reward``, ``done``, ``metadata``).
        """
        seed, options = data.get("seed"), data.get("options")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise ValueError(f"reset's seed must be an integer or null, got {type(seed).__name__}")
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"reset's options must be an object or null, got {type(options).__name__}")
        self.episode_id = _episode_id(data.get("episode_id"))
        if options:  # a custom task's question, as a tool call's arguments: lone surrogates replaced
            from sim_web.protocol.arguments import valid_unicode_value

            options = valid_unicode_value(options)
        obs, info = self.env.reset(seed=seed, options=options)
        return _payload({"text": obs, "terminated": False, "truncated": False}, None, False, info)

    def step(self, data: dict[str, Any]) -> dict[str, Any]:
        """One action: ``{"message": text}`` (one assistant turn, as ``env.step(text)``), or one of the two MCP
        actions of OpenEnv's ``MCPToolClient``: ``{"type": "call_tool", "tool_name", "arguments"}`` (the call as
        a Tongyi ``<tool_call>``, stepped like any turn) and ``{"type": "list_tools"}`` (no turn).

        Returns:
            OpenEnv's observation payload.
        """
        kind = data.get("type")
        if kind == "list_tools":
            return _payload({"tools": mcp_tools(self.env.toolbox.schemas())}, None, self.env.done, {})
        if kind == "call_tool":
            name, arguments = data.get("tool_name"), data.get("arguments") or {}
            if not isinstance(name, str) or not isinstance(arguments, dict):
                raise ValueError("call_tool needs 'tool_name' (a string) and 'arguments' (an object)")
            return self._turn(tool_call_text(name, arguments), {"tool_name": name})
        message = data.get("message")
        if kind is not None or not isinstance(message, str):
            raise ValueError(
                "a step's action is {'message': '<one assistant turn>'}, {'type': 'call_tool', 'tool_name': ..., "
                "'arguments': {...}} or {'type': 'list_tools'}; got keys " + str(sorted(map(str, data))[:8])
            )
        return self._turn(message, {})

    def _turn(self, action: str, extra: dict[str, Any]) -> dict[str, Any]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        observation = {"text": obs, "terminated": terminated, "truncated": truncated}
        if extra:  # MCPToolClient reads a call's result from ``result`` (and ``error`` for transport failures)
            observation.update(extra, result=obs, error=None)
        return _payload(observation, float(reward), bool(terminated or truncated), info)

    def state(self) -> dict[str, Any]:
        """OpenEnv's state: ``episode_id``, ``step_count`` (the env's turn), ``task_id``, ``done``."""
        task = self.env.task
        return {
            "episode_id": self.episode_id,
            "step_count": self.env.turn,
            "task_id": task.id if task else None,
            "done": self.env.done,
        }


MAX_EPISODE_ID = 256  #: characters of a client's episode id


def _episode_id(value: Any) -> str:
    """A reset's ``episode_id`` (a new uuid when missing or empty), checked: text that a reply can carry."""
    if value is None or value == "":
        return str(uuid.uuid4())
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"reset's episode_id must be a string or an integer, got {type(value).__name__}")
    text = str(value)
    if len(text) > MAX_EPISODE_ID or not text.isprintable() or not _encodable(text):
        raise ValueError(f"reset's episode_id must be printable text of at most {MAX_EPISODE_ID} characters")
    return text


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _payload(observation: dict[str, Any], reward: float | None, done: bool, info: dict[str, Any]) -> dict[str, Any]:
    """OpenEnv's observation payload; ``metadata`` is the env's ``info`` (made JSON-safe)."""
    metadata = json.loads(json.dumps(info, default=str))
    return {"observation": observation, "reward": reward, "done": done, "metadata": metadata}


def tool_call_text(name: str, arguments: dict[str, Any]) -> str:
    """A tool call as the Tongyi turn the env parses (``code`` of a PythonInterpreter call in ``<code>``)."""
    from sim_web.protocol.actions import PYTHON_TOOL

    args = dict(arguments)
    code = args.pop("code", None) if name == PYTHON_TOOL else None
    call = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    body = f"{call}\n<code>\n{code}\n</code>" if isinstance(code, str) else call
    return f"<tool_call>\n{body}\n</tool_call>"


def mcp_tools(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The toolbox's OpenAI-style function schemas as MCP tools (``name``, ``description``, ``inputSchema``)."""
    return [
        {
            "name": s["function"]["name"],
            "description": s["function"].get("description", ""),
            "inputSchema": s["function"].get("parameters", {"type": "object"}),
        }
        for s in schemas
    ]


class SessionRegistry:
    """The open sessions of one server process: created within :attr:`OpenEnvLimits.max_sessions` (and each
    client's share of them), each closed once, at the end of its last attachment.

    Args:
        make_env: Builds one env (called on a session's creation, on a tool thread or the event loop).
        limits: The caps and the idle timeout.
    """

    def __init__(self, make_env: Callable[[], WebResearchEnv], limits: OpenEnvLimits) -> None:
        self.make_env, self.limits = make_env, limits
        self._sessions: dict[str, EnvSession | None] = {}  # None: the slot, while its env is built
        self._clients: dict[str, int] = {}  # slots per client, building ones included
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reaper: threading.Thread | None = None
        self.opened = 0  #: sessions ever opened (tests check that the live count falls back, not that none ran)

    @property
    def live(self) -> int:
        """Sessions holding a slot now, each with its env."""
        return len(self._sessions)

    def held_by(self, client: str) -> int:
        """Slots ``client`` holds now."""
        return self._clients.get(client, 0)

    def open(self, client: str = "", owned: bool = False) -> tuple[str, EnvSession]:
        """A new session with its own env.

        Args:
            client: Who asks (:func:`~sim_web.serve.pool.client_key`); its share is checked.
            owned: Owned by the WebSocket that opens it: attached now, closed when that socket lets go.

        Raises:
            CapacityError: ``max_sessions`` are open, or ``client`` holds its share (after dropping idle ones).
        """
        self.reap_idle()
        self._start_reaper()
        session_id = uuid.uuid4().hex
        with self._lock:
            self._admit(client)
            self._sessions[session_id] = None
            self._clients[client] = self._clients.get(client, 0) + 1
        try:
            session = EnvSession(self.make_env(), client)
        except BaseException:
            with self._lock:
                self._forget(session_id, client)
            raise
        session.attached = session.closing = owned
        with self._lock:
            self._sessions[session_id] = session
            self.opened += 1
        return session_id, session

    def check_room(self, client: str) -> None:
        """Raise :class:`CapacityError` now, without building an env, when :meth:`open` would (a cheap early refusal
        for a handshake flood; :meth:`open` checks again, after dropping idle sessions)."""
        cutoff = time.monotonic() - self.limits.idle_timeout_s
        with self._lock:
            if not any(s is not None and not s.attached and s.last_used < cutoff for s in self._sessions.values()):
                self._admit(client)

    def _admit(self, client: str) -> None:
        """Raise :class:`CapacityError` unless a slot is free and ``client`` is within its share (lock held)."""
        if len(self._sessions) >= self.limits.max_sessions:
            raise CapacityError(
                f"{len(self._sessions)} of {self.limits.max_sessions} OpenEnv sessions are open; close one or "
                "retry later (the server's OpenEnvLimits.max_sessions sets the cap)"
            )
        if self._clients.get(client, 0) >= self.limits.client_share:
            raise CapacityError(
                f"this client holds {self._clients[client]} OpenEnv sessions, its share of the server's "
                f"{self.limits.max_sessions}; close one first (OpenEnvLimits.max_sessions_per_client sets the share)"
            )

    def _forget(self, session_id: str, client: str) -> None:
        """Free a slot (lock held)."""
        del self._sessions[session_id]
        left = self._clients.get(client, 0) - 1
        if left > 0:
            self._clients[client] = left
        else:
            self._clients.pop(client, None)

    def attach(self, session_id: str) -> EnvSession:
        """The HTTP MCP session ``session_id``, now owned by one WebSocket until :meth:`detach`."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or session.closing:
                raise SessionError("unknown or closed session_id; create one with openenv/session/create")
            if session.attached:
                raise SessionError("this session already has a WebSocket attached")
            session.attached = True
            return session

    def detach(self, session_id: str) -> None:
        """Release a WebSocket's hold on a session: one closed meanwhile (or owned by the socket) closes now, an HTTP
        MCP session stays open until closed or idle."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return
            session.attached = False
            session.last_used = time.monotonic()
            if not session.closing:
                return
            self._forget(session_id, session.client)
        _close_env(session)

    def get(self, session_id: str) -> EnvSession:
        """An open session (its idle clock restarts)."""
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None or session.closing:
            raise SessionError("unknown or closed session_id; create one with openenv/session/create")
        session.last_used = time.monotonic()
        return session

    def close(self, session_id: str) -> bool:
        """Close a session and its env; False when it was not open (closing twice is harmless).

        A session a WebSocket holds keeps its slot (and its env) until the socket lets go (:meth:`detach`); the
        socket is told at its next message.
        """
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or (session.closing and session.close_requested):
                return False  # unknown, closed, or still being built (its opener owns it)
            if session.attached:
                session.closing = session.close_requested = True
                return True
            self._forget(session_id, session.client)
        _close_env(session)
        return True

    def reap_idle(self) -> int:
        """Close detached sessions idle longer than the limit; returns how many."""
        cutoff = time.monotonic() - self.limits.idle_timeout_s
        with self._lock:
            idle = [k for k, s in self._sessions.items() if s is not None and not s.attached and s.last_used < cutoff]
        return sum(self.close(k) for k in idle)

    def _start_reaper(self) -> None:
        """The timer thread that reaps idle sessions (started with the first session, stopped by :meth:`close_all`)."""
        with self._lock:
            if self._reaper is not None or self._stop.is_set():
                return
            self._reaper = threading.Thread(target=self._reap_loop, name="sim-web-openenv-reaper", daemon=True)
        self._reaper.start()

    def _reap_loop(self) -> None:
        interval = min(max(self.limits.idle_timeout_s / 4, 0.01), 30.0)
        while not self._stop.wait(interval):
            try:
                self.reap_idle()
            except Exception:  # the timer must outlive one failing close
                log.exception("reaping idle OpenEnv sessions failed")

    def close_all(self) -> None:
        """Close every session and stop the timer (the server is shutting down)."""
        self._stop.set()
        with self._lock:
            sessions = [s for s in self._sessions.values() if s is not None]
            self._sessions.clear()
            self._clients.clear()
        for session in sessions:
            _close_env(session)


def _close_env(session: EnvSession) -> None:
    """Close a session's env; a failing close must not keep the slot (it is already freed)."""
    try:
        session.env.close()
    except Exception:
        log.exception("closing an OpenEnv session's env failed")
