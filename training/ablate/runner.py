"""Run the ablation grid: one short GRPO run per configuration, then a held-out evaluation of its final model.

Each configuration writes ``<out>/<name>/``: ``train/`` (the GRPO run: checkpoints, ``metrics.jsonl``, ``outcomes.jsonl``,
``final/``), ``eval/`` (the eval harness's trajectories and metrics on the held-out ``test`` split) and ``result.json``
(the row of the table). A configuration with a ``result.json`` is skipped, an interrupted one resumes from its last
checkpoint, so the whole grid is resumable. By default each configuration runs in its own process
(``python -m training.ablate.runner <out>/grid.json <name>``), so GPU memory, the colocated vLLM engine included, is
freed between runs; ``--quick`` runs them in-process. :mod:`training.ablate.report` writes the table and the plot.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from simweb_core.settings import sim_web_home
from training.ablate.grid import BASELINE, Variant, select, variant

log = logging.getLogger(__name__)
#: --quick: the tiny random model on CPU, 2 steps per configuration, 2 held-out tasks (checks the plumbing only).
QUICK = {
    "trainer.max_steps": 2,
    "env.max_turns": 1,
    "rollout.max_turn_tokens": 16,
    "trainer.max_completion_length": 64,
    "trainer.save_steps": 1,
}
#: The default grid: short runs of the base recipe, at most this many steps each (override with --set trainer.max_steps=N).
SHORT = {"trainer.max_steps": 50, "trainer.save_steps": 10}


@dataclass(frozen=True)
class AblateConfig:
    """One grid run."""

    recipe: str = help_field("single-gpu", "Base GRPO recipe (training/configs); --quick uses cpu-smoke.")
    quick: bool = help_field(
        False,
        ("Whole grid on CPU with the tiny model, 2 steps each: plumbing only, the numbers mean nothing at that size."),
    )
    configs: tuple[str, ...] = help_field((), "Configurations to run (default: the whole grid).")
    out: str | None = help_field(None, "Output folder (default $SIM_WEB_HOME/runs/ablate/<recipe>[-quick]).")
    overrides: dict[str, Any] = help_field(
        help=(
            "Recipe fields set for every run (--set), by dotted path: model, tasks, trainer.max_steps, index_dir, ..."
        ),
        default_factory=dict,
    )
    eval_n: int = help_field(
        50, "Held-out (test split) tasks evaluated per configuration (0 = no eval); --quick uses 2."
    )
    resume: bool = help_field(True, "Skip configurations that finished; False reruns everything.")
    isolate: bool | None = help_field(
        None, "Run each configuration in its own process (None: yes, except with --quick)."
    )

    def __post_init__(self) -> None:
        if self.eval_n < 0:
            raise ConfigError(f"AblateConfig.eval_n must be >= 0, got {self.eval_n}")
        select(self.configs)  # unknown names fail here, before anything runs

    @property
    def base_recipe(self) -> str:
        """The recipe every run starts from."""
        return "cpu-smoke" if self.quick and self.recipe == "single-gpu" else self.recipe

    @property
    def n_eval(self) -> int:
        """Held-out tasks per configuration."""
        return min(self.eval_n, 2) if self.quick else self.eval_n

    @property
    def subprocesses(self) -> bool:
        """Whether configurations run in child processes."""
        return (not self.quick) if self.isolate is None else self.isolate

    def out_dir(self) -> Path:
        """Where the grid writes."""
        name = self.base_recipe + ("-quick" if self.quick else "")
        return Path(self.out) if self.out else sim_web_home() / "runs" / "ablate" / Path(name).stem


def recipe_of(cfg: AblateConfig, v: Variant) -> Any:
    """The GRPO recipe of one configuration (quick settings, then ``--set``, then the variant's switches)."""
    from training.grpo.recipes import load_recipe

    fields = {
        **(QUICK if cfg.quick else {}),
        **cfg.overrides,
        **v.fields(cfg.quick),
        "output_dir": str(cfg.out_dir() / v.name / "train"),
        "resume": cfg.resume,
        "name": v.name,
    }
    recipe = load_recipe(cfg.base_recipe, fields)
    if cfg.quick:
        return recipe
    # short runs: a recipe's own budget when it is already short (cpu-learn), else SHORT's
    short = {k: min(_get(recipe, k), cap) for k, cap in SHORT.items() if k not in cfg.overrides}
    return load_recipe(cfg.base_recipe, {**fields, **short})


def _get(obj: Any, path: str) -> Any:
    """The value at a dotted path (``trainer.max_steps``)."""
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def run_grid(cfg: AblateConfig) -> list[dict[str, Any]]:
    """Run (or resume) every configuration; returns their results in grid order."""
    out = cfg.out_dir()
    out.mkdir(parents=True, exist_ok=True)
    (out / "grid.json").write_text(json.dumps(asdict(cfg), indent=1, default=str), encoding="utf-8")
    return [run_child(cfg, v) if cfg.subprocesses else run_one(cfg, v) for v in select(cfg.configs)]


def _finished(cfg: AblateConfig, v: Variant) -> dict[str, Any] | None:
    path = cfg.out_dir() / v.name / "result.json"
    if cfg.resume and path.is_file():
        log.warning("ablate: %s already finished, skipped", v.name)
        return {**json.loads(path.read_text(encoding="utf-8")), "skipped": True}
    return None


def run_child(cfg: AblateConfig, v: Variant) -> dict[str, Any]:
    """One configuration in a child process (``python -m training.ablate.runner <out>/grid.json <name>``).

    Raises:
        ConfigError: When the child fails (its output is in ``<out>/<name>/run.log``).
    """
    done = _finished(cfg, v)
    if done:
        return done
    run_dir = cfg.out_dir() / v.name
    run_dir.mkdir(parents=True, exist_ok=True)
    with (run_dir / "run.log").open("a", encoding="utf-8") as logf:
        res = subprocess.run(
            [sys.executable, "-m", "training.ablate.runner", str(cfg.out_dir() / "grid.json"), v.name],
            stdout=logf,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if res.returncode != 0:
        raise ConfigError(
            f"ablation configuration {v.name!r} failed (exit {res.returncode}); see {run_dir / 'run.log'}"
        )
    return {**json.loads((run_dir / "result.json").read_text(encoding="utf-8")), "skipped": False}


def run_one(cfg: AblateConfig, v: Variant) -> dict[str, Any]:
    """One configuration: train, evaluate on held-out tasks, write ``result.json`` (or read it when it exists)."""
    from training.grpo.train import main as train

    done = _finished(cfg, v)
    if done:
        return done
    path = cfg.out_dir() / v.name / "result.json"
    recipe = recipe_of(cfg, v)
    shared = share_prefilter(cfg, recipe)
    if shared and shared.is_file():
        recipe = dataclasses.replace(recipe, prefilter=dataclasses.replace(recipe.prefilter, verdict=str(shared)))
    t0 = time.perf_counter()
    summary = train(recipe)
    if shared and not shared.is_file() and (Path(recipe.output_dir) / "prefilter.json").is_file():
        shared.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(recipe.output_dir) / "prefilter.json", shared)
    train_s = time.perf_counter() - t0
    held = (
        evaluate(recipe, Path(summary["final_model"]), cfg.out_dir() / v.name / "eval", cfg.n_eval)
        if cfg.n_eval
        else {}
    )
    result = summarise(v, recipe, summary, held, train_s, time.perf_counter() - t0)
    path.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return {**result, "skipped": False}


def share_prefilter(cfg: AblateConfig, recipe: Any) -> Path | None:
    """Where the grid keeps the DUPO prefilter verdict of this run's starting point (it may not exist yet).

    The prefilter plays ``prefilter.k`` rollouts per task with the starting model; its verdict depends on the model,
    tasks, seed and rollout settings, never on the switches the grid flips (advantage, truncation, DUPO in the loss, the
    loop). So the first configuration computes it and the others reuse it (``prefilter.verdict``): the same tasks reach
    every configuration, and the filter is paid once per grid. The verdict is keyed by the recipe without those
    switches. Computing the path creates nothing; :func:`run_one` creates the folder when it writes the verdict.

    Returns:
        The grid-level verdict's path, or ``None`` when the recipe has no prefilter.
    """
    if not recipe.prefilter.k:
        return None
    key = asdict(recipe)
    for path in [*BASELINE, "name", "output_dir", "resume", "prefilter.verdict"]:
        *parents, leaf = path.split(".")
        section = key
        for p in parents:
            section = section[p]
        section.pop(leaf)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return cfg.out_dir() / "prefilter" / f"{digest}.json"


def evaluate(recipe: Any, final: Path, out: Path, n: int) -> dict[str, Any]:
    """Held-out pass@1 of a trained model with the eval harness (the recipe's tools, turn cap, turn length and observation
    settings; greedy, so a configuration's number does not depend on sampling luck).

    Args:
        recipe: The run's recipe (index, tasks, tools, budgets).
        final: The saved final model.
        out: The eval harness's output folder (resumable).
        n: Tasks of the ``test`` split.

    Returns:
        The harness's metrics (``pass@1``, ``answered``, ...), or ``{"error": ...}`` when the set has no test split.
    """
    import torch
    from transformers import AutoTokenizer

    from agents.harness import run_eval
    from agents.policies.hf_policy import HFConfig, HFPolicy
    from training.grpo.tiny import load_tiny

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = "bfloat16" if recipe.trainer.bf16 else "float32"
    cfg = recipe.eval_config(
        f"hf:{final}",
        out,
        n=n,
        batch_size=8,
        device=device,
        dtype=dtype,
        threads=recipe.threads,
        progress=False,
        sft=False,
    )
    hf = HFConfig(str(final), device=device, dtype=dtype, batch_size=8, num_threads=recipe.threads)
    model = load_tiny(str(final)) if recipe.model == "tiny" else None
    policy = HFPolicy(
        hf, cfg.agent.sampling, model=model, tokenizer=AutoTokenizer.from_pretrained(str(final)) if model else None
    )
    try:
        return run_eval(cfg, policy).metrics
    except ConfigError as e:  # e.g. a task set without a test split
        log.warning("ablate: no held-out evaluation: %s", e)
        return {"error": str(e)}
    finally:
        policy.close()


def _mean(rows: list[dict[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
    return sum(vals) / len(vals) if vals else None


def summarise(
    v: Variant, recipe: Any, summary: dict[str, Any], held: dict[str, Any], train_s: float, wall_s: float
) -> dict[str, Any]:
    """The table row of one configuration (means over its steps; the final reward over its last fifth of steps)."""
    rows = summary["metrics"]
    last = rows[-max(1, len(rows) // 5) :]
    rounds = summary.get("loop_rounds") or []
    return {
        "name": v.name,
        "switch": v.switch,
        "overrides": v.overrides,
        "steps": summary["steps"],
        "final_reward": _mean(last, "agent/reward_mean"),
        "mean_reward": _mean(rows, "agent/reward_mean"),
        "heldout_pass1": held.get("pass@1"),
        "heldout_answered": held.get("answered"),
        "heldout_tasks": held.get("tasks"),
        "answer_rate": _mean(rows, "agent/answer_rate"),
        "dropped": _mean(rows, "agent/frac_dropped"),
        "zero_variance": _mean(rows, "agent/frac_zero_variance_groups"),
        "dupo_duplicated": sum(r.get("agent/dupo_duplicated_groups", 0) for r in rows),
        "loop_added": sum(r.get("n_added", 0) for r in rounds),
        "loop_retired": sum(r.get("n_retired_solved", 0) + r.get("n_retired_unsolved", 0) for r in rounds),
        "tokens": sum(r.get("agent/generated_tokens", 0) for r in rows),
        "rollouts": summary.get("outcomes"),
        "train_seconds": round(train_s, 1),
        "wall_seconds": round(wall_s, 1),
        "curve": [[r["step"], r.get("agent/reward_mean")] for r in rows],
        "model": recipe.model,
        "seed": recipe.seed,
    }


def config_from_file(path: Path) -> AblateConfig:
    """The :class:`AblateConfig` saved in ``grid.json``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return AblateConfig(**{**data, "configs": tuple(data["configs"])})


if __name__ == "__main__":  # one configuration of a grid, in its own process (run_child)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    run_one(config_from_file(Path(sys.argv[1])), variant(sys.argv[2]))
