"""simweb_core: the ground floor every package builds on; it imports none of them.

* :mod:`~simweb_core.errors`: the base error hierarchy (``WikiIndexError``, ``ConfigError``, the index errors);
* :mod:`~simweb_core.settings`: environment variables (``SIM_WEB_HOME`` and the rest), the one module that reads them;
* :mod:`~simweb_core.fields`: :func:`help_field`, a config field with its help text.
"""

from simweb_core.errors import ConfigError, CorpusError, IndexMismatchError, IndexNotFoundError, WikiIndexError
from simweb_core.fields import help_field

__all__ = ["ConfigError", "CorpusError", "IndexMismatchError", "IndexNotFoundError", "WikiIndexError", "help_field"]
