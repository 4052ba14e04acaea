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
