"""How far a training stage moved a model's weights, in float32 and in the bfloat16 that rollouts and evals use.

A policy-gradient stage at a small learning rate changes almost every float32 weight by a tiny amount. Under bfloat16
(the trainer's CPU autocast, and the evals' weights when ``precision`` is bf16) every weight is rounded to 8 bits of
mantissa first, so a change smaller than half a bfloat16 step changes nothing the model computes. The share of weights
whose bfloat16 rounding changed is how much of a stage's update the evaluated policy actually carries: a GRPO stage
that moved few of them cannot differ much from the model it started from, whatever its train reward did.

The weights are read tensor by tensor from the two folders' ``*.safetensors`` files, so two models never need to be
held whole in memory.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any


class MovementError(ValueError):
    """The two model folders do not hold the same tensors."""


def _tensor_files(folder: Path) -> dict[str, Path]:
    """Tensor name -> the ``*.safetensors`` file of ``folder`` that holds it (one file or shards)."""
    from safetensors import safe_open

    where: dict[str, Path] = {}
    for f in sorted(folder.glob("*.safetensors")):
        with safe_open(str(f), framework="pt") as st:
            where.update({k: f for k in st.keys()})
    return where


def weight_movement(before: str | Path, after: str | Path) -> dict[str, Any]:
    """Compare two checkpoints of one architecture, tensor by tensor.

    Args:
        before: Model folder the stage started from (e.g. the SFT model), with ``*.safetensors`` weights.
        after: Model folder the stage wrote (e.g. ``grpo/final``).

    Returns:
        ``params`` (weights compared), ``changed`` (share whose float32 value changed), ``changed_bf16`` (share whose
        bfloat16 rounding changed), ``mean_abs_delta`` and ``mean_abs_weight`` (float32, over all weights of
        ``before``).

    Raises:
        MovementError: A folder has no ``*.safetensors`` file, or the folders' tensor names or shapes differ.

    >>> import tempfile, torch
    >>> from safetensors.torch import save_file
    >>> a, b = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
    >>> save_file({"w": torch.tensor([1.0, 1.0, 1.0, 1.0])}, str(a / "model.safetensors"))
    >>> save_file({"w": torch.tensor([1.0, 1.0001, 1.5, 1.0])}, str(b / "model.safetensors"))
    >>> m = weight_movement(a, b)
    >>> m["changed"], m["changed_bf16"]
    (0.5, 0.25)
    """
    import torch
    from safetensors import safe_open

    before, after = Path(before), Path(after)
    files_a, files_b = _tensor_files(before), _tensor_files(after)
    if not files_a or not files_b:
        empty = before if not files_a else after
        raise MovementError(f"no *.safetensors weights in {empty}: expected a model folder saved by a trainer")
    if set(files_a) != set(files_b):
        only = sorted(set(files_a) ^ set(files_b))[:3]
        raise MovementError(f"{before} and {after} hold different tensors (e.g. {only}): not one architecture")
    total = changed = changed_bf16 = 0
    abs_delta = abs_weight = 0.0
    with ExitStack() as stack:
        handles = {
            f: stack.enter_context(safe_open(str(f), framework="pt")) for f in {*files_a.values(), *files_b.values()}
        }
        for name in sorted(files_a):
            x, y = handles[files_a[name]].get_tensor(name).float(), handles[files_b[name]].get_tensor(name).float()
            if x.shape != y.shape:
                raise MovementError(f"tensor {name}: shape {tuple(x.shape)} in {before}, {tuple(y.shape)} in {after}")
            total += x.numel()
            changed += int((x != y).sum())
            changed_bf16 += int((x.to(torch.bfloat16) != y.to(torch.bfloat16)).sum())
            abs_delta += float((y - x).abs().sum(dtype=torch.float64))
            abs_weight += float(x.abs().sum(dtype=torch.float64))
    return {
        "params": total,
        "changed": changed / total,
        "changed_bf16": changed_bf16 / total,
        "mean_abs_delta": abs_delta / total,
        "mean_abs_weight": abs_weight / total,
    }
