"""``balance_tiers``: every step of TRL's own sampler holds one task of each tier, and the switch refuses the loop."""

from types import SimpleNamespace

import pytest
from trl.trainer.utils import RepeatSampler

from simweb_core.errors import ConfigError
from training.grpo.order import interleave_tiers
from training.grpo.recipes import load_recipe


def _tasks(n_lookup: int, n_bridge: int) -> list[SimpleNamespace]:
    tiers = ["lookup"] * n_lookup + ["bridge"] * n_bridge
    return [SimpleNamespace(id=f"{t}-{i}", metadata={"tier": t}) for i, t in enumerate(tiers)]


def test_interleave_plays_every_task_alternates_tiers_to_the_end_and_follows_the_seed():
    tasks = _tasks(5, 9)
    order = interleave_tiers(tasks, seed=0)
    assert {t.id for t in order} == {t.id for t in tasks}
    assert [t.metadata["tier"] for t in order] == ["bridge", "lookup"] * 9  # the 5 lookups start over once
    bridges = [t.id for t in order if t.metadata["tier"] == "bridge"]
    lookups = [t.id for t in order if t.metadata["tier"] == "lookup"]
    assert len(set(bridges)) == 9 and len(set(lookups[:5])) == 5 and len(set(lookups[5:])) == 4
    assert [t.id for t in order] == [t.id for t in interleave_tiers(tasks, seed=0)]
    assert [t.id for t in order] != [t.id for t in interleave_tiers(tasks, seed=1)]


@pytest.mark.parametrize("balance", [True, False])
def test_each_step_of_trls_sampler_mixes_the_tiers_only_when_balanced(balance):
    # 2 prompts a step, the hardest case for a mix: 12 steps of 24 tasks
    recipe = load_recipe("cpu-learn", {"balance_tiers": balance, "trainer.prompts_per_step": 2})
    args = recipe.grpo_config()
    assert args.shuffle_dataset is not balance
    tasks = _tasks(12, 12)
    data = interleave_tiers(tasks, recipe.seed) if balance else tasks
    per_step = recipe.trainer.prompts_per_step
    sampler = RepeatSampler(
        data_source=data,
        mini_repeat_count=args.num_generations,
        batch_size=per_step,
        shuffle=args.shuffle_dataset,
        seed=args.seed,
    )
    index = list(sampler)
    steps = [
        index[i : i + per_step * args.num_generations] for i in range(0, len(index), per_step * args.num_generations)
    ]
    mixed = [len({data[i].metadata["tier"] for i in step}) == 2 for step in steps]
    assert len(steps) == 12
    # shuffled, some step holds one tier only (seed 0); balanced, every step holds both
    assert all(mixed) if balance else not all(mixed)


def test_balance_tiers_refuses_the_feedback_loop():
    with pytest.raises(ConfigError, match="turn one of them off"):
        load_recipe("cpu-learn", {"balance_tiers": True, "loop.enabled": True})


def test_tier_weights_give_each_step_its_share_of_each_tier():
    """{bridge: 3}: every round of 4 holds 3 bridge tasks and 1 lookup task, to the end, every task played."""
    tasks = _tasks(5, 9)
    recipe = load_recipe("cpu-learn", {"tier_weights": {"bridge": 3}})
    assert recipe.balance_tiers and recipe.tier_weights == {"bridge": 3}
    order = interleave_tiers(tasks, recipe.seed, recipe.tier_weights)
    assert {t.id for t in order} == {t.id for t in tasks}
    rounds = [order[i : i + 4] for i in range(0, len(order), 4)]
    assert len(rounds) == 5  # lookup's 5 tasks need 5 rounds; bridge's 9 need 3 and start over
    assert all([t.metadata["tier"] for t in r] == ["bridge"] * 3 + ["lookup"] for r in rounds)


@pytest.mark.parametrize(
    "fields",
    [
        {"tier_weights": {"bridge": 0}},
        {"tier_weights": {"bridge": 1.5}},
        {"tier_weights": {"bridge": 3}, "balance_tiers": False},
    ],
)
def test_tier_weights_refuse_what_they_cannot_order(fields):
    with pytest.raises(ConfigError, match="tier_weights"):
        load_recipe("cpu-learn", fields)
