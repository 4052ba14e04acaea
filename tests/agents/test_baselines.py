"""The zero-parameter baselines: ``rule:first-title`` and the answer prior, alone and through the eval harness."""

from __future__ import annotations

import json

from agents.policies.baselines import AnswerPriorPolicy, FirstTitlePolicy, question_form
from sim_web.env.tasks import Task


def _results(*titles: str) -> str:
    items = "\n\n".join(
        f"{i}. [{t}](https://en.wikipedia.org/wiki/{t.replace(' ', '_')})\n\nsnippet" for i, t in enumerate(titles, 1)
    )
    return f"<tool_response>\nA Google search for 'q' found {len(titles)} results:\n\n## Web Results\n{items}\n</tool_response>"


def test_the_rule_searches_the_question_then_answers_the_first_title_it_does_not_name():
    rule = FirstTitlePolicy()
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "Kabul is the capital of which country?"}]
    first = rule.act(chat)
    assert '"name": "search"' in first and "Kabul is the capital of which country?" in first
    chat += [
        {"role": "assistant", "content": first},
        {"role": "user", "content": _results("Kabul", "Afghanistan (country)")},
    ]
    assert rule.act(chat).endswith("<answer>Afghanistan</answer>")  # Kabul is named; the qualifier is dropped


def test_the_prior_answers_the_most_frequent_train_answer_of_the_form():
    train = [
        Task("1", "Lima is the capital of which country?", "Peru"),
        Task("2", "Cusco is a city in which country?", "Peru"),
        Task("3", "Quito is the capital of which country?", "Ecuador"),
        Task("4", "Who wrote Hamlet?", "William Shakespeare"),
    ]
    prior = AnswerPriorPolicy(train)
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "Bogota is in which country?"}]
    assert prior.act(chat).endswith("<answer>Peru</answer>")
    chat[1]["content"] = "Who painted the Mona Lisa?"
    assert prior.act(chat).endswith("<answer>William Shakespeare</answer>")
    assert question_form("A is in a country. That country is part of which region?") == "which region"


def test_both_baselines_run_through_the_eval_harness(sample_index, tmp_path):
    from agents.harness import EvalConfig, run_eval
    from training.synth.tiers.generate import TierConfig, generate_tier

    records, _ = generate_tier(sample_index, TierConfig(tier="lookup", n=12, test_fraction=0.5))
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    scores = {}
    for policy in ("rule:first-title", "prior"):
        res = run_eval(
            EvalConfig(
                policy=policy,
                index_dir=str(sample_index),
                tasks=str(path),
                split="test",
                out=str(tmp_path / policy.replace(":", "-")),
                progress=False,
            )
        )
        scores[policy] = res.metrics["pass@1"]
        assert res.metrics["tasks"] == sum(r["split"] == "test" for r in records)
    assert scores["prior"] == 0.0  # answer-disjoint split: no held-out answer is a train answer
    assert scores["rule:first-title"] > 0.0  # lookup questions whose answer page the question's search shows
