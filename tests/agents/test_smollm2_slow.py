"""SmolLM2-135M-Instruct (the bundled real model) as a local policy, end to end. Minutes on a CPU: ``-m slow``."""

import pytest

pytestmark = pytest.mark.slow


def test_smollm2_plays_episodes_in_the_env(sample_index, tmp_path):
    from agents.config import AgentConfig, SamplingConfig
    from agents.harness import EvalConfig, run_eval

    agent = AgentConfig(max_llm_calls=2, sampling=SamplingConfig(temperature=0.0, presence_penalty=0.0, max_tokens=48))
    res = run_eval(
        EvalConfig(
            policy="hf:smollm2",
            index_dir=str(sample_index),
            n=2,
            batch_size=2,
            agent=agent,
            threads=1,
            out=str(tmp_path),
            progress=False,
        )
    )
    m = res.metrics
    assert m["episodes"] == 2 and not res.failures
    assert m["tokens"]["completion_total"] > 0 and m["run"]["generated_tokens_per_second"] > 0
    assert 0.0 <= m["format_validity"] <= 1.0 and m["pass@1"] is not None
    for r in res.records:
        assert r["llm_calls"] == 2 and r["steps"] and all(s["completion_tokens"] <= 48 for s in r["steps"])
