"""The answer prior reads the train split of the set it is evaluated on, however that set is named."""

from __future__ import annotations


def test_the_prior_runs_on_a_bundled_set_by_name(sample_index, tmp_path):
    from agents.harness import EvalConfig, run_eval

    res = run_eval(
        EvalConfig(
            policy="prior",
            index_dir=str(sample_index),
            tasks="handwritten",  # a bundled set: resolved by name, and it has no train split
            split="test",
            n=3,
            out=str(tmp_path / "prior"),
            progress=False,
        )
    )
    assert res.metrics["tasks"] == 3 and not res.failures
    assert res.metrics["pass@1"] == 0.0  # no train answers to recall
