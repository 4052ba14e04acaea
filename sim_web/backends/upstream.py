"""What the real-web backends share: HTTP error classification, ``Retry-After``, API keys, the raw-response cache hook.

Status codes are classified once, here, so Serper and Jina agree on what is worth retrying:

* timeouts, connection errors, 429 and 5xx are *retryable* (the executor retries them with backoff,
  honouring ``Retry-After``);
* 400, 401, 402, 403, 422, 451 and other 4xx are not: the call fails fast with a message saying what
  to fix. 401 / 402 / 403 also *open the circuit* at once (a bad key or an empty account will fail
  every call, so paying a request per call to find out again is pointless).
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from sim_web.protocol.errors import BackendError
from simweb_core.errors import ConfigError
from simweb_core.secret import Secret, as_secret, redact_url, register, scrub
from simweb_core.settings import env

if TYPE_CHECKING:
    import httpx

#: What to do about each non-retryable status, per upstream (shown in the error message).
_FIXES = {
    400: "the request was rejected as malformed; this is a bug in sim-web's request, please report it",
    401: "the API key was refused: check {key}",
    402: "the account is out of credit: top it up, or set {key} to a key with credit",
    403: "the API key was refused (Serper answers 403 for a bad or missing key): check {key}",
    422: "the upstream could not read that page (no content or navigation failed)",
    451: "the upstream blocks this domain (for anonymous use): set {key}",
}
#: Statuses after which every later call would fail the same way: open the circuit at once.
CIRCUIT_OPENING = frozenset({401, 402, 403})
#: Statuses that concern one page, not the upstream (they never count towards its circuit breaker).
PAGE_ERRORS = frozenset({404, 410, 422, 451})


class UpstreamError(BackendError):
    """A real-web upstream failed one request.

    Args:
        message: What failed and, for a non-retryable error, what to fix.
        retryable: Whether trying again may succeed.
        status: The HTTP status (``None`` for a transport failure).
        retry_after_s: The upstream's ``Retry-After`` in seconds, when it sent one.
        opens_circuit: Whether every later call would fail the same way (bad key, no credit).
        is_timeout: Whether the request timed out (counted as a timeout by the executor).
        page_error: Whether only this page failed (422 unreadable, 451 blocked domain, the target's own
            error): the upstream itself is fine, so the failure does not count towards its circuit breaker.
        fatal: Whether no other backend may answer in its place (a request missing from a replayed recording:
            a fallback's answer would be different data), so the executor raises it instead of falling back.
    """

    def __init__(
        self,
        message: str,
        retryable: bool,
        status: int | None = None,
        retry_after_s: float | None = None,
        opens_circuit: bool = False,
        is_timeout: bool = False,
        page_error: bool = False,
        fatal: bool = False,
    ) -> None:
        super().__init__(message, retryable=retryable)
        self.status = status
        self.retry_after_s = retry_after_s
        self.opens_circuit = opens_circuit
        self.is_timeout = is_timeout
        self.page_error = page_error
        self.fatal = fatal


class RawCache(Protocol):
    """A persistent content-keyed store for raw upstream replies (``sim_web.executor.SqliteCache`` fits)."""

    def get(self, key: str, ttl_s: float | None = None) -> str | None:
        """The stored text of ``key`` unless missing or older than ``ttl_s``."""
        ...

    def put(self, key: str, value: str) -> None:
        """Store ``value`` under ``key``."""
        ...


EventSink = Callable[[str], None]


def cache_key(*parts: Any) -> str:
    """A stable content key: the SHA-256 of the parts as canonical JSON."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date), or ``None``.

    Args:
        value: The header value.
        now: The current Unix time (for an HTTP date; default ``time.time()``).

    Returns:
        A non-negative number of seconds, or ``None`` when absent or unparseable.
    """
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _reason(r: httpx.Response) -> str:
    """The upstream's own message: Jina's ``readableMessage`` / ``message``, Serper's ``message``, or the body."""
    try:
        body = r.json()
    except ValueError:
        return r.text[:200].strip()
    if isinstance(body, dict):
        for k in ("readableMessage", "message", "error"):
            if body.get(k):
                return str(body[k])[:300]
    return r.text[:200].strip()


def request(client: httpx.Client, upstream: str, key_var: str, method: str, url: str, **kw: Any) -> httpx.Response:
    """Send one request and return a 2xx response, or raise a classified :class:`UpstreamError`.

    Args:
        client: The HTTP client (its transport may record or replay).
        upstream: ``"serper"`` / ``"jina"`` (for messages).
        key_var: The environment variable holding the key (for messages that say what to fix).
        method: HTTP method.
        url: Absolute URL.
        **kw: Passed to ``client.request``.

    Raises:
        UpstreamError: Retryable for timeouts, connection errors, 429 and 5xx; not for other 4xx; fatal for a
            request missing from a replayed recording.
    """
    import httpx

    shown = redact_url(url)  # messages never carry the user info or the query of a (credentialed) base URL
    try:
        r = client.request(method, url, **kw)
    except httpx.TimeoutException as e:
        raise UpstreamError(
            f"{upstream} timed out ({type(e).__name__}) on {shown}", retryable=True, is_timeout=True
        ) from None
    except httpx.TransportError as e:
        if getattr(e, "replay_miss", False):  # replaying again cannot help, and no fallback may stand in for it
            raise UpstreamError(f"{upstream}: {scrub(str(e))}", retryable=False, fatal=True) from None
        raise UpstreamError(f"{upstream} unreachable at {shown}: {scrub(str(e))}", retryable=True) from None
    if r.is_success:
        return r
    raise status_error(upstream, key_var, r.status_code, _reason(r), parse_retry_after(r.headers.get("Retry-After")))


def status_error(
    upstream: str, key_var: str, status: int, reason: str, retry_after_s: float | None = None
) -> UpstreamError:
    """The classified error of an HTTP error status (also one that a 200 reply carries in its body).

    Args:
        upstream: ``"serper"`` / ``"jina"`` (for messages).
        key_var: The environment variable holding the key (for messages that say what to fix).
        status: The HTTP status (4xx / 5xx).
        reason: The upstream's own message.
        retry_after_s: The upstream's ``Retry-After`` in seconds, when it sent one.

    Returns:
        Retryable for 429 and 5xx; otherwise not, with what to fix in the message.
    """
    if status == 429 or status >= 500:
        after = f" (Retry-After {retry_after_s:g} s)" if retry_after_s is not None else ""
        return UpstreamError(
            f"{upstream} answered {status}{after}: {reason}", retryable=True, status=status, retry_after_s=retry_after_s
        )
    fix = _FIXES.get(status, "the upstream rejected the request").format(key=key_var)
    return UpstreamError(
        f"{upstream} answered {status} ({reason}); {fix}",
        retryable=False,
        status=status,
        opens_circuit=status in CIRCUIT_OPENING,
        page_error=status in PAGE_ERRORS,
    )


def join_url(base: str, target: str) -> str:
    """``target`` (``/search``, ``/https://page?x=1``) under ``base``, whose own query (a proxy's key) stays the query.

    Example:
        >>> join_url("https://proxy.example/v1?apikey=k", "/search")
        'https://proxy.example/v1/search?apikey=k'
    """
    pre, sep, query = base.partition("?")
    if not sep:
        return pre.rstrip("/") + target
    path, tsep, tquery = target.partition("?")
    return f"{pre.rstrip('/')}{path}?{query}" + (f"&{tquery}" if tsep else "")


def relative_to(base: str, transport: httpx.BaseTransport | None) -> httpx.BaseTransport | None:
    """``transport`` marking each request with its target relative to ``base`` (for recordings), or ``None``.

    A recording keeps that target (``/search``, ``/https://page``), never the base URL, its host, user info,
    path or query, so a base URL with credentials never reaches it and a replay matches wherever the base is.
    """
    if transport is None:
        return None
    from sim_web.backends.recording import RelativeTransport

    return RelativeTransport(transport, base)


def base_url_secret(value: Secret | str | dict[str, Any], var: str, where: str) -> Secret:
    """A config's base URL as a :class:`Secret` (a string is a value given directly, standing for ``$var`` in copies).

    Raises:
        ConfigError: When the URL (when it can be read now) is not http(s); the message shows it redacted.
    """
    secret = as_secret(value, env=var)
    assert secret is not None
    try:
        url = secret.reveal() or ""
    except ConfigError:
        return secret  # a copy whose value was dropped: checked when used
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{where} must start with http:// or https://, got {secret.shown()!r}")
    return secret


def require_key(*names: str, what: str) -> str:
    """The first set environment variable of ``names`` (read through ``simweb_core.settings``).

    The value (and each comma-separated part of it, as a key ring reads it) is registered with the log scrubber
    as it is read, so an upstream that echoes it back never puts it in a log or a printed error.

    Args:
        names: Accepted variable names, preferred first (Tongyi's name first).
        what: What the key is for (for the message).

    Raises:
        ConfigError: When none is set, naming the variable to set.
    """
    for name in names:
        value = (env(name) or "").strip()
        if value:
            register(value, *(part.strip() for part in value.split(",")))
            return value
    alts = f" (or {', '.join(names[1:])})" if len(names) > 1 else ""
    raise ConfigError(
        f"backend='real' needs {what}: set the environment variable {names[0]}{alts}, "
        "or use backend='sim', or replay a recorded run (replay_dir=...)"
    )
