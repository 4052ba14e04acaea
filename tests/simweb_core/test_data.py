"""The config kernel's data side: from_data reads plain data (YAML, JSON, ``--set`` text) into nested frozen
dataclasses, each value as its field's type, and the errors are the one ConfigError of the whole project."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pytest

from simweb_core.data import coerce, from_data
from simweb_core.errors import ConfigError, WikiIndexError
from simweb_core.fields import help_field


@dataclass(frozen=True)
class Inner:
    snippet_chars: int = help_field(240, "Characters of a snippet.")
    enabled: bool = help_field(False, "Whether it runs.")


def _custom_inner() -> Inner:
    return Inner(snippet_chars=100)


@dataclass(frozen=True)
class Outer:
    name: str = help_field("custom", "A name.")
    steps: int = help_field(10, "Steps.")
    rate: float = help_field(1e-3, "A rate.")
    n: int | None = help_field(None, "Optional count.")
    tools: tuple[str, ...] = help_field(("search",), "Tools.")
    seeds: tuple[int, ...] = help_field((0,), "Seeds.")
    extra: dict[str, int] = help_field(help="Counters.", default_factory=dict)
    inner: Inner = help_field(help="A section.", default_factory=_custom_inner)
    maybe: Inner | None = help_field(None, "An optional section.")


def test_text_from_set_is_read_as_each_fields_type():
    out = from_data(
        Outer,
        {"steps": "5", "rate": "1e-4", "n": "null", "tools": "search, visit", "seeds": "0,1,2", "name": 123},
    )
    assert (out.steps, out.rate, out.n, out.tools, out.seeds, out.name) == (
        5,
        1e-4,
        None,
        ("search", "visit"),
        (0, 1, 2),
        "123",
    )
    assert isinstance(out.rate, float) and from_data(Outer, {"rate": 2}).rate == 2.0
    assert from_data(Outer, {"inner": {"enabled": "true"}}).inner.enabled is True
    assert from_data(Outer, {"inner": {"enabled": "no"}}).inner.enabled is False  # YAML 1.1 booleans
    assert from_data(Outer, {"seeds": 3}).seeds == (3,)  # a single number is a one-item tuple
    assert from_data(Outer, {"n": "none"}).n is None and from_data(Outer, {"n": "7"}).n == 7


def test_lists_tuples_optionals_and_mappings_nest():
    out = from_data(Outer, {"tools": ["a", "b"], "extra": {"x": "2"}, "maybe": {"snippet_chars": 5}})
    assert out.tools == ("a", "b") and out.extra == {"x": 2} and out.maybe == Inner(snippet_chars=5)
    assert from_data(Outer, {"maybe": None}).maybe is None
    again = from_data(Outer, dataclasses.asdict(out))  # the JSON round trip: dicts and lists back to dataclasses
    assert again == out


def test_a_base_keeps_its_sections_values_and_refuses_a_scalar_for_a_section():
    base = Outer()
    assert from_data(Outer, {"inner": {"enabled": True}}, base=base).inner == Inner(snippet_chars=100, enabled=True)
    assert from_data(Outer, {"inner": {"enabled": True}}).inner == Inner(enabled=True)  # without one: the class's
    with pytest.raises(
        ConfigError, match=r"inner is a section: set its keys \(snippet_chars, enabled\), e.g. inner.enabled="
    ):
        from_data(Outer, {"inner": True}, base=base)


def test_plain_values_of_the_wrong_kind_are_errors_naming_the_field():
    with pytest.raises(ConfigError, match="steps expects int, got 'many'"):
        from_data(Outer, {"steps": "many"})
    with pytest.raises(ConfigError, match="inner.snippet_chars expects int, got True"):
        from_data(Outer, {"inner": {"snippet_chars": True}})
    with pytest.raises(ConfigError, match=r"cfg.seeds\[1\] expects int, got 'x'"):
        from_data(Outer, {"seeds": "1,x"}, "cfg")
    with pytest.raises(ConfigError, match="cfg must be a Outer or a dict of its fields, got list"):
        from_data(Outer, [1], "cfg")  # type: ignore[arg-type]
    assert coerce(Path("/a"), str, "p") == Path("/a")  # another Python object: the owner's checks decide


def test_unknown_and_derived_keys_name_the_closest_valid_keys():
    with pytest.raises(
        ConfigError,
        match=r"unknown key 'inner.snipet_chars' in section 'inner' \(did you mean inner.snippet_chars\?\); valid keys: snippet_chars, enabled",
    ):
        from_data(Outer, {"inner": {"snipet_chars": 1}})
    with pytest.raises(
        ConfigError,
        match=r"unknown key 'enabled' in the top level of Outer \(did you mean inner.enabled or maybe.enabled\?\)",
    ):
        from_data(Outer, {"enabled": True})  # a section's key, given one level too high
    with pytest.raises(ConfigError, match="unknown keys 'a', 'b' in the top level of Outer; valid keys: name, steps"):
        from_data(Outer, {"b": 1, "a": 2})
    with pytest.raises(ConfigError, match="inner.enabled is not set directly: it follows steps"):
        from_data(Outer, {"inner": {"enabled": True}}, base=Outer(), derived={"inner.enabled": "steps"})


def test_there_is_one_config_error_class():
    import wiki_index

    root = Path(__file__).resolve().parents[2]
    assert wiki_index.ConfigError is ConfigError and issubclass(ConfigError, (WikiIndexError, ValueError))
    assert not (root / "wiki_index" / "errors.py").exists()  # moved here, not copied
