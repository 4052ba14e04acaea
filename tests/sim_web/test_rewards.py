import pytest

from sim_web.env.rewards import (
    CALL_COST_FLOOR,
    CALL_PENALTY_CAP,
    ECHO_PENALTY_CAP,
    RewardConfig,
    echoes_question,
    episode_reward,
    exact_match,
    f1_score,
    finished_reward,
    free_calls,
    normalize_answer,
    score_answer,
    subgoal_share,
)
from simweb_core.errors import ConfigError


def test_normalize_answer_squad_style():
    assert normalize_answer("The  Eiffel Tower!") == "eiffel tower"
    assert normalize_answer("Café – Paris") == "café paris"


def test_exact_match_uses_aliases():
    assert exact_match("the united states", ["USA", "United States"]) == 1.0
    assert exact_match("United Kingdom", ["United States"]) == 0.0


def test_f1_partial_credit():
    assert f1_score("Albert Einstein", ["Einstein"]) == pytest.approx(2 / 3)
    assert f1_score("", ["Einstein"]) == 0.0


def test_score_answer_kinds_and_judge():
    s = score_answer("Einstein", "Albert Einstein", ["Einstein"], config=RewardConfig(kind="em"))
    assert s["reward"] == 1.0
    s = score_answer("Einstein", "Albert Einstein", [], config=RewardConfig(kind="f1", use_aliases=False))
    assert s["reward"] == pytest.approx(2 / 3) and s["em"] == 0.0
    judged = score_answer("x", "y", [], "q?", RewardConfig(kind="judge"), judge=lambda q, p, g: 0.5)
    assert judged["reward"] == 0.5
    with pytest.raises(ConfigError, match="judge callable"):
        score_answer("x", "y", [], config=RewardConfig(kind="judge"))
    with pytest.raises(ConfigError):
        RewardConfig(kind="bleu")


def test_call_cost_ranks_right_answers_by_calls_and_never_below_a_wrong_one():
    cost = RewardConfig(call_cost=0.1)
    right = [episode_reward(1.0, errors=0, calls=n, config=cost) for n in range(9)]
    assert right[:4] == [1.0, 0.9, 0.8, 0.7]
    assert right == sorted(right, reverse=True) and min(right) == CALL_COST_FLOOR > 0.0
    assert episode_reward(0.0, errors=0, calls=1, config=cost) == 0.0  # a wrong answer loses nothing more
    assert episode_reward(1.0, errors=0, calls=7, config=RewardConfig()) == 1.0  # off by default
    assert episode_reward(2 / 3, errors=0, calls=7, config=RewardConfig()) == 2 / 3  # an uncharged score is untouched
    assert episode_reward(1.0, errors=2, calls=1, config=RewardConfig(call_cost=0.1, format_penalty=0.1)) == 0.7
    for bad in (-0.1, 0.6):
        with pytest.raises(ConfigError, match="call_cost must be in"):
            RewardConfig(call_cost=bad)


def test_free_calls_oracle_charges_only_the_calls_past_what_the_task_needs():
    cost = RewardConfig(call_cost=0.1, free_calls="oracle")
    lookup, bridge = free_calls(1, cost), free_calls(2.0, cost)
    assert (lookup, bridge) == (1, 2)
    assert [episode_reward(1.0, 0, n, cost, lookup) for n in range(4)] == [1.0, 1.0, 0.9, 0.8]
    assert [episode_reward(1.0, 0, n, cost, bridge) for n in range(4)] == [1.0, 1.0, 1.0, 0.9]
    assert free_calls(None, RewardConfig(call_cost=0.1)) == 0  # "none" charges every call, whatever the task says
    for bad in (None, 0, 1.5, True, "2"):
        with pytest.raises(ConfigError, match="needs each task's difficulty.oracle_searches"):
            free_calls(bad, cost)
    with pytest.raises(ConfigError, match="must be 'none' or 'oracle'"):
        RewardConfig(call_cost=0.1, free_calls="hops")
    with pytest.raises(ConfigError, match="set one of them > 0"):
        RewardConfig(free_calls="oracle")


def test_call_penalty_ranks_wrong_answers_by_calls_too_and_stops_at_its_cap():
    pen = RewardConfig(call_penalty=0.2, free_calls="oracle")
    lookup = free_calls(1, pen)
    assert [episode_reward(1.0, 0, n, pen, lookup) for n in range(4)] == [1.0, 1.0, 0.8, 0.6]
    assert [episode_reward(0.0, 0, n, pen, lookup) for n in range(4)] == [0.0, 0.0, -0.2, -0.4]  # call_cost: all 0
    assert episode_reward(0.0, 0, 9, pen, lookup) == -CALL_PENALTY_CAP
    assert episode_reward(1.0, 1, 2, RewardConfig(call_penalty=0.2, format_penalty=0.1)) == pytest.approx(0.5)
    assert (pen.lowest_right, RewardConfig(call_cost=0.1).lowest_right, RewardConfig().lowest_right) == (0.5, 0.5, 1.0)
    with pytest.raises(ConfigError, match="call_penalty must be in"):
        RewardConfig(call_penalty=0.6)
    with pytest.raises(ConfigError, match="set one of them to 0"):
        RewardConfig(call_cost=0.1, call_penalty=0.1)


def test_subgoal_credit_pays_a_wrong_answer_for_the_named_share_and_never_reaches_a_right_one():
    cfg = RewardConfig(subgoal_credit=0.3)
    assert subgoal_share(["Solar System", "Mali"], "solar system planets") == 0.5
    assert subgoal_share(["Mali"], "Somalia coast") == 0.0  # whole words only
    assert subgoal_share([], "anything") == 0.0
    assert episode_reward(0.0, 0, 2, cfg, subgoals=0.5) == pytest.approx(0.15)
    assert episode_reward(1.0, 0, 2, cfg, subgoals=0.0) == 1.0
    assert episode_reward(0.0, 0, 2, RewardConfig(), subgoals=1.0) == 0.0  # off by default
    f1 = RewardConfig(kind="f1", subgoal_credit=0.2)
    assert episode_reward(0.5, 0, 2, f1, subgoals=1.0) == pytest.approx(0.6)  # a share of what the answer left
    # under the harshest call charge a right answer still beats the best-credited wrong one
    for charge in (
        RewardConfig(call_cost=0.5, subgoal_credit=0.49),
        RewardConfig(call_penalty=0.5, subgoal_credit=0.49),
    ):
        right = episode_reward(1.0, 0, 9, charge)
        assert right > episode_reward(0.0, 0, 1, charge, subgoals=1.0)


@pytest.mark.parametrize("credit", [-0.1, 0.5, 1.0])
def test_subgoal_credit_refuses_what_would_let_a_wrong_answer_match_a_right_one(credit):
    with pytest.raises(ConfigError, match=r"subgoal_credit must be in \[0, 0.5\)"):
        RewardConfig(subgoal_credit=credit)


def test_echo_penalty_costs_only_a_wrong_answer_that_restates_the_question():
    q = "Which country borders Egypt, has a coast on the Mediterranean Sea, and lies in North Africa?"
    assert echoes_question("Egypt", q) and echoes_question("the Mediterranean Sea", q)
    assert not echoes_question("Libya", q) and not echoes_question("Egyptian", q)  # whole words only
    assert not echoes_question("", q) and not echoes_question("...", q)  # nothing said, nothing restated
    cfg = RewardConfig(echo_penalty=0.2)
    assert finished_reward("Egypt", 0.0, q, (), [], 0, 2, cfg) == pytest.approx(-0.2)
    assert finished_reward("Sudan", 0.0, q, (), [], 0, 2, cfg) == 0.0
    assert finished_reward("Egypt", 0.0, q, (), [], 0, 2, RewardConfig()) == 0.0  # off by default
    # a right answer is never penalised, even when the question happens to name it
    assert finished_reward("Egypt", 1.0, q, (), [], 0, 2, cfg) == 1.0
    # with F1 a partly right answer keeps its score: the penalty is for answers that score nothing
    assert episode_reward(0.5, 0, 2, RewardConfig(kind="f1", echo_penalty=0.2), echo=True) == 0.5
    # it adds to the other charges and never lifts a wrong answer above a right one
    both = RewardConfig(call_penalty=0.1, echo_penalty=0.3, subgoal_credit=0.25)
    wrong = finished_reward("Egypt", 0.0, q, ["Libya"], ["country bordering Libya"], 0, 1, both)
    assert wrong == pytest.approx(0.25 - 0.1 - 0.3)
    assert finished_reward("Libya", 1.0, q, ["Libya"], [], 0, 1, both) > wrong


@pytest.mark.parametrize("penalty", [-0.1, ECHO_PENALTY_CAP + 0.1])
def test_echo_penalty_refuses_values_outside_its_range(penalty):
    with pytest.raises(ConfigError, match=r"echo_penalty must be in \[0, 0.5\]"):
        RewardConfig(echo_penalty=penalty)
