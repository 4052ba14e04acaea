"""Rollouts from an engine other than the trainer's forward pass: the bf16 engine's weights follow the trainer's, and
the trainer multiplies each token's loss by TRL's truncated importance-sampling ratio."""

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from simweb_core.errors import ConfigError  # noqa: E402
from training.grpo import rollout as R  # noqa: E402
from training.grpo.correction import is_ratio  # noqa: E402
from training.grpo.engine import RolloutEngine  # noqa: E402
from training.grpo.tiny import tiny_model  # noqa: E402


def test_is_ratio_truncates_masks_and_sums_per_sequence_like_trl():
    logps = torch.tensor([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    sampled = torch.tensor([[-math.log(2), -math.log(5), float("nan")], [math.log(2), 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])

    def close(mode, low, want):
        return torch.allclose(is_ratio(logps, sampled, mask, mode, low, 3.0), torch.tensor(want))

    assert close("token_truncate", None, [[2.0, 3.0, 1.0], [0.5, 1.0, 1.0]])
    assert close("token_mask", 0.6, [[2.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    assert close("sequence_truncate", None, [[3.0], [0.5]])
    assert close("sequence_mask", None, [[0.0], [0.5]])
    with pytest.raises(ValueError, match="token_truncate"):
        is_ratio(logps, sampled, mask, "tokens")


def make_trainer(tmp_path, **args):
    from training.grpo.tiny import generation_trainer

    model, tok = tiny_model(["search the answer <tool_call> visit"])
    return generation_trainer(model, tok, tmp_path, max_completion_length=16, temperature=1.0, **args)


def batch(trainer, shift):
    """A two-row micro-batch whose sampling logprobs are the trainer's own minus ``shift`` on every token."""
    gen, vocab = torch.Generator().manual_seed(0), trainer.model.config.vocab_size
    prompt = torch.randint(3, vocab, (2, 4), generator=gen)
    completion = torch.randint(3, vocab, (2, 6), generator=gen)
    inputs = {
        "prompt_ids": prompt,
        "prompt_mask": torch.ones_like(prompt),
        "completion_ids": completion,
        "completion_mask": torch.ones_like(completion),
        "tool_mask": torch.tensor([[1, 1, 0, 0, 1, 1], [1, 1, 1, 1, 1, 1]]),
        "advantages": torch.tensor([1.0, -0.5]),
        "num_items_in_batch": torch.tensor(10.0),
    }
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            trainer.model, torch.cat([prompt, completion], 1), torch.ones(2, 10, dtype=torch.long), 6
        )
    inputs["sampling_per_token_logps"] = logps - shift
    return inputs


@pytest.mark.parametrize("shift, factor", [(math.log(2), 2.0), (math.log(5), 3.0), (-math.log(4), 0.25)])
def test_the_trainer_scales_each_tokens_loss_by_the_truncated_ratio(tmp_path, shift, factor):
    trainer = make_trainer(tmp_path, vllm_importance_sampling_mode="token_truncate")
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train; these tests call the loss directly
    plain = trainer._compute_loss(trainer.model, batch(trainer, shift)).item()
    trainer._correct_rollouts = True  # what _generate_and_score_completions sets for rollout_exact=False
    inputs = batch(trainer, shift)
    corrected = trainer._compute_loss(trainer.model, inputs).item()
    assert plain != 0.0 and corrected == pytest.approx(factor * plain, rel=1e-4)
    assert inputs["advantages"].tolist() == [1.0, -0.5]  # the caller's batch is left as it was
    gap = trainer._metrics["train"]["rollout/logprob_gap_abs_mean"][-1]
    assert gap == pytest.approx(abs(shift), rel=1e-4)


def test_the_correction_is_off_for_exact_rollouts_and_when_trl_switch_is_off(tmp_path):
    trainer = make_trainer(tmp_path, vllm_importance_sampling_correction=False)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train; these tests call the loss directly
    plain = trainer._compute_loss(trainer.model, batch(trainer, math.log(2))).item()
    trainer._correct_rollouts = False
    assert trainer._compute_loss(trainer.model, batch(trainer, math.log(2))).item() == pytest.approx(plain)
    assert "rollout/logprob_gap_abs_mean" not in trainer._metrics["train"]


def test_bf16_engine_follows_the_trainers_weights_and_keeps_float32_buffers(tmp_path):
    trainer = make_trainer(tmp_path)
    engine = RolloutEngine("bf16")
    copy = engine.for_call(trainer)
    assert not engine.exact() and RolloutEngine().exact() and RolloutEngine().for_call(trainer) is None
    params = dict(trainer.model.named_parameters())
    for name, p in copy.named_parameters():
        assert p.dtype == torch.bfloat16 and torch.equal(p, params[name].detach().to(torch.bfloat16)), name
    assert all(b.dtype != torch.bfloat16 for b in copy.buffers())
    x = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():  # the copy computes with its own weights (not the trainer's through a bound wrapper)
        mine, theirs = copy(x).logits, trainer.model(x).logits
    assert mine.dtype == torch.bfloat16 and not torch.equal(mine.float(), theirs.float())
    assert torch.allclose(mine.float(), theirs.float(), atol=0.05)
    with torch.no_grad():
        trainer.model.lm_head.weight.add_(1.0)  # an optimiser step
    assert engine.for_call(trainer) is copy  # the same copy, its weights refreshed
    assert torch.equal(copy.lm_head.weight, trainer.model.lm_head.weight.detach().to(torch.bfloat16))
    with pytest.raises(ConfigError, match="trainer, bf16"):
        RolloutEngine("int8")
    with pytest.raises(ConfigError, match="engine"):
        R.RolloutConfig(engine="vllm")
