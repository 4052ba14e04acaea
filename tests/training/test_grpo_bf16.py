"""bf16 GRPO on a CPU: float32 weights, and both the loss and the rollouts' sampling under a bfloat16 autocast."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from tests.training.test_grpo_trainer import make_trainer  # noqa: E402
from training.grpo.generation import generate  # noqa: E402
from training.grpo.tiny import tiny_model  # noqa: E402
from training.grpo.train import _weights_dtype  # noqa: E402


def test_cpu_bf16_keeps_float32_weights_and_a_gpu_loads_bfloat16():
    assert _weights_dtype(True, cuda=False) == torch.float32
    assert _weights_dtype(True, cuda=True) == torch.bfloat16
    assert _weights_dtype(False, cuda=True) == torch.float32


@pytest.mark.parametrize("bf16", [False, True])
def test_a_bf16_step_trains_and_samples_under_autocast(bf16, autocasts, tmp_path):
    model, tok = tiny_model(["What is the answer to this question?"])
    trainer = make_trainer((model, tok), tmp_path, bf16=bf16)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    trainer.train()
    trained = list(autocasts)
    rows = generate(trainer, [[5, 6, 7]], [4], seed=0)
    assert len(rows[0][0]) >= 1 and len(rows[0][0]) == len(rows[0][1])
    assert (torch.bfloat16 in trained) == bf16  # the loss's forward
    assert (torch.bfloat16 in autocasts[len(trained) :]) == bf16  # the rollout's sampling
    after = trainer.model.state_dict()
    assert all(v.dtype == torch.float32 for v in after.values())
    assert any(not torch.equal(before[k], after[k]) for k in before)
