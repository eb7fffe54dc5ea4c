"""App. A.4 quality checks, and the scene-level 6:2:2 split stratified by source and task."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from pointlab.benchmark.pinpoint.quality import check_record
from pointlab.benchmark.pinpoint.split import split_scenes


def rec(task, answer, **kw):
    qtype = {
        "TPV": "presence",
        "NRI": "reference_mcq",
        "FSD": "free_form_localization",
        "SSP": "structured_localization",
    }[task]
    base = {
        "id": "x",
        "scene_id": "s",
        "source_dataset": "scannet",
        "task": task,
        "question_type": qtype,
        "question": "q",
        "instruction": "i",
        "answer": answer,
        "target": "cup",
        "choices": None,
    }
    return {**base, **kw}


SSP_OK = {
    "target": "cup",
    "support_surface": "table",
    "references": [{"object": "keyboard", "relation": "next_to", "distance_cm": 11.0}],
}


@pytest.mark.parametrize(
    "r,problems",
    [
        (rec("TPV", "Yes"), []),
        (rec("TPV", "yes"), ["tpv_answer_not_yes_no"]),
        (rec("NRI", "B", choices=["A. lamp", "B. keyboard", "C. chair", "D. monitor"]), []),
        (rec("NRI", "B", choices=["A. lamp", "B. keyboard", "C. chair"]), ["nri_needs_four_options"]),
        (rec("NRI", "B", choices=["A. lamp", "B. keyboard", "C. lamp", "D. monitor"]), ["nri_options_not_distinct"]),
        (rec("NRI", "E", choices=["A. lamp", "B. keyboard", "C. chair", "D. monitor"]), ["nri_answer_not_a_letter"]),
        (rec("NRI", "A", choices=["A. cup", "B. keyboard", "C. chair", "D. monitor"]), ["nri_target_among_options"]),
        (rec("FSD", "The cup is on the table."), []),
        (rec("FSD", "The cup is somewhere."), ["fsd_no_spatial_anchor"]),
        (rec("FSD", "The cup is on the table"), ["fsd_incomplete"]),
        (rec("SSP", json.dumps(SSP_OK)), []),
        (rec("SSP", "```json\n" + json.dumps(SSP_OK) + "\n```"), ["ssp_not_json"]),  # must parse directly
        (rec("SSP", json.dumps({"target": "cup", "references": []})), ["ssp_missing_fields"]),
        (
            rec(
                "SSP",
                json.dumps(
                    {**SSP_OK, "references": [{"object": "keyboard", "relation": "beside", "distance_cm": 11.0}]}
                ),
            ),
            ["ssp_bad_relation"],
        ),
        (
            rec(
                "SSP",
                json.dumps(
                    {**SSP_OK, "references": [{"object": "keyboard", "relation": "near", "distance_cm": 11.04}]}
                ),
            ),
            ["ssp_bad_distance"],
        ),
        (
            {"id": "x", "task": "TPV"},
            [
                "missing_field:scene_id",
                "missing_field:source_dataset",
                "missing_field:question_type",
                "missing_field:question",
                "missing_field:instruction",
                "missing_field:answer",
                "missing_field:target",
                "missing_field:choices",
            ],
        ),
    ],
)
def test_quality_checks(r, problems):
    assert check_record(r) == problems


def test_split_is_by_scene_and_close_to_6_2_2_per_source_and_task():
    records = []
    for src, n_scenes in (("scannetpp", 50), ("scannet", 30)):
        for k in range(n_scenes):
            sid = f"{src}_{k}"
            # scenes of varying size and task mix
            for task, n in (("TPV", 2 + k % 3), ("NRI", k % 2), ("FSD", 1 + k % 2), ("SSP", 1)):
                records += [{"scene_id": sid, "source_dataset": src, "task": task}] * n
    assignment = split_scenes(records, seed=1)
    assert set(assignment.values()) == {"train", "val", "test"}
    for src in ("scannetpp", "scannet"):
        for task in ("TPV", "NRI", "FSD", "SSP"):
            rs = [r for r in records if r["source_dataset"] == src and r["task"] == task]
            share = Counter(assignment[r["scene_id"]] for r in rs)
            n = len(rs)
            tol = 0.05 + 1.0 / n  # 5 points, plus one item of granularity (15 NRI items: 1/15)
            assert share["train"] / n == pytest.approx(0.6, abs=tol), (src, task, share)
            assert share["val"] / n == pytest.approx(0.2, abs=tol), (src, task, share)
            assert share["test"] / n == pytest.approx(0.2, abs=tol), (src, task, share)
    assert split_scenes(records, seed=1) == assignment


def test_split_rejects_bad_ratios():
    with pytest.raises(ValueError):
        split_scenes([], ratios={"train": 1.0, "test": 0.0, "val": 0.5})
