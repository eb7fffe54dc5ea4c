"""MRA against values worked out by hand from the formula of ReVSI sec. 6 / VSI-Bench:
MRA = mean over theta in {0.50..0.95} of [ |pred-gt|/gt <= 1 - theta ] (an error on a tolerance counts, as in
the reference code of VSI-Bench and ReVSI)."""

import math

import pytest

from pointlab.benchmark.video.mra import MRA_THRESHOLDS, MRA_TOLERANCES, mean_relative_accuracy


def test_ten_thresholds_written_out():
    assert len(MRA_THRESHOLDS) == 10
    assert MRA_THRESHOLDS[0] == 0.5 and MRA_THRESHOLDS[-1] == 0.95
    assert all(abs((1 - t) - tol) < 1e-12 for t, tol in zip(MRA_THRESHOLDS, MRA_TOLERANCES))


@pytest.mark.parametrize(
    "pred, gt, expected",
    [
        (10, 10, 1.0),  # error 0: inside all ten tolerances
        (9.9, 10, 1.0),  # error 0.01 < 0.05
        (11, 10, 0.9),  # error 0.10: within 0.50..0.10 (9), not 0.05
        (9, 10, 0.9),  # the same below (VSI-Bench's published numbers count it)
        (3.3, 3, 0.9),  # same error 0.1, although 0.3/3 is not exactly 0.1 in floats
        (6, 5, 0.7),  # error 0.2: within 0.50..0.20 (7), though the reference's 1 - 0.8 is 0.1999...84
        (3, 4, 0.6),  # error 0.25: within 0.50, 0.45, 0.40, 0.35, 0.30, 0.25 (6)
        (14, 10, 0.3),  # error 0.40: within 0.50, 0.45, 0.40
        (15, 10, 0.1),  # error 0.50: on the widest tolerance, counts
        (100, 10, 0.0),
        (-10, 10, 0.0),
        (1.96, 2.0, 1.0),  # error 0.02
        (2.25, 2.0, 0.8),  # error 0.125: inside 0.50 .. 0.15 (8 of 10)
    ],
)
def test_hand_worked(pred, gt, expected):
    assert mean_relative_accuracy(pred, gt) == pytest.approx(expected)


def test_ground_truth_zero_is_exact_match():
    assert mean_relative_accuracy(0, 0) == 1.0
    assert mean_relative_accuracy(0.0, 0) == 1.0
    assert mean_relative_accuracy(1, 0) == 0.0
    assert mean_relative_accuracy(0.01, 0) == 0.0


def test_missing_prediction_and_bad_gt():
    assert mean_relative_accuracy(None, 3) == 0.0
    assert mean_relative_accuracy(math.nan, 3) == 0.0
    assert mean_relative_accuracy(math.inf, 3) == 0.0
    with pytest.raises(ValueError):
        mean_relative_accuracy(3, math.nan)
