"""The trial machine, with plain events and a fake clock: no ROS, no web, no sleeps.

Every expected value below is worked out from the rules in ``bridge/trials/machine.py``'s docstring
and docs/trials.md, not read off the machine's output.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from pointlab.bridge.trials import machine as m
from pointlab.bridge.trials.belief import EMPTY, Belief
from pointlab.benchmark.points import PointEntry
from pointlab.bridge.trials.outcomes import Refusal, RobotErrorInfo
from pointlab.bridge.trials.ports import AgentReply, ArmReadiness, ArmReply, SceneEvidence, TargetReply, TrialFrame
from pointlab.bridge.trials.targeting import Target

READY = ArmReadiness(True)
ROOM = 10 * 1024**3
TARGET_M = (0.30, 0.05, 0.02)
MOTION = {
    "action": "pick",
    "target_m": list(TARGET_M),
    "waypoints": [],
    "tool_commands": ["open", "close"],
    "duration_s": 2.0,
}


def frame(index: int, depth_mm: int = 500) -> TrialFrame:
    return TrialFrame(
        index=index,
        stamp_ns=index,
        jpeg=f"jpeg{index}".encode(),
        depth=np.full((48, 64), depth_mm, np.uint16),
        depth_scale_m=0.001,
        size=(64, 48),
    )


def reply(u: float = 20.0, v: float = 30.0, **kw) -> AgentReply:
    base: dict[str, Any] = dict(
        raw_answer=f"[{u}, {v}]", points=(PointEntry(u_px=u, v_px=v),), points_px=((u, v),), frame=frame(3)
    )
    base.update(kw)
    return AgentReply(**base)


def valid_target(u: float = 20.0, v: float = 30.0) -> TargetReply:
    return TargetReply(Target(valid=True, pixel=(u, v), point_base_m=TARGET_M, depth_m=0.5))


class Trial:
    """Feeds events to one trial and remembers every command."""

    def __init__(self, *, belief: Belief = EMPTY, reveal_s: float = 10.0, t: float = 100.0, **kw) -> None:
        self.state, cmds = m.start(
            t=t, trial_id="t1", agent="a", instruction="pick up the cube", belief=belief, reveal_s=reveal_s, **kw
        )
        self.commands: list = list(cmds)
        self.last: list = list(cmds)

    def feed(self, event) -> list:
        self.state, self.last = m.step(self.state, event)
        self.commands += self.last
        return self.last

    @property
    def phase(self) -> str:
        return self.state.phase

    def arm_request(self) -> str:
        request = self.state.arm_request
        assert request is not None, "the trial waits for no arm action"
        return request

    def finish(self) -> m.Finish:
        (f,) = [c for c in self.commands if isinstance(c, m.Finish)]
        return f

    def of(self, kind) -> list:
        return [c for c in self.commands if isinstance(c, kind)]

    def motions(self) -> list[m.CommandArm]:
        return [c for c in self.of(m.CommandArm) if c.action in ("pick", "place")]


def to_moving(tr: Trial, t_answer: float = 101.0, t_target: float = 101.2) -> None:
    tr.feed(m.Answered(t_answer, reply()))
    tr.feed(m.Targeted(t_target, valid_target()))
    tr.feed(m.TimerFired(tr.state.reveal_t, "reveal"))
    tr.feed(m.Checked(tr.state.reveal_t, ROOM, READY))
    assert tr.phase == "moving"


def complete_pick(tr: Trial, held: str | None, t: float = 115.0) -> None:
    to_moving(tr)
    tr.feed(m.ArmEnded(t, tr.arm_request(), ArmReply("done", motion=MOTION)))
    assert tr.phase == "homing" and tr.last[0].action == "home"
    tr.feed(m.ArmEnded(t + 2, tr.arm_request(), ArmReply("done")))
    assert tr.phase == "looking"
    tr.feed(m.AfterFrame(t + 2.5, frame(9, depth_mm=540)))
    assert tr.phase == "judging"
    ok = held == "red cube"
    tr.feed(m.Evidenced(t + 2.6, SceneEvidence(sim_success=ok, sim_detail=f"holding {held}", held=held)))
    assert tr.phase == "ended"


# -- the happy path and the belief ------------------------------------------------------------------
def test_a_completed_pick_goes_through_every_phase_and_the_belief_holds_what_the_physics_holds():
    tr = Trial(expected={"action": "pick", "object": "red cube"})
    assert [type(c) for c in tr.commands] == [m.BeginRecording, m.AskAgent, m.WakeAt]
    assert tr.commands[2] == m.WakeAt("answer", 100.0 + 180.0)
    complete_pick(tr, held="red cube")
    f = tr.finish()
    assert f.result.action == "pick" and f.result.robot_outcome == "done"
    assert f.result.outcome is None  # the participant judges; the check stands beside it
    assert f.result.sim_success is True and f.result.auto_check.method == "physics"
    assert f.belief == Belief(True, "red cube", "physics", "the simulator's contacts hold red cube")
    assert f.frames == {"before": b"jpeg3", "after": b"jpeg9"}
    # depth at the target went from 500 to 540 mm: +40 mm, above the 15 mm threshold
    assert f.result.depth_check.depth_change_mm == 40.0 and f.result.depth_check.success is True
    assert f.result.timings_s["reveal"] == 10.0 and f.result.timings_s["to_motion"] == 10.0


def test_after_a_failed_grasp_nothing_is_held_and_the_next_trial_is_a_pick_again():
    tr = Trial(expected={"action": "pick", "object": "red cube"})
    complete_pick(tr, held=None)
    f = tr.finish()
    assert f.result.sim_success is False and f.result.auto_check.success is False
    assert f.belief.holding is False and f.belief.source == "physics"
    nxt = Trial(belief=f.belief)
    assert nxt.state.record.action == "pick"


def test_on_hardware_the_depth_check_after_the_pick_is_the_evidence():
    # no simulator (evidence None): the belief comes from the object's region emptying (+40 mm)
    tr = Trial()
    to_moving(tr)
    tr.feed(m.ArmEnded(115, tr.arm_request(), ArmReply("done", motion=MOTION)))
    tr.feed(m.ArmEnded(117, tr.arm_request(), ArmReply("done")))
    tr.feed(m.AfterFrame(117.5, frame(9, depth_mm=540)))
    tr.feed(m.Evidenced(117.6, None))
    assert tr.finish().belief.holding is True and tr.finish().belief.source == "depth"
    assert tr.finish().result.auto_check.method == "depth"
    # the region did not empty (+5 mm): nothing held
    tr = Trial()
    to_moving(tr)
    tr.feed(m.ArmEnded(115, tr.arm_request(), ArmReply("done", motion=MOTION)))
    tr.feed(m.ArmEnded(117, tr.arm_request(), ArmReply("done")))
    tr.feed(m.AfterFrame(117.5, frame(9, depth_mm=505)))
    tr.feed(m.Evidenced(117.6, None))
    assert tr.finish().belief.holding is False and tr.finish().belief.source == "depth"


def test_a_completed_place_opens_the_tool_so_nothing_is_held_after_it():
    tr = Trial(belief=Belief(True, None, "depth"))
    assert tr.state.record.action == "place"
    to_moving(tr)
    assert tr.motions()[0].action == "place"
    tr.feed(m.ArmEnded(115, tr.arm_request(), ArmReply("done", motion={**MOTION, "action": "place"})))
    tr.feed(m.ArmEnded(117, tr.arm_request(), ArmReply("done")))
    tr.feed(m.AfterFrame(117.5, frame(9, depth_mm=470)))
    tr.feed(m.Evidenced(117.6, None))
    f = tr.finish()
    assert f.belief == Belief(False, None, "sequence", "the tool was opened")
    assert f.result.depth_check.success is True  # 500 -> 470 mm: something arrived


# -- refusals: judged failures, with their stage and an after-image --------------------------------------
@pytest.mark.parametrize(
    "code,stage",
    [
        ("no_depth", "depth"),
        ("workspace", "reach"),
        ("outside_image", "pointing"),
        ("no_point", "no_point"),
        ("invalid_point", "pointing"),
    ],
)
def test_a_refused_target_fails_with_its_stage_after_the_reveal_time_and_keeps_an_after_image(code, stage):
    tr = Trial(reveal_s=12.0)
    tr.feed(m.Answered(101.0, reply()))
    tr.feed(m.Targeted(101.3, TargetReply(Target.refused(code, "why", pixel=(20.0, 30.0)))))
    assert tr.phase == "revealing" and tr.last == [m.WakeAt("reveal", 112.0)]
    tr.feed(m.TimerFired(112.0, "reveal"))
    assert tr.phase == "looking" and isinstance(tr.last[0], m.CaptureAfter)
    tr.feed(m.AfterFrame(112.4, frame(7)))
    tr.feed(m.Evidenced(112.5, None))
    f = tr.finish()
    assert f.result.robot_outcome == "refused" and f.result.refusal.code == code
    assert f.result.outcome == "failed" and f.result.failure_stage == stage
    assert f.frames["after"] == b"jpeg7" and f.result.after_frame_index == 7
    assert tr.motions() == [] and f.belief == EMPTY  # nothing moved: the belief is unchanged


def test_an_arm_side_refusal_is_a_failure_at_reach_and_nothing_was_held():
    tr = Trial()
    to_moving(tr)
    tr.feed(m.ArmEnded(110.1, tr.arm_request(), ArmReply("refused", refusal=Refusal(code="unreachable"))))
    assert tr.phase == "looking"
    tr.feed(m.AfterFrame(110.5, frame(8)))
    tr.feed(m.Evidenced(110.6, SceneEvidence(sim_success=False, sim_detail="not holding", held=None)))
    f = tr.finish()
    assert f.result.outcome == "failed" and f.result.failure_stage == "reach"
    assert f.result.sim_detail.startswith("no completed motion (refused)")


# -- aborts: one reason each, typed -----------------------------------------------------------------------
def test_the_operator_abort_during_a_pick_halts_opens_homes_and_never_estops():
    tr = Trial()
    to_moving(tr)
    tr.feed(m.AbortAsked(111.0))
    assert tr.phase == "halting" and tr.last == [m.HaltArm(), m.WakeAt("halt", 121.0)]
    tr.feed(m.ArmEnded(111.4, tr.arm_request(), ArmReply("halted", motion=MOTION)))
    assert tr.phase == "recovering" and tr.last[0].action == "release"
    tr.feed(m.ArmEnded(111.8, tr.arm_request(), ArmReply("done")))
    assert tr.phase == "recovering" and tr.last[0].action == "home"
    tr.feed(m.ArmEnded(113.0, tr.arm_request(), ArmReply("done")))
    assert tr.phase == "judging"
    tr.feed(m.Evidenced(113.1, None))
    f = tr.finish()
    assert f.result.outcome == "aborted" and f.result.abort.code == "operator_abort"
    assert f.result.robot_outcome == "halted" and f.result.robot_error is None
    assert f.result.failure_stage == "aborted"
    assert tr.of(m.EStopArm) == []
    assert f.belief.holding is False  # the gripper was opened: the same slot is a pick again


def test_the_operator_abort_during_a_place_keeps_what_is_held_and_homes():
    tr = Trial(belief=Belief(True, "red cube", "physics"))
    to_moving(tr)
    tr.feed(m.AbortAsked(111.0))
    tr.feed(m.ArmEnded(111.4, tr.arm_request(), ArmReply("halted")))
    assert [c.action for c in tr.of(m.CommandArm)] == ["place", "home"]
    tr.feed(m.ArmEnded(113.0, tr.arm_request(), ArmReply("done")))
    tr.feed(m.Evidenced(113.1, SceneEvidence(sim_success=False, sim_detail="still held", held="red cube")))
    f = tr.finish()
    assert f.result.abort.code == "operator_abort"
    assert f.belief.holding is True and f.belief.object == "red cube"  # the slot is a place again


@pytest.mark.parametrize("phase", ["asking", "targeting", "revealing", "checking"])
def test_an_abort_before_the_motion_ends_the_trial_at_once_and_moves_nothing(phase):
    tr = Trial()
    if phase != "asking":
        tr.feed(m.Answered(101.0, reply()))
    if phase in ("revealing", "checking"):
        tr.feed(m.Targeted(101.2, valid_target()))
    if phase == "checking":
        tr.feed(m.TimerFired(tr.state.reveal_t, "reveal"))
    assert tr.phase == phase
    tr.feed(m.AbortAsked(105.0))
    f = tr.finish()
    assert (f.result.outcome, f.result.abort.code, f.result.robot_outcome) == ("aborted", "operator_abort", "not_moved")
    assert tr.motions() == [] and f.belief == EMPTY
    assert (phase == "asking") == bool(tr.of(m.CancelAgent))


@pytest.mark.parametrize("phase", ["asking", "moving", "homing"])
def test_an_emergency_stop_aborts_with_estop(phase):
    tr = Trial()
    if phase != "asking":
        to_moving(tr)
    if phase == "homing":
        tr.feed(m.ArmEnded(115, tr.arm_request(), ArmReply("done", motion=MOTION)))
    tr.feed(m.EStopped(116.0))
    if tr.phase == "judging":
        tr.feed(m.Evidenced(116.1, None))
    f = tr.finish()
    assert f.result.abort.code == "estop" and f.result.outcome == "aborted"


def test_the_arm_reporting_a_stop_is_an_estop_and_a_fault_is_a_robot_fault():
    for outcome, code in (("stopped", "estop"), ("robot_failure", "robot_fault")):
        tr = Trial()
        to_moving(tr)
        err = RobotErrorInfo(type="ArmFaultError", detail="code 31", code=31)
        tr.feed(m.ArmEnded(112, tr.arm_request(), ArmReply(outcome, error=err)))
        tr.feed(m.Evidenced(112.1, None))
        f = tr.finish()
        assert f.result.abort.code == code and f.result.robot_error == err


def test_agent_and_camera_errors_and_timeouts_are_typed():
    tr = Trial()
    tr.feed(m.Answered(101.0, AgentReply(error="HTTP 500 from model-x", error_kind="agent")))
    assert tr.finish().result.abort.code == "agent_error" and tr.finish().result.agent_error == "HTTP 500 from model-x"
    tr = Trial()
    tr.feed(m.Answered(101.0, AgentReply(error="no_frame: no colour frame", error_kind="camera")))
    assert tr.finish().result.abort.code == "camera_error"
    tr = Trial()
    tr.feed(m.TimerFired(280.0, "answer"))
    assert tr.finish().result.abort.code == "timeout" and tr.of(m.CancelAgent)
    tr = Trial(human=True)
    assert tr.commands[2] == m.WakeAt("answer", 100.0 + 900.0)
    tr = Trial()
    tr.feed(m.Answered(101.0, reply()))
    tr.feed(m.TimerFired(111.0, "target"))
    assert tr.finish().result.abort.code == "timeout"
    tr = Trial()
    to_moving(tr)
    tr.feed(m.TimerFired(tr.state.reveal_t + 120.0, "motion"))
    assert tr.last[0] == m.EStopArm()  # an arm that does not report must not go on moving
    tr.feed(m.Evidenced(300.0, None))
    assert tr.finish().result.abort.code == "timeout" and tr.finish().result.robot_outcome == "robot_failure"


def test_stale_timers_and_arm_results_change_nothing():
    tr = Trial()
    to_moving(tr)
    before = tr.state
    assert m.step(tr.state, m.TimerFired(999.0, "answer")) == (before, [])
    assert m.step(tr.state, m.ArmEnded(999.0, "someone-else", ArmReply("done"))) == (before, [])


# -- the checks before motion ---------------------------------------------------------------------------
def test_below_the_storage_floor_nothing_moves_and_the_trial_is_aborted_no_storage():
    tr = Trial(min_free_bytes=500_000_000)
    tr.feed(m.Answered(101.0, reply()))
    tr.feed(m.Targeted(101.2, valid_target()))
    tr.feed(m.TimerFired(tr.state.reveal_t, "reveal"))
    tr.feed(m.Checked(tr.state.reveal_t, 499_999_999, READY))
    f = tr.finish()
    assert f.result.abort.code == "no_storage" and tr.motions() == []
    assert "500 MB" in f.result.abort.detail


def test_an_arm_that_is_not_ready_before_the_motion_moves_nothing():
    for problem, code in (("estop", "estop"), ("fault", "robot_fault"), ("disconnected", "robot_fault")):
        tr = Trial()
        tr.feed(m.Answered(101.0, reply()))
        tr.feed(m.Targeted(101.2, valid_target()))
        tr.feed(m.TimerFired(tr.state.reveal_t, "reveal"))
        tr.feed(m.Checked(tr.state.reveal_t, ROOM, ArmReadiness(False, problem, "C31")))
        assert tr.finish().result.abort.code == code and tr.motions() == []


# -- timing ---------------------------------------------------------------------------------------------
def test_a_fast_answer_moves_at_the_reveal_time_and_a_slow_one_when_it_is_ready():
    tr = Trial(reveal_s=10.0)
    tr.feed(m.Answered(100.8, reply()))
    tr.feed(m.Targeted(100.9, valid_target()))
    assert tr.phase == "revealing"
    tr.feed(m.TimerFired(110.0, "reveal"))
    tr.feed(m.Checked(110.0, ROOM, READY))
    assert tr.state.record.timings_s["to_motion"] == 10.0
    tr = Trial(reveal_s=10.0)
    tr.feed(m.Answered(113.0, reply()))
    tr.feed(m.Targeted(113.1, valid_target()))
    assert tr.phase == "checking"  # ready after the reveal time: no wait
    tr.feed(m.Checked(113.1, ROOM, READY))
    assert tr.state.record.timings_s["to_motion"] == 13.1 and tr.state.record.timings_s["ready"] == 13.1


def test_instruction_to_motion_times_of_a_human_and_of_models_cannot_be_told_apart():
    """40 trials per agent with the default reveal rule: the human reference answers at human-like
    delays (log-normal, median 9 s, sigma 0.35: 5-95 % within 5-16 s), two models in 0.5-4 s and
    7 s at most. Two-sample KS p > 0.05 between the human and each model."""
    import random

    from scipy import stats

    from pointlab.bridge.trials.timing import DEFAULT_REVEAL

    rng = random.Random(20261203)
    answer_s = {
        "human": lambda: rng.lognormvariate(np.log(9.0), 0.35),
        "model-a": lambda: rng.uniform(0.5, 4.0),
        "model-b": lambda: rng.uniform(1.0, 7.0),
    }
    times: dict[str, list[float]] = {a: [] for a in answer_s}
    for _ in range(40):
        for agent, draw in answer_s.items():
            tr = Trial(reveal_s=DEFAULT_REVEAL.draw(rng), t=0.0, human=agent == "human")
            t_answer = draw()
            tr.feed(m.Answered(t_answer, reply()))
            tr.feed(m.Targeted(t_answer + 0.05, valid_target()))
            if tr.phase == "revealing":
                tr.feed(m.TimerFired(tr.state.reveal_t, "reveal"))
            (check,) = tr.last
            assert isinstance(check, m.CheckBeforeMotion)
            t_motion = max(tr.state.reveal_t, t_answer + 0.05)
            tr.feed(m.Checked(t_motion, ROOM, READY))
            assert tr.motions(), "a valid target is acted on"
            times[agent].append(tr.state.record.timings_s["to_motion"])
    for model in ("model-a", "model-b"):
        assert stats.ks_2samp(times["human"], times[model]).pvalue > 0.05


# -- the table is the machine ---------------------------------------------------------------------------
def test_docs_trials_md_draws_exactly_the_transitions_of_the_machine():
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "trials.md").read_text(encoding="utf-8")
    block = re.search(r"```mermaid\nstateDiagram-v2\n(.*?)```", text, re.S)
    assert block, "docs/trials.md needs the machine's mermaid stateDiagram-v2"
    drawn = set()
    for line in block.group(1).splitlines():
        mm = re.match(r"\s*(\w+|\[\*\])\s*-->\s*(\w+|\[\*\])\s*(?::\s*(.+))?$", line)
        if mm and mm.group(1) != "[*]" and mm.group(2) != "[*]":
            for label in (mm.group(3) or "").split(","):
                drawn.add((mm.group(1), label.strip(), mm.group(2)))
    assert drawn == set(m.TRANSITIONS)


def test_random_event_sequences_take_only_declared_transitions_and_never_move_after_an_abort():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    def event(kind: int, t: float, tr: Trial):
        rid = tr.state.arm_request or "none"
        return [
            m.Answered(t, reply()),
            m.Answered(t, AgentReply(error="x", error_kind="agent")),
            m.Targeted(t, valid_target()),
            m.Targeted(t, TargetReply(Target.refused("no_depth"))),
            m.TimerFired(t, tr.state.timer or "answer"),
            m.Checked(t, ROOM, READY),
            m.Checked(t, 1, READY),
            m.ArmEnded(t, rid, ArmReply("done")),
            m.ArmEnded(t, rid, ArmReply("halted")),
            m.ArmEnded(t, rid, ArmReply("stopped")),
            m.ArmEnded(t, rid, ArmReply("refused")),
            m.AfterFrame(t, frame(5)),
            m.Evidenced(t, None),
            m.AbortAsked(t),
            m.EStopped(t),
        ][kind]

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.integers(0, 14), max_size=30))
    def run(kinds):
        tr = Trial(belief=Belief(True) if len(kinds) % 2 else EMPTY)
        aborted_at = None
        for i, k in enumerate(kinds):
            cmds = tr.feed(event(k, 100.0 + i, tr))  # IllegalTransition would raise here
            if tr.state.abort is not None and aborted_at is None:
                aborted_at = len(tr.commands) - len(cmds)
        if aborted_at is not None:
            later = tr.commands[aborted_at:]
            assert not [c for c in later if isinstance(c, m.CommandArm) and c.action in ("pick", "place")]
        if tr.phase == "ended":
            f = tr.finish()
            assert (f.result.outcome == "aborted") == (f.result.abort is not None)
            if f.result.outcome == "failed":
                assert f.result.failure_stage is not None

    run()


def test_the_trial_package_loads_no_ros_web_or_sql_module():
    """Importing every module of ``bridge.trials`` (and this test module) in a fresh interpreter loads
    no rclpy, FastAPI/Starlette, SQLAlchemy or sqlite3: the rules are transport-free."""
    import pkgutil
    import subprocess

    import pointlab.bridge.trials as pkg

    names = [f"pointlab.bridge.trials.{m.name}" for m in pkgutil.iter_modules(pkg.__path__)]
    code = (
        "import importlib, sys\n"
        f"for n in {names!r}: importlib.import_module(n)\n"
        "importlib.import_module('tests.bridge.trials.test_machine')\n"
        "bad = sorted({m.split('.')[0] for m in sys.modules} & {'rclpy', 'fastapi', 'starlette', 'sqlalchemy', "
        "'sqlite3', 'std_msgs', 'sensor_msgs'})\n"
        "print(','.join(bad))"
    )
    from pathlib import Path

    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "", f"bridge.trials loads {out.stdout.strip()}"
    assert len(names) >= 10


def test_an_abort_after_the_action_completed_is_refused_and_the_trial_stands():
    """Voiding a completed place would throw its result away and turn the 'same' slot into a pick
    (the place left the tool open): after the action, only the e-stop is taken."""
    tr = Trial(belief=Belief(True, "red cube", "physics"))
    to_moving(tr)
    tr.feed(m.ArmEnded(115, tr.arm_request(), ArmReply("done", motion={**MOTION, "action": "place"})))
    for phase in ("homing", "looking", "judging"):
        assert tr.phase == phase and phase not in m.ABORTABLE
        before = tr.state
        assert m.step(tr.state, m.AbortAsked(116.0)) == (before, [])  # refused: nothing changes
        if phase == "homing":
            tr.feed(m.ArmEnded(117, tr.arm_request(), ArmReply("done")))
        elif phase == "looking":
            tr.feed(m.AfterFrame(117.5, frame(9, depth_mm=470)))
    tr.feed(m.Evidenced(117.6, SceneEvidence(sim_success=True, sim_detail="in the bowl", held=None)))
    f = tr.finish()
    assert f.result.abort is None and f.result.outcome is None and f.result.robot_outcome == "done"
    assert set(m.ABORTABLE) == {"asking", "targeting", "revealing", "checking", "moving"}
