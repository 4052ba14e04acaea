"""Every held-out bridge question asked in each of its forms: seen and unseen forms compared on the same tasks.

The tiers draw one form per question, so the main eval's seen-form and unseen-form rows are different tasks, and a
form may make a task harder for any solver (rewording a relation also changes what a search of it returns: the
strongest script loses on the unseen forms too). The ``forms`` stage asks the first ``forms_n`` held-out bridge
questions of the eval window in every form each has (written beside the task file, ``<tasks>.forms.jsonl``, ids
``<id>@<form>``), so a form's cost is measured task by task: each form minus the template on the same tasks, and the
unseen forms' mean minus the seen forms' mean per task, with a paired bootstrap interval.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from agents.trajectory import load_records
from training.learn.stats import ci_text, paired_bootstrap
from training.synth.tiers.forms import ALL_FORMS

#: the tiers whose held-out questions the stage asks in every form (a lookup is one search in any form)
FORM_TIERS = ("bridge",)


def forms_file(task_path: Path) -> Path:
    """``tasks/cpu-learn.jsonl`` -> ``tasks/cpu-learn.forms.jsonl``: every held-out question in each of its forms."""
    from training.synth.outputs.write import sibling

    return sibling(task_path, ".forms.jsonl")


def held_out_variants(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Copies of the question variants of each held-out record with two forms or more, taken before
    :func:`~training.synth.tiers.forms.settle_forms` draws one and drops the rest."""
    return {
        r["id"]: copy.deepcopy(r["variants"])
        for r in records
        if r.get("split") == "test" and len(r.get("variants") or {}) > 1
    }


def every_form(
    records: list[dict[str, Any]], variants: dict[str, dict[str, Any]], unseen: tuple[str, ...]
) -> list[dict[str, Any]]:
    """One record per settled held-out record and form it has, in the records' order and the forms' order.

    Args:
        records: The settled records (one form drawn each), as the task file holds them.
        variants: :func:`held_out_variants` of the same records before they were settled.
        unseen: The form families never drawn for a train task.

    Returns:
        Records ``<id>@<form>`` with the form's question and difficulty, ``form``, ``form_seen`` and ``base_id``.

    >>> rec = {"id": "bridge-1", "question": "Q?", "answer": "A", "split": "test", "form": "template",
    ...        "difficulty": {"hops": 2}}
    >>> rows = every_form([rec], {"bridge-1": {"template": {"question": "Q?"}, "relative": {"question": "R?"}}},
    ...                   ("relative",))
    >>> [(r["id"], r["question"], r["form_seen"]) for r in rows]
    [('bridge-1@template', 'Q?', True), ('bridge-1@relative', 'R?', False)]
    """
    out = []
    for r in records:
        for form in ALL_FORMS:
            if form not in variants.get(r["id"], {}):
                continue
            v = dict(variants[r["id"]][form])
            question = v.pop("question")
            difficulty = {**r.get("difficulty", {}), **v}
            out.append(
                {
                    **r,
                    "id": f"{r['id']}@{form}",
                    "base_id": r["id"],
                    "question": question,
                    "form": form,
                    "form_seen": form not in unseen,
                    "difficulty": difficulty,
                }
            )
    return out


def write_forms(
    task_path: Path,
    records: list[dict[str, Any]],
    variants: dict[str, dict[str, Any]],
    unseen: tuple[str, ...],
    check: bool = False,
) -> Path:
    """Write :func:`every_form` of ``records`` to :func:`forms_file` of ``task_path``; returns that path.

    Args:
        task_path: The task file the records are (or will be) written to.
        records: The settled records.
        variants: :func:`held_out_variants` of the records before they were settled.
        unseen: The form families never drawn for a train task.
        check: ``task_path`` exists already: refuse unless it holds these records (same ids and questions).

    Raises:
        ConfigError: ``check`` and the task file holds other questions (the generator changed since it was written).
    """
    from simweb_core.errors import ConfigError
    from training.synth.outputs.write import write_jsonl

    if check:
        held = [json.loads(x) for x in task_path.read_text(encoding="utf-8").splitlines() if x.strip()]
        if [(r["id"], r["question"]) for r in held] != [(r["id"], r["question"]) for r in records]:
            raise ConfigError(
                f"{task_path} holds other questions than this generator writes with the same settings (it changed "
                "since the file was written): delete the file and the runs evaluated on it, then run the tasks stage"
            )
    task_path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(every_form(records, variants, unseen), forms_file(task_path))
    return forms_file(task_path)


def pick(task_path: Path, cfg: Any) -> list[dict[str, Any]]:
    """The records of the stage: every form of the first ``cfg.forms_n`` held-out questions of :data:`FORM_TIERS`
    in the eval window (``eval_skip``, ``eval_n``) that have two forms or more."""
    from simweb_core.errors import ConfigError

    side = forms_file(task_path)
    if not side.is_file():
        raise ConfigError(
            f"{side} is missing: the tasks stage writes it beside {task_path.name} (task files written before the "
            "forms stage have none). Run `sim-web learn --stages tasks` once to add it; the task file is unchanged"
        )
    held = [json.loads(x) for x in task_path.read_text(encoding="utf-8").splitlines() if x.strip()]
    held = [r for r in held if r.get("split") == "test"][cfg.eval_skip :]
    window = held[: cfg.eval_n] if cfg.eval_n is not None else held
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for x in side.read_text(encoding="utf-8").splitlines():
        if x.strip():
            r = json.loads(x)
            rows[r["base_id"]].append(r)
    bases = [r["id"] for r in window if r.get("tier") in FORM_TIERS and len(rows.get(r["id"], [])) > 1]
    return [r for b in bases[: cfg.forms_n] for r in rows[b]]


def stage_forms(cfg: Any, recipe: Any, task_path: Path, settings: dict[str, Any]) -> list[tuple[str, str, Any, float]]:
    """Evaluate the strongest script, SFT and the first GRPO model (those trained) on :func:`pick`'s records, with
    the recipe's turn cap and observation settings; folders ``<run>/forms-<name>/``, the records in
    ``<run>/forms-tasks.jsonl``. Returns ``(name, policy, metrics, seconds)`` per eval."""
    from agents.harness import run_eval

    out = cfg.out_dir()
    subset = out / "forms-tasks.jsonl"
    subset.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in pick(task_path, cfg)), "utf-8")
    first = out / cfg.grpo_runs()[0][1] / "final"
    policies = [("script", "rule:script")]
    policies += [
        (n, f"hf:{p}") for n, p in (("sft", out / "sft"), (cfg.grpo.name, first)) if (p / "config.json").is_file()
    ]
    done = []
    for name, policy in policies:
        ecfg = recipe.eval_config(policy, out / f"forms-{name}", **settings)
        t = time.perf_counter()
        res = run_eval(dataclasses.replace(ecfg, tasks=str(subset)))
        if res.failures:
            raise RuntimeError(f"{len(res.failures)} episodes of forms-{name} failed (rerun to resume them)")
        done.append((f"forms-{name}", policy, res.metrics, round(time.perf_counter() - t, 1)))
    return done


def forms_summary(run: Path) -> dict[str, Any] | None:
    """Per ``forms-<name>`` eval: pass@1 per form, each form minus the template on the tasks that have both, and the
    unseen forms' mean minus the seen forms' mean per task (paired bootstrap over tasks); None when none ran."""
    out = {}
    for folder in sorted(p for p in run.glob("forms-*") if p.is_dir()):
        path = folder / "trajectories.jsonl"
        if not path.is_file():
            continue
        em: dict[str, dict[str, float]] = defaultdict(dict)
        seen: dict[str, bool] = {}
        for r in load_records(path):
            meta = r.get("metadata") or {}  # an eval record keeps the task's form, not its base_id: the id has it
            base, _, form = str(r["task_id"]).rpartition("@")
            em[base][form] = float(r["em"])
            seen[form] = bool(meta["form_seen"])
        out[folder.name.removeprefix("forms-")] = _compare(em, seen)
    return out or None


def _compare(em: dict[str, dict[str, float]], seen: dict[str, bool]) -> dict[str, Any]:
    """:func:`forms_summary`'s numbers for one policy: ``em[task][form]`` is 1.0 or 0.0."""
    per_form = {}
    for form in [f for f in ALL_FORMS if f in seen]:
        tasks = [t for t in em if form in em[t]]
        both = [t for t in tasks if "template" in em[t]]
        row: dict[str, Any] = {"n": len(tasks), "pass@1": sum(em[t][form] for t in tasks) / len(tasks)}
        row["seen"] = seen[form]
        if form != "template" and both:
            a, b = [em[t]["template"] for t in both], [em[t][form] for t in both]
            row["minus_template"] = {
                "n": len(both),
                "diff": (sum(b) - sum(a)) / len(both),
                "ci95": paired_bootstrap(a, b),
            }
        per_form[form] = row
    mixed = [t for t in em if {seen[f] for f in em[t]} == {True, False}]
    means = [[_mean([v for f, v in em[t].items() if seen[f] is s]) for t in mixed] for s in (True, False)]
    gap = {"n": len(mixed), "seen": _mean(means[0]), "unseen": _mean(means[1])}
    gap["diff"] = gap["unseen"] - gap["seen"]
    gap["ci95"] = paired_bootstrap(means[0], means[1]) if mixed else None
    return {"forms": per_form, "unseen_minus_seen": gap}


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def render_forms(summary: dict[str, Any]) -> list[str]:
    """Markdown lines of :func:`forms_summary`: one table of forms per policy, one of the seen-unseen gap."""
    lines = [
        "| same bridge questions in every form | form | seen | n | pass@1 | minus the template (same tasks) | 95% CI |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, s in summary.items():
        for form, r in s["forms"].items():
            d = r.get("minus_template")
            diff, ci = ("-", "-") if d is None else (f"{d['diff']:+.3f} (n={d['n']})", ci_text(d["ci95"]))
            seen = "seen" if r["seen"] else "unseen"
            lines.append(f"| {name} | {form} | {seen} | {r['n']} | {r['pass@1']:.3f} | {diff} | {ci} |")
    lines += [
        "",
        "| same bridge questions | tasks with a seen and an unseen form | seen forms | unseen forms | unseen - seen "
        "| 95% CI (paired bootstrap) |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in summary.items():
        g = s["unseen_minus_seen"]
        lines.append(
            f"| {name} | {g['n']} | {g['seen']:.3f} | {g['unseen']:.3f} | {g['diff']:+.3f} | {ci_text(g['ci95'])} |"
        )
    return lines
