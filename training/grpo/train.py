"""Train the research agent with GRPO on the simulated web: one recipe, read top to bottom.

    python -m training.grpo.train --recipe cpu-smoke
    sim-web grpo --recipe single-gpu --set model=/ckpt/sft-smollm2
    accelerate launch --config_file training/configs/accelerate-multi-gpu.yaml -m training.grpo.train --recipe multi-gpu

Steps: tasks (the index's SailorFog-QA train split) -> env config (PythonInterpreter in its sandbox) -> model and tokenizer
-> AgentGRPOTrainer with our rollout (the env's ReAct loop, the SFT/eval wire format) and the env's own reward
-> optionally DUPO's pre-RL filter (``prefilter.k``) and the data-policy feedback loop (``loop.enabled``, :mod:`training.loop`)
-> train, resuming from the last checkpoint in the output folder -> save the final model and print the metrics
table. Outputs in ``output_dir``: ``checkpoint-N/`` (every ``save_steps``), ``metrics.jsonl`` (one line per step),
``outcomes.jsonl`` (one line per rollout: task, step, reward, answered, turns, tool calls), ``prefilter.json`` (DUPO's
filter), ``loop/`` (the loop's rounds, fresh tasks and plot), ``final/`` (model + tokenizer, loadable by
``sim-web eval --policy hf:<output_dir>/final``), ``summary.json`` (with the whole recipe under ``config``: tools,
budgets, prompt style), ``recipe.json`` (the recipe that started the folder; a later sitting that differs in what it
trains is refused: :mod:`training.grpo.provenance`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from simweb_core.errors import ConfigError
from simweb_core.hardware import emulated_bf16_warning
from simweb_core.overrides import parse_overrides
from training.grpo import memory, provenance
from training.grpo.config import GRPORecipe
from training.grpo.order import interleave_tiers
from training.grpo.recipes import load_recipe
from training.grpo.step_log import format_table, metrics_callback
from training.grpo.trainer_config import cuda_available

log = logging.getLogger(__name__)


def load_model(recipe: GRPORecipe, texts: list[str]) -> tuple[Any, Any]:
    """The policy and its tokenizer: a tiny random Llama (BPE trained on ``texts``) or a model folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from training.grpo.tiny import tiny_model
    from training.wire import CHATML

    if recipe.model == "tiny":  # random weights, turns of ~8 tokens (eos_bias) so that smoke rollouts step the env
        return tiny_model(texts, seed=recipe.seed, eos_bias=4.0)
    path = recipe.model_path()
    tok = AutoTokenizer.from_pretrained(path)
    if not getattr(tok, "chat_template", None):
        tok.chat_template = CHATML
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    cuda = cuda_available()
    if note := emulated_bf16_warning(recipe.trainer.bf16, cuda, "--set trainer.bf16=false"):
        log.warning("%s", note)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=_weights_dtype(recipe.trainer.bf16, cuda))
    return model, tok


def _weights_dtype(bf16: bool, cuda: bool) -> Any:
    """bf16 on a GPU loads bfloat16 weights; on a CPU the weights stay float32 and bf16 is autocast (the trainer's
    mixed precision, and :mod:`training.grpo.generation` for rollouts): small updates round away in bf16 weights."""
    import torch

    return torch.bfloat16 if bf16 and cuda else torch.float32


def main(recipe: GRPORecipe) -> dict[str, Any]:
    """Run (or resume) one GRPO recipe; returns the summary written to ``summary.json``."""
    import torch
    from transformers.trainer_callback import ProgressCallback

    from sim_web.tools import system_prompt, tool_schema
    from training.grpo.rollout import AgentRollout, env_reward, task_dataset
    from training.grpo.trainer import AgentGRPOTrainer
    from training.loop.outcomes import OutcomeLog
    from wiki_index.search.index import WikiIndex

    t0 = time.perf_counter()
    if recipe.threads:
        torch.set_num_threads(recipe.threads)
    memory.return_large_frees(recipe.heap_return_mib)
    out = recipe.out_dir()
    out.mkdir(parents=True, exist_ok=True)
    recipe.check_sandbox()
    _, fallback = recipe.generation()  # vLLM asked for but missing here: say so once, then use transformers generation
    if fallback:
        log.warning(fallback)
    log.warning("training with tools %s", ", ".join(recipe.tools))

    # 0. a run whose last checkpoint already has every step is finished: save its model, train nothing more
    last = _resume_point(out, recipe.resume)
    if last:  # resume only the run this recipe started
        provenance.check(out, recipe)
    else:
        provenance.record(out, recipe)
    resume_step = int(Path(last).name.rsplit("-", 1)[1]) if last else None
    _truncate_metrics(out / "metrics.jsonl", resume_step or 0)
    if resume_step is not None and resume_step >= recipe.trainer.max_steps:
        return _finished(recipe, last, resume_step, t0)

    # 1. tasks: the train split of the index's task set
    index = WikiIndex.from_dir(recipe.index_dir)
    tasks = train_tasks(recipe, index)
    if not tasks:
        raise ValueError(
            f"no tasks in {recipe.tasks or 'the default set'} (split {recipe.split!r}, tiers {recipe.tiers}) of "
            f"{index.path}"
        )
    # 2. the env every rollout plays in
    env_config = recipe.env_config(str(index.path))
    # 3. the policy
    prompt = system_prompt([tool_schema(t) for t in env_config.tools], env_config.date, style=env_config.prompt)
    model, tok = load_model(recipe, [prompt] + [t.question for t in tasks[:50]])
    # 4. the trainer: our rollout, the env's reward, the recipe's switches
    rollout = AgentRollout(env_config, tasks, recipe.rollout_config())
    trainer = AgentGRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=[env_reward],
        args=recipe.grpo_config(),
        train_dataset=task_dataset(tasks),
        rollout_func=rollout,
        peft_config=_lora(recipe.trainer.lora_r),
    )
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(metrics_callback(out / "metrics.jsonl", recipe.trainer.max_steps))
    # 5. from the last checkpoint when there is one (step 0); the outcome table, DUPO's filter and the loop follow it
    outcomes = OutcomeLog(out / "outcomes.jsonl", persist=trainer.accelerator.is_main_process)
    outcomes.truncate(resume_step or 0)
    trainer.outcome_sink = outcomes
    tasks = _prefilter(recipe, trainer, rollout, tasks, out, resuming=last is not None)
    loop = (
        _attach_loop(recipe, trainer, rollout, tasks, index, out, outcomes, resume_step)
        if recipe.loop.enabled
        else None
    )
    if loop is None:
        order = interleave_tiers(tasks, recipe.seed, recipe.tier_weights) if recipe.balance_tiers else tasks
        trainer.train_dataset = task_dataset(order)
    # 6. train
    trainer.train(resume_from_checkpoint=last)
    # 7. save and summarise
    trainer.save_model(str(out / "final"))
    tok.save_pretrained(str(out / "final"))
    rows = _metric_rows(out / "metrics.jsonl")
    summary = {
        "recipe": recipe.name,
        "config": dataclasses.asdict(recipe),
        "steps": trainer.state.global_step,
        "resumed_from": last,
        "tasks": len(tasks),
        "wall_seconds": round(time.perf_counter() - t0, 1),
        "final_model": str(out / "final"),
        "metrics": rows,
        "outcomes": len(outcomes.rows),
        "loop_rounds": loop.rounds() if loop else None,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary


def train_tasks(recipe: GRPORecipe, index: Any) -> list[Any]:
    """The tasks the recipe trains on: its split of its task set, in its ``task_pool`` and of its ``tiers`` only, the
    first ``n_tasks``.

    Raises:
        ConfigError: When the pool file is missing, holds no ``ids`` list, or keeps no task of the split.
    """
    from sim_web.env.tasks import resolve_tasks

    tasks = resolve_tasks(index, recipe.tasks, recipe.split)
    if recipe.task_pool:
        pool = pool_ids(Path(recipe.task_pool))
        tasks = [t for t in tasks if t.id in pool]
        if not tasks:
            raise ConfigError(f"task_pool {recipe.task_pool} keeps no task of split {recipe.split!r} of {recipe.tasks}")
    return [t for t in tasks if recipe.tiers is None or t.metadata.get("tier") in recipe.tiers][: recipe.n_tasks]


def pool_ids(path: Path) -> set[str]:
    """The ``ids`` of a task-pool file (``{"ids": [...]}``: ``sim-web learn``'s headroom and RL pools).

    Raises:
        ConfigError: When the file is missing or holds no ``ids`` list.
    """
    try:
        ids = json.loads(path.read_text(encoding="utf-8"))["ids"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"task_pool {path} must be a JSON file with an 'ids' list of task ids: {e}") from None
    return {str(i) for i in ids}


def _metric_rows(path: Path) -> list[dict[str, Any]]:
    """The per-step rows of ``metrics.jsonl`` (none when it does not exist yet)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _truncate_metrics(path: Path, step: int) -> None:
    """Drop the metric lines logged after ``step`` (a run killed after its last checkpoint logs them again)."""
    rows = _metric_rows(path)
    kept = [r for r in rows if r.get("step", 0) <= step]
    if len(kept) < len(rows):
        path.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")


def _finished(recipe: GRPORecipe, last: str, step: int, t0: float) -> dict[str, Any]:
    """The summary of a run whose checkpoint ``last`` already holds its last step (killed after it, or resumed to
    evaluate): the checkpoint's model files become ``final/`` and nothing is trained (resuming a trainer at its last
    step would train one more)."""
    log.warning("%s already holds the last step (%d): nothing to train; saving its model as final/", last, step)
    out = recipe.out_dir()
    final = out / "final"
    shutil.rmtree(final, ignore_errors=True)
    state = ("optimizer.pt", "scheduler.pt", "rng_state*.pth", "trainer_state.json")
    shutil.copytree(last, final, ignore=shutil.ignore_patterns(*state))
    old_path = out / "summary.json"
    old = json.loads(old_path.read_text(encoding="utf-8")) if old_path.exists() else {}
    summary = {
        **old,
        "recipe": recipe.name,
        "config": dataclasses.asdict(recipe),
        "steps": step,
        "resumed_from": last,
        "wall_seconds": round(time.perf_counter() - t0, 1),
        "final_model": str(final),
        "metrics": _metric_rows(out / "metrics.jsonl"),
    }
    old_path.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary


def _resume_point(out: Path, resume: bool) -> str | None:
    """The last checkpoint in ``out`` to resume from; starting over removes the run's old checkpoints and logs,
    which would otherwise mix with the new ones. The pre-filter verdict stays: :func:`_prefilter` reuses it only
    when its content key still matches."""
    from transformers.trainer_utils import get_last_checkpoint

    last = get_last_checkpoint(str(out)) if resume else None
    if last:
        log.warning("resuming from %s", last)
        return last
    for old in [*out.glob("checkpoint-*"), out / "loop"]:
        shutil.rmtree(old, ignore_errors=True)
    for name in ("metrics.jsonl", "outcomes.jsonl"):
        (out / name).unlink(missing_ok=True)
    return None


def _lora(r: int) -> Any:
    """A LoRA config of rank ``r`` on every linear layer (alpha 2r), or None for full fine-tuning when ``r`` is 0."""
    if not r:
        return None
    from peft import LoraConfig

    return LoraConfig(r=r, lora_alpha=2 * r, target_modules="all-linear", task_type="CAUSAL_LM")


def _prefilter(
    recipe: GRPORecipe, trainer: Any, rollout: Any, tasks: list[Any], out: Path, resuming: bool = False
) -> list[Any]:
    """DUPO's pre-RL filter (``prefilter.k`` rollouts per task). A resumed run keeps its saved verdict; a run that
    starts over reuses it only when its content key (model weights, tasks, settings) matches, else plays again."""
    pre = recipe.prefilter
    if not pre.k:
        return tasks
    from training.grpo.dupo import prefilter_tasks, verdict_key

    path = out / "prefilter.json"
    saved = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    if saved is None or not resuming:  # a resumed run keeps its verdict without hashing the weights
        key = verdict_key(recipe, [t.id for t in tasks])
        if saved is None and pre.verdict:
            saved = {**json.loads(Path(pre.verdict).read_text(encoding="utf-8")), "key": key, "from": pre.verdict}
            path.write_text(json.dumps(saved, indent=1), encoding="utf-8")
            log.warning("DUPO prefilter: reusing the verdict %s", pre.verdict)
        if saved is not None and not (pre.verdict or saved.get("key") == key):
            saved = None  # a stale verdict: another model, other tasks or settings
    if saved is not None:
        dropped = set(saved["dropped"])
        return [t for t in tasks if t.id not in dropped]
    solved = recipe.solved_reward if pre.solved_reward is None else pre.solved_reward
    kept, report = prefilter_tasks(trainer, rollout, tasks, pre.k, solved, recipe.per_device_batch)
    if trainer.accelerator.is_main_process:
        path.write_text(json.dumps({**report, "key": key}, indent=1), encoding="utf-8")
    return kept


def _attach_loop(
    recipe: GRPORecipe,
    trainer: Any,
    rollout: Any,
    tasks: list[Any],
    index: Any,
    out: Path,
    outcomes: Any,
    resume_step: int | None,
) -> Any:
    """The feedback loop: a slot dataset over a task pool, fresh tasks from the synthesizer, a round every ``loop.every`` steps."""
    from sim_web.env.tasks import resolve_tasks
    from training.loop import FeedbackLoop, SynthSource, TaskPool

    held_out = []
    if recipe.split == "train":
        try:
            held_out = resolve_tasks(index, recipe.tasks, "test")
        except Exception as e:  # noqa: BLE001 - a set without a test split holds nothing out
            log.info("loop: no held-out split to protect (%s)", e)
    cfg = recipe.loop_config()
    source = SynthSource(
        index.path,
        max_nodes=cfg.synth_max_nodes,
        oversample=cfg.synth_oversample,
        tiers=cfg.tiers,
        k=recipe.env.search_results,
        exclude_questions={t.question for t in [*tasks, *held_out]},
        exclude_answers={a for t in held_out for a in (t.answer, *t.aliases)},
    )
    pool = TaskPool(tasks)
    loop = FeedbackLoop(
        pool,
        out / "loop",
        outcomes,
        cfg,
        source,
        seed=recipe.seed,
        on_added=rollout.add_tasks,
        persist=trainer.accelerator.is_main_process,
    )
    loop.start(resume_step)
    trainer.train_dataset = pool.dataset()
    trainer.task_pool = pool
    trainer.add_callback(loop.callback())
    return loop


def recipe_from_args(argv: list[str] | None = None) -> GRPORecipe:
    """``--recipe NAME`` plus ``--set key=value`` overrides (the ``sim-web grpo`` options)."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m training.grpo.train", description="GRPO on the simulated web.")
    add_arguments(p)
    return recipe_from_namespace(p.parse_args(argv))


def add_arguments(p: Any) -> None:
    """The options of ``sim-web grpo`` and ``python -m training.grpo.train``."""
    p.add_argument(
        "--recipe",
        default="cpu-smoke",
        help="recipe name under training/configs (cpu-smoke, cpu-learn, single-gpu, "
        "multi-gpu) or a YAML path (default cpu-smoke)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a recipe field by its dotted path (repeatable), e.g. --set trainer.max_steps=5 "
        "--set model=/ckpt/sft --set env.tools=search,visit",
    )
    p.add_argument("--out", default=None, help="output folder (default $SIM_WEB_HOME/runs/grpo/<recipe>)")
    p.add_argument("--no-resume", action="store_true", help="start over instead of resuming from the last checkpoint")


def recipe_from_namespace(args: Any) -> GRPORecipe:
    """The recipe named by parsed ``add_arguments`` options."""
    overrides = parse_overrides(args.set, target=GRPORecipe)
    if args.out:
        overrides["output_dir"] = args.out
    if args.no_resume:
        overrides["resume"] = False
    return load_recipe(args.recipe, overrides)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    result = main(recipe_from_args())
    print(format_table(result["metrics"]))
    sys.exit(0)
