"""The GPU check: a few GRPO steps of the ``single-gpu`` recipe on SmolLM2 (bf16), and dense encoding on the GPU.

Run: ``python -m benchmarks.bench_gpu [--steps 3] [--group 4] [--prompts 2] [--turns 4] [--turn-tokens 128]
[--passages 10000] [--model smollm2|PATH|random:SHAPE] [--tokenizer DIR] [--bm25 lucene|lite] [--json PATH]``.

``--model random:SHAPE`` (a key of :data:`SHAPES`) builds a randomly initialised model of that architecture from its
config, with SmolLM2's tokenizer (``--tokenizer``): rollout tokens/s, step time and memory do not depend on the
weights, so the throughput half of the check needs no weights to travel (the GPU kit, docs/install.md).
``--passages 0`` skips the dense encoding (the kit's check is BM25); ``--json`` writes the numbers to a file.

On a machine without CUDA it says so and exits 0. On a CUDA machine it runs the real trainer (``training.grpo.train``:
the env, the rollouts, TRL) with the ``single-gpu`` recipe cut down to a few small steps, so that it ends well within
15 minutes on any recent GPU, and prints per step: reward, generated tokens, rollout tokens/s, the step time split into
generation / tool calls / training; then the peak GPU memory and the dense encoder's passages/s on the GPU.
Generation uses vLLM where it is installed, else TRL's transformers generation (the recipe's fallback, logged);
PythonInterpreter is dropped where its bubblewrap sandbox cannot run (said so).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ensure_sample_index, table

#: Random-init shapes for the throughput half: transformers config fields (Qwen2's published sizes; SmolLM2's own
#: config is the tokenizer folder's ``config.json``).
SHAPES: dict[str, dict[str, Any]] = {
    "smollm2-135m": {},
    "qwen2-0.5b": {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
                   "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
                   "max_position_embeddings": 32768, "rope_theta": 1e6, "tie_word_embeddings": True},
    "qwen2-1.5b": {"model_type": "qwen2", "hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28,
                   "num_attention_heads": 12, "num_key_value_heads": 2, "vocab_size": 151936,
                   "max_position_embeddings": 32768, "rope_theta": 1e6, "tie_word_embeddings": True},
}  # fmt: skip


def random_model(shape: str, tokenizer: str | Path, out: str | Path) -> Path:
    """Write a randomly initialised bf16 model of ``shape`` with the tokenizer of ``tokenizer`` to ``out`` (once).

    Args:
        shape: A key of :data:`SHAPES`.
        tokenizer: A model folder with tokenizer files and a ``config.json`` (SmolLM2's; its config is the
            ``smollm2-135m`` shape and the source of the special token ids).
        out: The folder to write (kept: a second call with the same folder reuses it).

    Returns:
        ``out``, loadable by ``AutoModelForCausalLM.from_pretrained``.

    Raises:
        ValueError: For an unknown shape.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    if shape not in SHAPES:
        raise ValueError(f"unknown random shape {shape!r}: use one of {', '.join(SHAPES)}")
    out = Path(out)
    if (out / "config.json").is_file():
        return out
    base = AutoConfig.from_pretrained(tokenizer)
    fields = dict(SHAPES[shape])
    config = AutoConfig.for_model(fields.pop("model_type"), **fields) if fields else base
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        setattr(config, key, getattr(base, key, None))
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    tmp = out.with_name(out.name + ".tmp")
    model.save_pretrained(tmp)
    AutoTokenizer.from_pretrained(tokenizer).save_pretrained(tmp)
    tmp.rename(out)
    return out


def cuda_status() -> tuple[bool, str]:
    """Whether torch sees a CUDA GPU, and a line saying what it sees (no torch at all: no CUDA either)."""
    try:
        import torch
    except ImportError:
        return False, "no CUDA GPU visible (torch is not installed here): nothing to measure here"

    if not torch.cuda.is_available():
        built = f"built for CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        return False, f"no CUDA GPU visible (torch {torch.__version__}, {built}): nothing to measure here"
    i = torch.cuda.current_device()
    return True, f"{torch.cuda.get_device_name(i)} (cuda:{i}, torch {torch.__version__}, CUDA {torch.version.cuda})"


def step_rows(metrics: list[dict[str, Any]]) -> tuple[list[list[str]], dict[str, float]]:
    """Per-step table rows (step, reward, tokens, tokens/s, step s, generation s, tool s, training s) and the totals."""
    rows, tot = [], {"gen": 0.0, "tool": 0.0, "train": 0.0, "tokens": 0.0}
    for m in metrics:
        gen, tool, tr = (float(m.get(k, 0.0)) for k in ("time/generation", "time/tool", "time/training"))
        tokens = float(m.get("agent/generated_tokens", 0.0))
        for key, value in zip(("gen", "tool", "train", "tokens"), (gen, tool, tr, tokens)):
            tot[key] += value
        rows.append(
            [
                str(m.get("step", len(rows) + 1)),
                f"{m.get('agent/reward_mean', 0.0):.3f}",
                f"{tokens:.0f}",
                f"{tokens / gen:.0f}" if gen else "-",
                f"{gen + tool + tr:.1f}",
                f"{gen:.1f}",
                f"{tool:.2f}",
                f"{tr:.1f}",
            ]
        )
    return rows, tot


def split_line(tot: dict[str, float]) -> str:
    """The totals as shares of the step time, and the mean rollout tokens/s."""
    total = tot["gen"] + tot["tool"] + tot["train"] or 1.0
    rate = tot["tokens"] / tot["gen"] if tot["gen"] else 0.0
    return (
        f"step time: generation {100 * tot['gen'] / total:.1f}%, tool calls {100 * tot['tool'] / total:.2f}%, "
        f"training {100 * tot['train'] / total:.1f}%; rollout {rate:.0f} generated tokens/s"
    )


def gpu_recipe(args: argparse.Namespace, index: Path, out: str) -> Any:
    """The ``single-gpu`` recipe cut down to ``args``' few small steps (no feedback loop, no pre-filter)."""
    from sim_web.protocol import NO_PYTHON_TOOLS
    from sim_web.tools.python.sandbox import sandbox_problem
    from training.grpo.recipes import load_recipe

    tasks = "cpu-learn" if (index / "tasks" / "cpu-learn.jsonl").is_file() else None
    if tasks is None:
        print("note: no cpu-learn tier at this index (sim-web learn --stages tasks): using its SailorFog-QA set")
        ensure_sailorfog(index)
    base = load_recipe("single-gpu")
    tools = base.tools
    problem = sandbox_problem() if "PythonInterpreter" in tools else None
    if problem:
        print(f"note: PythonInterpreter dropped: its sandbox cannot run here ({problem})")
        tools = NO_PYTHON_TOOLS
    return load_recipe(
        "single-gpu",
        {
            "model": args.model,
            "index_dir": str(index),
            "tasks": tasks,
            "env.tools": tools,
            "env.max_turns": args.turns,
            "rollout.max_turn_tokens": args.turn_tokens,
            "trainer.max_steps": args.steps,
            "trainer.num_generations": args.group,
            "trainer.prompts_per_step": args.prompts,
            "trainer.max_completion_length": args.budget,
            "trainer.save_steps": 10_000,
            "loop.enabled": False,
            "prefilter.k": 0,
            "output_dir": out,
            "resume": False,
            "threads": None,
        },
    )


def ensure_sailorfog(index: Path) -> None:
    """Synthesize the index's SailorFog-QA set where it has none (as `make run` does)."""
    from sim_web.env.tasks import default_task_path

    if default_task_path(index).is_file():
        return
    print(f"synthesizing the SailorFog-QA task set of {index} (first run only)...", flush=True)
    subprocess.run([sys.executable, "-m", "sim_web.cli", "synth", "--index", str(index), "--quiet"], check=True)


def run_grpo(args: argparse.Namespace, index: Path) -> dict[str, Any]:
    """The GRPO steps; returns the run's summary plus the generator used and the peak GPU memory."""
    import torch

    from training.grpo.train import main as train

    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as tmp:
        recipe = gpu_recipe(args, index, args.out or tmp)
        use_vllm, _ = recipe.generation()
        print(
            f"GRPO: {recipe.model}, bf16, G={recipe.trainer.num_generations}, {recipe.trainer.prompts_per_step} tasks/step, "
            f"{recipe.trainer.max_steps} steps, generation with {'vLLM (colocated)' if use_vllm else 'transformers'}",
            flush=True,
        )
        torch.cuda.reset_peak_memory_stats()
        summary = train(recipe)
        summary["peak_allocated"] = torch.cuda.max_memory_allocated()
        summary["peak_reserved"] = torch.cuda.max_memory_reserved()
        free, total = torch.cuda.mem_get_info()
        summary["device_used"], summary["device_total"] = total - free, total
        summary["generator"] = "vLLM" if use_vllm else "transformers"
    return summary


def dense_rate(index: Path, n: int) -> tuple[int, float, str]:
    """Encode ``n`` of the index's passages with the dense encoder on the GPU; returns (passages, passages/s, device)."""
    import torch

    from wiki_index.search.dense import DenseConfig, Encoder
    from wiki_index.search.index import WikiIndex

    texts = [text for _, text in WikiIndex.from_dir(index).store.first_passages(n)]
    enc = Encoder(DenseConfig(batch_size=256))
    enc.encode(texts[:512])  # warm-up: kernels, allocator
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    enc.encode(texts)
    torch.cuda.synchronize()
    return len(texts), len(texts) / (time.perf_counter() - t0), f"{enc.where}, {enc.dtype}"


def main(argv: list[str] | None = None) -> int:
    """Run the GPU check; returns 0 (also where there is no CUDA GPU)."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_gpu", description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", default=None)
    ap.add_argument(
        "--model", default="smollm2", help="'smollm2' (the bundled SmolLM2-135M-Instruct) or a model folder"
    )
    ap.add_argument("--steps", type=int, default=3, help="GRPO steps")
    ap.add_argument("--group", type=int, default=4, help="G, rollouts per task")
    ap.add_argument("--prompts", type=int, default=2, help="tasks per step")
    ap.add_argument("--turns", type=int, default=4, help="env turn cap")
    ap.add_argument("--turn-tokens", type=int, default=128, help="most new tokens per assistant turn")
    ap.add_argument("--budget", type=int, default=2048, help="max_completion_length (tool output included)")
    ap.add_argument("--passages", type=int, default=10_000, help="passages to encode for the dense rate (0: skip)")
    ap.add_argument("--tokenizer", default=None, help="for random:SHAPE: a folder with SmolLM2's tokenizer and config")
    ap.add_argument("--bm25", choices=("lucene", "lite"), default=None, help="BM25 engine (default $SIM_WEB_BM25)")
    ap.add_argument("--out", default=None, help="the GRPO run's folder (default: a temporary one)")
    ap.add_argument("--json", default=None, help="also write the numbers to this JSON file")
    args = ap.parse_args(argv)
    if args.bm25:
        from simweb_core.settings import set_env

        set_env("SIM_WEB_BM25", args.bm25)
    ok, line = cuda_status()
    print(f"GPU check: {line}", flush=True)
    if not ok:
        print("run this on a CUDA machine (the bundle brings what it lacks: `sim-web bundle --help`)")
        if args.json:
            Path(args.json).write_text(json.dumps({"device": line, "cuda": False}))
        return 0
    t0 = time.perf_counter()
    index = ensure_sample_index(args.index)
    shape = args.model.removeprefix("random:") if args.model.startswith("random:") else None
    if args.model == "smollm2":
        from agents.models import smollm2_path

        smollm2_path()  # converted once under $SIM_WEB_HOME/models
    if shape:
        from agents.models import smollm2_path
        from simweb_core.settings import sim_web_home

        tok = args.tokenizer or str(smollm2_path())
        args.model = str(random_model(shape, tok, sim_web_home() / "models" / f"random-{shape}"))
        print(f"random-init {shape} (bf16, seed 0) at {args.model}", flush=True)
    summary = run_grpo(args, index)
    rows, tot = step_rows(summary["metrics"])
    print(table(["step", "reward", "gen tokens", "tokens/s", "step s", "generation s", "tool s", "training s"], rows))
    print(split_line(tot))
    gib = 2**30
    print(
        f"peak GPU memory: {summary['peak_allocated'] / gib:.2f} GiB allocated by torch, {summary['peak_reserved'] / gib:.2f} "
        f"GiB reserved; device in use at the end: {summary['device_used'] / gib:.1f} of {summary['device_total'] / gib:.1f} GiB "
        f"(generation: {summary['generator']})"
    )
    numbers: dict[str, Any] = {"device": line, "model": args.model, "generator": summary["generator"], "split": tot}
    numbers.update({k: summary[k] for k in ("peak_allocated", "peak_reserved", "device_used", "device_total")})
    numbers["steps"] = summary["metrics"]
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=1, default=str))
    if args.passages > 0:
        n, rate, where = dense_rate(index, args.passages)
        print(f"dense encoding: {n} passages at {rate:.0f} passages/s on {where}")
        numbers["dense"] = {"passages": n, "per_s": rate, "where": where}
    numbers["seconds"] = time.perf_counter() - t0
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=1, default=str))
    print(f"GPU check done in {numbers['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
