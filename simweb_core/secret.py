"""Secrets (API keys, credentialed URLs): a type that never prints, logs, pickles or serialises in clear.

A :class:`Secret` is either a reference to an environment variable, read at the moment of use, or a value
given directly (a ``--api-key`` flag), held in memory only. What leaves the process is never the value:

* ``repr`` / ``str`` / ``format`` show ``Secret($OPENAI_API_KEY)`` or ``Secret(sha256:1a2b3c4d)``, and for a
  URL its scheme, host and path (never the user info or the query);
* ``dataclasses.asdict`` (so ``run.json``, ``EnvSpec.to_json``) gives ``{"env", "default", "fingerprint"}``:
  the variable's name, a public fallback and at most a short fingerprint, and
  :func:`simweb_core.data.from_data` builds a ``Secret`` back from that dict;
* ``pickle`` (and so ``spawn`` workers, ``copy.deepcopy`` of an env) drops a directly given value: the copy
  reads its variable again when used, or says which variable to set.

:func:`install_log_scrubber` is the second line of defence: it rewrites every log record of this project's
loggers and httpx's / httpcore's / openai's before any handler sees it, masking the user info of URLs, the
values of credential query parameters and every secret value this process holds.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from dataclasses import dataclass
from typing import Any

from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from simweb_core.settings import env

#: What a masked value is replaced with.
MASK = "***"
#: Loggers whose records are scrubbed (with their children).
SCRUBBED_LOGGERS = ("sim_web", "agents", "training", "wiki_index", "httpx", "httpcore", "httpx2", "httpcore2", "openai")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#]*@")
_QUERY = re.compile(r"([?&;])([^=&;#\s]+)=([^&;#\s\"']*)")
_CREDENTIAL_NAME = re.compile(r"(?i)key|token|secret|passw|auth|sig|jwt|code|session|cred")
_MIN_KNOWN = 8  # shorter values ("EMPTY", "k") are not scrubbed from logs: they would mask ordinary words
_HTTP_LOGGERS = ("httpx", "httpcore", "httpx2", "httpcore2", "openai")  # openai's client may ship httpx as httpx2
_KNOWN: set[str] = set()  # every value given directly in this process (scrubbed from log records)
_KNOWN_LOCK = threading.Lock()


def fingerprint(value: str) -> str:
    """A short fingerprint of ``value`` (``sha256:`` and 8 hex digits): enough to tell two keys apart."""
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:8]


def redact_url(url: str) -> str:
    """``url`` without user info, query or fragment (``https://u:p@h/v1?key=x`` -> ``https://h/v1``).

    A text that is not an absolute URL comes back as its fingerprint.
    """
    m = re.match(r"(?i)^([a-z][a-z0-9+.-]*://)(?:[^/@?#]*@)?([^/?#]*)([^?#]*)", url or "")
    if not m:
        return fingerprint(url or "")
    return m.group(1) + m.group(2) + m.group(3)


def register(*values: str) -> None:
    """Scrub ``values`` from every log record and scrubbed message from now on (a key read from the environment).

    Values shorter than 8 characters are not registered: masking them would mask ordinary words.
    """
    with _KNOWN_LOCK:
        _KNOWN.update(v for v in values if v and len(v) >= _MIN_KNOWN)


def _secret_parts(value: str) -> list[str]:
    """What of ``value`` to scrub: a URL's credentials (its scheme, host and path are shown in messages), else all."""
    return url_credentials(value) if "://" in value else [value]


def url_credentials(url: str) -> list[str]:
    """The credentials a URL carries: its user info's parts and the value of every query parameter.

    A base URL's query is treated as credentials whatever its parameters are called (a proxy's ``?k=...``), so
    :func:`register` these and send them to that URL's host only. Values come both as written and decoded.

    Example:
        >>> url_credentials("https://u:pw@proxy.example/v1?apikey=k1&region=eu%2D1")
        ['u', 'pw', 'k1', 'eu%2D1', 'eu-1']
    """
    from urllib.parse import unquote, unquote_plus, urlsplit

    parts = urlsplit(url or "")
    found = [p for p in (parts.username, parts.password) if p]
    found += [unquote(p) for p in found]
    for pair in re.split(r"[&;]", parts.query):
        raw = pair.partition("=")[2]
        found += [raw, unquote_plus(raw)] if raw else []
    return list(dict.fromkeys(found))


def scrub(text: str, *, all_params: bool = False) -> str:
    """``text`` with URL user info, credential-like query parameters and every secret value of this process masked.

    Args:
        text: A log message or an error's text.
        all_params: Mask the value of every query parameter (for HTTP clients' request lines).
    """
    text = _USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
    text = _QUERY.sub(
        lambda m: f"{m.group(1)}{m.group(2)}={MASK}" if all_params or _CREDENTIAL_NAME.search(m.group(2)) else m[0],
        text,
    )
    with _KNOWN_LOCK:
        known = sorted(_KNOWN, key=len, reverse=True)
    for value in known:
        text = text.replace(value, MASK)
    return text


@dataclass(frozen=True, repr=False)
class Secret:
    """An API key or a credentialed URL: read from ``$env`` when used, or a value held in memory only.

    Build one with :meth:`of` (a value given directly) or :meth:`from_env`; configs accept a plain string and
    turn it into one (:func:`as_secret`).

    Example:
        >>> s = Secret.of("sk-very-secret")
        >>> "sk-very-secret" in repr(s) + str(s) + f"{s}"
        False
        >>> s.reveal()
        'sk-very-secret'
    """

    env: str | None = help_field(None, "Environment variable read at the moment of use.")
    default: str | None = help_field(None, "Public fallback when the variable is unset (never a credential).")
    fingerprint: str | None = help_field(
        None, "Fingerprint of a value given directly (the value itself never serialises)."
    )

    @classmethod
    def of(cls, value: str, *, env: str | None = None) -> Secret:
        """A value given directly (e.g. a command-line flag); ``env`` is read instead once the value is dropped.

        Args:
            value: The key or credentialed URL.
            env: The variable that stands for it in a copy (pickled, or rebuilt from JSON).
        """
        s = cls(env=env, fingerprint=fingerprint(value))
        object.__setattr__(s, "_value", value)
        register(*_secret_parts(value))
        return s

    @classmethod
    def from_env(cls, name: str, default: str | None = None) -> Secret:
        """A reference to the variable ``name`` (read at each use), else the public ``default``."""
        return cls(env=name, default=default)

    def reveal(self) -> str | None:
        """The clear value, for the one call that sends it: the value given, else ``$env``, else the default.

        Raises:
            ConfigError: When a value was given but dropped (a pickled or JSON copy) and ``$env`` is unset.
        """
        value = getattr(self, "_value", None)
        if value is not None:
            return value
        from_env = (env(self.env) or "").strip() if self.env else ""
        if from_env:
            register(*_secret_parts(from_env))
            return from_env
        if self.fingerprint is not None:
            where = f"set ${self.env}" if self.env else "pass it again in this process"
            raise ConfigError(
                f"a secret ({self.fingerprint}) was given directly and is not carried by copies (pickles, JSON) "
                f"of its config, which hold only its fingerprint: {where}"
            )
        return self.default

    def require(self, what: str) -> str:
        """:meth:`reveal`, or a :class:`ConfigError` naming ``what`` and the variable when there is no value."""
        value = self.reveal()
        if not value:
            var = f"set ${self.env}" if self.env else "give it"
            raise ConfigError(f"{what} has no value: {var}")
        return value

    def shown(self) -> str:
        """The redacted form for messages: a URL's scheme, host and path; a key's variable or fingerprint."""
        try:
            value = self.reveal()
        except ConfigError:
            value = None
        if value and "://" in value:
            return redact_url(value)
        if self.fingerprint:
            return self.fingerprint
        return f"${self.env}" if self.env else "(unset)"

    def __repr__(self) -> str:
        parts = [f"${self.env}" if self.env else "", self.fingerprint or ""]
        return f"Secret({', '.join(p for p in parts if p) or 'unset'})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(repr(self), spec)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Secret, (self.env, self.default, self.fingerprint))

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return self.__reduce__()

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Secret:
        return self


def as_secret(value: Secret | str | dict[str, Any] | None, *, env: str | None = None) -> Secret | None:
    """``value`` as a :class:`Secret` (a plain string is a value given directly, a dict is ``asdict``'s form).

    Args:
        value: What a config field holds.
        env: The variable that stands for a directly given value in copies.
    """
    if value is None or isinstance(value, Secret):
        return value
    if isinstance(value, dict):
        return Secret(**value)
    if isinstance(value, str):
        return Secret.of(value, env=env)
    raise ConfigError(f"expected a secret (a string or a Secret), found {type(value).__name__}")


def reveal(value: Secret | None) -> str | None:
    """``value.reveal()``, or ``None`` for ``None``."""
    return None if value is None else value.reveal()


class _Scrubber:
    """A log record factory that scrubs the records of :data:`SCRUBBED_LOGGERS` (see :func:`scrub`)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.inner(*args, **kwargs)
        if record.name.split(".", 1)[0] in SCRUBBED_LOGGERS:
            scrub_record(record)
        return record


def scrub_record(record: logging.LogRecord) -> logging.LogRecord:
    """Rewrite ``record``'s message (arguments merged in) with :func:`scrub`; returns it."""
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: leave it to logging to report
        return record
    clean = scrub(message, all_params=record.name.split(".", 1)[0] in _HTTP_LOGGERS)
    if clean != message or record.args:
        record.msg, record.args = clean, None
    return record


class ScrubFilter(logging.Filter):
    """The same scrubbing as a :class:`logging.Filter`, for handlers of other loggers."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Scrub ``record``; never drops it."""
        scrub_record(record)
        return True


def install_log_scrubber() -> None:
    """Scrub every record of :data:`SCRUBBED_LOGGERS` (and their children) when it is made (idempotent)."""
    factory = logging.getLogRecordFactory()
    if not isinstance(factory, _Scrubber):
        logging.setLogRecordFactory(_Scrubber(factory))
    for name in _HTTP_LOGGERS:  # their records, also when another factory replaces ours later
        logger = logging.getLogger(name)
        if not any(isinstance(f, ScrubFilter) for f in logger.filters):
            logger.addFilter(ScrubFilter())
