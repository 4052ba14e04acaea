import pytest

from sim_web.env.rewards import RewardConfig, exact_match, f1_score, normalize_answer, score_answer
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
