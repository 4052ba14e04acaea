"""simweb_core: the ground floor every package builds on; it imports none of them.

* :mod:`~simweb_core.errors`: the base error hierarchy (``WikiIndexError``, ``ConfigError``, the index errors);
* :mod:`~simweb_core.settings`: environment variables (``SIM_WEB_HOME`` and the rest), the one module that reads them.
"""

from simweb_core.errors import ConfigError, CorpusError, IndexMismatchError, IndexNotFoundError, WikiIndexError

__all__ = ["ConfigError", "CorpusError", "IndexMismatchError", "IndexNotFoundError", "WikiIndexError"]
