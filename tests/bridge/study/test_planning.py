"""Study planning (bridge/study/planning.py, ``pointlab act plan``): sizes worked out by hand from the
formulas, then checked on simulated studies with known success rates."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pointlab.bridge.cli import build_app
from pointlab.bridge.study.planning import (
    PlanError,
    episodes_to_separate,
    make_plan,
    measured_trial_s,
    simulate_power,
    simulate_width,
    trials_for_width,
    trials_to_separate,
    wilson_width,
)


def test_sizes_by_hand():
    # Separating 0.6 from 0.4 (D = 0.2), alpha 0.05, power 0.8: z = 1.95996, 0.84162;
    # n = (1.95996 sqrt(2 * .25) + 0.84162 sqrt(.24 + .24))^2 / .04 = (1.38590 + 0.58308)^2 / .04 = 96.9 -> 97
    assert trials_to_separate(0.2) == 97
    # pairwise: A wins .6 * .6 = .36, B wins .4 * .4 = .16, decided .52, pi = .36 / .52 = .69231;
    # n_d = ((1.95996 / 2 + 0.84162 sqrt(.69231 * .30769)) / .19231)^2 = ((.97998 + .38845) / .19231)^2
    # = 50.64; episodes = 50.64 / .52 = 97.4 -> 98
    assert episodes_to_separate(0.2) == 98
    # Wilson width 0.2 at p = .5: n = 92 gives 0.20020, n = 93 gives 0.19918 (by hand from the formula)
    assert wilson_width(92, 0.5) == pytest.approx(0.20020, abs=5e-5)
    assert wilson_width(93, 0.5) == pytest.approx(0.19918, abs=5e-5)
    assert trials_for_width(0.2) == 93
    with pytest.raises(PlanError):
        trials_for_width(1.5)
    with pytest.raises(PlanError):
        make_plan(agents=3, mode="pairwise", width=0.2, trial_s=60)


def test_a_plan_counts_the_whole_study_and_its_time():
    p = make_plan(agents=4, margin=0.2, trial_s=45, stations=2)
    assert (p.per_agent, p.trials, p.hours) == (97, 388, round(388 * 45 / 2 / 3600, 2))
    q = make_plan(agents=4, mode="pairwise", margin=0.2, trial_s=45)
    # 6 pairs x 98 episodes x 2 trials; each agent is in 3 pairs
    assert (q.per_pair, q.per_agent, q.trials) == (98, 294, 1176)
    both = make_plan(agents=2, margin=0.3, width=0.1, trial_s=45)
    assert both.per_agent == max(trials_to_separate(0.3), trials_for_width(0.1))


def test_the_planned_sizes_hold_on_simulated_studies():
    """2000 simulated studies each: the planned width is reached in at least 90 % of them at rates
    .1 .. .9 (the plan is for .5, the widest); the power is 0.8 within the draws' error (2000 draws:
    standard error 0.009, so 0.77 .. 0.83 at three of them)."""
    assert simulate_width(trials_for_width(0.2), 0.2, [0.5, 0.3, 0.7, 0.1, 0.9]) >= 0.9
    assert simulate_width(trials_for_width(0.15), 0.15, [0.5]) >= 0.9
    # a plan too small fails the check: half the trials, the width is missed nearly always at .5
    assert simulate_width(trials_for_width(0.2) // 2, 0.2, [0.5]) < 0.1
    for mode, n in (("absolute", trials_to_separate(0.2)), ("pairwise", episodes_to_separate(0.2))):
        assert 0.77 <= simulate_power(0.2, mode=mode, n=n) <= 0.83, mode
    assert simulate_power(0.2, mode="absolute", n=40) < 0.6  # fewer trials: less power


def test_the_trial_time_is_measured_from_consecutive_trials():
    rows = [{"participant_id": 1, "block": 0, "created_unix_s": t} for t in (0, 50, 110, 160)]
    rows += [{"participant_id": 2, "block": 0, "created_unix_s": t} for t in (1000, 1040, 1100)]
    # gaps 50, 60, 50, 40, 60 -> median 50
    assert measured_trial_s(rows) == 50.0
    assert measured_trial_s(rows[:3]) is None  # two gaps: too few


def test_the_plan_command():
    run = CliRunner().invoke(build_app(), ["act", "plan", "--agents", "4", "--margin", "0.2", "--trial-s", "45"])
    assert run.exit_code == 0, run.output
    assert json.loads(run.stdout)["per_agent"] == 97
    bad = CliRunner().invoke(build_app(), ["act", "plan", "--agents", "3", "--mode", "pairwise", "--width", "0.2"])
    assert bad.exit_code == 2 and "width" in bad.output
    assert CliRunner().invoke(build_app(), ["act", "plan", "--agents", "3"]).exit_code == 2
    both = CliRunner().invoke(build_app(), ["act", "plan", "--agents", "2", "--margin", "0.3", "--width", "0.15"])
    got = json.loads(both.stdout)
    # by hand: width 0.15 at p = .5 needs 167 (wilson_width(167, .5) = 0.14995), margin 0.3 needs 43
    assert got["per_agent"] == 167 and "larger" in got["note_size"]
