"""``pointlab act trials`` end to end: a real process, the ROS node set, the sim model server through
the openai client, and a real SQLite file read back with sqlite3."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.ros, pytest.mark.slow]

POINTLAB = [sys.executable, "-c", "from pointlab.bridge.cli import main; main()"]

SCRIPT = [
    {"instruction": "pick up the green cube", "expected": {"action": "pick", "object": "green cube"}},
    {
        "instruction": "put it in the blue bowl",
        "expected": {"action": "place", "object": "green cube", "container": "blue bowl"},
    },
    {"instruction": "pick up the orange can"},  # no expectation: the sim infers it from the instruction
]


def _run(args, timeout_s=120):
    return subprocess.run(POINTLAB + args, capture_output=True, text=True, timeout=timeout_s, env=dict(os.environ))


def test_scripted_trials_write_sqlite(ros_env, tmp_path):
    instructions = tmp_path / "script.jsonl"
    instructions.write_text("".join(json.dumps(s) + "\n" for s in SCRIPT) + "\n")
    db = tmp_path / "trials.sqlite"
    p = _run(
        [
            "act",
            "trials",
            "--agent",
            "sim-oracle",
            "--instructions",
            str(instructions),
            "--db",
            str(db),
            "--time-scale",
            "0.02",
        ]
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    trials = out["trials"]
    assert [t["action"] for t in trials] == ["pick", "place", "pick"]
    assert [t["sim_success"] for t in trials] == [True, True, True]
    assert trials[2]["robot_outcome"] == "done"
    assert trials[2]["expected"] == {"action": "pick", "object": "orange can", "inferred": True}
    assert out["success_rate"] == 1.0
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "select instruction, action, robot_outcome, sim_success, target, agent from trials order by id"
        ).fetchall()
    assert [r[0] for r in rows] == [s["instruction"] for s in SCRIPT]
    assert [(r[1], r[2], r[3]) for r in rows] == [("pick", "done", 1), ("place", "done", 1), ("pick", "done", 1)]
    assert all(json.loads(r[4])["valid"] for r in rows) and {r[5] for r in rows} == {"sim-oracle"}


def test_bad_inputs_exit_2(ros_env, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instruction": "pick up the red cube"}\n{"expected": {}}\n')
    p = _run(["act", "trials", "--agent", "sim-oracle", "--instructions", str(bad), "--db", str(tmp_path / "x.sqlite")])
    assert p.returncode == 2 and "bad.jsonl:2" in p.stderr and p.stdout == ""
    p = _run(["act", "trials", "--agent", "gpt-9", "--db", str(tmp_path / "y.sqlite"), "--time-scale", "0"])
    assert p.returncode == 2 and "unknown agent 'gpt-9'" in p.stderr


def test_demo_script_is_the_default():
    # without --instructions the sim scene's own script runs: >= 10 pick-or-place items naming its objects
    from pointlab.bridge.trials.headless import demo_script
    from pointlab.sim_mock.scene import default_scene

    script = demo_script()
    assert len(script) >= 10
    scene = default_scene()
    for item in script:
        assert item["expected"]["action"] in ("pick", "place")
        assert scene.resolve(item["expected"]["object"]) is not None


def test_instructions_that_cannot_be_stored_are_bad_input(tmp_path):
    # A lone surrogate is valid JSON but not UTF-8: the trial would run (and could move the arm), then
    # saving it would raise UnicodeEncodeError and end the whole run. Refused when the file is read.
    from pointlab.bridge.trials.headless import InstructionsError, load_instructions

    for n, bad in enumerate(('"pick up the red cube \\ud800"', '"pick up\\u0000 the red cube"')):
        f = tmp_path / f"bad{n}.jsonl"
        f.write_text('{"instruction": "pick up the red cube"}\n{"instruction": ' + bad + "}\n")
        with pytest.raises(InstructionsError, match=f"bad{n}.jsonl:2: .*cannot be used"):
            load_instructions(f)
    ok = tmp_path / "ok.jsonl"
    ok.write_text('{"instruction": "hebe den W\\u00fcrfel"}\n')
    assert load_instructions(ok) == [{"instruction": "hebe den Würfel", "expected": None}]
