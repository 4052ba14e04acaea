"""``LearnConfig``: the ``cpu-learn`` recipe end to end (tasks, evals, SFT, GRPO), one field per choice.

The GRPO stage's own fields live in its recipe file (``training/configs/cpu-learn.yaml``, a :class:`GRPORecipe`), so
``sim-web grpo --recipe cpu-learn`` and ``sim-web ablate --recipe cpu-learn`` train exactly as this pipeline does; the
turn cap, turn length and observation settings (its ``env`` and ``rollout`` sections: prompt style, results per search,
snippet and response lengths, tools) are read from that file too, so the evals (and the SFT demonstrations' turn cap) match what the policy trains on.

Example:
    >>> LearnConfig(lookup_test_fraction=0.5).stages[0]
    'tasks'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from simweb_core.settings import sim_web_home
from training.synth.tiers.forms import FORMS, forms_problem

PRECISIONS = ("auto", "bf16", "float32")
DEMO_POLICIES = ("oracle:plan", "oracle:joint", "oracle:quote", "oracle:search")


def native_bf16() -> bool:
    """Whether bfloat16 runs natively here: on the CUDA GPU if there is one (Ampere or later), else on this CPU."""
    import torch

    from simweb_core.hardware import cpu_has_native_bf16

    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    return cpu_has_native_bf16()


STAGES = (
    "tasks",
    "base",
    "rule",
    "script",
    "prior",
    "oracle",
    "demos",
    "sft",
    "eval-sft",
    "headroom",
    "grpo",
    "eval-grpo",
    "sailorfog",
    "handwritten",
    "forms",
    "report",
)


@dataclass(frozen=True)
class SFTStage:
    """The SFT stage of ``sim-web learn`` (``--set sft.learning_rate=1e-4``)."""

    max_demos: int | None = help_field(
        None, "Use at most this many demonstrations for SFT (None: every kept one); see even_forms for which."
    )
    even_forms: bool = help_field(
        False,
        "Pick the max_demos demonstrations with each tier's share of the first max_demos and its question forms in "
        "turn (False: the first max_demos in task-file order; docs/training.md gives the measured effect).",
    )
    full: bool = help_field(True, "Full fine-tune (False: LoRA r=16, merged).")
    learning_rate: float = help_field(8e-5, "SFT peak learning rate (cosine schedule).")
    epochs: float = help_field(1.0, "Passes over the demonstrations.")
    batch_size: int = help_field(
        2, "Demonstrations per SFT batch (small batches: the logits of long ones take GBs on a CPU)."
    )
    grad_accum: int = help_field(4, "Batches per SFT optimiser step.")
    seed: int | None = help_field(
        None,
        "Seed of SFT's shuffling and dropout (None: the run's seed, which also draws the tasks); another value in "
        "its own --out folder, on the same task file, measures how far SFT's result moves with its seed alone.",
    )

    def __post_init__(self) -> None:
        if min(self.batch_size, self.grad_accum) < 1:
            raise ConfigError(
                f"LearnConfig.sft needs batch_size and grad_accum >= 1, got {self.batch_size}, {self.grad_accum}"
            )
        if self.even_forms and self.max_demos is None:
            raise ConfigError(
                "LearnConfig.sft.even_forms picks max_demos of the demonstrations, but max_demos is None (every one is "
                "used); set sft.max_demos too, e.g. --set sft.max_demos=320"
            )


@dataclass(frozen=True)
class HeadroomStage:
    """The headroom stage of ``sim-web learn`` (``--set headroom.k=8``): the SFT model sampled as GRPO samples it."""

    k: int = help_field(8, "Samples per task, at the GRPO recipe's temperature and top_p (pass@k is reported).")
    n_train: int = help_field(
        64,
        "Train tasks sampled: a seeded draw over the train tasks GRPO may train on (the GRPO recipe's tiers; with "
        "rl_share, the RL pool only); the GRPO pool comes from them.",
    )
    n_test: int = help_field(
        64, "Held-out tasks sampled: the first n of the eval tasks (the greedy eval-sft's); 0 samples none."
    )
    band: tuple[float, float] = help_field(
        (0.1, 0.9), "Pass-rate band of the GRPO pool: tasks whose groups have reward variance (inclusive)."
    )

    def __post_init__(self) -> None:
        if self.k < 2 or self.n_train < 1 or self.n_test < 0 or not 0 <= self.band[0] <= self.band[1] <= 1:
            raise ConfigError(
                "LearnConfig.headroom needs k >= 2, n_train >= 1, n_test >= 0 and 0 <= band[0] <= band[1] <= 1; got "
                f"k={self.k}, n_train={self.n_train}, n_test={self.n_test}, band={self.band}"
            )


@dataclass(frozen=True)
class GRPOStage:
    """The GRPO stage of ``sim-web learn`` (``--set grpo.seeds=0,1,2``, ``--grpo-set trainer.max_steps=8``)."""

    seeds: tuple[int, ...] = help_field(
        (0,),
        "Seeds of the GRPO stage (each its own run and held-out eval, from the same SFT model); the first writes "
        "<name>/ and eval-<name>/, each other seed S <name>-seedS/ and eval-<name>-seedS/; the report gives their "
        "spread.",
    )
    name: str = help_field(
        "grpo",
        "Folder name of the GRPO stage's runs; another name (e.g. grpo-bridge, with --grpo-set tiers=bridge) trains "
        "a variant from the same SFT model beside the earlier runs, and the report gives each variant its own rows.",
    )
    pool: bool = help_field(
        True,
        "Train on the headroom stage's band pool (<run>/headroom/pool.json: train tasks whose sampled pass-rate gives "
        "group variance) when that stage has run; False: the recipe's own split and n_tasks.",
    )
    overrides: dict[str, Any] = help_field(
        help="GRPO recipe fields set for this run, by dotted path (--grpo-set trainer.max_steps=10); model, tasks, "
        "index and output are set by the pipeline.",
        default_factory=dict,
    )

    def __post_init__(self) -> None:
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ConfigError(f"LearnConfig.grpo.seeds must be distinct seeds, at least one; got {self.seeds!r}")
        if not re.fullmatch(r"grpo[A-Za-z0-9_-]*", self.name) or re.search(r"-seed\d+$", self.name):
            raise ConfigError(
                f"LearnConfig.grpo.name must start with 'grpo' and hold only letters, digits, '-' and '_' (and not "
                f"end in -seedN, the seeds' suffix), got {self.name!r}"
            )


@dataclass(frozen=True)
class LearnConfig:
    """One run of the curriculum recipe: base model -> SFT -> GRPO, each evaluated on the same held-out tasks."""

    recipe: str = help_field(
        "cpu-learn",
        "GRPO recipe (training/configs/<name>.yaml) of the RL stage; its observation settings apply to every stage.",
    )
    out: str | None = help_field(
        None, "Run folder (default $SIM_WEB_HOME/runs/learn/<recipe>); every stage resumes from it."
    )
    index_dir: str | None = help_field(None, "Index (default: the sample index under $SIM_WEB_HOME).")
    model: str = help_field("smollm2", "Base model: 'smollm2' (the bundled SmolLM2-135M-Instruct) or a model folder.")
    seed: int = help_field(0, "Seed of the task synthesis, SFT and GRPO.")
    tiers: tuple[str, ...] = help_field(
        ("lookup", "bridge", "intersection"),
        "Curriculum tiers of the task set (training/synth/tiers/generate.py and tiers/intersection.py); ('lookup', 'bridge') "
        "writes the two-tier sets of the runs before cpu-learn-v6.",
    )
    lookup_test_fraction: float = help_field(0.5, "Held-out share of the lookup tier.")
    bridge_test_fraction: float = help_field(0.5, "Held-out share of the bridge tier.")
    intersection_test_fraction: float = help_field(0.5, "Held-out share of the intersection tier (when in tiers).")
    forms: tuple[str, ...] = help_field(
        FORMS,
        "Question forms of the lookup and bridge tiers (training/synth/tiers/forms.py: FORMS, and the opt-in "
        "EXTRA_FORMS such as 'parenthetical'); ('template',) with unseen_forms=() writes the single-template sets of "
        "the runs before the forms.",
    )
    unseen_forms: tuple[str, ...] = help_field(
        ("relative", "reworded"),
        "Question forms never drawn for a train task (training/synth/tiers/forms.py); the report gives every policy "
        "per form family, seen and unseen. () for none.",
    )
    split: str = help_field(
        "answer",
        "'answer': no held-out answer (or alias) is a train answer, across tiers; 'id': hashed ids (the older sets).",
    )
    demo_policy: str = help_field(
        "oracle:plan",
        "The policy whose right train episodes are the SFT demonstrations: 'oracle:plan' (its first thought says how "
        "many facts the question chains, so the model decides to search again before it reads any result), "
        "'oracle:quote' (oracle:plan whose later thoughts count the facts done and quote the results' words that state "
        "each: agents/policies/quotes.py), 'oracle:joint' (oracle:plan whose intersection episodes search the clues "
        "together first, then two of them one by one, as rule:script does) or 'oracle:search' (the same first "
        "thought on every tier; the runs before cpu-learn-v5).",
    )
    rl_share: float = help_field(
        0.0,
        "Share of each tier's train tasks held back for GRPO, whole answer groups at a time (0: none; "
        "training/learn/rl_pool.py): SFT's demonstrations skip them and GRPO trains only on them (<run>/rl-pool.json, "
        "or the headroom stage's band of it), so a GRPO gain cannot be recall of answers the demonstrations taught.",
    )
    eval_batch_size: int = help_field(32, "Episodes generated together in the evals.")
    eval_n: int | None = help_field(
        240, "Evaluate only the first n held-out tasks (None: all); the task file mixes the tiers in a seeded order."
    )
    precision: str = help_field(
        "auto",
        "Arithmetic of SFT, GRPO and the evals: 'bf16' (bfloat16 mixed precision in training, bfloat16 weights in the "
        "evals), 'float32', or 'auto' (bf16 where it is native: a CUDA GPU that supports it, or a CPU with "
        "avx512_bf16 or amx_bf16 in /proc/cpuinfo; float32 elsewhere). --grpo-set trainer.bf16 still wins for GRPO.",
    )
    eval_skip: int = help_field(
        0,
        "Skip the first n held-out tasks before taking eval_n: a confirmation set no earlier choice looked at. Give "
        "such a run its own folder (--out) and link the sft/ and GRPO folders it evaluates into it.",
    )
    sailorfog_level: str = help_field(
        "easy",
        "The sailorfog stage evaluates the rule, the oracle, SFT and GRPO (first seed) on the held-out SailorFog-QA "
        "tasks of this level (<index>/tasks/sailorfog_qa.jsonl): the distance to the real goal.",
    )
    sailorfog_turns: int = help_field(
        8, "Turn cap of the sailorfog stage (its questions take the oracle up to 5 searches; the tiers' cap is 4)."
    )
    forms_n: int = help_field(
        60,
        "The forms stage asks the first forms_n held-out bridge questions of the eval window in every form each has "
        "(training/learn/forms_eval.py): seen and unseen forms compared on the same tasks.",
    )
    threads: int | None = help_field(None, "torch CPU threads for every stage (None: torch's default).")
    stages: tuple[str, ...] = help_field(
        STAGES, f"Stages to run, in order (finished ones are skipped): {', '.join(STAGES)}."
    )
    sft: SFTStage = help_field(help="The SFT stage: demonstrations, fine-tuning settings.", default_factory=SFTStage)
    headroom: HeadroomStage = help_field(
        help="The headroom stage: greedy and sampled pass@1 and pass@k of the SFT model, the GRPO pool.",
        default_factory=HeadroomStage,
    )
    grpo: GRPOStage = help_field(
        help="The GRPO stage: seeds, folder name, recipe overrides.", default_factory=GRPOStage
    )

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ConfigError(f"LearnConfig.precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.split not in ("answer", "id"):
            raise ConfigError(f"LearnConfig.split must be 'answer' or 'id', got {self.split!r}")
        bad = [s for s in self.stages if s not in STAGES]
        if bad:
            raise ConfigError(f"LearnConfig.stages: unknown {bad}; expected some of {STAGES}")
        tiers = [t for t in self.tiers if t not in ("lookup", "bridge", "intersection")]
        if tiers or not self.tiers:
            raise ConfigError(
                f"LearnConfig.tiers must be a non-empty subset of ('lookup', 'bridge', 'intersection'), got {self.tiers!r}"
            )
        if not all(
            0 < f < 1 for f in (self.lookup_test_fraction, self.bridge_test_fraction, self.intersection_test_fraction)
        ):
            raise ConfigError(
                "LearnConfig needs 0 < lookup_test_fraction, bridge_test_fraction, intersection_test_fraction < 1 "
                "(a train and a held-out split)"
            )
        object.__setattr__(self, "forms", tuple(self.forms))
        if problem := forms_problem(self.forms, tuple(self.unseen_forms)):
            raise ConfigError(f"LearnConfig.{problem}")
        if self.demo_policy not in DEMO_POLICIES:
            raise ConfigError(f"LearnConfig.demo_policy must be one of {DEMO_POLICIES}, got {self.demo_policy!r}")
        if not 0 <= self.rl_share < 1:
            raise ConfigError(
                f"LearnConfig.rl_share must be in [0, 1) (0: GRPO trains on SFT's tasks), got {self.rl_share}"
            )
        if self.eval_skip < 0:
            raise ConfigError(f"LearnConfig.eval_skip must be >= 0, got {self.eval_skip}")
        if self.eval_batch_size < 1:
            raise ConfigError(f"LearnConfig.eval_batch_size must be >= 1, got {self.eval_batch_size}")

    def bf16(self) -> bool:
        """Whether this run trains and evaluates in bfloat16 (``precision``, with ``auto`` resolved on this machine)."""
        if self.precision == "auto":
            return native_bf16()
        return self.precision == "bf16"

    def out_dir(self) -> Path:
        """The run folder, absolute: the policies and task files its evals record then name the same folder from any
        working directory (an eval resumes only a run recorded with the same ones)."""
        return Path(self.out).expanduser().absolute() if self.out else sim_web_home() / "runs" / "learn" / self.recipe

    def grpo_runs(self) -> list[tuple[int, str, str]]:
        """``(seed, GRPO folder, eval folder)`` per GRPO seed; the first seed keeps the single-seed names.

        >>> LearnConfig(grpo=GRPOStage(seeds=(0, 1))).grpo_runs()
        [(0, 'grpo', 'eval-grpo'), (1, 'grpo-seed1', 'eval-grpo-seed1')]
        >>> LearnConfig(grpo=GRPOStage(name="grpo-bridge")).grpo_runs()
        [(0, 'grpo-bridge', 'eval-grpo-bridge')]
        """
        name, seeds = self.grpo.name, self.grpo.seeds
        names = [name if i == 0 else f"{name}-seed{s}" for i, s in enumerate(seeds)]
        return [(s, n, f"eval-{n}") for s, n in zip(seeds, names)]
