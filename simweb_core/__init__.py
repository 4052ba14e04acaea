"""simweb_core: the ground floor every package builds on; it imports none of them.

* :mod:`~simweb_core.errors`: the base error hierarchy (``WikiIndexError``, ``ConfigError``, the index errors);
* :mod:`~simweb_core.settings`: environment variables (``SIM_WEB_HOME`` and the rest), the one module that reads them;
* :mod:`~simweb_core.fields`: :func:`help_field`, a config field with its help text;
* :mod:`~simweb_core.data`: :func:`from_data`, plain data (YAML, JSON, ``--set``) -> nested frozen dataclasses;
* :mod:`~simweb_core.overrides`: ``--set a.b=c`` parsing, with did-you-mean errors for unknown keys;
* :mod:`~simweb_core.cli`: command-line flags generated from config fields (help, type, choices, default);
* :mod:`~simweb_core.same`: :func:`~simweb_core.same.same_setting`, whether a recorded setting and a new one ask for
  the same run (a path spelt another way), so that run folders resume;
* :mod:`~simweb_core.secret`: :class:`~simweb_core.secret.Secret` (API keys, credentialed URLs that never print, log,
  pickle or serialise in clear) and the log scrubber.
"""

from simweb_core.data import coerce, from_data, parse_value
from simweb_core.errors import ConfigError, CorpusError, IndexMismatchError, IndexNotFoundError, WikiIndexError
from simweb_core.fields import help_field
from simweb_core.overrides import apply_overrides, parse_overrides

__all__ = [
    "ConfigError",
    "CorpusError",
    "IndexMismatchError",
    "IndexNotFoundError",
    "WikiIndexError",
    "apply_overrides",
    "coerce",
    "from_data",
    "help_field",
    "parse_overrides",
    "parse_value",
]
