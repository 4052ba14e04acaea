"""Group advantages and the drop mask on hand-computed groups (G=4, G=5, NaN rewards)."""

import math

import pytest

torch = pytest.importorskip("torch")

from simweb_core.errors import ConfigError  # noqa: E402
from training.grpo.advantage import drop_mask, group_advantages, group_std, zero_variance_groups  # noqa: E402

NAN = float("nan")


def close(got, want):
    assert got.tolist() == pytest.approx(want, abs=1e-5)


def test_g4_grpo_and_leave_one_out():
    r = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    close(group_advantages(r, 4, "grpo"), [0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5])
    # LOO: r_i - mean of the other three
    close(group_advantages(r, 4, "loo"), [1.0, -1 / 3, -1 / 3, -1 / 3, 2 / 3, 2 / 3, -2 / 3, -2 / 3])
    # = G/(G-1) * (r - mean)
    close(group_advantages(r, 4, "loo"), (group_advantages(r, 4, "grpo") * 4 / 3).tolist())


def test_g4_loo_divided_by_group_std():
    r = torch.tensor([1.0, 0.0, 0.0, 0.0])
    std = math.sqrt(((0.75**2) + 3 * 0.25**2) / 3)  # unbiased: 0.5
    assert std == pytest.approx(0.5)
    close(group_std(r, 4), [0.5] * 4)
    close(group_advantages(r, 4, "loo_std"), [1.0 / (0.5 + 1e-4)] + [(-1 / 3) / (0.5 + 1e-4)] * 3)


def test_g5_with_graded_rewards():
    r = torch.tensor([1.0, 0.5, 0.0, 0.0, 0.0])  # sum 1.5
    close(group_advantages(r, 5, "grpo"), [0.7, 0.2, -0.3, -0.3, -0.3])
    close(group_advantages(r, 5, "loo"), [1 - 0.5 / 4, 0.5 - 1.0 / 4, -1.5 / 4, -1.5 / 4, -1.5 / 4])
    var = (0.7**2 + 0.2**2 + 3 * 0.3**2) / 4
    sd = math.sqrt(var) + 1e-4
    close(group_advantages(r, 5, "loo_std"), [0.875 / sd, 0.25 / sd, -0.375 / sd, -0.375 / sd, -0.375 / sd])


def test_nan_rewards_leave_the_baseline_and_get_zero():
    r = torch.tensor([1.0, NAN, 0.0, 0.0, 1.0])  # G=5, 4 scorable, sum 2
    # explicit form: r_i - (sum - r_i) / (n_scorable - 1)
    close(group_advantages(r, 5, "loo"), [1 - 1 / 3, 0.0, 0 - 2 / 3, 0 - 2 / 3, 1 - 1 / 3])
    close(group_advantages(r, 5, "grpo"), [0.5, 0.0, -0.5, -0.5, 0.5])
    sd = math.sqrt(4 * 0.25 / 3) + 1e-4
    close(group_advantages(r, 5, "loo_std"), [(2 / 3) / sd, 0.0, -(2 / 3) / sd, -(2 / 3) / sd, (2 / 3) / sd])
    # a group with one scorable sample has no baseline
    close(group_advantages(torch.tensor([1.0, NAN, NAN, NAN]), 4, "loo"), [0.0] * 4)
    assert not torch.isnan(group_advantages(torch.tensor([NAN] * 4), 4, "loo_std")).any()


def test_zero_variance_groups():
    r = torch.tensor([1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, NAN, 0.0])
    assert zero_variance_groups(r, 4).tolist() == [True, False, True]
    close(group_advantages(r, 4, "loo_std")[:4], [0.0] * 4)


def test_drop_mask_keeps_truncated_successes_and_answered_failures():
    r = torch.tensor([1.0, 0.0, 0.0, 1.0, -0.1, NAN])
    no_answer = torch.tensor([False, False, True, True, True, True])
    assert drop_mask(r, no_answer, "drop_truncated_negatives").tolist() == [False, False, True, False, True, False]
    assert drop_mask(r, no_answer, "drop_all_truncated").tolist() == no_answer.tolist()
    assert not drop_mask(r, no_answer, "keep_all").any()
    # dropped samples stay in the baseline: advantages do not depend on the drop
    adv = group_advantages(r[:4], 4, "loo")
    close(adv, [1 - 1 / 3, -2 / 3, -2 / 3, 1 - 1 / 3])


def test_bad_inputs_are_clear_errors():
    with pytest.raises(ConfigError, match="advantage must be one of"):
        group_advantages(torch.zeros(4), 4, "rloo")
    with pytest.raises(ConfigError, match="groups of 3"):
        group_advantages(torch.zeros(4), 3, "loo")
    with pytest.raises(ConfigError, match="drop_mask.truncation must be one of"):
        drop_mask(torch.zeros(2), torch.zeros(2, dtype=torch.bool), "drop")
