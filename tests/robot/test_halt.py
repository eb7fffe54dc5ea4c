"""``Arm.halt()``, the controlled stop, on the simulated Lite 6 (the real ``SimArmDriver``).

Numbers by hand from the default scene and ``robot/arm.py``: the TCP starts at home (0.20, 0, 0.25);
a pick at the red cube's top (0.30, 0.10, 0.04) opens the tool, then approaches (0.30, 0.10, 0.14),
0.179 m away: at 0.15 m/s and 1 m/s^2 that takes 0.179 / 0.15 + 0.15 = 1.35 s of simulated time
(0.67 s of wall time at the ``time_scale`` 0.5 used here). A halt while the TCP is on that line
leaves it short of the approach point.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from pointlab.robot.arm import Arm, ArmDriver, MotionConfig
from pointlab.robot.errors import EmergencyStopError, MotionHaltedError, RobotError, UnsafeTargetError
from pointlab.sim_mock.arm import SimArmDriver
from pointlab.sim_mock.world import SimWorld

RED_CUBE_TOP = [0.30, 0.10, 0.04]
APPROACH = (0.30, 0.10, 0.14)
HOME = (0.20, 0.0, 0.25)


def sim_arm(driver_cls=SimArmDriver, time_scale: float = 0.5, grip_settle_s: float = 0.0):
    world = SimWorld()
    arm = Arm(driver_cls(world=world, time_scale=time_scale), motion=MotionConfig(grip_settle_s=grip_settle_s))
    return world, arm.connect()


def in_thread(fn) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run():
        try:
            out["report"] = fn()
        except RobotError as e:
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    return t, out


def wait_until(cond, what: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.002)


def tcp(world) -> np.ndarray:
    return np.array(world.snapshot()["_arm"]["tcp_m"])


def halt_during_the_approach(world, arm) -> dict:
    """A pick in a thread, halted once the TCP has left home by 5 mm (on the approach line)."""
    t, out = in_thread(lambda: arm.pick(RED_CUBE_TOP))
    wait_until(lambda: np.linalg.norm(tcp(world) - HOME) > 0.005, "the approach never started")
    assert arm.halt() is True
    t.join(timeout=10)
    assert not t.is_alive()
    return out


def test_a_halt_during_a_pick_ends_it_without_a_fault_and_the_arm_moves_on():
    world, arm = sim_arm()
    out = halt_during_the_approach(world, arm)
    err = out.get("error")
    assert isinstance(err, MotionHaltedError) and "report" not in out
    # what was sent: the opening, then the approach it was halted on; nothing after it
    assert err.report.action == "pick" and err.report.tool_commands == ["open"]
    assert [w.position_m for w in err.report.waypoints] == [pytest.approx(APPROACH)]
    assert err.report.duration_s > 0
    stopped_at = tcp(world)
    assert np.linalg.norm(stopped_at - APPROACH) > 0.01  # halted on the line, short of the approach point
    st = arm.state()
    assert st.fault is None and st.estopped is False and st.error_code == 0
    assert world.arm.estopped is False and world.lite6.stopped is False  # the driver's halt was cleared
    assert arm.holding is False and st.holding is False and world.arm.attached is None  # as before the pick
    report = arm.home()  # at once: no reset
    assert report.action == "home" and tcp(world) == pytest.approx(HOME, abs=1e-3)


def test_the_state_counts_completed_sequences_only_and_is_busy_while_one_runs():
    world, arm = sim_arm()
    st = arm.state()
    assert (st.motions_done, st.busy, st.connected) == (0, False, True)
    t, out = in_thread(lambda: arm.pick(RED_CUBE_TOP))
    wait_until(lambda: arm.state().busy, "the pick never showed busy")
    wait_until(lambda: np.linalg.norm(tcp(world) - HOME) > 0.005, "the approach never started")
    assert arm.halt() is True
    t.join(timeout=10)
    assert isinstance(out.get("error"), MotionHaltedError)
    with pytest.raises(UnsafeTargetError):
        arm.pick([0.80, 0.0, 0.04])
    st = arm.state()
    assert (st.motions_done, st.busy) == (0, False)  # neither the halted pick nor the refused one
    arm.home()
    assert arm.state().motions_done == arm.motions_done == 1


def test_a_halt_with_nothing_running_does_nothing_and_the_next_pick_completes():
    world, arm = sim_arm(time_scale=0.0)
    assert arm.halt() is False
    assert world.lite6.stopped is False  # the driver was not asked to halt
    report = arm.pick(RED_CUBE_TOP)
    assert report.tool_commands == ["open", "close"] and len(report.waypoints) == 3
    assert arm.holding is True and world.arm.attached == "red cube"
    assert arm.state().fault is None


class _SettleSpy(SimArmDriver):
    """The real driver, telling the test when a tool command has returned (the grip settle starts)."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.tool_done = threading.Event()

    def set_tool(self, closed: bool) -> None:
        super().set_tool(closed)
        self.tool_done.set()


def test_a_halt_between_steps_stops_the_sequence_at_the_next_step_without_waiting_the_settle():
    # grip_settle_s 30 s: the halt comes during the settle after the opening, when no driver call
    # runs; the sequence must end at once, before the approach, and the driver be ready afterwards
    world, arm = sim_arm(_SettleSpy, time_scale=0.0, grip_settle_s=30.0)
    t0 = time.monotonic()
    t, out = in_thread(lambda: arm.pick(RED_CUBE_TOP))
    assert arm.driver.tool_done.wait(10)
    assert arm.halt() is True
    t.join(timeout=10)
    assert not t.is_alive() and time.monotonic() - t0 < 10  # far less than the 30 s settle
    err = out["error"]
    assert isinstance(err, MotionHaltedError)
    assert err.report.tool_commands == ["open"] and err.report.waypoints == []
    assert tcp(world) == pytest.approx(HOME, abs=1e-3)  # the approach was never sent
    assert arm.state().fault is None and world.lite6.stopped is False
    arm.driver.lite6.time_scale = 0.0
    arm.motion = MotionConfig(grip_settle_s=0.0)
    assert arm.pick(RED_CUBE_TOP).tool_commands == ["open", "close"] and world.arm.attached == "red cube"


class _NoHaltDriver(SimArmDriver):
    """A driver that cannot halt: ``ArmDriver``'s defaults (emergency stop, then the bring-up)."""

    halt = ArmDriver.halt
    clear_halt = ArmDriver.clear_halt


def test_a_driver_without_a_halt_falls_back_to_its_emergency_stop_and_bring_up():
    world, arm = sim_arm(_NoHaltDriver)
    err = halt_during_the_approach(world, arm).get("error")
    # the driver raised EmergencyStopError; during a halt Arm reports it as the halt
    assert isinstance(err, MotionHaltedError) and type(err.__cause__).__name__ == "EmergencyStopError"
    assert arm.state().fault is None and arm.state().estopped is False
    assert world.arm.estopped is False  # clear_halt ran the bring-up (connect)
    arm.home()
    assert tcp(world) == pytest.approx(HOME, abs=1e-3)


def test_an_emergency_stop_right_after_a_halt_wins():
    # the halted sequence's end clears the driver's halt; it must never clear the emergency stop
    world, arm = sim_arm()
    t, out = in_thread(lambda: arm.pick(RED_CUBE_TOP))
    wait_until(lambda: np.linalg.norm(tcp(world) - HOME) > 0.005, "the approach never started")
    assert arm.halt() is True
    arm.stop()
    t.join(timeout=10)
    assert not t.is_alive() and "error" in out
    assert arm.state().estopped is True and world.arm.estopped is True and world.lite6.stopped is True
    with pytest.raises(EmergencyStopError):
        arm.home()
