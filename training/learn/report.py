"""The learning report of a ``sim-web learn`` run: held-out pass@1 per stage and tier, with intervals and paired tests.

Every stage is evaluated on the same held-out tasks, so stages are compared *paired*, task by task: the difference of
pass@1 with a 95% paired-bootstrap interval (tasks resampled with replacement, seeded) and McNemar's exact test on the
discordant tasks (solved by one stage only). Single rates get a 95% Wilson interval. ``learning.png`` shows the GRPO
reward per step beside held-out pass@1 per stage.

The statistics are in :mod:`training.learn.stats`, the per-episode diagnostics in :mod:`training.learn.episodes`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from training.learn.episodes import bridge_entities, load_stage, rates, tier_of
from training.learn.forms_eval import forms_summary, render_forms
from training.learn.headroom import render as render_headroom
from training.learn.headroom import summarise as headroom_summary
from training.learn.movement import MovementError, weight_movement
from training.learn.recall import render as render_recall
from training.learn.recall import summarise as recall_summary
from training.learn.stats import ci_text, mcnemar_p, paired_bootstrap

#: every row of the table, baselines and ceiling included: the base model, the zero-parameter rule, the answer prior,
#: the trained stages and the search-only oracle, all on the same held-out tasks
STAGE_RUNS = (
    ("base", "eval-base"),
    ("rule", "eval-rule"),
    ("script", "eval-script"),
    ("prior", "eval-prior"),
    ("sft", "eval-sft"),
    ("grpo", "eval-grpo"),
    ("oracle", "eval-oracle"),
)
PAIRS = (
    ("base", "sft"),
    ("rule", "sft"),
    ("script", "sft"),
    ("sft", "grpo"),
    ("rule", "grpo"),
    ("script", "grpo"),
    ("base", "grpo"),
)


def variant_of(stage: str) -> str:
    """The GRPO variant a stage belongs to: ``grpo-bridge-seed1`` -> ``grpo-bridge`` (seeds share their variant).

    >>> variant_of("grpo-seed2"), variant_of("grpo-bridge"), variant_of("sft")
    ('grpo', 'grpo-bridge', 'sft')
    """
    return re.sub(r"-seed\d+$", "", stage)


def stage_runs(run: Path) -> list[tuple[str, str]]:
    """``(stage, eval folder)`` of the table: the GRPO stages where ``grpo`` stands, each variant (``eval-grpo``,
    ``eval-grpo-bridge``, ...) followed by its further seeds (``eval-<variant>-seedS``) in seed order."""

    def order(name: str) -> tuple[int, str, int]:
        seed = re.search(r"-seed(\d+)$", name)
        return (variant_of(name) != "grpo", variant_of(name), int(seed.group(1)) if seed else -1)

    grpo = sorted((p.name[len("eval-") :] for p in run.glob("eval-grpo*") if p.is_dir()), key=order)
    out = []
    for name, folder in STAGE_RUNS:
        out += [(g, f"eval-{g}") for g in grpo] if name == "grpo" else [(name, folder)]
    return out


def pairs(stages: list[str]) -> list[tuple[str, str]]:
    """The paired comparisons of the report: :data:`PAIRS`, the same for each further GRPO variant, the first variant
    present (``grpo`` when there is one) against each other one (``grpo->grpo-bridge``), and SFT against each further
    seed (``sft->grpo-bridge-seed1``: every seed's own gain, beside the seed mean); only stages present are paired."""
    every = [v for v in dict.fromkeys(variant_of(s) for s in stages) if v.startswith("grpo")]
    variants = [v for v in every if v != "grpo"]
    extra = [(a, v) for v in variants for a, b in PAIRS if b == "grpo"] + [(every[0], v) for v in every[1:]]
    seeds = [("sft", s) for s in stages if s.startswith("grpo") and variant_of(s) != s]
    return [(a, b) for a, b in (*PAIRS, *extra, *seeds) if a in stages and b in stages]


def summarise(run: Path) -> dict[str, Any]:
    """Per-stage rates (all tasks and per tier), paired comparisons on the tasks both stages evaluated, the spread of
    the GRPO seeds, and how far each GRPO run moved the SFT weights."""
    bridges = bridge_entities(run)
    stages = {name: rows for name, folder in stage_runs(run) if (rows := load_stage(run / folder, bridges)) is not None}
    out: dict[str, Any] = {"stages": {}, "paired": {}}
    for name, rows in stages.items():
        ids = sorted(rows)
        tiers = sorted({tier_of(i) for i in ids})
        out["stages"][name] = {
            "all": rates(rows, ids),
            **{t: rates(rows, [i for i in ids if tier_of(i) == t]) for t in tiers},
        }
    if stages:  # per form family, seen and unseen (tasks without a form are the template's)
        out["forms"] = {name: form_rates(rows) for name, rows in stages.items()}
    for a, b in pairs(list(stages)):
        common = sorted(set(stages[a]) & set(stages[b]))
        out["paired"][f"{a}->{b}"] = {
            scope: _paired(stages[a], stages[b], ids)
            for scope, ids in [
                ("all", common),
                *[(t, [i for i in common if tier_of(i) == t]) for t in sorted({tier_of(i) for i in common})],
            ]
        }
    order = [name for name, _ in STAGE_RUNS]  # the main table's row order: rule, sft, grpo, oracle
    for prefix in ("sailorfog", "handwritten"):  # the sets beside the tiers, one folder per policy
        found = {p.name[len(prefix) + 1 :]: p for p in run.glob(f"{prefix}-*") if p.is_dir()}
        sets = {
            name: rows
            for name in sorted(found, key=lambda n: order.index(n) if n in order else len(order))
            if (rows := load_stage(found[name])) is not None
        }
        if sets:
            out[prefix] = {name: rates(rows, sorted(rows)) for name, rows in sets.items()}
    if headroom := headroom_summary(run):
        out["headroom"] = headroom
    if recall := recall_summary(run):
        out["recall"] = recall
    if forms := forms_summary(run):
        out["same_tasks_forms"] = forms
    for variant in dict.fromkeys(variant_of(n) for n in stages if n.startswith("grpo")):
        runs = [rows for name, rows in stages.items() if variant_of(name) == variant]
        if len(runs) > 1 and "sft" in stages:
            out.setdefault("seeds", {})[variant] = seed_spread(stages["sft"], runs)
    if movement := movements(run, [n for n in stages if n.startswith("grpo")]):
        out["movement"] = movement
    return out


def form_rates(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """pass@1 per tier and form family, and per tier over the seen and the unseen families (``seen`` / ``unseen``):
    a model that follows a template's positions drops on the forms it never saw."""
    out: dict[str, dict[str, Any]] = {}
    for tier in sorted({tier_of(i) for i in rows}):
        ids = [i for i in sorted(rows) if tier_of(i) == tier]
        scopes = {
            f"form:{f}": [i for i in ids if rows[i].get("form", "template") == f]
            for f in sorted({rows[i].get("form", "template") for i in ids})
        }
        scopes["seen"] = [i for i in ids if rows[i].get("form_seen", True)]
        scopes["unseen"] = [i for i in ids if not rows[i].get("form_seen", True)]
        out[tier] = {k: {"n": len(v), "pass@1": rates(rows, v)["pass@1"]} for k, v in scopes.items() if v}
    return out


def movements(run: Path, grpo: list[str]) -> dict[str, Any]:
    """SFT -> each GRPO run's final model: how many weights changed, in float32 and in their bfloat16 rounding
    (:mod:`training.learn.movement`); runs whose folders hold no weights (a report copied without its models) are
    left out, and folders that do not compare are reported with the reason."""
    sft, out = run / "sft", {}
    for name in grpo:
        final = run / name / "final"
        if not (any(sft.glob("*.safetensors")) and any(final.glob("*.safetensors"))):
            continue
        try:
            out[name] = {
                k: float(f"{v:.4g}") if isinstance(v, float) else v for k, v in weight_movement(sft, final).items()
            }
        except MovementError as e:
            out[name] = {"error": str(e)}
    return out


def seed_spread(sft: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per tier: the GRPO seeds' pass@1 (each, mean, min, max) and SFT -> GRPO averaged over the seeds, task by task.

    The paired interval resamples tasks; each task's GRPO score is its mean over the seeds, so the interval covers
    task sampling with the seed noise averaged in, the usual way a few seeds are reported.
    """
    common = sorted(set(sft).intersection(*runs))
    out: dict[str, Any] = {}
    for scope in ["all", *sorted({tier_of(i) for i in common})]:
        ids = [i for i in common if scope == "all" or tier_of(i) == scope]
        if not ids:
            continue
        rates = [sum(r[i]["correct"] for i in ids) / len(ids) for r in runs]
        before = [sft[i]["correct"] for i in ids]
        after = [sum(r[i]["correct"] for r in runs) / len(runs) for i in ids]
        lo, hi = paired_bootstrap(before, after)
        glo, ghi = paired_bootstrap(before, after, groups=_answers(sft, ids))
        out[scope] = {
            "n": len(ids),
            "seeds": len(runs),
            "pass@1": [round(x, 4) for x in rates],
            "mean": round(sum(rates) / len(rates), 4),
            "min": round(min(rates), 4),
            "max": round(max(rates), 4),
            "sft->grpo": {
                "diff": round(sum(after) / len(ids) - sum(before) / len(ids), 4),
                "ci95": [round(lo, 4), round(hi, 4)],
                "ci95_answers": [round(glo, 4), round(ghi, 4)],
            },
        }
    return out


def _answers(rows: dict[str, Any], ids: list[str]) -> list[str]:
    """Each task's gold answer (the resampling unit of the answer-level interval; a task id where it is missing)."""
    return [rows[i].get("answer") or i for i in ids]


def _paired(before: dict[str, Any], after: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    x, y = [before[i]["correct"] for i in ids], [after[i]["correct"] for i in ids]
    b = sum(1 for u, v in zip(x, y) if u and not v)
    c = sum(1 for u, v in zip(x, y) if v and not u)
    lo, hi = paired_bootstrap(x, y)
    answers = _answers(before, ids)
    glo, ghi = paired_bootstrap(x, y, groups=answers)
    return {
        "n": len(ids),
        "answers": len(set(answers)),
        "diff": round((sum(y) - sum(x)) / len(ids), 4) if ids else None,
        "ci95": [round(lo, 4), round(hi, 4)],
        "ci95_answers": [round(glo, 4), round(ghi, 4)],
        "only_before": b,
        "only_after": c,
        "mcnemar_p": float(f"{mcnemar_p(b, c):.3g}"),
    }


def render(summary: dict[str, Any], grpo_rows: list[dict[str, Any]]) -> str:
    """The report as Markdown: tables of rates, paired differences, the GRPO seeds' spread, the weight movement and
    SailorFog-QA; the wall time, the arithmetic and the GRPO reward curve's ends."""
    lines = [
        "# cpu-learn: held-out pass@1 per stage (greedy)",
        *_head(
            "stage | tier | n | pass@1 | 95% CI | answer rate | tool calls | >= 2 searches | a later search names B "
            "| wrong, answer shown | wrong, a later search names the answer | wrong, restates the question "
            "| first thought plans the hops"
        ),
    ]
    for stage, scopes in summary["stages"].items():
        for scope, r in scopes.items():
            lines.append(
                f"| {stage} | {scope} | {r['n']} | {r['pass@1']:.3f} | {r['ci95'][0]:.3f}-{r['ci95'][1]:.3f} | "
                f"{r['answer_rate']:.3f} | {r['tool_calls']:.2f} | {r['two_searches']:.3f} | "
                f"{'-' if r['names_bridge'] is None else format(r['names_bridge'], '.3f')} | "
                f"{r['shown_missed']:.3f} | {r['past_missed']:.3f} | {r.get('restated_missed') or 0:.3f} | "
                f"{'-' if r.get('plan_right') is None else format(r['plan_right'], '.3f')} |"
            )
    if summary.get("forms"):
        lines += _head("stage | tier | form family | n | pass@1")
        for stage, tiers in summary["forms"].items():
            for tier, scopes in tiers.items():
                lines += [f"| {stage} | {tier} | {k} | {r['n']} | {r['pass@1']:.3f} |" for k, r in scopes.items()]
    lines += _head(
        "comparison | tier | n | difference | 95% CI (paired bootstrap) | distinct answers | 95% CI, answers "
        "resampled | only before / only after | McNemar p"
    )
    for pair, scopes in summary["paired"].items():
        for scope, r in scopes.items():
            lines.append(
                f"| {pair} | {scope} | {r['n']} | {r['diff']:+.3f} | {ci_text(r.get('ci95'))} | "
                f"{r.get('answers', '-')} | {ci_text(r.get('ci95_answers'))} | "
                f"{r['only_before']} / {r['only_after']} | {r['mcnemar_p']:.2g} |"
            )
    if summary.get("seeds"):
        lines += _head(
            "GRPO variant | seeds | tier | n | pass@1 per seed | mean (min-max) | SFT -> GRPO, seed mean "
            "| 95% CI (paired bootstrap) | 95% CI, answers resampled"
        )
        for variant, scope, r in [(v, sc, r) for v, rs in summary["seeds"].items() for sc, r in rs.items()]:
            d = r["sft->grpo"]
            lines.append(
                f"| {variant} | {r['seeds']} | {scope} | {r['n']} | {' / '.join(f'{x:.3f}' for x in r['pass@1'])} | "
                f"{r['mean']:.3f} ({r['min']:.3f}-{r['max']:.3f}) | {d['diff']:+.3f} | "
                f"{ci_text(d.get('ci95'))} | {ci_text(d.get('ci95_answers'))} |"
            )
    if summary.get("movement"):
        lines += _head(
            "SFT -> GRPO run | weights | changed (float32) | changed (bfloat16 rounding) | mean abs change "
            "| mean abs weight"
        )
        for name, m in summary["movement"].items():
            lines.append(
                f"| {name} | {m['error']} | | | | |"
                if "error" in m
                else f"| {name} | {m['params']} | {m['changed']:.3f} | {m['changed_bf16']:.3f} | "
                f"{m['mean_abs_delta']:.2e} | {m['mean_abs_weight']:.3f} |"
            )
    for key, title in (("sailorfog", "SailorFog-QA (held-out)"), ("handwritten", "Hand-written questions")):
        if summary.get(key):
            lines += _head(f"{title} | n | pass@1 | 95% CI | tool calls")
            for name, r in summary[key].items():
                lines.append(
                    f"| {name} | {r['n']} | {r['pass@1']:.3f} | {r['ci95'][0]:.3f}-{r['ci95'][1]:.3f} | "
                    f"{r['tool_calls']:.2f} |"
                )
    if headroom := summary.get("headroom"):
        lines += ["", *render_headroom(headroom, headroom["k"])]
    if recall := summary.get("recall"):
        lines += ["", *render_recall(recall)]
    if forms := summary.get("same_tasks_forms"):
        lines += ["", *render_forms(forms)]
    if summary.get("seconds"):
        secs = summary["seconds"]
        lines += [
            "",
            f"Wall time per stage (minutes, {sum(secs.values()) / 3600:.2f} h in all): "
            + ", ".join(f"{k} {v / 60:.1f}" for k, v in secs.items()),
        ]
    if bf16 := summary.get("bf16"):  # recorded since the precision setting; older runs' stages say nothing
        on, off = [k for k, v in bf16.items() if v], [k for k, v in bf16.items() if not v]
        lines += ["", f"Arithmetic (precision): bfloat16 {', '.join(on) or '-'}; float32 {', '.join(off) or '-'}"]
    if grpo_rows:
        first, last = grpo_rows[0], grpo_rows[-1]
        lines += [
            "",
            f"GRPO: {len(grpo_rows)} steps; train reward {first.get('agent/reward_mean', 0):.3f} (step "
            f"{first['step']}) -> {last.get('agent/reward_mean', 0):.3f} (step {last['step']})",
        ]
    return "\n".join(lines) + "\n"


def _head(columns: str) -> list[str]:
    """A blank line, then a Markdown table's header row for ``columns`` (names joined by ``" | "``) and its
    separator, one ``---`` per column.

    >>> _head("a | b")
    ['', '| a | b |', '|---|---|']
    """
    return ["", f"| {columns} |", "|" + "---|" * (columns.count(" | ") + 1)]


def plot(summary: dict[str, Any], grpo_rows: list[dict[str, Any]], path: Path) -> None:
    """``learning.png``: GRPO train reward per step (left), held-out pass@1 per stage and tier with 95% CIs (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    if grpo_rows:
        steps = [r["step"] for r in grpo_rows]
        ax1.plot(
            steps, [r.get("agent/reward_mean", float("nan")) for r in grpo_rows], marker="o", label="reward (mean)"
        )
        ax1.plot(steps, [r.get("agent/answer_rate", float("nan")) for r in grpo_rows], alpha=0.6, label="answer rate")
        ax1.legend()
    ax1.set(title="GRPO on the train split", xlabel="step", ylabel="per-step mean")
    stages = list(summary["stages"])
    scopes = sorted({s for v in summary["stages"].values() for s in v}, key=lambda s: (s != "all", s))
    width = 0.8 / max(len(scopes), 1)
    for j, scope in enumerate(scopes):
        xs, ys, err = [], [], [[], []]
        for i, st in enumerate(stages):
            r = summary["stages"][st].get(scope)
            if r and r["n"]:
                xs.append(i + j * width)
                ys.append(r["pass@1"])
                err[0].append(r["pass@1"] - r["ci95"][0])
                err[1].append(r["ci95"][1] - r["pass@1"])
        ax2.bar(xs, ys, width, yerr=err, capsize=3, label=scope)
    ax2.set_xticks([i + width * (len(scopes) - 1) / 2 for i in range(len(stages))], stages)
    ax2.set(title="held-out pass@1 (95% Wilson CI)", ylim=(0, 1))
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(run: Path, grpo_dir: Path) -> dict[str, Any]:
    """Write ``report.json``, ``report.md`` and ``learning.png`` into the run folder; returns the summary."""
    summary = summarise(run)
    metrics = grpo_dir / "metrics.jsonl"
    rows = (
        [json.loads(x) for x in metrics.read_text(encoding="utf-8").splitlines() if x.strip()]
        if metrics.is_file()
        else []
    )
    summary["grpo_steps"] = [
        {
            k: r.get(k)
            for k in (
                "step",
                "agent/reward_mean",
                "agent/answer_rate",
                "agent/frac_zero_variance_groups",
                "agent/frac_dropped",
            )
        }
        for r in rows
    ]
    stages = run / "stages.json"
    if stages.is_file():  # where the wall time went, per finished stage (the sitting that finished it)
        done = json.loads(stages.read_text(encoding="utf-8"))
        summary["seconds"] = {k: v["seconds"] for k, v in done.items() if isinstance(v, dict) and "seconds" in v}
        summary["bf16"] = {k: v["bf16"] for k, v in done.items() if isinstance(v, dict) and "bf16" in v}
    (run / "report.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    (run / "report.md").write_text(render(summary, rows), encoding="utf-8")
    plot(summary, rows, run / "learning.png")
    return summary
