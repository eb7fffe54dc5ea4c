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


# (a pairwise study ends in a Davidson fit: 1,500 of them take ~10 s, too long for the fast tier)
@pytest.mark.parametrize(
    "mode",
    [
        "absolute",
        pytest.param("pairwise-uniform", marks=pytest.mark.slow),
        pytest.param("pairwise-adaptive", marks=pytest.mark.slow),
    ],
)
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
    # one round of four picks: two noisy agents may well tie, and then there is no true order to
    # find: a clear refusal after the records are kept, not a made-up answer
    if done.returncode != 0:
        assert done.returncode == 1 and "same recorded rate" in done.stderr and "record more rounds" in done.stderr
    else:
        assert set(json.loads(done.stdout)["modes"]) == {"absolute", "pairwise-uniform", "pairwise-adaptive"}
    records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    # four agents x the sim world's four start-scene picks, one round, written as they came
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


@pytest.mark.slow
def test_the_command_resamples_a_records_file_the_same_way_twice(tmp_path):
    recs = tmp_path / "records.jsonl"
    rows = [("p", [True, True]), ("q", [True, False]), ("r", [False, False, True, False])]
    recs.write_text(
        "".join(
            json.dumps({"agent": a, "instruction": "pick up the red cube", "success": x}) + "\n"
            for a, xs in rows
            for x in xs
        )
    )
    args = ["--records", str(recs), "--studies", "20", "--absolute-sizes", "1,64", "--pairwise-sizes", "2,96"]
    first = subprocess.run(
        [*POINTLAB, "act", "mode-study", "--out", str(tmp_path / "a"), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    again = subprocess.run(
        [*POINTLAB, "act", "mode-study", "--out", str(tmp_path / "b"), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert first.returncode == 0 and again.returncode == 0, first.stderr[-2000:]
    summary = json.loads(first.stdout)
    assert [(t["agent"], t["success_rate"]) for t in summary["true_order"]] == [("p", 1.0), ("q", 0.5), ("r", 0.25)]
    assert [r["size"] for r in summary["modes"]["absolute"]] == [1, 64]
    assert (
        summary["modes"]["absolute"][1]["robot_trials"] == 192
        and summary["modes"]["pairwise-uniform"][1]["robot_trials"] == 192
    )
    assert json.loads(again.stdout)["modes"] == summary["modes"]  # seeded resampling
    assert (tmp_path / "a" / "modes.svg").stat().st_size > 0 and (tmp_path / "a" / "records.jsonl").is_file()
    bad = subprocess.run(
        [*POINTLAB, "act", "mode-study", "--out", str(tmp_path / "c"), "--records", str(tmp_path / "nope.jsonl")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and "--records: cannot read" in bad.stderr and not (tmp_path / "c").exists()
