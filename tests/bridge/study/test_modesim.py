"""The study-mode simulation (bridge/study/modesim.py): the resampled studies rank as worked out by
hand, and `pointlab act mode-study` records its agents through the real trial machine in sim."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

POINTLAB = [sys.executable, "-c", "from pointlab.bridge.cli import main; main()"]

from pointlab.bridge.study.modesim import ModeStudyError, TrialOutcome, simulate, trials_needed, true_order


def _records(rates: dict[str, list[bool]], instruction: str = "pick up the red cube") -> list[TrialOutcome]:
    return [TrialOutcome(a, instruction, s) for a, outcomes in rates.items() for s in outcomes]


def test_the_true_order_is_the_recorded_rate_averaged_over_instructions():
    recs = _records({"p": [True, True], "q": [True, False]}) + _records({"p": [True], "q": [False]}, "pick up x")
    # p: (1 + 1) / 2 = 1; q: (0.5 + 0) / 2 = 0.25
    assert true_order(recs) == [("p", 1.0), ("q", 0.25)]
    with pytest.raises(ModeStudyError, match="same recorded rate"):
        true_order(_records({"p": [True, False], "q": [False, True]}))
    with pytest.raises(ModeStudyError, match="every agent needs every instruction"):
        true_order(_records({"p": [True], "q": [False]}) + _records({"p": [True]}, "pick up x"))


@pytest.mark.parametrize("mode", ["absolute", "pairwise-uniform", "pairwise-adaptive"])
def test_one_trial_or_episode_ranks_two_agents_as_worked_out_by_hand(mode):
    # p always succeeds, q half the time. One trial each (absolute) or one episode (pairwise): q fails
    # (p ranked first: right) with probability 1/2; q succeeds (a tie, broken at random: right half the
    # time) with probability 1/2, so 1/2 + 1/4 = 0.75 of the studies find the order.
    recs = _records({"p": [True], "q": [True, False]})
    (row,) = simulate(recs, mode, [1], studies=1500, seed=1)
    assert row["share"] == pytest.approx(0.75, abs=0.04)  # binomial sd 0.011
    assert row["robot_trials"] == (2 if mode == "absolute" else 2)


def test_a_clear_gap_is_found_by_every_study_and_the_robot_trials_are_counted():
    recs = _records({"a": [True], "b": [False]}) + _records({"a": [True], "b": [False]}, "pick up x")
    rows = simulate(
        recs + _records({"c": [True, False]}) + _records({"c": [True, False]}, "pick up x"),
        "absolute",
        [1, 50],
        studies=200,
    )
    # a certain, c a coin, b never: 50 trials each all but always separate them; 1 trial: only when c's
    # single trial fails and then the b-c tie breaks right (1/2 * 1/2), or c succeeds and the a-c tie
    # breaks right (1/2 * 1/2): 0.5
    assert rows[0]["robot_trials"] == 3 and rows[1]["robot_trials"] == 150
    assert rows[0]["share"] == pytest.approx(0.5, abs=0.1) and rows[1]["share"] == 1.0
    assert trials_needed(rows) == rows[1] and trials_needed(rows[:1]) is None
    with pytest.raises(ModeStudyError, match="mode must be one of"):
        simulate(recs, "ab", [1], studies=10)


@pytest.mark.slow
@pytest.mark.ros
def test_the_command_records_its_agents_through_the_trial_machine(tmp_path, ros_env):
    out = tmp_path / "modes"
    done = subprocess.run(
        [*POINTLAB, "act", "mode-study", "--out", str(out), "--rounds", "1",
         "--studies", "10", "--absolute-sizes", "1,2", "--pairwise-sizes", "2,4"],
        capture_output=True, text=True, timeout=300, env={**os.environ},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    # four agents x the sim world's four start-scene picks, one round
    assert len(records) == 16 and {r["agent"] for r in records} == {
        "sim-oracle",
        "sim-noise-10",
        "sim-noise-14",
        "sim-noise-20",
    }
    assert {r["instruction"] for r in records} == {
        "pick up the red cube",
        "grab the yellow block",
        "pick up the purple cube",
        "pick up the green cube",
    }
    # the oracle's exact points are picked up by the simulated arm every time (its physics decides)
    assert all(r["success"] for r in records if r["agent"] == "sim-oracle")
    summary = json.loads(done.stdout)
    assert set(summary["modes"]) == {"absolute", "pairwise-uniform", "pairwise-adaptive"}
    assert [r["size"] for r in summary["modes"]["absolute"]] == [1, 2]
    assert (out / "modes.svg").stat().st_size > 0 and (out / "results.json").is_file()
    # the same records again without the robot: the same numbers (seeded resampling)
    again = subprocess.run(
        [*POINTLAB, "act", "mode-study", "--out", str(tmp_path / "again"),
         "--records", str(out / "records.jsonl"), "--studies", "10", "--absolute-sizes", "1,2", "--pairwise-sizes", "2,4"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)["modes"] == summary["modes"]
