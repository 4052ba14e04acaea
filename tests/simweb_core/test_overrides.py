"""``--set a.b=c``: parsing, key checks with did-you-mean errors that name the fix, and applying to nested data."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from simweb_core.overrides import apply_overrides, check_key, parse_overrides


@dataclass(frozen=True)
class Trainer:
    max_steps: int = help_field(10, "Steps.")
    learning_rate: float = help_field(1e-3, "Rate.")


@dataclass(frozen=True)
class Recipe:
    model: str = help_field("tiny", "Model.")
    trainer: Trainer = help_field(help="Trainer.", default_factory=Trainer)


def test_values_parse_as_yaml_and_keys_keep_their_order():
    assert parse_overrides(["trainer.max_steps=5", "model=/a/b", "trainer.learning_rate=1e-6"], target=Recipe) == {
        "trainer.max_steps": 5,
        "model": "/a/b",
        "trainer.learning_rate": 1e-6,
    }
    assert parse_overrides(["x.y=[a, b]", " n = null"]) == {"x.y": ["a", "b"], "n": None}  # no target: unchecked


def test_a_typo_names_the_key_the_closest_valid_keys_and_the_fix():
    with pytest.raises(ConfigError) as e:
        parse_overrides(["trainer.max_step=5"], target=Recipe)
    assert str(e.value) == (
        "--set trainer.max_step=5: unknown key 'trainer.max_step' in section 'trainer' (did you mean "
        "trainer.max_steps?); valid keys: max_steps, learning_rate; fix: --set trainer.max_steps=5"
    )
    with pytest.raises(
        ConfigError,
        match=r"--grpo-set max_steps=5: .*did you mean trainer.max_steps.*fix: --grpo-set trainer.max_steps=5",
    ):
        parse_overrides(["max_steps=5"], "--grpo-set", target=Recipe)
    with pytest.raises(
        ConfigError, match=r"unknown key 'tranier' .*did you mean trainer\?.*fix: --set trainer.max_steps=1"
    ):
        parse_overrides(["tranier.max_steps=1"], target=Recipe)
    with pytest.raises(ConfigError, match="unknown key 'zzz' in the top level of Recipe; valid keys: model, trainer$"):
        parse_overrides(["zzz=1"], target=Recipe)  # nothing close: no fix to offer


def test_malformed_items_and_keys_below_a_value_are_errors():
    with pytest.raises(ConfigError, match="--set expects KEY=VALUE, got 'trainer.max_steps'"):
        parse_overrides(["trainer.max_steps"])
    with pytest.raises(ConfigError, match=r"model is not a section: set it whole \(model=VALUE\)"):
        check_key(Recipe, "model.name")
    check_key(Recipe, "trainer")  # a whole section is a key too


def test_overrides_apply_in_order_and_merge_sections():
    data = {"trainer": {"max_steps": 2, "learning_rate": 0.1}}
    assert apply_overrides(data, {"trainer": {"max_steps": 4}, "trainer.learning_rate": 0.5}) == {
        "trainer": {"max_steps": 4, "learning_rate": 0.5}
    }
    assert data == {"trainer": {"max_steps": 2, "learning_rate": 0.1}}  # the input is left alone
