"""Building the real-web backends from the environment, and the sim index as their fallback.

Keys are read when the env is built (never mid-episode), under Tongyi DeepResearch's names:
``SERPER_KEY_ID`` (search + scholar), ``JINA_API_KEYS`` (or WebSailor's ``JINA_API_KEY``), and for
the optional page summariser ``API_KEY`` / ``API_BASE`` / ``SUMMARY_MODEL_NAME`` (all three, or none:
without them the deterministic extractor writes evidence and summary). Replaying a recording needs
no key; the summariser's ``API_BASE`` / ``SUMMARY_MODEL_NAME`` must match the recorded run's.
``JINA_API_KEYS`` may hold several keys (see :class:`~sim_web.backends.jina.KeyRing`); a recording
notes how many (never the keys), so that a replay moves through as many stand-in keys as the recorded run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim_web.backends.jina import JinaBackend, JinaConfig, KeyRing
from sim_web.backends.serper import SerperBackend, SerperConfig
from sim_web.backends.summarise import LLMSummariser
from sim_web.backends.upstream import RawCache, UpstreamError, relative_to, require_key
from sim_web.protocol.results import Backend, ScholarResult, SearchResult, VisitResult
from simweb_core.errors import ConfigError
from simweb_core.secret import redact_url
from simweb_core.settings import env
from wiki_index.types import url_to_title

if TYPE_CHECKING:
    import httpx

SUMMARISER_VARS = ("API_KEY", "API_BASE", "SUMMARY_MODEL_NAME")
#: In a recording directory: how many Jina keys the recorded run had (a number, never the keys).
JINA_KEYS_FILE = "jina-keys.count"


class WikipediaFallback:
    """The sim backend as the real backends' fallback: every search, but ``visit`` only for Wikipedia URLs.

    For another URL the fallback has nothing to offer, so it fails (and the tool prints Tongyi's
    "could not be accessed" text), rather than answering ``ok=False`` as if it had read the page.

    Args:
        sim: The sim backend (``name`` stays ``"sim"``, so cache entries are shared with sim mode).
    """

    def __init__(self, sim: Backend) -> None:
        self.sim = sim
        self.name = sim.name

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        """The sim index's results."""
        return self.sim.search(query, k)

    def scholar(self, query: str, k: int = 10) -> list[ScholarResult]:
        """The sim index's scholar results."""
        return self.sim.scholar(query, k)

    def visit(self, url: str, goal: str) -> VisitResult:
        """The sim page of a Wikipedia URL.

        Raises:
            UpstreamError: For a URL that is not a Wikipedia page.
        """
        if url_to_title(url) is None:
            raise UpstreamError(
                f"sim fallback has no copy of {url} (only Wikipedia pages)", retryable=False, page_error=True
            )
        return self.sim.visit(url, goal)


def summariser_from_env(config: JinaConfig, http_client: httpx.Client | None, replay: bool) -> tuple[Any, str]:
    """The LLM summariser configured by ``API_KEY`` / ``API_BASE`` / ``SUMMARY_MODEL_NAME``, or ``(None, "")``.

    Raises:
        ConfigError: When only some of the three are set.
    """
    values = {n: (env(n) or "").strip() for n in SUMMARISER_VARS}
    if replay and values["API_BASE"] and values["SUMMARY_MODEL_NAME"]:
        values["API_KEY"] = values["API_KEY"] or "replay"
    if not any(values.values()):
        return None, ""
    missing = [n for n, v in values.items() if not v]
    if missing:
        raise ConfigError(
            f"the page summariser needs {', '.join(SUMMARISER_VARS)} together; {', '.join(missing)} "
            "is not set: set it, or unset the others to use the deterministic extractor"
        )
    s = LLMSummariser(
        values["API_BASE"],
        values["API_KEY"],
        values["SUMMARY_MODEL_NAME"],
        temperature=config.summary_temperature,
        timeout_s=config.summary_timeout_s,
        http_client=http_client,
    )
    return s, f"{redact_url(values['API_BASE'])}|{values['SUMMARY_MODEL_NAME']}"


def jina_keys(record_dir: str | None, replay_dir: str | None) -> KeyRing:
    """The Jina key ring: ``$JINA_API_KEYS`` (noting its size in ``record_dir``), or stand-ins as many as ``replay_dir`` noted.

    Raises:
        ConfigError: When no key is set (and nothing is replayed).
    """
    if replay_dir is not None:
        noted = Path(replay_dir) / JINA_KEYS_FILE
        n = int(noted.read_text(encoding="utf-8").strip() or 1) if noted.is_file() else 1
        return KeyRing([f"replay-{i}" for i in range(n)])
    ring = KeyRing(
        require_key(
            "JINA_API_KEYS", "JINA_API_KEY", what="a Jina Reader API key for visit (or several, comma-separated)"
        )
    )
    if record_dir is not None:
        Path(record_dir).mkdir(parents=True, exist_ok=True)
        (Path(record_dir) / JINA_KEYS_FILE).write_text(str(ring.size), encoding="utf-8")
    return ring


def build_real_backends(
    serper: SerperConfig,
    jina: JinaConfig,
    *,
    record_dir: str | None = None,
    replay_dir: str | None = None,
    raw_cache: RawCache | None = None,
) -> tuple[SerperBackend, JinaBackend]:
    """Serper and Jina backends with keys from the environment, recording or replaying when asked.

    Args:
        serper: Serper settings.
        jina: Jina settings.
        record_dir: Record every request and response here.
        replay_dir: Answer every request from this recording (no network, no keys).
        raw_cache: Persistent store of raw replies (Serper JSON, Jina text).

    Raises:
        ConfigError: For a missing key (naming the variable), partial summariser settings, or
            both ``record_dir`` and ``replay_dir``.
    """
    import httpx

    from sim_web.backends.recording import make_transport  # httpx transports: imported when the real web is asked for

    transport = make_transport(record_dir, replay_dir)
    replay = replay_dir is not None
    serper_key = (
        "replay" if replay else require_key("SERPER_KEY_ID", what="a Serper API key for search and google_scholar")
    )
    keys = jina_keys(record_dir, replay_dir)
    api_base = (env("API_BASE") or "").strip()
    llm_transport = relative_to(api_base, transport) if api_base else transport
    llm_client = httpx.Client(transport=llm_transport, timeout=jina.summary_timeout_s) if llm_transport else None
    summariser, summariser_id = summariser_from_env(jina, llm_client, replay)
    return (
        SerperBackend(serper_key, serper, transport=transport, raw_cache=raw_cache),
        JinaBackend(
            keys, jina, summariser=summariser, summariser_id=summariser_id, transport=transport, raw_cache=raw_cache
        ),
    )
