"""DUPO: batch filling on hand-made batches, the pre-RL filter's verdict, and the filled batch inside a real GRPO step."""

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from simweb_core.errors import ConfigError  # noqa: E402
from training.grpo.advantage import group_advantages, zero_variance_groups  # noqa: E402
from training.grpo.dupo import PrefilterConfig, always_solved, dupo_fill_index, dupo_weights  # noqa: E402

NAN = math.nan


def test_flat_groups_are_replaced_by_copies_of_informative_groups_of_the_same_batch():
    rewards = torch.tensor(
        [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    )  # groups 1 and 2 carry no signal
    index, stats = dupo_fill_index(rewards, 3, seed=0)
    assert stats == {"groups": 4, "dropped": 2, "duplicated": 2}
    groups = index.view(4, 3)
    assert groups[0].tolist() == [0, 1, 2] and groups[3].tolist() == [9, 10, 11]  # informative groups stay in place
    copies = sorted(tuple(groups[g].tolist()) for g in (1, 2))
    assert copies == [(0, 1, 2), (9, 10, 11)]  # two empties, two informative groups: each copied once
    assert not zero_variance_groups(rewards[index], 3).any()
    # the advantages of the filled batch are those of the copied groups: no zero-advantage group is left
    adv = group_advantages(rewards[index], 3, "loo").view(4, 3)
    assert all(adv[g].abs().sum() > 0 for g in range(4))


def test_the_copy_choice_follows_the_seed_and_spreads_over_informative_groups():
    rewards = torch.tensor([0.0, 1.0] * 3 + [1.0, 1.0] * 6)  # 3 informative, 6 flat groups
    choices = set()
    for seed in range(6):
        index, stats = dupo_fill_index(rewards, 2, seed=seed)
        assert stats["duplicated"] == 6
        src = [int(index[2 * g]) // 2 for g in range(3, 9)]
        assert sorted(src) == [0, 0, 1, 1, 2, 2]  # round-robin: every informative group copied twice
        assert dupo_fill_index(rewards, 2, seed=seed)[0].tolist() == index.tolist()  # deterministic
        choices.add(tuple(src))
    assert len(choices) > 1


@pytest.mark.parametrize("rewards", [[1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 1.0], [NAN, 0.0, NAN, NAN]])
def test_nothing_to_copy_or_nothing_to_drop_leaves_the_batch_alone(rewards):
    index, stats = dupo_fill_index(torch.tensor(rewards), 2)
    assert index.tolist() == [0, 1, 2, 3] and stats["dropped"] == stats["duplicated"] == 0


def test_a_group_with_one_scorable_sample_counts_as_flat():
    index, stats = dupo_fill_index(torch.tensor([NAN, 1.0, 0.0, 1.0]), 2)
    assert stats["dropped"] == 1 and index.tolist() == [2, 3, 2, 3]


def test_dupo_weights_count_each_sample_as_often_as_the_copied_batch_holds_it():
    rewards = torch.tensor([0.0, 1.0] * 3 + [1.0, 1.0] * 6)
    for seed in range(3):
        index, _ = dupo_fill_index(rewards, 2, seed=seed)
        weights, stats = dupo_weights(rewards, 2, seed=seed)
        assert weights.tolist() == [float((index == k).sum()) for k in range(rewards.numel())]
        assert weights.sum() == rewards.numel() and stats["duplicated"] == 6 and weights[6:].sum() == 0


def test_always_solved_needs_k_successes():
    ids = ["a", "a", "b", "b", "c", "d", "d"]
    rewards = [1.0, 1.0, 1.0, 0.0, 1.0, 1.0, None]
    assert always_solved(ids, rewards, k=2) == {"a"}  # c has one rollout only; d has an unscorable one
    assert always_solved(ids, rewards, k=1) == {"a", "c"}
    assert always_solved(["a", "a"], [0.6, 0.7], k=2, solved_reward=0.5) == {"a"}
    with pytest.raises(ConfigError):
        always_solved(["a"], [], k=1)


@pytest.mark.parametrize("bad", [0.0, -0.5, 1.5])
def test_the_prefilter_threshold_is_a_reward_in_0_1(bad):
    assert PrefilterConfig(k=2, solved_reward=1.0).solved_reward == 1.0
    with pytest.raises(ConfigError, match=r"prefilter.solved_reward must be in \(0, 1\]"):
        PrefilterConfig(k=2, solved_reward=bad)


# --- inside a real GRPO step --------------------------------------------------------------------------------------
G = 4
REWARDS = [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]  # group 0 flat, group 1 informative


def env_reward(completions, env_reward, **kwargs):
    return env_reward


def fake_rollout(prompts, trainer):
    """Sample k starts with token 5+k; the flat group's completions are the longest, so compaction cuts columns."""
    eos = trainer.processing_class.eos_token_id
    n = len(prompts)
    return {
        "prompt_ids": [[7, 8, 9]] * n,
        "completion_ids": [[5 + k, 40] + [41] * (4 if k < G else k % 3) + [eos] for k in range(n)],
        "logprobs": [[-1.0] * (3 + (4 if k < G else k % 3)) for k in range(n)],
        "env_reward": REWARDS[:n],
        "no_answer": [""] * n,
        "answered": [True] * n,
        "turns": [1] * n,
        "tool_calls": [{"search": 2}] * n,
        "tool_errors": [0] * n,
        "action_errors": [0] * n,
        "generated_tokens": [3] * n,
        "rollout_timing": {"generation_seconds": 0.1, "tool_seconds": 0.0},
    }


def make_trainer(tmp_path, dupo):
    from datasets import Dataset

    from training.grpo.tiny import tiny_model
    from training.grpo.trainer import AgentGRPOConfig, AgentGRPOTrainer

    model, tok = tiny_model(["What is the answer to this question?"])
    args = AgentGRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        gradient_accumulation_steps=4,
        num_generations=G,
        max_completion_length=16,
        max_steps=1,
        learning_rate=1e-2,
        report_to="none",
        use_cpu=True,
        bf16=False,  # float32: the gradients compared below agree to float summation order only in float32
        logging_steps=1,
        save_strategy="no",
        seed=0,
        dupo=dupo,
    )
    ds = Dataset.from_list(
        [{"prompt": [{"role": "user", "content": f"question {i}"}], "task_id": f"t{i}"} for i in range(2)]
    )
    return AgentGRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=[env_reward],
        args=args,
        train_dataset=ds,
        rollout_func=fake_rollout,
    )


@pytest.mark.parametrize("dupo", [True, False])
def test_the_flat_group_weighs_nothing_and_the_informative_group_counts_twice(tmp_path, dupo):
    trainer = make_trainer(tmp_path, dupo)
    batches, outcomes = [], []
    generate = trainer._generate_and_score_completions
    trainer._generate_and_score_completions = lambda inputs: batches.append(generate(inputs)) or batches[-1]
    trainer.outcome_sink = outcomes.extend
    trainer.train()
    batch = batches[0]
    sample = [int(row[0]) - 5 for row in batch["completion_ids"]]
    adv = dict(zip(sample, batch["advantages"].tolist()))
    tokens = dict(zip(sample, (batch["completion_mask"] * batch["tool_mask"]).sum(1).tolist()))
    loo = group_advantages(torch.tensor(REWARDS), G, "loo").tolist()  # before DUPO's weights
    logged = {k: v for h in trainer.state.log_history for k, v in h.items()}
    weight = 2.0 if dupo else 1.0
    assert all(adv[k] == 0 for k in range(G)) and all(adv[k] == pytest.approx(weight * loo[k]) for k in range(G, 2 * G))
    informative = sum(tokens[k] for k in range(G, 2 * G))
    if dupo:
        assert all(tokens[k] == 0 for k in range(G))  # the dropped group's tokens leave the normaliser
        assert (logged["agent/dupo_dropped_groups"], logged["agent/dupo_duplicated_groups"]) == (1.0, 1.0)
    else:
        assert "agent/dupo_dropped_groups" not in logged
    assert float(batch["num_items_in_batch"]) == weight * informative + (
        0 if dupo else sum(tokens[k] for k in range(G))
    )
    assert logged["agent/frac_zero_variance_groups"] == 0.5  # metrics describe the rollouts, not the filled batch
    assert logged["agent/loss_token_frac"] < 1.0  # micro-batches were compacted (rows with advantage 0 left out)
    # the outcome table sees every rollout once, with its own reward, whatever DUPO trains on
    assert sorted((o["task_id"], o["reward"]) for o in outcomes) == sorted(
        [(tid, 0.0) for tid in [outcomes[0]["task_id"]] * 4] + [(outcomes[4]["task_id"], r) for r in REWARDS[4:]]
    )
    assert {o["step"] for o in outcomes} == {1} and all(o["tool_calls"] == 2 and o["answered"] for o in outcomes)


def test_weighted_and_compacted_micro_batches_train_the_gradient_of_dupos_copied_batch(tmp_path):
    """Through TRL's own loss: the weighted batch, compacted micro-batch by micro-batch, has the gradient of the
    batch that holds real copies of the informative group in the flat group's place."""
    from trl import GRPOTrainer

    trainer = make_trainer(tmp_path, True)
    batches = []
    generate = trainer._generate_and_score_completions
    trainer._generate_and_score_completions = lambda inputs: batches.append(generate(inputs)) or batches[-1]
    trainer.train()
    weighted, model = batches[0], trainer.model
    weight, _ = dupo_weights(torch.tensor(REWARDS), G, seed=0)
    index, _ = dupo_fill_index(torch.tensor(REWARDS), G, seed=0)
    unweighted = weighted["advantages"] / weight.clamp(min=1)
    copied = {
        k: (v.index_select(0, index) if torch.is_tensor(v) and v.dim() else v)
        for k, v in {**weighted, "advantages": unweighted}.items()
    }
    copied["tool_mask"] = copied["completion_mask"].clone()  # the copies' own masks (no sample is dropped here)
    assert float(copied["num_items_in_batch"]) == float((copied["completion_mask"] * copied["tool_mask"]).sum())
    model.train()

    def gradient(loss_of, batch, micro):
        model.zero_grad()
        for start in range(0, 2 * G, micro):
            part = {k: (v[start : start + micro] if torch.is_tensor(v) and v.dim() else v) for k, v in batch.items()}
            loss_of(trainer, model, part).backward()
        return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])

    reference = gradient(GRPOTrainer._compute_loss, copied, 2)  # TRL alone, on real copies
    ours = gradient(type(trainer)._compute_loss, weighted, 3)  # weights; dead rows and padding columns left out
    assert reference.abs().sum() > 0
    assert torch.allclose(ours, reference, rtol=1e-4, atol=1e-7)


def _saved_verdict_run(tmp_path, monkeypatch):
    """A cpu-learn recipe on a two-file model folder, and a counter of the pre-filter's played rollouts."""
    import dataclasses
    from types import SimpleNamespace

    import training.grpo.dupo as dupo
    from training.grpo.recipes import load_recipe

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}", encoding="utf-8")
    (model / "model.safetensors").write_bytes(b"weights-1")
    recipe = load_recipe("cpu-learn")
    recipe = dataclasses.replace(recipe, model=str(model), output_dir=str(tmp_path / "run"))
    played = []

    def fake_prefilter(trainer, rollout, tasks, k, solved, batch):
        played.append(len(tasks))
        return list(tasks[1:]), {"k": k, "tasks": len(tasks), "dropped": [tasks[0].id]}

    monkeypatch.setattr(dupo, "prefilter_tasks", fake_prefilter)
    trainer = SimpleNamespace(accelerator=SimpleNamespace(is_main_process=True))
    tasks = [SimpleNamespace(id=f"t{i}") for i in range(3)]
    return recipe, model, trainer, tasks, played


def test_a_run_that_starts_over_reuses_its_verdict_only_while_model_tasks_and_settings_match(tmp_path, monkeypatch):
    import dataclasses

    from training.grpo.train import _prefilter

    recipe, model, trainer, tasks, played = _saved_verdict_run(tmp_path, monkeypatch)
    out = tmp_path / "run"
    out.mkdir()
    assert [t.id for t in _prefilter(recipe, trainer, None, tasks, out)] == ["t1", "t2"] and played == [3]
    _prefilter(recipe, trainer, None, tasks, out)  # interrupted before the first checkpoint: the verdict is kept
    assert played == [3]
    _prefilter(recipe, trainer, None, tasks[:2], out)  # other tasks: played again
    assert played == [3, 2]
    (model / "model.safetensors").write_bytes(b"weights-2")  # another starting model: played again
    _prefilter(recipe, trainer, None, tasks[:2], out)
    assert played == [3, 2, 2]
    hotter = dataclasses.replace(recipe, trainer=dataclasses.replace(recipe.trainer, temperature=0.5))
    _prefilter(hotter, trainer, None, tasks[:2], out)  # a setting the rollouts use: played again
    assert played == [3, 2, 2, 2]
    # a resumed run (a checkpoint exists) trains on the tasks it started with, whatever the key says
    (model / "model.safetensors").write_bytes(b"weights-3")
    assert [t.id for t in _prefilter(hotter, trainer, None, tasks[:2], out, resuming=True)] == ["t1"]
    assert played == [3, 2, 2, 2]
