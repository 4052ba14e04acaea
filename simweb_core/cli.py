"""Command-line flags generated from config fields: a flag's help, type, choices and default come from its field.

A CLI names the fields it exposes by dotted path (``agent.sampling.temperature``) and the flag each gets
(``--temperature``); :func:`add_config_flags` adds them to an ``argparse`` parser, and :func:`given_flags` returns the
values given on the command line by path, ready for :func:`~simweb_core.overrides.apply_overrides` and
:func:`~simweb_core.data.from_data`. A flag that was not given is absent, so the config's own default applies: the
default lives in one place, the field.

Example:
    >>> import argparse
    >>> from dataclasses import make_dataclass
    >>> from simweb_core.fields import help_field
    >>> Sampling = make_dataclass("Sampling", [("temperature", float, help_field(0.6, "Temperature."))], frozen=True)
    >>> Run = make_dataclass("Run", [("greedy", bool, help_field(False, "Greedy decoding.")),
    ...     ("sampling", Sampling, help_field(help="Sampling.", default_factory=Sampling))], frozen=True)
    >>> p = argparse.ArgumentParser()
    >>> add_config_flags(p, Run, {"--greedy": "greedy", "--temperature": "sampling.temperature"})
    >>> given_flags(p.parse_args(["--temperature", "0", "--greedy"]))
    {'sampling.temperature': 0.0, 'greedy': True}
    >>> given_flags(p.parse_args([]))
    {}
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import logging
import re
import sys
import types
import typing
from collections.abc import Mapping
from typing import Any

from simweb_core.data import coerce, parse_value
from simweb_core.errors import ConfigError, WikiIndexError
from simweb_core.overrides import check_key

__all__ = ["add_config_flags", "config_field", "field_help", "given_flags", "run_command"]

_DEST = "config:"  # generated flags store under "config:<path>", apart from a CLI's own flags


def config_field(cls: type, path: str) -> tuple[type, dataclasses.Field, Any]:
    """The class that holds the field at the dotted ``path`` of ``cls``, the field and its type hint.

    Raises:
        ConfigError: For a part that is not a field (naming the closest valid keys), or a part below a field that is
            not a section (:func:`~simweb_core.overrides.check_key`).
    """
    owner = check_key(cls, path)
    name = path.rpartition(".")[2]
    field = next(f for f in dataclasses.fields(owner) if f.name == name)
    return owner, field, typing.get_type_hints(owner)[name]


def field_help(cls: type, name: str) -> str:
    """The help text of field ``name`` of ``cls``: its ``metadata["help"]``, else its entry in the class docstring's
    ``Attributes:`` section (Gymnasium-style configs such as ``EnvConfig``), else ``""``."""
    meta: Mapping[str, Any] = {f.name: f.metadata for f in dataclasses.fields(cls)}.get(name, {})
    if meta.get("help"):
        return str(meta["help"])
    lines = inspect.cleandoc(cls.__doc__ or "").splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "Attributes:"), None)
    if start is None:
        return ""
    entry: list[str] = []
    for line in lines[start + 1 :]:
        if line.strip() and not line.startswith(" "):  # the section ended
            break
        item = re.match(rf"\s{{4}}{re.escape(name)}(?: \([^)]*\))?: (.*)", line)
        if item:
            entry = [item.group(1)]
        elif entry and line.startswith(" " * 8):
            entry.append(line.strip())
        elif entry:
            break
    return " ".join(entry).replace("``", "")


def _default(cls: type, defaults: Any, path: str) -> Any:
    """The value at ``path`` of the ``defaults`` instance, or (``None``) the declared default of ``cls``'s field: a
    config whose required fields have no default cannot be built empty, but its other fields still show theirs."""
    value = defaults
    if value is None:
        first, _, rest = path.partition(".")
        declared = {f.name: f for f in dataclasses.fields(cls)}[first]
        factory = declared.default_factory
        value = factory() if declared.default is dataclasses.MISSING and callable(factory) else declared.default
        if not rest:
            return value
        path = rest
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _reader(hint: Any, flag: str) -> Any:
    """An ``argparse`` type that reads a flag's text as the field's type (text fields keep their text as given)."""
    members = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    typed = [t for t in members if t in (int, float, bool) or typing.get_origin(t) in (tuple, list, dict)]
    plain = not typed  # text, a path, a Secret: kept as given (YAML would read "12345" or "no" as other types)

    def read(text: str) -> Any:
        try:
            return coerce(text if plain else parse_value(text), hint, flag)
        except ConfigError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    read.__name__ = flag  # argparse names the type in its "invalid value" message
    return read


def add_config_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    cls: type,
    flags: Mapping[str, str | tuple[str, str]],
    *,
    defaults: Any = None,
) -> None:
    """Add one flag per field of ``cls``: ``{"--temperature": "agent.sampling.temperature", ...}``.

    Each flag's help is the field's help with the default appended; its choices are the field's ``choices``; a
    ``bool`` field gets ``--flag`` / ``--no-flag``. A flag not given leaves its field to the config's default.

    Args:
        parser: The parser or argument group to add the flags to.
        cls: The config class whose fields the paths name.
        flags: Flag -> dotted field path, or (path, text appended to the field's help), in ``--help``'s order.
        defaults: The instance whose values ``--help`` shows as defaults (default: the fields' declared defaults).

    Raises:
        ConfigError: For a path that is not a field of ``cls`` (a programming error, raised when the CLI is built).
    """
    for flag, spec in flags.items():
        path, extra = (spec, "") if isinstance(spec, str) else spec
        owner, field, hint = config_field(cls, path)
        default = _default(cls, defaults, path)
        text = " ".join(filter(None, (field_help(owner, field.name), extra)))
        help_text = text if default in (None, ()) else f"{text} (default: {_show(default)})"
        kwargs: dict[str, Any] = {"dest": _DEST + path, "default": argparse.SUPPRESS, "help": help_text}
        if hint is bool or hint == bool | None:  # --flag / --no-flag (None: neither given)
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, **kwargs)
            continue
        choices = field.metadata.get("choices")
        parser.add_argument(flag, type=_reader(hint, flag), choices=choices, metavar=_metavar(flag, choices), **kwargs)


def _show(value: Any) -> str:
    """A default as ``--help`` shows it (a tuple as ``a,b``, as the flag takes it)."""
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return str(value)


def _metavar(flag: str, choices: Any) -> str | None:
    """``{a,b}`` for choices (argparse's own), else the flag's name in capitals."""
    return None if choices else flag.lstrip("-").replace("-", "_").upper()


def given_flags(args: argparse.Namespace) -> dict[str, Any]:
    """``{path: value}`` of the generated flags given on the command line, in the order the parser stored them."""
    return {k.removeprefix(_DEST): v for k, v in vars(args).items() if k.startswith(_DEST)}


def read_secret_file(path: str, flag: str) -> str:
    """The secret in the file ``path`` (its first line, stripped), given by ``flag``; registered with the scrubber.

    A key in a file (mode 600) stays out of the process list, where every user of the machine reads a flag's value.

    Raises:
        ConfigError: When the file cannot be read or holds no value, naming the flag and the file.
    """
    from simweb_core.secret import register

    try:
        text = open(path, encoding="utf-8").read()  # noqa: SIM115 - read whole, closed at once
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{flag} {path!r} cannot be read ({type(e).__name__}): give a readable file") from None
    lines = text.splitlines()
    value = lines[0].strip() if lines else ""
    if not value:
        raise ConfigError(f"{flag} {path!r} is empty: write the secret on its first line")
    register(value)
    return value


def print_error(message: object) -> None:
    """Print ``error: <message>`` on stderr, scrubbed of credentials (:func:`simweb_core.secret.scrub`).

    Every command-line error goes through here: an upstream or endpoint that echoed a key into its error message
    does not get it printed (a key read from the environment is registered with the scrubber when read).
    """
    from simweb_core.secret import scrub

    print(f"error: {scrub(str(message))}", file=sys.stderr)


def run_command(parser: argparse.ArgumentParser, argv: list[str] | None = None) -> int:
    """Parse ``argv``, log at INFO with ``-v`` (else WARNING) and run the chosen subcommand's ``func``.

    A configuration or index error (:class:`~simweb_core.errors.WikiIndexError`) is printed as one ``error:`` line on
    stderr, not a traceback: it says what was expected and how to fix it.

    Returns:
        The subcommand's exit status; 2 for such an error.
    """
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        return args.func(args)
    except WikiIndexError as e:
        print_error(e)
        return 2
