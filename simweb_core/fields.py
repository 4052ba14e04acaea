"""The one way to declare a config field: a default (or a factory) and a help text, TRL style.

The help text goes to the field's ``metadata["help"]``, where ``--help`` texts, docs and tests read it.

Example:
    >>> from dataclasses import dataclass, fields
    >>> @dataclass(frozen=True)
    ... class Demo:
    ...     steps: int = help_field(5, "Optimiser steps.")
    ...     tools: tuple[str, ...] = help_field(("search",), "Enabled tools.")
    >>> [(f.name, f.default, f.metadata["help"]) for f in fields(Demo)]
    [('steps', 5, 'Optimiser steps.'), ('tools', ('search',), 'Enabled tools.')]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

__all__ = ["help_field"]


def help_field(
    default: Any = dataclasses.MISSING,
    help: str = "",
    *,
    default_factory: Callable[[], Any] | None = None,
    choices: tuple[Any, ...] | None = None,
) -> Any:
    """A dataclass field with its help text in ``metadata["help"]``.

    Args:
        default: The field's default (immutable: a tuple, not a list).
        help: What the field sets, for ``--help`` and the docs.
        default_factory: Builds the default instead (a section: a nested config class, or a function returning one).
        choices: The only values the field takes, in ``metadata["choices"]`` (the owning class checks them).

    Returns:
        The ``dataclasses.field`` to assign in the class body.

    Raises:
        TypeError: For a mutable default (a list, dict or set), or both a default and a factory.
    """
    if isinstance(default, (list, dict, set)):
        raise TypeError("use default_factory for mutable defaults")
    metadata: dict[str, Any] = {"help": help} if choices is None else {"help": help, "choices": choices}
    if default_factory is not None:
        if default is not dataclasses.MISSING:
            raise TypeError("give a field a default or a default_factory, not both")
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)
