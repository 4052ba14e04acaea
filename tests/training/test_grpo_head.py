"""The CPU loss head (``training.grpo.head``): the logprobs, entropies and gradients TRL's fused head computes, on the
positions the loss reads only, and the trainer's loss unchanged by the switch."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from trl.trainer.utils import add_fused_lm_head  # noqa: E402

from training.grpo import trainer as trainer_module  # noqa: E402
from training.grpo.head import supported, token_logps  # noqa: E402
from training.grpo.tiny import generation_trainer, tiny_model  # noqa: E402

TEMPERATURE = 0.7


def _batch(vocab: int, rows: int = 3, prompt: int = 5, completion: int = 9):
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(3, vocab, (rows, prompt + completion), generator=gen)
    attention = torch.ones_like(ids)
    attention[0, -3:] = 0  # a padded completion
    attention[1, :2] = 0  # a left-padded prompt
    score = torch.randint(0, 2, (rows, completion), generator=gen) * attention[:, -completion:]
    return ids, attention, score


def _grads(model) -> torch.Tensor:
    return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


@pytest.mark.parametrize("eos_bias", [0.0, 2.0])  # with the tiny model's biased output layer too
def test_scored_logprobs_entropies_and_gradients_are_trls(eos_bias):
    model, _ = tiny_model(["alpha beta gamma delta"], eos_bias=eos_bias)
    add_fused_lm_head(model, temperature=TEMPERATURE, outputs=("log_probs", "entropy"))
    ids, attention, score = _batch(model.config.vocab_size)
    k = score.shape[1]
    labels = ids.masked_fill(attention == 0, -100)
    labels[:, :-k] = -100
    trl = model(input_ids=ids, attention_mask=attention, labels=labels, fused_lm_head=True)
    want, want_entropy = trl.log_probs[:, -k:], trl.entropy[:, -k:]
    (want * score).sum().backward()
    want_grad = _grads(model)
    model.zero_grad()
    got, entropy = token_logps(model, ids, attention, score, TEMPERATURE, entropy=True)
    (got * score).sum().backward()
    on = score.bool()
    assert torch.allclose(got[on], want[on], atol=1e-5) and torch.all(got[~on] == 0)
    assert torch.allclose(entropy[on], want_entropy[on], atol=1e-5) and torch.all(entropy[~on] == 0)
    assert torch.allclose(_grads(model), want_grad, atol=1e-5 * float(want_grad.abs().max()))


def test_the_output_layer_sees_only_the_scored_positions(monkeypatch):
    model, _ = tiny_model(["alpha beta gamma delta"])
    ids, attention, score = _batch(model.config.vocab_size)
    rows = []
    linear = torch.nn.functional.linear
    monkeypatch.setattr(torch.nn.functional, "linear", lambda x, w, b=None: rows.append(x.shape[0]) or linear(x, w, b))
    token_logps(model, ids, attention, score, TEMPERATURE)
    assert rows[-1] == int(score.sum()) < score.numel()  # the last projection is the head's, on the scored rows only
    with pytest.raises(ValueError, match="no state that predicts it"):
        token_logps(model, ids[:, :9], attention[:, :9], score, TEMPERATURE)


def test_models_the_head_does_not_cover_are_left_to_trl():
    model, _ = tiny_model(["alpha beta"])
    assert supported(model)
    model.config.final_logit_softcapping = 30.0
    assert not supported(model)


def _micro_batch(trainer):
    gen, vocab = torch.Generator().manual_seed(0), trainer.model.config.vocab_size
    prompt, completion = torch.randint(3, vocab, (2, 4), generator=gen), torch.randint(3, vocab, (2, 6), generator=gen)
    return {
        "prompt_ids": prompt,
        "prompt_mask": torch.ones_like(prompt),
        "completion_ids": completion,
        "completion_mask": torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]),
        "tool_mask": torch.tensor([[1, 1, 0, 0, 1, 1], [1, 1, 1, 1, 1, 1]]),
        "advantages": torch.tensor([1.0, -0.5]),
        "num_items_in_batch": torch.tensor(8.0),
    }


def test_the_trainers_loss_and_gradient_do_not_depend_on_the_switch(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(trainer_module, "token_logps", lambda *a, **k: calls.append(a[3].sum()) or token_logps(*a, **k))
    model, tok = tiny_model(["search the answer <tool_call> visit"])
    results = {}
    for own in (True, False):
        trainer = generation_trainer(model, tok, tmp_path / str(own), trained_positions_only=own)
        trainer.model.train()
        trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train; the loss is called directly here
        trainer.model.zero_grad()
        loss = trainer._compute_loss(trainer.model, _micro_batch(trainer))
        loss.backward()
        results[own] = (loss.item(), _grads(trainer.model))
    assert [int(c) for c in calls] == [8]  # the switch on: the trainer's own head, on the 8 trained tokens
    assert results[True][0] == pytest.approx(results[False][0], rel=1e-5) and results[True][0] != 0.0
    assert torch.allclose(results[True][1], results[False][1], atol=1e-5 * float(results[False][1].abs().max()))
