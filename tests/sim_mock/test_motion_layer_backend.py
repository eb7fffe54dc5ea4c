"""``MotionLayerBackend``: the controller emulator driving a *blocking* motion layer with the
interface of issue 11's MuJoCo ``SimLite6`` (``world.lite6``). Here the layer is a stand-in over the
kinematic arm (the MuJoCo world is on branch issue-11); docs/robot.md says how the two are wired."""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

from pointlab.robot.errors import UnreachableTargetError
from pointlab.sim_mock.arm_backend import KinematicArmBackend, MotionLayerBackend
from pointlab.sim_mock.kinematics import Lite6Kinematics, matrix_to_rpy_deg, rpy_deg_to_matrix
from pointlab.sim_mock.xarm_model import pose_to_T

GRIPPER_T = pose_to_T([0, 0, 83.6, 0, 0, 0])  # the layer's tool: the Lite gripper TCP past the flange


def T_of(xyz_m, rpy_deg) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = rpy_deg_to_matrix(rpy_deg), np.asarray(xyz_m)
    return T


class BlockingLayer:
    """SimLite6's methods, blocking until the motion is done, over the kinematic arm."""

    def __init__(self, kin: Lite6Kinematics) -> None:
        self.arm = KinematicArmBackend(kin, time_scale=0.05, min_motion_s=0.0)
        self._stop = threading.Event()
        self.tool_calls: list[bool] = []

    def joints_rad(self):
        return self.arm.joints_rad()

    def commanded_pose(self):
        T = self.arm.fk(self.arm.joints_rad()) @ GRIPPER_T
        return T[:3, 3], matrix_to_rpy_deg(T[:3, :3])

    def plan_linear(self, start_m, start_rpy_deg, seed_rad, goal_m, goal_rpy_deg):
        q = self.arm.ik(T_of(goal_m, goal_rpy_deg) @ np.linalg.inv(GRIPPER_T), seed_rad)
        if q is None:
            raise UnreachableTargetError(f"no joint solution at the goal {np.round(goal_m, 3).tolist()} m")
        return float(np.linalg.norm(np.asarray(goal_m) - start_m)), np.array([0.0, 1.0]), np.stack([seed_rad, q])

    def move_linear(self, xyz_m, rpy_deg, speed_m_s, acc_m_s2):
        self.arm.move_linear(T_of(xyz_m, rpy_deg), GRIPPER_T, speed_m_s, acc_m_s2)
        self._wait()

    def move_joints(self, joints_rad, speed_rad_s, acc_rad_s2):
        self.arm.move_joints(joints_rad, speed_rad_s, acc_rad_s2)
        self._wait()

    def _wait(self):
        while self.arm.moving():
            if self._stop.is_set():
                self.arm.stop()
                raise RuntimeError("stopped during a motion")  # SimLite6 raises MotionStopped
            time.sleep(0.002)

    def set_tool(self, closed: bool) -> None:
        self.tool_calls.append(closed)

    def holding(self):
        return None

    def stop(self):
        self._stop.set()

    def clear_stop(self):
        self._stop.clear()


@pytest.fixture(scope="module")
def kin():
    return Lite6Kinematics()


@pytest.fixture
def backend(kin):
    b = MotionLayerBackend(BlockingLayer(kin), kin, GRIPPER_T)
    yield b
    b.close()
    assert not b._worker.is_alive()


def wait_idle(backend, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while backend.moving():
        assert time.monotonic() < deadline
        time.sleep(0.005)


def test_it_is_an_arm_backend(backend):
    from tests.sim_mock.arm_backend_contract import check_contract

    check_contract(backend, wait_idle)


def test_a_line_for_the_layers_own_tool_ends_at_the_goal(backend):
    goal = pose_to_T([250.0, 40.0, 120.0, math.pi, 0, 0])
    dur = backend.move_linear(goal, GRIPPER_T, 0.2, 2.0)
    assert dur > 0 and backend.moving()
    wait_idle(backend)
    T = backend.fk(backend.joints_rad()) @ GRIPPER_T
    assert T[:3, 3] * 1000 == pytest.approx([250.0, 40.0, 120.0], abs=1e-3)


def test_a_controller_tcp_other_than_the_layers_is_converted_through_the_flange(backend):
    # the script set no TCP offset: its goal is the flange's
    goal = pose_to_T([260.0, -30.0, 200.0, math.pi, 0, 0])
    backend.move_linear(goal, np.eye(4), 0.2, 2.0)
    wait_idle(backend)
    assert backend.fk(backend.joints_rad())[:3, 3] * 1000 == pytest.approx([260.0, -30.0, 200.0], abs=1e-3)


def test_no_joint_solution_is_refused_at_once_as_c21(backend):
    from pointlab.sim_mock.arm_backend import KINEMATIC_ERROR, PlanningError

    with pytest.raises(PlanningError) as ei:
        backend.move_linear(pose_to_T([700.0, 0.0, 150.0, math.pi, 0, 0]), GRIPPER_T, 0.2, 2.0)
    assert ei.value.code == KINEMATIC_ERROR and not backend.moving()


def test_stop_halts_the_running_motion_and_drops_the_queued_ones(backend):
    q0 = backend.joints_rad()
    # 1 rad at 0.02 rad/s: 50 s x 0.05 = 2.5 s, stopped once it is visibly on its way (polled: after a
    # fixed sleep, a busy machine found it not started yet or, with a shorter motion, already done)
    backend.move_joints(q0 + np.array([1.0, 0, 0, 0, 0, 0]), 0.02, 5.0)
    backend.move_joints(q0 + np.array([-1.0, 0, 0, 0, 0, 0]), 0.5, 5.0)  # queued behind it
    deadline = time.monotonic() + 10
    while backend.joints_rad()[0] <= q0[0]:
        assert time.monotonic() < deadline, "the motion never started"
        time.sleep(0.005)
    backend.stop()
    assert not backend.moving()
    q_stop = backend.joints_rad()
    assert q0[0] < q_stop[0] < q0[0] + 1.0
    time.sleep(0.2)
    assert backend.joints_rad() == pytest.approx(q_stop)  # the queued move never ran
    backend.move_joints(q0, 1.0, 10.0)  # and the layer accepts motion again
    wait_idle(backend)
    assert backend.joints_rad() == pytest.approx(q0, abs=1e-9)


def test_tool_commands_run_in_order_with_the_motions(backend):
    q0 = backend.joints_rad()
    backend.move_joints(q0 + np.array([0.3, 0, 0, 0, 0, 0]), 1.0, 10.0)
    backend.set_tool(True)
    backend.set_tool(None)  # the Lite gripper's "stop driving": nothing to do
    backend.set_tool(False)
    wait_idle(backend)
    deadline = time.monotonic() + 2.0
    while len(backend.layer.tool_calls) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    assert backend.layer.tool_calls == [True, False]
