"""OpenEnv sessions: one :class:`~sim_web.env.WebResearchEnv` per session, counted, capped and always freed.

A WebSocket at ``/ws`` owns its session (made when it connects, closed when it closes or drops). An HTTP MCP
session (``openenv/session/create`` on ``POST /mcp``) lives until ``openenv/session/close`` or until it has been
idle for :attr:`OpenEnvLimits.idle_timeout_s`; one WebSocket at a time may attach to it (``/ws?session_id=...``).
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

    def __post_init__(self) -> None:
        from simweb_core.errors import ConfigError

        if self.max_sessions < 1 or self.max_message_bytes < 1 or not self.idle_timeout_s > 0:
            raise ConfigError(
                f"OpenEnvLimits needs max_sessions >= 1, max_message_bytes >= 1 and idle_timeout_s > 0, got "
                f"{self.max_sessions}, {self.max_message_bytes}, {self.idle_timeout_s}; e.g. 64, 1048576, 600"
            )


class CapacityError(Exception):
    """Every session slot is taken (the client may retry later)."""


class SessionError(Exception):
    """A session id that is unknown, closed, or already has a WebSocket attached."""


class EnvSession:
    """One env and its episode id; every method is called from one thread at a time (the session's socket)."""

    def __init__(self, env: WebResearchEnv) -> None:
        self.env = env
        self.episode_id: str | None = None
        self.attached = False
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
        self.episode_id = str(data.get("episode_id") or uuid.uuid4())
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
    """The open sessions of one server process: created within :attr:`OpenEnvLimits.max_sessions`, each closed once.

    Args:
        make_env: Builds one env (called on a session's creation, on a tool thread or the event loop).
        limits: The cap and the idle timeout.
    """

    def __init__(self, make_env: Callable[[], WebResearchEnv], limits: OpenEnvLimits) -> None:
        self.make_env, self.limits = make_env, limits
        self._sessions: dict[str, EnvSession] = {}
        self._lock = threading.Lock()
        self.opened = 0  #: sessions ever opened (tests check that the live count falls back, not that none ran)

    @property
    def live(self) -> int:
        """Sessions open now, each holding one env."""
        return len(self._sessions)

    def open(self) -> tuple[str, EnvSession]:
        """A new session with its own env.

        Raises:
            CapacityError: ``max_sessions`` are open (after dropping idle detached ones).
        """
        self.reap_idle()
        with self._lock:
            if len(self._sessions) >= self.limits.max_sessions:
                raise CapacityError(
                    f"{len(self._sessions)} of {self.limits.max_sessions} OpenEnv sessions are open; close one or "
                    "retry later (the server's OpenEnvLimits.max_sessions sets the cap)"
                )
            session_id = uuid.uuid4().hex
            self._sessions[session_id] = None  # type: ignore[assignment]  # the slot, while the env is built
        try:
            session = EnvSession(self.make_env())
        except BaseException:
            with self._lock:
                del self._sessions[session_id]
            raise
        with self._lock:
            self._sessions[session_id] = session
            self.opened += 1
        return session_id, session

    def attach(self, session_id: str) -> EnvSession:
        """The HTTP MCP session ``session_id``, now owned by one WebSocket until :meth:`detach`."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                raise SessionError("unknown or closed session_id; create one with openenv/session/create")
            if session.attached:
                raise SessionError("this session already has a WebSocket attached")
            session.attached = True
            return session

    def detach(self, session_id: str) -> None:
        """Release a WebSocket's hold on an HTTP MCP session (which stays open until closed or idle)."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                session.attached = False
                session.last_used = time.monotonic()

    def get(self, session_id: str) -> EnvSession:
        """An open session (its idle clock restarts)."""
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None:
            raise SessionError("unknown or closed session_id; create one with openenv/session/create")
        session.last_used = time.monotonic()
        return session

    def close(self, session_id: str) -> bool:
        """Close a session and its env; False when it was not open (closing twice is harmless)."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:  # unknown, closed, or still being built (its opener owns it)
                return False
            del self._sessions[session_id]
        try:
            session.env.close()
        except Exception:  # a failing close must not keep the slot
            log.exception("closing an OpenEnv session's env failed")
        return True

    def reap_idle(self) -> int:
        """Close detached sessions idle longer than the limit; returns how many."""
        cutoff = time.monotonic() - self.limits.idle_timeout_s
        with self._lock:
            idle = [k for k, s in self._sessions.items() if s is not None and not s.attached and s.last_used < cutoff]
        return sum(self.close(k) for k in idle)

    def close_all(self) -> None:
        """Close every session (the server is shutting down)."""
        for session_id in list(self._sessions):
            self.close(session_id)
