"""``SimArmDriver``: the ``ArmDriver`` primitives on the simulated Lite 6 of a ``SimWorld``.

What is simulated, and why it is enough to test the pick/place logic and the trial loop:

- **Reach and joint limits** through real inverse kinematics (``Lite6Kinematics``, ikpy): a linear
  move is checked at its goal and at points every ``step_m`` along the straight line (seeded from the
  previous solution, as a controller's Cartesian interpolation would), and refused with
  ``UnreachableTargetError`` before anything moves if any point has no solution.
- **Motion time** from a trapezoidal speed profile (``speed_m_s``, ``acc_m_s2``), multiplied by
  ``time_scale`` (tests use a small one). The TCP and a held object move along the line during that
  time, so the camera sees the motion and ``emergency_stop()`` from another thread halts it midway.
- **Grasping**: ``set_tool(True)`` holds the object the TCP is in (``SimWorld.grasp_candidate``),
  ``set_tool(False)`` drops it straight down (``SimWorld.release``).
- **Controller faults**: an injected fault (``world.inject_fault``) or an emergency stop leaves an
  error state that refuses motion until ``connect()`` runs the bring-up again, as on the xArm.
"""

from __future__ import annotations

import logging
import math
import threading
import time

import numpy as np
from scipy.spatial.transform import Rotation, Slerp

from pointlab.robot.arm import TOOLS, ArmDriver, TcpPose
from pointlab.robot.errors import (ArmConnectionError, ArmFaultError, ArmNotConnectedError, EmergencyStopError,
                                   UnreachableTargetError)

from .kinematics import rpy_deg_to_matrix
from .trapezoid import trapezoid_duration_s, trapezoid_fraction
from .world import SimWorld, default_world

__all__ = ["SimArmDriver", "trapezoid_duration_s", "OUT_OF_RANGE_CODE", "HAS_ERROR_CODE"]

log = logging.getLogger(__name__)

OUT_OF_RANGE_CODE = -8  # xarm APIState.OUT_OF_RANGE: a parameter out of range
HAS_ERROR_CODE = 1      # xarm APIState.HAS_ERROR: the controller has an uncleared error


class SimArmDriver(ArmDriver):
    """The Lite 6 in a ``SimWorld``.

    Args:
        world: the world to act in (default: the process-wide ``default_world()``).
        tool: ``lite_gripper`` or ``lite_vacuum``; the world's tool is set to it.
        time_scale: multiplies every motion's duration (0 = instantaneous, tests use ~0.01).
        step_m: spacing of the IK checks along a linear move, metres.
        tick_s: how often the TCP is updated during a move (real time), seconds.
    """

    def __init__(self, world: SimWorld | None = None, tool: str = "lite_gripper", time_scale: float = 1.0,
                 step_m: float = 0.02, tick_s: float = 0.02) -> None:
        if tool not in TOOLS:
            raise ValueError(f"unknown tool {tool!r}; known: {', '.join(sorted(TOOLS))}")
        if time_scale < 0 or step_m <= 0 or tick_s <= 0:
            raise ValueError("time_scale must be >= 0, step_m and tick_s > 0")
        self.world = world or default_world()
        self.tool = TOOLS[tool]
        self.time_scale, self.step_m, self.tick_s = float(time_scale), float(step_m), float(tick_s)
        self._stop = threading.Event()
        with self.world.lock:
            if self.world.tool.name != tool:
                # The TCP is a tool frame: keep the flange where it is and re-read the TCP from it.
                self.world.tool = self.tool
                T = self.world.kinematics.fk(self.world.arm.joints_rad, tool)
                self.world.set_tcp(T[:3, 3], self.world.arm.rpy_deg, self.world.arm.joints_rad)

    @classmethod
    def from_spec(cls, arg: str | None, *, world: SimWorld | None = None, tool: str = "lite_gripper",
                  time_scale: float = 1.0, **kw) -> "SimArmDriver":
        """Build from the ``make_arm`` spec ``sim`` or ``sim:TOOL`` (``sim:lite_vacuum``)."""
        if arg:
            tool = arg
        return cls(world=world, tool=tool, time_scale=time_scale, **kw)

    # -- session -------------------------------------------------------------------------------------
    def connect(self) -> None:
        """Bring-up: clears the error code and the emergency stop (``clean_error``, ``motion_enable``,
        ``set_state(0)`` on the real arm).

        Raises:
            ArmConnectionError: an injected ``connect`` fault.
        """
        w = self.world
        if w.take_fault("connect") is not None:
            raise ArmConnectionError("sim controller refused the connection (injected fault)")
        with w.lock:
            w.arm.connected = True
            w.arm.error_code = 0
            w.arm.estopped = False
        self._stop.clear()

    def disconnect(self) -> None:
        with self.world.lock:
            self.world.arm.connected = False

    def _require_ready(self, call: str) -> None:
        a = self.world.arm
        if not a.connected:
            raise ArmNotConnectedError("sim arm is not connected")
        if a.estopped:
            raise EmergencyStopError("sim arm is emergency-stopped; connect() again to clear it")
        if a.error_code:
            raise ArmFaultError(call, HAS_ERROR_CODE, f"controller error {a.error_code} not cleared; connect() again")

    def _fault(self, kind: str, call: str) -> None:
        code = self.world.take_fault(kind)
        if code is None:
            return
        if kind == "disconnect_next_move":
            with self.world.lock:
                self.world.arm.connected = False
            raise ArmConnectionError("sim controller dropped the connection (injected fault)")
        with self.world.lock:
            self.world.arm.error_code = code
        raise ArmFaultError(call, code, "injected fault")

    # -- motion ------------------------------------------------------------------------------------
    def _plan(self, start_m: np.ndarray, start_rpy: np.ndarray, goal: TcpPose, seed: np.ndarray):
        """Joint solutions along the straight line, or raise ``UnreachableTargetError``."""
        goal_m, goal_rpy = goal.xyz, np.asarray(goal.rpy_deg, dtype=np.float64)
        dist = float(np.linalg.norm(goal_m - start_m))
        rots = Rotation.from_matrix(np.stack([rpy_deg_to_matrix(start_rpy), rpy_deg_to_matrix(goal_rpy)]))
        angle_deg = float(np.degrees((rots[1] * rots[0].inv()).magnitude()))
        n = max(1, math.ceil(dist / self.step_m), math.ceil(angle_deg / 5.0))
        slerp = Slerp([0.0, 1.0], rots)
        fractions = np.linspace(0.0, 1.0, n + 1)[1:]
        kin, tool = self.world.kinematics, self.tool.name
        path = [seed]
        for f in fractions:
            p = start_m + f * (goal_m - start_m)
            rpy = goal_rpy if f == 1.0 else slerp([f]).as_euler("xyz", degrees=True)[0]
            q = kin.ik(p, rpy, seed_rad=path[-1], tool=tool)
            if q is None:
                where = "goal" if f == 1.0 else f"{100 * f:.0f}% along the line"
                raise UnreachableTargetError(
                    f"no joint solution within the Lite 6 limits at the {where}: "
                    f"TCP {np.round(p, 4).tolist()} m, rpy {np.round(rpy, 2).tolist()} deg")
            path.append(q)
        return dist, np.concatenate([[0.0], fractions]), np.array(path)

    def check_reachable(self, poses: list[TcpPose]) -> None:
        """IK along every straight segment from the current TCP through ``poses``, without moving.

        Raises:
            UnreachableTargetError: a segment leaves the joint limits (nothing moves).
        """
        with self.world.lock:
            start_m, start_rpy, seed = (self.world.arm.tcp_m.copy(), self.world.arm.rpy_deg.copy(),
                                        self.world.arm.joints_rad.copy())
        for pose in poses:
            _, _, path = self._plan(start_m, start_rpy, pose, seed)
            start_m, start_rpy, seed = pose.xyz, np.asarray(pose.rpy_deg, dtype=np.float64), path[-1]

    def move_linear(self, pose: TcpPose, speed_m_s: float, acc_m_s2: float) -> None:
        """Move the TCP in a straight line to ``pose`` (metres, degrees) and return when it is there.

        Raises:
            ArmNotConnectedError: not connected.
            EmergencyStopError: stopped before or during the move (the arm stays where it stopped).
            ArmFaultError: an uncleared error, an injected fault, or a non-positive/non-finite speed or
                acceleration (code -8, nothing moves).
            ArmConnectionError: an injected connection drop.
            UnreachableTargetError: no IK solution at the goal or along the line (nothing moves).
        """
        w = self.world
        with w.lock:
            self._require_ready("set_position")
        if not (math.isfinite(speed_m_s) and math.isfinite(acc_m_s2) and speed_m_s > 0 and acc_m_s2 > 0):
            raise ArmFaultError("set_position", OUT_OF_RANGE_CODE, f"speed {speed_m_s} m/s, acc {acc_m_s2} m/s^2")
        if not (np.all(np.isfinite(pose.xyz)) and np.all(np.isfinite(pose.rpy_deg))):
            raise UnreachableTargetError(f"pose is not finite: {pose}")
        self._fault("disconnect_next_move", "set_position")
        self._fault("next_move", "set_position")
        with w.lock:
            start_m, start_rpy, seed = w.arm.tcp_m.copy(), w.arm.rpy_deg.copy(), w.arm.joints_rad.copy()
        dist, fracs, path = self._plan(start_m, start_rpy, pose, seed)
        goal_rpy = np.asarray(pose.rpy_deg, dtype=np.float64)
        total_s = trapezoid_duration_s(dist, speed_m_s, acc_m_s2) * self.time_scale
        self._stop.clear()
        with w.lock:
            w.arm.moving = True
        try:
            t0 = time.monotonic()
            while True:
                t = time.monotonic() - t0
                if self._stop.is_set() or w.arm.estopped:
                    raise EmergencyStopError("emergency stop during a linear move")
                f = 1.0 if total_s <= 0 else trapezoid_fraction(t, dist, speed_m_s, acc_m_s2, total_s)
                if f >= 1.0:
                    w.set_tcp(pose.xyz, goal_rpy, path[-1])
                    break
                i = int(np.searchsorted(fracs, f, side="right")) - 1
                a = (f - fracs[i]) / (fracs[i + 1] - fracs[i])
                q = path[i] + a * (path[i + 1] - path[i])
                # the reported orientation during the move is the goal's (all sim moves keep the tool down)
                w.set_tcp(start_m + f * (pose.xyz - start_m), goal_rpy, q)
                time.sleep(min(self.tick_s, max(total_s - t, 0.0)))
        finally:
            with w.lock:
                w.arm.moving = False

    def set_tool(self, closed: bool) -> None:
        """Close (``True``: hold the object the TCP is in, if any) or open (``False``: drop what is
        held straight down).

        Raises:
            ArmNotConnectedError, EmergencyStopError, ArmFaultError: as ``move_linear``.
        """
        w = self.world
        with w.lock:
            self._require_ready("set_tool")
        self._fault("next_tool", "close_lite6_gripper" if closed else "open_lite6_gripper")
        with w.lock:
            if closed:
                if w.arm.attached is None:
                    # a suction cup touches the top face and gives a few millimetres
                    above = 0.005 if self.tool.name == "lite_vacuum" else 0.0
                    name = w.grasp_candidate(w.arm.tcp_m, above_top_m=above)
                    if name is not None:
                        w.attach(name)
                        log.debug("grasped %s", name)
            else:
                w.release()
            w.arm.tool_closed = bool(closed)
            w.bump()

    def emergency_stop(self) -> None:
        """Stop now: a move in progress halts where it is; motion is refused until ``connect()``."""
        self._stop.set()
        with self.world.lock:
            self.world.arm.estopped = True

    # -- state -------------------------------------------------------------------------------------
    def get_pose(self) -> TcpPose:
        """Current TCP pose (metres, degrees).

        Raises:
            ArmNotConnectedError: not connected.
        """
        with self.world.lock:
            if not self.world.arm.connected:
                raise ArmNotConnectedError("sim arm is not connected")
            return TcpPose.at(self.world.arm.tcp_m, tuple(float(a) for a in self.world.arm.rpy_deg))

    def get_joints_rad(self) -> list[float] | None:
        with self.world.lock:
            return [float(q) for q in self.world.arm.joints_rad]

    def error_code(self) -> int:
        with self.world.lock:
            return int(self.world.arm.error_code)

    def holding_sensor(self) -> bool | None:
        """The vacuum gripper reports whether it holds something; the Lite gripper has no sensor."""
        if self.tool.name != "lite_vacuum":
            return None
        with self.world.lock:
            return self.world.arm.attached is not None
