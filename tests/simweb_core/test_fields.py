"""help_field: a config field's default (or factory) and help text, the one helper every config uses."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields

import pytest

from simweb_core.fields import help_field


@dataclass(frozen=True)
class Inner:
    snippet_chars: int = help_field(240, "Characters of a snippet.")


def _custom_inner() -> Inner:
    return Inner(snippet_chars=100)


@dataclass(frozen=True)
class Outer:
    steps: int = help_field(10, "Steps.")
    inner: Inner = help_field(help="A section.", default_factory=_custom_inner)


def test_a_fields_help_and_choices_reach_its_metadata():
    by_name = {f.name: f for f in fields(Outer)}
    assert by_name["steps"].metadata["help"] == "Steps." and by_name["steps"].default == 10
    assert by_name["inner"].metadata == {"help": "A section."} and by_name["inner"].default_factory is _custom_inner
    assert dataclasses.field(default=1, metadata={"help": "x", "choices": (1, 2)}).metadata == (
        help_field(1, "x", choices=(1, 2)).metadata
    )
    with pytest.raises(TypeError, match="default_factory"):
        help_field([], "a list")
    with pytest.raises(TypeError, match="not both"):
        help_field(1, "x", default_factory=int)
