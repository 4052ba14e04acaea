"""Flags generated from config fields (simweb_core.cli): help, types, booleans, defaults left to the config."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from simweb_core.cli import add_config_flags, config_field, field_help, given_flags
from simweb_core.data import from_data
from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from simweb_core.overrides import apply_overrides


@dataclass(frozen=True)
class Inner:
    """A section documented Gymnasium-style.

    Attributes:
        mode: Retrieval mode: ``bm25`` or ``dense``,
            the second line of the entry.
        size: Results per query.
    """

    mode: str = "bm25"
    size: int = 10


@dataclass(frozen=True)
class Outer:
    n: int | None = help_field(None, "First n tasks (None: all).")
    key: str | None = help_field(None, "A key, kept as typed.")
    tools: tuple[str, ...] = help_field(("search", "visit"), "Enabled tools.")
    resume: bool = help_field(True, "Resume the run.")
    mock: bool | None = help_field(None, "Use mocks (None: the environment decides).")
    dtype: str = help_field("float32", "Weights dtype.", choices=("float32", "bfloat16"))
    inner: Inner = help_field(help="The section.", default_factory=Inner)


FLAGS = {
    "--n": "n",
    "--key": "key",
    "--tools": "tools",
    "--resume": "resume",
    "--mock": "mock",
    "--dtype": "dtype",
    "--mode": ("inner.mode", "Pick per run."),
    "--size": "inner.size",
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="demo")
    add_config_flags(p, Outer, FLAGS)
    return p


def build(argv: list[str]) -> Outer:
    return from_data(Outer, apply_overrides({}, given_flags(parser().parse_args(argv))), base=Outer())


def test_flags_not_given_leave_the_config_defaults():
    assert given_flags(parser().parse_args([])) == {}
    assert build([]) == Outer()


def test_values_are_read_as_their_field_types():
    cfg = build(["--n", "5", "--tools", "search", "--size", "3", "--mode", "dense", "--no-resume", "--mock"])
    assert cfg == Outer(n=5, tools=("search",), resume=False, mock=True, inner=Inner(mode="dense", size=3))
    assert build(["--n", "null"]).n is None
    assert build(["--key", "12345"]).key == "12345"  # text stays text (YAML would read a number)
    assert build(["--key", "no"]).key == "no"  # ... or a boolean


def test_bad_values_and_choices_are_argparse_errors(capsys):
    for argv in (["--n", "five"], ["--size", "1.5"], ["--dtype", "int8"]):
        with pytest.raises(SystemExit):
            parser().parse_args(argv)
        assert "--" in capsys.readouterr().err


def test_help_comes_from_metadata_or_the_docstring_with_the_default():
    text = parser().format_help()
    assert "First n tasks (None: all)." in text  # metadata; no "(default: None)"
    assert "First n tasks (None: all). (default: None)" not in text
    assert field_help(Inner, "mode") == "Retrieval mode: bm25 or dense, the second line of the entry."
    assert field_help(Inner, "missing") == ""
    flat = " ".join(text.split())
    assert "Retrieval mode: bm25 or dense, the second line of the entry. Pick per run. (default: bm25)" in flat
    assert "Enabled tools. (default: search,visit)" in flat
    assert "--resume, --no-resume" in text and "--mock, --no-mock" in text
    assert "{float32,bfloat16}" in text


def test_a_path_that_is_not_a_field_fails_when_the_cli_is_built():
    with pytest.raises(ConfigError, match="unknown key 'inner.nope' in section 'inner'"):
        add_config_flags(argparse.ArgumentParser(), Outer, {"--nope": "inner.nope"})
    with pytest.raises(ConfigError, match="not a section"):
        config_field(Outer, "n.deeper")
