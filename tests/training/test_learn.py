"""``sim-web learn``: its statistics, report, configuration and task stage (the training stages run in the recipe)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from simweb_core.errors import ConfigError
from training.learn.config import GRPOStage, LearnConfig, SFTStage
from training.learn.episodes import planned_facts
from training.learn.report import summarise, write_report
from training.learn.stats import mcnemar_p, paired_bootstrap, wilson


def _stage(folder: Path, solved: dict[str, int], golds: dict[str, str] | None = None) -> None:
    folder.mkdir(parents=True)
    with (folder / "trajectories.jsonl").open("w") as f:
        for tid, ok in solved.items():
            f.write(
                json.dumps(
                    {
                        "key": f"{tid}#0",
                        "task_id": tid,
                        "gold": (golds or {}).get(tid, ""),
                        "em": float(ok),
                        "termination": "answer",
                        "tool_calls": {"search": 1},
                    }
                )
                + "\n"
            )


def test_statistics_match_hand_computed_values():
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0
    lo, hi = wilson(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-3) and hi == pytest.approx(0.5962, abs=1e-3)
    assert mcnemar_p(0, 6) == pytest.approx(2 / 64)  # two-sided exact binomial, all discordant pairs one way
    assert mcnemar_p(3, 3) == 1.0
    lo, hi = paired_bootstrap([0] * 50, [1] * 50)
    assert lo == hi == 1.0
    lo, hi = paired_bootstrap([0, 1] * 25, [1, 0] * 25)
    assert lo < 0 < hi
    lo, _ = paired_bootstrap([0] * 41, [2 / 3] * 7 + [-1 / 3] * 4 + [0] * 30)  # means of thirds: 0 less 1e-18 raw
    assert f"{lo:+.3f}" == "+0.000"


def test_tasks_that_share_an_answer_are_resampled_together():
    # 8 answers x 5 tasks: the gain sits on 3 answers; 40 tasks look like 40 samples, but there are only 8
    before, after = [0] * 40, [1] * 15 + [0] * 25
    groups = [f"answer-{i // 5}" for i in range(40)]
    lo, hi = paired_bootstrap(before, after)
    glo, ghi = paired_bootstrap(before, after, groups=groups)
    assert glo < lo and ghi > hi and glo <= 0.125 and lo > 0.2
    assert paired_bootstrap(before, after, groups=[str(i) for i in range(40)]) == (lo, hi)


def test_report_counts_distinct_answers_and_resamples_them(tmp_path):
    ids = [f"bridge-{i:02d}" for i in range(12)]
    golds = {t: ("Sapporo" if i < 6 else f"city {i}") for i, t in enumerate(ids)}
    _stage(tmp_path / "eval-sft", {t: 0 for t in ids}, golds)
    _stage(tmp_path / "eval-grpo", {t: int(i < 6) for i, t in enumerate(ids)}, golds)
    p = summarise(tmp_path)["paired"]["sft->grpo"]["bridge"]
    assert p["answers"] == 7 and p["diff"] == 0.5
    # the whole gain is one answer, drawn or not: the answer-level interval reaches 0 and beyond the per-task one
    assert p["ci95"][0] > 0.2 and p["ci95_answers"][0] == 0.0 and p["ci95_answers"][1] > p["ci95"][1]
    write_report(tmp_path, tmp_path / "no-grpo")
    md = (tmp_path / "report.md").read_text()
    assert "| sft->grpo | bridge | 12 | +0.500 | +0.250 to +0.750 | 7 | +0.000 to " in md


def test_report_pairs_stages_task_by_task(tmp_path):
    ids = [f"lookup-{i:02d}" for i in range(20)] + [f"bridge-{i:02d}" for i in range(4)]
    _stage(tmp_path / "eval-base", {t: 0 for t in ids})
    _stage(tmp_path / "eval-sft", {t: int(i < 8) for i, t in enumerate(ids)})
    _stage(tmp_path / "eval-grpo", {t: int(i < 12) for i, t in enumerate(ids)})
    grpo = tmp_path / "grpo"
    grpo.mkdir()
    (grpo / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "agent/reward_mean": s / 10}) + "\n" for s in (1, 2))
    )
    (tmp_path / "stages.json").write_text(
        json.dumps({"sft": {"seconds": 3600}, "eval-sft": {"pass@1": 0.3, "seconds": 1800}})
    )
    s = write_report(tmp_path, grpo)
    assert s["seconds"] == {"sft": 3600, "eval-sft": 1800}
    assert "(minutes, 1.50 h in all): sft 60.0, eval-sft 30.0" in (tmp_path / "report.md").read_text()
    assert s["stages"]["sft"]["lookup"]["solved"] == 8 and s["stages"]["grpo"]["all"]["solved"] == 12
    assert s["stages"]["base"]["bridge"]["n"] == 4
    p = s["paired"]["sft->grpo"]["all"]
    assert (p["only_before"], p["only_after"], p["diff"]) == (0, 4, round(4 / 24, 4))
    assert p["mcnemar_p"] == pytest.approx(2 / 16, abs=1e-4) and p["ci95"][0] > 0
    md = (tmp_path / "report.md").read_text()
    assert "| sft->grpo | all | 24 | +0.167 |" in md and "GRPO: 2 steps" in md
    assert s["stages"]["sft"]["all"]["two_searches"] == 0.0  # one search per episode in these runs
    assert (tmp_path / "learning.png").stat().st_size > 1000
    assert summarise(tmp_path / "nothing") == {"stages": {}, "paired": {}}


def test_report_rows_include_the_baselines_and_the_ceiling(tmp_path):
    ids = [f"bridge-{i:02d}" for i in range(10)]
    _stage(tmp_path / "eval-rule", {t: int(i < 1) for i, t in enumerate(ids)})
    _stage(tmp_path / "eval-prior", {t: 0 for t in ids})
    _stage(tmp_path / "eval-sft", {t: int(i < 4) for i, t in enumerate(ids)})
    _stage(tmp_path / "eval-oracle", {t: 1 for t in ids})
    s = summarise(tmp_path)
    assert list(s["stages"]) == ["rule", "prior", "sft", "oracle"]  # the table's order: baselines, model, ceiling
    p = s["paired"]["rule->sft"]["bridge"]
    assert (p["diff"], p["only_before"], p["only_after"]) == (0.3, 0, 3)


def _searches(*queries: str) -> list[dict[str, str]]:
    call = '<tool_call>{{"name": "search", "arguments": {{"query": ["{}"]}}}}</tool_call>'
    return [{"role": "assistant", "content": call.format(q)} for q in queries]


def test_report_counts_wrong_episodes_that_searched_past_the_answer(tmp_path):
    episodes = [  # (task, gold, final answer, searches): one hop too many, a hop that ended right, one search
        ("lookup-0", "Croatia", "Europe", _searches("Zagreb capital", "Croatia region")),
        ("lookup-1", "Poland", "Poland", _searches("Warsaw capital", "Poland capital")),
        ("lookup-2", "Chile", "Peru", _searches("Santiago capital")),
        ("lookup-3", "Kenya", "Africa", _searches("Nairobi capital", "kenya continent")),
    ]
    (tmp_path / "eval-grpo").mkdir()
    with (tmp_path / "eval-grpo" / "trajectories.jsonl").open("w") as f:
        for tid, gold, pred, msgs in episodes:
            rec = {"key": f"{tid}#0", "task_id": tid, "gold": gold, "prediction": pred, "em": float(pred == gold)}
            f.write(json.dumps({**rec, "termination": "answer", "tool_calls": {"search": len(msgs)}, "messages": msgs}))
            f.write("\n")
    s = write_report(tmp_path, tmp_path / "grpo")
    r = s["stages"]["grpo"]["lookup"]
    assert (r["solved"], r["two_searches"], r["past_missed"]) == (1, 0.75, 0.5)  # lookup-0 and lookup-3 (any case)
    assert "| grpo | lookup | 4 | 0.250 |" in (tmp_path / "report.md").read_text()
    assert (tmp_path / "report.md").read_text().count("| 0.500 |") == 2  # the all row and the lookup row


def test_report_counts_wrong_answers_that_restate_the_question(tmp_path):
    q = "Which country borders Egypt and lies in North Africa?"
    episodes = [("intersection-0", "Egypt"), ("intersection-1", "Libya"), ("intersection-2", "Sudan")]
    (tmp_path / "eval-sft").mkdir()
    with (tmp_path / "eval-sft" / "trajectories.jsonl").open("w") as f:
        for tid, pred in episodes:
            rec = {"key": f"{tid}#0", "task_id": tid, "question": q, "gold": "Libya", "prediction": pred}
            f.write(json.dumps({**rec, "em": float(pred == "Libya"), "termination": "answer", "messages": []}) + "\n")
    s = write_report(tmp_path, tmp_path / "grpo")
    r = s["stages"]["sft"]["intersection"]
    assert (r["solved"], r["restated_missed"]) == (1, round(1 / 3, 4))  # Egypt: a clue's own name, not the answer
    assert "wrong, restates the question" in (tmp_path / "report.md").read_text()


def test_report_counts_first_thoughts_that_plan_the_tasks_hops(tmp_path):
    plan = "<think>The question {}. I search for the first fact.</think>"
    episodes = [  # (task, oracle searches, first thought): right, wrong, none stated, right
        ("lookup-0", 1, plan.format("asks one fact")),
        ("lookup-1", 1, plan.format("chains two facts")),
        ("bridge-0", 2, "<think>I search for the first fact.</think>"),
        ("bridge-1", 2, plan.format("chains two facts")),
    ]
    (tmp_path / "eval-sft").mkdir()
    with (tmp_path / "eval-sft" / "trajectories.jsonl").open("w") as f:
        for tid, hops, first in episodes:
            rec = {"key": f"{tid}#0", "task_id": tid, "gold": "x", "em": 1.0, "termination": "answer"}
            meta = {"difficulty": {"oracle_searches": hops}}
            msgs = [{"role": "user", "content": "Q"}, {"role": "assistant", "content": first}]
            f.write(json.dumps({**rec, "metadata": meta, "tool_calls": {"search": hops}, "messages": msgs}) + "\n")
    s = write_report(tmp_path, tmp_path / "grpo")["stages"]["sft"]
    assert (s["lookup"]["plan_right"], s["bridge"]["plan_right"], s["all"]["plan_right"]) == (0.5, 0.5, 0.5)
    assert "| 0.500 |\n" in (tmp_path / "report.md").read_text()
    assert planned_facts([{"role": "assistant", "content": "<think>The question chains 5 facts.</think>"}]) == 5


def test_report_gives_the_spread_of_grpo_seeds(tmp_path):
    ids = [f"bridge-{i:02d}" for i in range(10)] + [f"lookup-{i:02d}" for i in range(10)]
    _stage(tmp_path / "eval-sft", {t: int(i < 2) for i, t in enumerate(ids)})
    for folder, k in (("eval-grpo", 4), ("eval-grpo-seed2", 2), ("eval-grpo-seed1", 3)):
        _stage(tmp_path / folder, {t: int(i < k) for i, t in enumerate(ids)})
    s = write_report(tmp_path, tmp_path / "grpo")
    assert list(s["stages"]) == ["sft", "grpo", "grpo-seed1", "grpo-seed2"]  # seeds in order, right after grpo
    b = s["seeds"]["grpo"]["bridge"]
    assert b["pass@1"] == [0.4, 0.3, 0.2] and (b["mean"], b["min"], b["max"]) == (0.3, 0.2, 0.4)
    assert b["sft->grpo"]["diff"] == 0.1 and s["seeds"]["grpo"]["lookup"]["mean"] == 0.0
    assert (
        "| grpo | 3 | bridge | 10 | 0.400 / 0.300 / 0.200 | 0.300 (0.200-0.400) | +0.100 |"
        in (tmp_path / "report.md").read_text()
    )


def test_report_gives_each_grpo_variant_its_rows_pairs_and_seeds(tmp_path):
    ids = [f"bridge-{i:02d}" for i in range(10)]
    _stage(tmp_path / "eval-sft", {t: int(i < 2) for i, t in enumerate(ids)})
    _stage(tmp_path / "eval-oracle", {t: 1 for t in ids})
    for folder, k in (("eval-grpo", 1), ("eval-grpo-bridge-seed1", 6), ("eval-grpo-bridge", 4), ("eval-grpo-seed1", 3)):
        _stage(tmp_path / folder, {t: int(i < k) for i, t in enumerate(ids)})
    s = summarise(tmp_path)
    assert list(s["stages"]) == ["sft", "grpo", "grpo-seed1", "grpo-bridge", "grpo-bridge-seed1", "oracle"]
    assert s["paired"]["sft->grpo-bridge"]["bridge"]["diff"] == 0.2
    assert s["paired"]["grpo->grpo-bridge"]["bridge"]["diff"] == 0.3
    assert s["paired"]["sft->grpo-bridge-seed1"]["bridge"]["diff"] == 0.4  # each further seed against SFT too
    assert s["paired"]["sft->grpo-seed1"]["bridge"]["diff"] == 0.1 and "grpo->grpo-seed1" not in s["paired"]
    assert s["seeds"]["grpo-bridge"]["bridge"]["mean"] == 0.5 and s["seeds"]["grpo"]["bridge"]["mean"] == 0.2


def test_report_pairs_the_first_named_variant_with_the_others_when_no_run_is_plain_grpo(tmp_path):
    ids = [f"bridge-{i:02d}" for i in range(10)]
    for folder, k in (("eval-sft", 2), ("eval-grpo-cost", 5), ("eval-grpo-bal4", 3)):
        _stage(tmp_path / folder, {t: int(i < k) for i, t in enumerate(ids)})
    s = summarise(tmp_path)
    assert list(s["stages"]) == ["sft", "grpo-bal4", "grpo-cost"]
    assert s["paired"]["grpo-bal4->grpo-cost"]["bridge"]["diff"] == 0.2
    assert s["paired"]["sft->grpo-cost"]["bridge"]["diff"] == 0.3 and "grpo-cost->grpo-bal4" not in s["paired"]


def test_learn_config_names_grpo_variants_and_skips_held_out_tasks():
    assert LearnConfig(grpo=GRPOStage(name="grpo-bridge", seeds=(0, 3))).grpo_runs() == [
        (0, "grpo-bridge", "eval-grpo-bridge"),
        (3, "grpo-bridge-seed3", "eval-grpo-bridge-seed3"),
    ]
    for bad in ("bridge", "grpo/x", "grpo-seed1"):
        with pytest.raises(ConfigError, match="grpo.name"):
            GRPOStage(name=bad)
    with pytest.raises(ConfigError, match="eval_skip"):
        LearnConfig(eval_skip=-1)
    assert LearnConfig(demo_policy="oracle:plan").demo_policy == "oracle:plan"
    assert LearnConfig(demo_policy="oracle:quote").demo_policy == "oracle:quote"
    with pytest.raises(ConfigError, match=r"demo_policy must be one of \('oracle:plan', .*\), got 'oracle'"):
        LearnConfig(demo_policy="oracle")  # the reading oracle's demonstrations do not fit the recipe's turns


def test_grpo_seeds_name_their_folders():
    from sim_web.cli import make_parser
    from training.learn.cli import config_from_args

    cfg = config_from_args(make_parser().parse_args(["learn", "--set", "grpo.seeds=0,1,2"]))
    assert cfg.grpo_runs()[2] == (2, "grpo-seed2", "eval-grpo-seed2") and cfg.grpo_runs()[0][1] == "grpo"
    with pytest.raises(ConfigError, match="distinct"):
        GRPOStage(seeds=(1, 1))


def test_config_errors_name_the_fix():
    with pytest.raises(ConfigError, match="unknown"):
        LearnConfig(stages=("tasks", "nope"))
    with pytest.raises(ConfigError, match="tiers"):
        LearnConfig(tiers=("sailorfog",))
    with pytest.raises(ConfigError, match="test_fraction"):
        LearnConfig(lookup_test_fraction=0.0)
    with pytest.raises(ConfigError, match="split"):
        LearnConfig(split="random")
    assert SFTStage().max_demos is None  # every kept demonstration
    with pytest.raises(ConfigError, match=r"max_demos is None .* --set sft.max_demos=320"):
        SFTStage(even_forms=True)
    assert SFTStage(max_demos=320, even_forms=True).even_forms


def test_cli_parses_learn_and_grpo_overrides(tmp_path):
    from sim_web.cli import make_parser
    from training.learn.cli import config_from_args

    args = make_parser().parse_args(
        [
            "learn",
            "--out",
            str(tmp_path),
            "--stages",
            "tasks,base",
            "--set",
            "eval_n=5",
            "--set",
            "tiers=lookup",
            "--grpo-set",
            "trainer.max_steps=3",
        ]
    )
    cfg = config_from_args(args)
    assert cfg.stages == ("tasks", "base") and cfg.eval_n == 5 and cfg.tiers == ("lookup",)
    assert cfg.grpo.overrides == {"trainer.max_steps": 3} and cfg.out_dir() == tmp_path
    nested = ["learn", "--set", "sft.learning_rate=1e-4", "--set", "grpo.seeds=0,1", "--grpo-set", "tiers=bridge"]
    cfg = config_from_args(make_parser().parse_args(nested))
    assert cfg.sft.learning_rate == 1e-4 and cfg.sft.epochs == 1.0 and cfg.grpo.seeds == (0, 1)
    assert cfg.grpo.overrides == {"tiers": "bridge"} and cfg.grpo.name == "grpo"
    with pytest.raises(
        ConfigError, match="--set epochs=3: unknown key 'epochs'.*did you mean sft.epochs.*fix: --set sft.epochs=3"
    ):
        config_from_args(make_parser().parse_args(["learn", "--set", "epochs=3"]))


def test_task_stage_writes_both_tiers_once_and_refuses_other_settings(sample_index, tmp_path):
    from training.learn.run import stage_tasks

    assert LearnConfig().tiers == ("lookup", "bridge", "intersection")  # the default set has the middle rung
    cfg = LearnConfig(
        out=str(tmp_path), index_dir=str(sample_index), recipe="cpu-learn-test", tiers=("lookup", "bridge")
    )
    path = stage_tasks(cfg, sample_index, k=5, snippet_chars=160)
    recs = [json.loads(x) for x in path.read_text().splitlines()]
    tiers = {r["tier"] for r in recs}
    assert tiers == {"lookup", "bridge"} and {r["split"] for r in recs} == {"train", "test"}
    card = json.loads(path.with_name("cpu-learn-test.card.json").read_text())
    assert card["settings"]["k"] == 5 and set(card["tiers"]) == tiers
    # answer-disjoint across the tiers: no held-out answer (or alias) of either tier is a train answer of either
    assert card["answer_overlap"] == {"test": sum(r["split"] == "test" for r in recs), "test_answer_in_train": 0}
    assert [r["tier"] for r in recs[:40]].count("bridge") not in (0, 40)  # the tiers are mixed in file order
    assert stage_tasks(cfg, sample_index, k=5, snippet_chars=160) == path  # written once
    # beside it, every held-out question in each of its forms, the task file's own form among them
    side = path.with_name("cpu-learn-test.forms.jsonl")
    forms = [json.loads(x) for x in side.read_text().splitlines()]
    held = {r["id"]: r for r in recs if r["split"] == "test"}
    assert forms and {f["base_id"] for f in forms} <= set(held) and len({f["id"] for f in forms}) == len(forms)
    assert all(
        any(f["question"] == r["question"] for f in forms if f["base_id"] == i)
        for i, r in held.items()
        if any(f["base_id"] == i for f in forms)
    )
    assert {f["form"] for f in forms} >= {"template", "relative"}
    before = side.read_bytes()
    side.unlink()  # a task file written before the forms stage: the side file is generated again, the same
    assert stage_tasks(cfg, sample_index, k=5, snippet_chars=160) == path and side.read_bytes() == before
    with pytest.raises(ConfigError, match="delete it"):
        stage_tasks(cfg, sample_index, k=10, snippet_chars=160)
    card["settings"].pop("facts_version")  # a set written before the fact reading had a version: stale
    path.with_name("cpu-learn-test.card.json").write_text(json.dumps(card))
    with pytest.raises(ConfigError, match="facts_version"):
        stage_tasks(cfg, sample_index, k=5, snippet_chars=160)
    path.unlink()


def test_stage_seconds_add_up_over_sittings(tmp_path):
    from training.learn.run import _note

    cfg = LearnConfig(out=str(tmp_path))
    _note(cfg, "eval-sft", {"pass@1": 0.25, "seconds": 600.0})
    _note(cfg, "eval-sft", {"pass@1": 0.3, "seconds": 0.5})  # the resumed sitting that finished it
    assert json.loads((tmp_path / "stages.json").read_text())["eval-sft"] == {"pass@1": 0.3, "seconds": 600.5}


def test_precision_reaches_sft_grpo_and_the_model_evals(monkeypatch, tmp_path):
    import agents.harness
    import training.learn.config
    import training.sft.train
    from training.learn.run import evaluate, grpo_recipe, stage_sft

    seen = []
    done = SimpleNamespace(failures=[], metrics={"pass@1": 0})
    monkeypatch.setattr(agents.harness, "run_eval", lambda ecfg: seen.append(ecfg) or done)
    monkeypatch.setattr(training.sft.train, "train", lambda run_cfg: seen.append(run_cfg))
    (tmp_path / "sft-data").mkdir()
    (tmp_path / "sft-data" / "README.md").write_text("made")  # the SFT dataset exists: only training runs
    for precision, bf16 in (("bf16", True), ("float32", False)):
        seen.clear()
        cfg = LearnConfig(out=str(tmp_path), precision=precision)
        recipe = grpo_recipe(cfg, tmp_path / "tasks.jsonl", str(tmp_path / "sft"))
        evaluate(cfg, recipe, "hf:/models/x", "eval-x")
        evaluate(cfg, recipe, "rule:first-title", "eval-rule")
        stage_sft(cfg, tmp_path / "demos", max_turns=4)
        assert [e.dtype for e in seen[:2]] == ["bfloat16" if bf16 else "float32"] * 2 and seen[2].bf16 is bf16
        assert recipe.trainer.bf16 is bf16
        stages = json.loads((tmp_path / "stages.json").read_text())
        assert stages["eval-x"]["bf16"] is bf16 and stages["sft"]["bf16"] is bf16 and "bf16" not in stages["eval-rule"]
    explicit = LearnConfig(precision="bf16", grpo=GRPOStage(overrides={"trainer.bf16": False}))
    assert grpo_recipe(explicit, tmp_path / "tasks.jsonl", "sft").trainer.bf16 is False  # --grpo-set wins
    for native in (True, False):
        monkeypatch.setattr(training.learn.config, "native_bf16", lambda native=native: native)
        assert LearnConfig().bf16() is native  # auto: what the machine does natively
    with pytest.raises(ConfigError, match="precision"):
        LearnConfig(precision="float16")


def test_sft_seed_reaches_training_and_the_run_seed_is_its_default(monkeypatch, tmp_path):
    import training.sft.train
    from training.learn.run import stage_sft

    seen = []
    monkeypatch.setattr(training.sft.train, "train", lambda run_cfg: seen.append(run_cfg))
    (tmp_path / "sft-data").mkdir()
    (tmp_path / "sft-data" / "README.md").write_text("made")
    for sft, want in ((SFTStage(), 3), (SFTStage(seed=11), 11)):
        stage_sft(LearnConfig(out=str(tmp_path), seed=3, sft=sft), tmp_path / "demos", max_turns=4)
        assert seen[-1].seed == want
        assert json.loads((tmp_path / "stages.json").read_text())["sft"]["seed"] == sft.seed


def test_report_says_which_stages_ran_in_bf16(tmp_path):
    from training.learn.run import _note

    cfg = LearnConfig(out=str(tmp_path), precision="bf16")
    _note(cfg, "sft", {"seconds": 60.0}, "hf:base")
    _note(cfg, "eval-rule", {"pass@1": 0.5, "seconds": 1.0}, "rule:first-title")
    _note(LearnConfig(out=str(tmp_path), precision="float32"), "eval-sft", {"pass@1": 0.5, "seconds": 6.0}, "hf:sft")
    write_report(tmp_path, tmp_path / "grpo")
    assert "Arithmetic (precision): bfloat16 sft; float32 eval-sft" in (tmp_path / "report.md").read_text()


def test_native_bf16_asks_the_gpu_first_then_the_cpu(monkeypatch):
    import torch

    import simweb_core.hardware
    from training.learn.config import native_bf16

    monkeypatch.setattr(simweb_core.hardware, "cpu_has_native_bf16", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert native_bf16() is True
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for supported in (True, False):
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda supported=supported: supported)
        assert native_bf16() is supported


def test_every_sitting_records_the_versions_and_cpu_its_numbers_came_from(monkeypatch):
    """Two runs of one recipe that score differently can be told apart by their machines: the environment names
    torch's own version, None for a package that is not installed, and only CPU flags of the list."""
    import torch

    from training.learn import environment as E

    monkeypatch.setattr(E, "PACKAGES", ("torch", "no-such-package-here"))
    env = E.environment()
    assert env["packages"] == {"torch": torch.__version__, "no-such-package-here": None}
    assert set(env["cpu_flags"]) <= set(E.FLAGS) and env["cores"] >= 1 and env["cpu"]
    json.dumps(env)  # written to invocations.jsonl as it is


def test_a_relative_run_folder_is_made_absolute_so_evals_resume_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = LearnConfig(out="runs/x")
    assert cfg.out_dir() == tmp_path / "runs" / "x" and cfg.out_dir().is_absolute()
