import math

import pytest

from agents.metrics import aggregate, format_table, pass_at_k


@pytest.mark.parametrize(
    "n,c,k,expected",
    [
        (5, 2, 1, 0.4),
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (4, 1, 2, 0.5),  # 1 - C(3,2)/C(4,2) = 1 - 3/6
        (10, 3, 3, 1 - 35 / 120),  # 1 - C(7,3)/C(10,3)
        (5, 4, 2, 1.0),  # n - c < k: every 2-subset has a correct sample
        (3, 0, 3, 0.0),
        (1, 1, 1, 1.0),
    ],
)
def test_pass_at_k_hand_computed(n, c, k, expected):
    assert math.isclose(pass_at_k(n, c, k), expected, rel_tol=1e-12)


def test_pass_at_k_matches_brute_force_over_subsets():
    from itertools import combinations

    n, c = 7, 3
    outcomes = [1] * c + [0] * (n - c)
    for k in range(1, n + 1):
        subsets = list(combinations(outcomes, k))
        assert math.isclose(pass_at_k(n, c, k), sum(any(s) for s in subsets) / len(subsets))


def test_pass_at_k_rejects_bad_arguments():
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


def _rec(task, sample, em, turns=2, md=None, judge=None, **extra):
    steps = [{"purpose": "act", "kind": "tool_call", "obs_error": None}] * (turns - 1) + [
        {"purpose": "act", "kind": "answer"}
    ]
    r = {
        "key": f"{task}#{sample}",
        "task_id": task,
        "sample": sample,
        "em": em,
        "f1": em,
        "turns": turns,
        "llm_calls": turns,
        "prediction": "x",
        "tool_calls": {"search": turns - 1},
        "steps": steps,
        "metadata": md or {},
        "tokens": {"prompt": 100, "completion": 10, "peak_context": 50},
        "timings": {"total_seconds": 1.0, "llm_seconds": 0.5, "env_seconds": 0.5},
        "termination": "answer",
        **extra,
    }
    if judge is not None:
        r["judge"] = judge
    return r


def test_aggregate_pass_at_k_per_task_and_groups():
    recs = [
        _rec("a", 0, 1.0, md={"uncertainty_types": ["fuzzy_date", "masked_name"], "difficulty": {"level": "hard"}}),
        _rec("a", 1, 0.0, md={"uncertainty_types": ["fuzzy_date", "masked_name"], "difficulty": {"level": "hard"}}),
        _rec("b", 0, 0.0, turns=4, md={"uncertainty_types": ["fuzzy_date"], "difficulty": {"level": "easy"}}),
        _rec("b", 1, 0.0, turns=4, md={"uncertainty_types": ["fuzzy_date"], "difficulty": {"level": "easy"}}),
    ]
    m = aggregate(recs, ks=(1, 2))
    assert m["pass@1"] == 0.25 and m["pass@2"] == 0.5  # task a: 1/2 and 1.0; task b: 0
    assert m["tasks"] == 2 and m["episodes"] == 4 and m["mean_turns"] == 3.0
    assert m["tool_calls_per_episode"] == {"search": 2.0}
    assert m["by_uncertainty_type"]["fuzzy_date"]["accuracy"] == 0.25
    assert m["by_uncertainty_type"]["masked_name"]["accuracy"] == 0.5
    assert m["by_difficulty"] == {
        "easy": {"episodes": 2, "accuracy": 0.0, "em": 0.0, "f1": 0.0},
        "hard": {"episodes": 2, "accuracy": 0.5, "em": 0.5, "f1": 0.5},
    }
    assert "pass@2" in format_table(m) and "uncertainty_type=fuzzy_date" in format_table(m)


def test_judge_overrides_em_for_correctness():
    m = aggregate([_rec("a", 0, 0.0, judge=1.0), _rec("b", 0, 1.0, judge=0.0), _rec("c", 0, 1.0, judge=1.0)])
    assert m["pass@1"] == round(2 / 3, 4) and m["em"] == round(2 / 3, 4) and m["judge"] == round(2 / 3, 4)
    assert m["accuracy"] == round(2 / 3, 4)
