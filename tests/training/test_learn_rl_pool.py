"""``LearnConfig.rl_share``: train tasks held back from SFT for GRPO, answer-disjoint from the demonstrations."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from simweb_core.errors import ConfigError
from training.grpo.train import pool_ids
from training.learn.config import LearnConfig, SFTStage
from training.learn.report import write_report
from training.learn.rl_pool import POOL_FILE, rl_pool, write_rl_pool
from training.synth.tiers.split import answer_names


def _records() -> list[dict]:
    """Two tiers of train tasks with repeated answers and an alias that links two answers, plus held-out tasks."""
    recs = []
    for tier, n in (("bridge", 60), ("lookup", 40)):
        for i in range(n):
            recs.append({"id": f"{tier}-{i}", "answer": f"{tier} answer {i % 17}", "tier": tier, "split": "train"})
    recs[0]["aliases"] = ["lookup answer 3"]  # links a bridge answer group to a lookup one
    recs += [{"id": f"test-{i}", "answer": f"held {i}", "tier": "bridge", "split": "test"} for i in range(10)]
    return recs


def test_pool_holds_back_whole_answer_groups_of_each_tier():
    recs = _records()
    pool = set(rl_pool(recs, 0.5, seed=3))
    assert pool == set(rl_pool(recs, 0.5, seed=3)) and pool != set(rl_pool(recs, 0.5, seed=4))
    assert not any(i.startswith("test-") for i in pool)  # held-out tasks never train
    sft_names = set().union(*(answer_names(r) for r in recs if r["split"] == "train" and r["id"] not in pool))
    pool_names = set().union(*(answer_names(r) for r in recs if r["id"] in pool))
    assert pool_names and not pool_names & sft_names
    for tier, n in (("bridge", 60), ("lookup", 40)):
        held = sum(i.startswith(tier) for i in pool)
        assert 0.3 * n <= held <= 0.5 * n  # about the share, never over it
    assert all(r["split"] in ("train", "test") and "aliases" not in r for r in recs[1:])  # the input is unchanged
    with pytest.raises(ConfigError, match=r"in \(0, 1\)"):
        rl_pool(recs, 1.0, seed=0)


def test_pool_file_is_drawn_once_and_refuses_other_settings(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    with pytest.raises(ConfigError, match="run the tasks stage first"):
        write_rl_pool(tasks, tmp_path / "run", 0.5, 0)
    tasks.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    path = write_rl_pool(tasks, tmp_path / "run", 0.5, 0)
    assert path.name == POOL_FILE and pool_ids(path) == set(rl_pool(_records(), 0.5, 0))
    assert write_rl_pool(tasks, tmp_path / "run", 0.5, 0) == path
    with pytest.raises(ConfigError, match="delete it"):
        write_rl_pool(tasks, tmp_path / "run", 0.25, 0)
    with pytest.raises(ConfigError, match="rl_share"):
        LearnConfig(rl_share=1.0)
    (tmp_path / "older" / "sft-data").mkdir(parents=True)
    (tmp_path / "older" / "sft-data" / "README.md").write_text("built from every train task")
    with pytest.raises(ConfigError, match="another --out"):
        write_rl_pool(tasks, tmp_path / "older", 0.5, 0)


def test_sft_skips_the_pool_and_grpo_trains_on_it(monkeypatch, tmp_path):
    import transformers

    import training.sft.collect
    import training.sft.dataset
    import training.sft.train
    from training.learn.run import grpo_recipe, stage_sft

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    cfg = LearnConfig(out=str(tmp_path / "run"), rl_share=0.5, sft=SFTStage(max_demos=None))
    pool = pool_ids(write_rl_pool(tasks, cfg.out_dir(), cfg.rl_share, cfg.seed))
    demos = [{"task_id": r["id"]} for r in _records() if r["split"] == "train"]
    used: list = []
    monkeypatch.setattr(
        training.sft.collect,
        "collect",
        lambda _c: SimpleNamespace(kept=demos, sources=[{"tools": []}], stats=SimpleNamespace(table=dict)),
    )
    monkeypatch.setattr(training.sft.dataset, "build_dataset", lambda kept, tok, tools: used.extend(kept))
    monkeypatch.setattr(training.sft.dataset, "dataset_card", lambda *a: "")
    monkeypatch.setattr(training.sft.dataset, "save", lambda *a: None)
    monkeypatch.setattr(training.sft.train, "resolve_model", lambda m: Path(m))
    monkeypatch.setattr(training.sft.train, "train", lambda run_cfg: None)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda p: None)
    stage_sft(cfg, tmp_path / "demos", max_turns=4)
    assert used and {d["task_id"] for d in used} == {d["task_id"] for d in demos} - pool
    assert grpo_recipe(cfg, tasks, str(tmp_path / "sft")).task_pool == str(cfg.out_dir() / POOL_FILE)


def test_grpo_trains_on_the_headroom_band_of_the_pool(tmp_path):
    from training.learn.config import GRPOStage
    from training.learn.run import grpo_recipe

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    cfg = LearnConfig(out=str(tmp_path / "run"), rl_share=0.5)
    pool = sorted(pool_ids(write_rl_pool(tasks, cfg.out_dir(), cfg.rl_share, cfg.seed)))
    outside = next(r["id"] for r in _records() if r["split"] == "train" and r["id"] not in pool)
    band = cfg.out_dir() / "headroom" / "pool.json"
    band.parent.mkdir()
    band.write_text(json.dumps({"ids": pool[:1]}))
    assert grpo_recipe(cfg, tasks, "sft").task_pool == str(band)  # the band of the pool, once the stage has run
    off = dataclasses.replace(cfg, grpo=GRPOStage(pool=False))
    assert grpo_recipe(off, tasks, "sft").task_pool == str(cfg.out_dir() / POOL_FILE)
    band.write_text(json.dumps({"ids": [pool[0], outside]}))  # a band drawn over tasks SFT was shown
    with pytest.raises(ConfigError, match="drawn without rl_share"):
        grpo_recipe(cfg, tasks, "sft")


def test_report_splits_grpo_reward_by_what_sft_was_shown(tmp_path):
    from datasets import Dataset

    from training.learn.recall import summarise

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    run = tmp_path / "run"
    Dataset.from_dict({"task_id": ["bridge-0", "bridge-1"]}).save_to_disk(str(run / "sft-data"))
    grpo = run / "grpo-x"
    grpo.mkdir()
    (grpo / "summary.json").write_text(json.dumps({"config": {"tasks": str(tasks)}}))
    rows = [  # bridge-17 answers as bridge-0 does ("bridge answer 0"); bridge-5 and lookup-2 share no answer
        ("bridge-0", 1, 0.0),
        ("bridge-0", 6, 1.0),
        ("bridge-17", 2, 0.5),
        ("bridge-5", 3, 0.0),
        ("lookup-2", 6, 1.0),
    ]
    (grpo / "outcomes.jsonl").write_text(
        "".join(json.dumps({"task_id": t, "step": s, "reward": r}) + "\n" for t, s, r in rows)
    )
    out = summarise(run)["grpo-x"]
    assert out["bridge"]["sft task"] == {"tasks": 1, "reward": [0.0, None, 1.0]}
    assert out["bridge"]["sft answer"] == {"tasks": 1, "reward": [0.5, None, None]}
    assert out["bridge"]["new"]["reward"] == [None, 0.0, None] and out["lookup"]["new"]["tasks"] == 1
    write_report(run, run / "grpo-x")
    assert "| grpo-x | bridge | sft answer | 1 | 0.500 | - | - |" in (run / "report.md").read_text()
    assert summarise(tmp_path / "no-sft") == {}
