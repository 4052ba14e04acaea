"""``cpu-learn``: does training in the simulator make an agent better? Base model -> SFT -> GRPO on held-out tasks.

One script, top to bottom (cleanrl style), each stage resumable from the run folder:

1. ``tasks``: the ``lookup``, ``bridge`` and ``intersection`` tiers (:mod:`training.synth.tiers`) in their question
   forms, gated at the recipe's results per search, written to ``<index>/tasks/<recipe>.jsonl`` (the GRPO recipe's
   ``tasks``), split answer-disjoint across the tiers;
2. ``base``, ``rule``, ``script``, ``prior``, ``oracle``: the base model, the zero-parameter baselines (the one-search
   rule, the strongest per-tier script :mod:`agents.policies.scripts`, the answer prior) and the search-only oracle
   (the ceiling) on the held-out tasks (greedy), through the eval harness;
3. ``demos``: the search-only oracle on the train split (``demo_policy``: plan the hops, search, then answer from
   the results);
4. ``sft``: rejection sampling of those episodes (:mod:`training.sft.collect`) and SFT (:mod:`training.sft.train`);
5. ``eval-sft``: the SFT model on the same held-out tasks;
6. ``grpo``: :class:`~training.grpo.trainer.AgentGRPOTrainer` from the SFT model on the train split only, once per
   seed of ``grpo.seeds``;
7. ``eval-grpo``: each GRPO model on the same held-out tasks;
8. ``sailorfog``, ``handwritten``: the rules, the oracle, SFT and GRPO on the held-out SailorFog-QA questions of
   one level (the distance to the real goal) and on the hand-written questions;
9. ``forms``: the script, SFT and GRPO on the first held-out bridge questions asked in every form each has
   (:mod:`training.learn.forms_eval`): seen and unseen forms compared on the same tasks;
10. ``report``: pass@1 per stage and tier with 95% intervals, paired tests between stages, the seeds' spread,
   ``learning.png`` (:mod:`training.learn.report`).

Every eval is :meth:`GRPORecipe.eval_config <training.grpo.config.GRPORecipe.eval_config>` of the run's recipe (its
turn cap, turn length and whole ``env`` section: prompt style, tools, results per search, snippet and response lengths,
retrieval mode, reward), greedy, so each model is evaluated with what it was trained on; the evals on task sets of
their own (SailorFog-QA, hand-written questions) leave out a call cost, which pass@1 does not read and whose free
calls need records that count their oracle searches. Held-out tasks are never trained on.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any

from simweb_core.errors import ConfigError
from training.learn.config import LearnConfig
from training.learn.environment import environment
from training.learn.rl_pool import grpo_task_pool, write_rl_pool

log = logging.getLogger(__name__)


def grpo_recipe(cfg: LearnConfig, task_path: Path, model: str, seed: int | None = None, folder: str = "grpo") -> Any:
    """The GRPO recipe of the run: the recipe file, its overrides, and this run's model, tasks, seed and folder."""
    from training.grpo.recipes import load_recipe

    over = {
        "model": model,
        "tasks": str(task_path),
        "index_dir": cfg.index_dir,
        "output_dir": str(cfg.out_dir() / folder),
        "seed": cfg.seed if seed is None else seed,
        "trainer.bf16": cfg.bf16(),
        **({"threads": cfg.threads} if cfg.threads else {}),
        **({"task_pool": str(pool)} if (pool := grpo_task_pool(cfg.out_dir(), cfg.rl_share, cfg.grpo.pool)) else {}),
        **cfg.grpo.overrides,
    }
    return load_recipe(cfg.recipe, over)


def task_path(cfg: LearnConfig, index_path: Path) -> Path:
    """``<index>/tasks/<recipe>.jsonl``: the task set every stage uses (the GRPO recipe's ``tasks``)."""
    return index_path / "tasks" / f"{cfg.recipe}.jsonl"


def stage_tasks(cfg: LearnConfig, index_path: Path, k: int, snippet_chars: int) -> Path:
    """Write (once) the tiers' task set and cards; a set written with other settings, or by another version of the
    fact reading (``FACTS_VERSION``), is an error naming the fix.

    With ``split="answer"`` the held-out split is drawn over the tiers together, so that no held-out answer of any
    tier is a train answer of any tier; the records are written in a seeded order that mixes the tiers, so the first
    ``eval_n`` held-out tasks are a sample of both. Beside the file, ``<recipe>.forms.jsonl`` holds every held-out
    question in each of its forms (:mod:`training.learn.forms_eval`); a file written before it is generated again
    (seeded, the same records, checked) to add it.
    """
    import hashlib

    from training.learn.forms_eval import forms_file, held_out_variants, write_forms
    from training.synth.outputs.write import sibling, write_jsonl
    from training.synth.tiers.facts import FACTS_VERSION
    from training.synth.tiers.forms import FORMS, FORMS_VERSION, form_card, settle_forms
    from training.synth.tiers.generate import TierConfig, generate_tier, tier_card
    from training.synth.tiers.split import answer_disjoint_split, answer_overlap

    path = task_path(cfg, index_path)
    wanted = {
        "tiers": list(cfg.tiers),
        "k": k,
        "seed": cfg.seed,
        "lookup_test_fraction": cfg.lookup_test_fraction,
        "bridge_test_fraction": cfg.bridge_test_fraction,
        **({"split": cfg.split, "snippet_chars": snippet_chars} if cfg.split == "answer" else {}),
        "facts_version": FACTS_VERSION,
        **({"intersection_test_fraction": cfg.intersection_test_fraction} if "intersection" in cfg.tiers else {}),
        "forms_version": FORMS_VERSION,
        **({"forms": list(cfg.forms)} if cfg.forms != FORMS else {}),
        "unseen_forms": list(cfg.unseen_forms),
    }
    card_path = sibling(path, ".card.json")
    if path.is_file() and card_path.is_file():
        made = json.loads(card_path.read_text(encoding="utf-8")).get("settings")
        if made != wanted:
            raise ConfigError(
                f"{path} was synthesised with {made}, this run asks for {wanted}: delete it (and the runs "
                f"evaluated on it) or run with the settings it was made with"
            )
        if forms_file(path).is_file():
            return path
        # a task file written before the forms stage: generated again (seeded: the same records) for its side file
    records, cards = [], {}
    fracs = {
        "lookup": cfg.lookup_test_fraction,
        "bridge": cfg.bridge_test_fraction,
        "intersection": cfg.intersection_test_fraction,
    }
    for tier in cfg.tiers:
        tcfg = TierConfig(
            tier=tier,
            n=10_000,
            k=k,
            seed=cfg.seed,
            test_fraction=fracs[tier],
            snippet_chars=snippet_chars,
            split="id",
            forms=cfg.forms,
            unseen_forms=cfg.unseen_forms,
            settle=False,
        )
        recs, rep = generate_tier(index_path, tcfg)
        records += recs
        cards[tier] = (recs, rep)
    if cfg.split == "answer":
        answer_disjoint_split(records, {t: fracs[t] for t in cfg.tiers}, cfg.seed)
        records.sort(key=lambda r: hashlib.sha1(f"{cfg.seed}|{r['id']}".encode()).hexdigest())
    variants = held_out_variants(records)
    records = settle_forms(records, cfg.unseen_forms, cfg.seed)  # a train task is only ever in a seen form
    written = path.is_file() and card_path.is_file()
    write_forms(path, records, variants, cfg.unseen_forms, check=written)
    if written:
        return path
    kept = {id(r) for r in records}
    cards = {t: ([r for r in recs if id(r) in kept], rep) for t, (recs, rep) in cards.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(records, path)
    card = {
        "settings": wanted,
        "answer_overlap": answer_overlap(records),
        "forms": form_card(records),
        "tiers": {t: tier_card(recs, rep) for t, (recs, rep) in cards.items()},
    }
    card_path.write_text(json.dumps(card, indent=1, ensure_ascii=False), encoding="utf-8")
    log.warning("tasks: %s (%s; %s)", path, {t: c["splits"] for t, c in card["tiers"].items()}, card["answer_overlap"])
    return path


def evaluate(cfg: LearnConfig, recipe: Any, policy: str, name: str, split: str = "test") -> Path:
    """Run (or resume) one greedy eval with the recipe's turn limits and observation settings; returns its folder."""
    from agents.harness import run_eval

    out = cfg.out_dir() / name
    ecfg = recipe.eval_config(
        policy,
        out,
        split=split,
        n=cfg.eval_n if split == "test" else None,
        skip=cfg.eval_skip if split == "test" else 0,
        **_eval_settings(cfg),
    )
    t = time.perf_counter()
    res = run_eval(ecfg)
    if res.failures:
        raise RuntimeError(f"{len(res.failures)} episodes of {name} failed (rerun to resume them): {res.failures[:2]}")
    _note(cfg, name, {"pass@1": res.metrics["pass@1"], "seconds": round(time.perf_counter() - t, 1)}, policy)
    return out


def _eval_settings(cfg: LearnConfig) -> dict[str, Any]:
    """How every eval of the run executes (batch, threads, weights dtype, progress bar); not what it evaluates."""
    return {
        "batch_size": cfg.eval_batch_size,
        "threads": cfg.threads,
        "dtype": "bfloat16" if cfg.bf16() else "float32",
        "progress": True,
    }


def stage_sft(cfg: LearnConfig, demos: Path, max_turns: int) -> Path:
    """Rejection-sample the demonstrations into a dataset and fine-tune the base model on it."""
    from transformers import AutoTokenizer

    from training.learn.sft_data import sft_demos
    from training.sft.dataset import build_dataset, dataset_card, save
    from training.sft.train import SFTRunConfig, resolve_model, train

    out, data = cfg.out_dir() / "sft", cfg.out_dir() / "sft-data"
    if (out / "sft_run.json").is_file():
        return out
    if not (data / "README.md").is_file():
        result = sft_demos(cfg, demos, max_turns)
        model = resolve_model(cfg.model)
        ds = build_dataset(result.kept, AutoTokenizer.from_pretrained(str(model)), result.sources[0]["tools"])
        save(ds, data, dataset_card(ds, result, model.name, None), result.stats.table())
    t = time.perf_counter()
    train(
        SFTRunConfig(
            dataset=str(data),
            model=cfg.model,
            out=str(out),
            lora=not cfg.sft.full,
            learning_rate=cfg.sft.learning_rate,
            epochs=cfg.sft.epochs,
            batch_size=cfg.sft.batch_size,
            grad_accum=cfg.sft.grad_accum,
            bf16=cfg.bf16(),
            seed=cfg.seed if cfg.sft.seed is None else cfg.sft.seed,
            threads=cfg.threads,
            save_steps=10,
        )
    )
    _note(cfg, "sft", {"seconds": round(time.perf_counter() - t, 1), "bf16": cfg.bf16(), "seed": cfg.sft.seed})
    return out


def stage_grpo(cfg: LearnConfig, recipe: Any) -> Path:
    """GRPO from the SFT model on the train split (resumes from its last checkpoint)."""
    from training.grpo.provenance import check
    from training.grpo.train import main as grpo

    final = recipe.out_dir() / "final"
    if (recipe.out_dir() / "summary.json").is_file() and (final / "config.json").is_file():
        check(recipe.out_dir(), recipe)  # a finished run is reused only for the recipe that trained it
        return final
    t = time.perf_counter()
    summary = grpo(recipe)
    secs = round(time.perf_counter() - t, 1)
    _note(cfg, recipe.out_dir().name, {"steps": summary["steps"], "seconds": secs, "bf16": recipe.trainer.bf16})
    return final


def stage_sailorfog(cfg: LearnConfig, recipe: Any, index_path: Path) -> Path:
    """Evaluate the rule, the oracle and the trained models on the held-out SailorFog-QA tasks of one level.

    The tasks are the index's synthesized set (``sim-web synth``), held-out split, ``cfg.sailorfog_level`` only,
    copied to ``<run>/sailorfog-<level>.jsonl``; each policy's run is ``<run>/sailorfog-<name>/``. The recipe's
    observation settings apply, with the turn cap ``cfg.sailorfog_turns``.
    """
    source = index_path / "tasks" / "sailorfog_qa.jsonl"
    if not source.is_file():
        raise ConfigError(f"the sailorfog stage needs {source}: run `sim-web synth` first (make learn does)")
    out = cfg.out_dir()
    tasks = out / f"sailorfog-{cfg.sailorfog_level}.jsonl"
    if not tasks.is_file():
        keep = [
            line
            for line in source.read_text(encoding="utf-8").splitlines()
            if line.strip()
            and (r := json.loads(line)).get("split") == "test"
            and (r.get("difficulty") or {}).get("level") == cfg.sailorfog_level
        ]
        if not keep:
            raise ConfigError(f"{source} has no held-out tasks of level {cfg.sailorfog_level!r}")
        tasks.write_text("\n".join(keep) + "\n", encoding="utf-8")
    _eval_set(cfg, recipe, str(tasks), "sailorfog", oracle=True)
    return tasks


def stage_handwritten(cfg: LearnConfig, recipe: Any) -> None:
    """Evaluate the rules and the trained models on the bundled hand-written questions (``--tasks handwritten``),
    written by reading the sample's pages, not by the generator: the closest thing here to a user's own questions.
    The oracle is left out (the records carry no clue path). Runs ``<run>/handwritten-<name>/``."""
    _eval_set(cfg, recipe, "handwritten", "handwritten", oracle=False)


def _eval_set(cfg: LearnConfig, recipe: Any, tasks: str, prefix: str, oracle: bool) -> None:
    """The rules, the oracle (when ``oracle``), SFT and the first GRPO model on the held-out tasks of ``tasks``,
    with the recipe's observation settings and the turn cap ``cfg.sailorfog_turns``; runs ``<run>/<prefix>-<name>/``."""
    from agents.harness import run_eval

    out = cfg.out_dir()
    first = out / cfg.grpo_runs()[0][1] / "final"
    policies = [("rule", "rule:first-title"), ("script", "rule:script")]
    policies += [("oracle", "oracle:search")] if oracle else []
    models = [("sft", out / "sft"), (cfg.grpo.name, first)]
    policies += [(name, f"hf:{path}") for name, path in models if (path / "config.json").is_file()]
    if not (out / "sft" / "config.json").is_file():
        log.warning("%s stage: no SFT model in %s yet; only the baselines are evaluated", prefix, out / "sft")
    for name, policy in policies:
        ecfg = recipe.eval_config(policy, out / f"{prefix}-{name}", **_eval_settings(cfg))
        agent = dataclasses.replace(ecfg.agent, max_llm_calls=cfg.sailorfog_turns)
        # pass@1 is the answer's score alone; a call cost free up to each task's oracle searches needs records that
        # carry them, which hand-written questions do not, so these sets are scored without the training cost
        reward = dataclasses.replace(ecfg.env.reward, call_cost=0.0, call_penalty=0.0, free_calls="none")
        env = dataclasses.replace(ecfg.env, reward=reward)
        t = time.perf_counter()
        res = run_eval(dataclasses.replace(ecfg, tasks=tasks, agent=agent, env=env))
        if res.failures:
            raise RuntimeError(f"{len(res.failures)} episodes of {prefix}-{name} failed (rerun to resume them)")
        secs = round(time.perf_counter() - t, 1)
        _note(cfg, f"{prefix}-{name}", {"pass@1": res.metrics["pass@1"], "seconds": secs}, policy)


def _shared_verdict(recipe: Any, first: Path) -> Any:
    """``recipe`` with the first seed's DUPO verdict: every seed starts from the same SFT model on the same tasks, so
    the tasks it always solves are dropped once, not re-played per seed."""

    verdict = first / "prefilter.json"
    if recipe.out_dir() == first or not recipe.prefilter.k or recipe.prefilter.verdict or not verdict.is_file():
        return recipe
    return dataclasses.replace(recipe, prefilter=dataclasses.replace(recipe.prefilter, verdict=str(verdict)))


def _note(cfg: LearnConfig, stage: str, values: dict[str, Any], policy: str | None = None) -> None:
    """Record a finished stage's numbers in ``stages.json``; its ``seconds`` add up over the sittings that ran it (a
    resumed eval's second sitting adds its own time instead of replacing the first's). An eval of a model
    (``policy`` ``hf:...``) also records whether its weights were bfloat16."""
    if policy and policy.startswith("hf:"):
        values = {**values, "bf16": cfg.bf16()}
    path = cfg.out_dir() / "stages.json"
    done = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    before = done.get(stage, {}).get("seconds", 0.0)
    done[stage] = {**values, **({"seconds": round(before + values["seconds"], 1)} if "seconds" in values else {})}
    path.write_text(json.dumps(done, indent=1), encoding="utf-8")


def main(cfg: LearnConfig) -> Path:
    """Run the stages of ``cfg`` in order; returns the run folder (``report.md`` and ``learning.png`` inside)."""
    from agents.models import resolve_hf_path
    from training.learn.report import write_report
    from wiki_index.search.index import WikiIndex

    out = cfg.out_dir()
    out.mkdir(parents=True, exist_ok=True)
    with (out / "invocations.jsonl").open("a", encoding="utf-8") as f:  # every sitting's settings, stages included
        f.write(json.dumps({**dataclasses.asdict(cfg), "bf16": cfg.bf16(), "environment": environment()}, default=list))
        f.write("\n")
    index_path = WikiIndex.from_dir(cfg.index_dir).path
    base = resolve_hf_path(cfg.model)
    recipe = grpo_recipe(cfg, task_path(cfg, index_path), str(out / "sft"))
    if "tasks" in cfg.stages:  # gated at the results per search, and the snippets, the policy will see
        stage_tasks(cfg, index_path, recipe.env.search_results, recipe.env.sim.snippet_chars)
    if cfg.rl_share:
        write_rl_pool(task_path(cfg, index_path), out, cfg.rl_share, cfg.seed)
    if "base" in cfg.stages:
        evaluate(cfg, recipe, f"hf:{base}", "eval-base")
    baselines = (
        ("rule", "rule:first-title"),
        ("script", "rule:script"),
        ("prior", "prior"),
        ("oracle", "oracle:search"),
    )
    for stage, policy in baselines:
        if stage in cfg.stages:  # the baselines and the ceiling, on the same held-out tasks
            evaluate(cfg, recipe, policy, f"eval-{stage}")
    if "demos" in cfg.stages:
        evaluate(cfg, recipe, cfg.demo_policy, "demos", split="train")
    if "sft" in cfg.stages:
        stage_sft(cfg, out / "demos", recipe.env.max_turns)
    if "eval-sft" in cfg.stages:
        evaluate(cfg, recipe, f"hf:{out / 'sft'}", "eval-sft")
    if "headroom" in cfg.stages:  # what sampling finds that greedy misses, before RL; the band pool
        from training.learn.headroom import stage_headroom

        stage_headroom(cfg, recipe, out / "sft", _eval_settings(cfg))
    for seed, folder, name in cfg.grpo_runs():  # each seed trains, then is evaluated, before the next starts
        seeded = grpo_recipe(cfg, task_path(cfg, index_path), str(out / "sft"), seed, folder)
        if "grpo" in cfg.stages:
            stage_grpo(cfg, _shared_verdict(seeded, out / cfg.grpo_runs()[0][1]))
        if "eval-grpo" in cfg.stages:
            evaluate(cfg, seeded, f"hf:{seeded.out_dir() / 'final'}", name)
    if "sailorfog" in cfg.stages:
        stage_sailorfog(cfg, recipe, index_path)
    if "handwritten" in cfg.stages:
        stage_handwritten(cfg, recipe)
    if "forms" in cfg.stages:  # the same held-out bridge questions in every form: seen and unseen, paired
        from training.learn.forms_eval import stage_forms

        for name, policy, metrics, secs in stage_forms(cfg, recipe, task_path(cfg, index_path), _eval_settings(cfg)):
            _note(cfg, name, {"pass@1": metrics["pass@1"], "seconds": secs}, policy)
    if "report" in cfg.stages:
        write_report(out, out / cfg.grpo_runs()[0][1])
    return out
