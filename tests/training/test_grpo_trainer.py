"""An instrumented GRPO step on a tiny random Llama: the loss really uses the LOO advantages and the drop mask."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from simweb_core.errors import ConfigError  # noqa: E402
from training.grpo.advantage import group_advantages  # noqa: E402
from training.grpo.tiny import tiny_model  # noqa: E402
from training.grpo.trainer import AgentGRPOConfig, AgentGRPOTrainer  # noqa: E402

G = 4
#: (reward, no-answer reason) per sample, two groups of four.
SPECS = [
    (1.0, ""),
    (0.0, "length"),
    (0.0, ""),
    (0.5, "length"),  # sample 1 dropped; sample 3 is a truncated success
    (0.0, ""),
    (1.0, ""),
    (0.0, "rollback"),
    (0.0, ""),
]  # sample 6 dropped
DROPPED = {1, 6}
ENV_MASK = [1, 1, 1, 1, 0, 0, 0, 1, 1]


def env_reward(completions, env_reward, **kwargs):
    return env_reward


def fake_rollout(prompts, trainer):
    """Fixed completions: sample k starts with token 5+k; a tool suffix (mask 0) sits between two assistant turns."""
    eos = trainer.processing_class.eos_token_id
    n = len(prompts)
    assert n == len(SPECS)
    return {
        "prompt_ids": [[7, 8, 9]] * n,
        "completion_ids": [[5 + k, 40, 41, eos, 50, 51, 52, 42, eos] for k in range(n)],
        "logprobs": [[-1.0] * len(ENV_MASK)] * n,
        "env_mask": [list(ENV_MASK)] * n,
        "env_reward": [r for r, _ in SPECS],
        "no_answer": [why for _, why in SPECS],
        "answered": [not why for _, why in SPECS],
        "turns": [2] * n,
        "tool_calls": [{"search": 1}] * n,
        "tool_errors": [0] * n,
        "action_errors": [0] * n,
        "generated_tokens": [sum(ENV_MASK)] * n,
        "rollout_timing": {"generation_seconds": 0.5, "tool_seconds": 0.01},
    }


@pytest.fixture(scope="module")
def tiny():
    return tiny_model(["What is the answer to this question?"])


def make_trainer(tiny, tmp_path, **kw):
    from datasets import Dataset

    model, tok = tiny
    args = AgentGRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=8,
        num_generations=G,
        max_completion_length=16,
        max_steps=1,
        learning_rate=1e-2,
        report_to="none",
        use_cpu=True,
        logging_steps=1,
        save_strategy="no",
        seed=0,
        **{"bf16": False, **kw},
    )
    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": f"question {i}"}]} for i in range(2)])
    return AgentGRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=[env_reward],
        args=args,
        train_dataset=ds,
        rollout_func=fake_rollout,
    )


def test_loss_sees_loo_advantages_and_dropped_samples_have_no_gradient(tiny, tmp_path):
    trainer = make_trainer(tiny, tmp_path)
    seen = []
    original = trainer._compute_loss

    def spy(model, inputs):
        seen.append({k: v.detach().clone() if torch.is_tensor(v) else v for k, v in inputs.items()})
        return original(model, inputs)

    trainer._compute_loss = spy
    trainer.train()
    assert len(seen) == 1
    inputs = seen[0]
    expected = group_advantages(torch.tensor([r for r, _ in SPECS]), G, "loo")
    assert not torch.allclose(expected, group_advantages(torch.tensor([r for r, _ in SPECS]), G, "grpo"))
    sample = [int(row[0]) - 5 for row in inputs["completion_ids"]]  # TRL shuffles the batch: identify rows by token
    assert sorted(sample) == list(range(len(SPECS)))
    assert inputs["advantages"].tolist() == pytest.approx([expected[k].item() for k in sample], abs=1e-6)
    for row, k in enumerate(sample):
        assert inputs["completion_mask"][row].tolist() == [1] * len(ENV_MASK) + [0] * (
            inputs["completion_mask"].shape[1] - len(ENV_MASK)
        )
        want = [0] * len(ENV_MASK) if k in DROPPED else ENV_MASK
        assert inputs["tool_mask"][row, : len(ENV_MASK)].tolist() == want
    assert int(inputs["num_items_in_batch"]) == sum(ENV_MASK) * (len(SPECS) - len(DROPPED))

    # per-sample gradients through TRL's own loss: zero for the dropped samples, non-zero for the others
    model = trainer.model
    model.train()
    for row, k in enumerate(sample):
        part = {key: (v[row : row + 1] if torch.is_tensor(v) and v.dim() >= 1 else v) for key, v in inputs.items()}
        model.zero_grad()
        original(model, part).backward()
        norm = sum(float(p.grad.abs().sum()) for p in model.parameters() if p.grad is not None)
        assert (norm == 0.0) == (k in DROPPED), (k, norm)

    logged = {k: v for h in trainer.state.log_history for k, v in h.items()}
    assert logged["agent/frac_dropped"] == pytest.approx(len(DROPPED) / len(SPECS))
    assert logged["agent/answer_rate"] == pytest.approx(5 / 8)
    assert logged["agent/tool_calls/search"] == pytest.approx(1.0)
    assert logged["agent/frac_zero_variance_groups"] == 0.0
    assert logged["agent/reward_mean"] == pytest.approx(2.5 / 8)
    assert logged["time/generation"] == pytest.approx(0.5) and logged["time/training"] > 0


def test_a_step_with_nothing_to_learn_skips_forward_and_backward(tiny, tmp_path):
    """Every rollout solved: all advantages are 0, so the step neither runs the model nor moves a weight."""

    def solved_rollout(prompts, trainer):
        out = fake_rollout(prompts, trainer)
        return {**out, "env_reward": [1.0] * len(prompts), "no_answer": [""] * len(prompts)}

    trainer = make_trainer(tiny, tmp_path)
    trainer.rollout_func = solved_rollout
    before = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
    calls = []
    hook = trainer.model.register_forward_hook(lambda *a: calls.append(1))
    try:
        trainer.train()
    finally:
        hook.remove()
    assert calls == []  # no forward pass in training (generation is the fake rollout's)
    after = trainer.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    logged = {k: v for h in trainer.state.log_history for k, v in h.items()}
    assert logged["agent/skipped_micro_batches"] == 1.0 and logged["agent/frac_zero_variance_groups"] == 1.0


def test_keep_all_trains_every_sample(tiny, tmp_path):
    trainer = make_trainer(tiny, tmp_path, truncation="keep_all", advantage="grpo")
    seen = []
    original = trainer._compute_loss
    trainer._compute_loss = lambda m, i: seen.append(i) or original(m, i)
    trainer.train()
    assert int(seen[0]["num_items_in_batch"]) == sum(ENV_MASK) * len(SPECS)


def test_config_errors_name_the_fix(tmp_path):
    base = dict(
        output_dir=str(tmp_path), report_to="none", use_cpu=True, num_generations=4, per_device_train_batch_size=4
    )
    with pytest.raises(ConfigError, match="scale_rewards='none'"):
        AgentGRPOConfig(**base, scale_rewards="group")
    with pytest.raises(ConfigError, match="truncation='drop_all_truncated'"):
        AgentGRPOConfig(**base, mask_truncated_completions=True)
    with pytest.raises(ConfigError, match="strict_on_policy"):
        AgentGRPOConfig(**base, num_iterations=2)
    with pytest.raises(ConfigError, match="advantage must be one of"):
        AgentGRPOConfig(**base, advantage="rloo")
    cfg = AgentGRPOConfig(**base)
    assert (cfg.loss_type, cfg.advantage, cfg.truncation, cfg.epsilon_high, cfg.beta) == (
        "dapo",
        "loo",
        "drop_truncated_negatives",
        0.28,
        0.0,
    )
