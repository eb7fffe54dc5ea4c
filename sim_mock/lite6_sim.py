"""``SimLite6``: the simulated Lite 6 controller's motion layer, the one arm interface of the sim.

Both ``SimArmDriver`` (the ``robot.ArmDriver`` of ``make_arm("sim")``) and the xArm controller
emulator drive the MuJoCo arm through it. Units: metres, radians inside; orientations at the
interface are xArm roll/pitch/yaw in degrees (``(180, 0, 0)`` = tool down), as in ``robot.arm``.

- ``move_linear(xyz_m, rpy_deg, speed_m_s, acc_m_s2)``: a straight TCP line. IK (``Lite6Kinematics``,
  ikpy) is solved every ``step_m`` along the line, each seeded from the previous solution, and the
  line is refused with ``UnreachableTargetError`` before anything moves if any point has no
  solution. The joint path is then followed on the trapezoidal profile of the real controller
  (``trapezoid_duration_s``: ``d/v + v/a``, or ``2 sqrt(d/a)`` for short moves).
- ``move_joints(joints_rad, speed_rad_s, acc_rad_s2)``: joint space, every joint on one trapezoid
  scaled to the largest joint change (so all arrive together, as ``set_servo_angle`` does).
- ``set_tool(closed)``: close/open the gripper or switch the vacuum (``tools.ToolPhysics``), then
  let the fingers travel (``GRIP_CLOSE_S``) and, after an opening, let released objects settle.
- ``stop()``: from any thread; a motion in progress halts where it is (the servos hold the current
  joints) and raises ``MotionStopped``. ``clear_stop()`` allows motion again.
- Reading: ``joints_rad()``, ``tcp_pose()``, ``ik(...)``, ``fk(...)``, ``holding()``, ``moving``.

The joint targets go to MuJoCo position servos every physics step; the arm's links are real
bodies, so a finger that meets an object pushes it, and a servo that meets the table stalls.
Timing: motions step the physics in ticks of ``TICK_STEPS`` steps under the world's lock, then wait
so that wall time = ``time_scale`` x simulated time (0: as fast as the physics runs; tests use
0 to 0.05). After the profile ends, the servos get ``SETTLE_MAX_S`` to converge (what the real
controller's "in position" check waits for).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import Callable

import numpy as np
from scipy.spatial.transform import Rotation, Slerp

from pointlab.robot.errors import UnreachableTargetError

from .kinematics import matrix_to_rpy_deg, rpy_deg_to_matrix
from .mjcf import TIMESTEP_S
from .trapezoid import trapezoid_duration_s, trapezoid_fraction
from .tools import GRIP_CLOSE_S, SUCTION_ON_S

__all__ = ["SimLite6", "MotionStopped", "TICK_STEPS", "SETTLE_MAX_S", "RELEASE_SETTLE_MAX_S"]

log = logging.getLogger(__name__)

TICK_STEPS = 8  # 16 ms of simulated time per lock hold
SETTLE_MAX_S = 0.3
RELEASE_SETTLE_MAX_S = 1.5
IN_POSITION_RAD = 2e-4


class MotionStopped(RuntimeError):
    """A motion was halted by ``stop()`` (the arm holds where it stopped)."""


class SimLite6:
    """The motion layer on a ``SimWorld`` (see the module docstring).

    Args:
        world: the world whose physics this arm moves.
        time_scale: wall seconds per simulated second (0 = no waiting).
        step_m: spacing of the IK checks along a linear move, metres.
    """

    def __init__(self, world, time_scale: float = 1.0, step_m: float = 0.02) -> None:
        if not (time_scale >= 0 and math.isfinite(time_scale)) or step_m <= 0:
            raise ValueError("time_scale must be a finite number >= 0 and step_m > 0")
        self.world = world
        self.time_scale = float(time_scale)
        self.step_m = float(step_m)
        self._stop = threading.Event()

    # -- reading ------------------------------------------------------------------------------------
    def joints_rad(self) -> np.ndarray:
        """Measured joint angles ``(6,)`` radians."""
        with self.world.lock:
            return self.world.physics.arm_joints()

    def tcp_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Measured TCP position ``(3,)`` metres and xArm roll/pitch/yaw ``(3,)`` degrees."""
        with self.world.lock:
            p, R = self.world.physics.tcp()
        return p, matrix_to_rpy_deg(R)

    def fk(self, joints_rad) -> np.ndarray:
        """TCP pose 4x4 (metres) of ``joints_rad`` for the world's tool (ikpy chain)."""
        return self.world.kinematics.fk(joints_rad, self.world.tool.name)

    def ik(self, xyz_m, rpy_deg, seed_rad=None) -> np.ndarray | None:
        """Joints that put the TCP at ``xyz_m`` with ``rpy_deg``, or ``None`` (no solution within the
        limits to 1 mm / 1 deg). The seed defaults to the current joints."""
        seed = self.joints_rad() if seed_rad is None else seed_rad
        return self.world.kinematics.ik(xyz_m, rpy_deg, seed_rad=seed, tool=self.world.tool.name)

    @property
    def moving(self) -> bool:
        return bool(self.world.arm.moving)

    def holding(self) -> str | None:
        """The object the tool holds by physics, or ``None``."""
        return self.world.held()

    # -- stop ----------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Halt a motion in progress (any thread); further motions raise until ``clear_stop()``."""
        self._stop.set()

    def clear_stop(self) -> None:
        self._stop.clear()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    # -- planning ------------------------------------------------------------------------------------
    def plan_linear(self, start_m, start_rpy_deg, seed_rad, goal_m, goal_rpy_deg):
        """IK along the line: ``(distance_m, fractions (n+1,), joint path (n+1, 6))``.

        Raises:
            UnreachableTargetError: a point of the line has no solution (the message says where).
        """
        start_m, goal_m = np.asarray(start_m, np.float64), np.asarray(goal_m, np.float64)
        goal_rpy = np.asarray(goal_rpy_deg, np.float64)
        dist = float(np.linalg.norm(goal_m - start_m))
        rots = Rotation.from_matrix(np.stack([rpy_deg_to_matrix(start_rpy_deg), rpy_deg_to_matrix(goal_rpy)]))
        angle_deg = float(np.degrees((rots[1] * rots[0].inv()).magnitude()))
        n = max(1, math.ceil(dist / self.step_m), math.ceil(angle_deg / 5.0))
        slerp = Slerp([0.0, 1.0], rots)
        fractions = np.linspace(0.0, 1.0, n + 1)
        kin, tool = self.world.kinematics, self.world.tool.name
        path = [np.asarray(seed_rad, np.float64)]
        for f in fractions[1:]:
            p = start_m + f * (goal_m - start_m)
            rpy = goal_rpy if f == 1.0 else slerp([f]).as_euler("xyz", degrees=True)[0]
            q = kin.ik(p, rpy, seed_rad=path[-1], tool=tool)
            if q is None:
                where = "goal" if f == 1.0 else f"{100 * f:.0f}% along the line"
                raise UnreachableTargetError(
                    f"no joint solution within the Lite 6 limits at the {where}: "
                    f"TCP {np.round(p, 4).tolist()} m, rpy {np.round(rpy, 2).tolist()} deg"
                )
            path.append(q)
        return dist, fractions, np.array(path)

    # -- motion --------------------------------------------------------------------------------------
    def move_linear(self, xyz_m, rpy_deg, speed_m_s: float, acc_m_s2: float) -> None:
        """Straight TCP line to ``xyz_m`` / ``rpy_deg``, returning when the arm is there.

        Raises:
            UnreachableTargetError: no IK along the line (nothing moves).
            MotionStopped: ``stop()`` before or during the motion.
            ValueError: speed or acceleration not positive and finite.
        """
        _check_rates(speed_m_s, acc_m_s2)
        start_m, start_rpy = self.commanded_pose()
        dist, fracs, path = self.plan_linear(start_m, start_rpy, self._commanded_joints(), xyz_m, rpy_deg)
        total_s = trapezoid_duration_s(dist, speed_m_s, acc_m_s2)

        def q_at(t: float) -> np.ndarray:
            f = trapezoid_fraction(t, dist, speed_m_s, acc_m_s2, total_s) if total_s > 0 else 1.0
            i = min(int(np.searchsorted(fracs, f, side="right")) - 1, len(fracs) - 2)
            a = (f - fracs[i]) / (fracs[i + 1] - fracs[i])
            return path[i] + a * (path[i + 1] - path[i])

        self._execute(q_at, total_s)

    def move_joints(self, joints_rad, speed_rad_s: float, acc_rad_s2: float) -> None:
        """Joint-space move to ``joints_rad`` (6, radians), all joints on one scaled trapezoid.

        Raises:
            UnreachableTargetError: a joint outside its limits (nothing moves).
            MotionStopped, ValueError: as ``move_linear``.
        """
        _check_rates(speed_rad_s, acc_rad_s2)
        goal = np.asarray(joints_rad, np.float64).reshape(6)
        if not (np.all(np.isfinite(goal)) and self.world.kinematics.within_limits(goal)):
            raise UnreachableTargetError(f"joint target {np.round(goal, 4).tolist()} rad is outside the Lite 6 limits")
        start = self._commanded_joints()
        delta = goal - start
        span = float(np.max(np.abs(delta)))
        total_s = trapezoid_duration_s(span, speed_rad_s, acc_rad_s2)

        def q_at(t: float) -> np.ndarray:
            f = trapezoid_fraction(t, span, speed_rad_s, acc_rad_s2, total_s) if total_s > 0 else 1.0
            return start + f * delta

        self._execute(q_at, total_s)

    def commanded_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """TCP pose of the servo targets (where the arm is going or holding), metres and degrees:
        the start of the next line (the measured pose sags by fractions of a millimetre)."""
        T = self.fk(self._commanded_joints())
        return T[:3, 3], matrix_to_rpy_deg(T[:3, :3])

    def _commanded_joints(self) -> np.ndarray:
        with self.world.lock:
            return self.world.physics.arm_targets()

    def set_tool(self, closed: bool) -> None:
        """Close/open the gripper or vacuum, let it act, and after an opening let objects settle.

        Raises:
            MotionStopped: ``stop()`` while the tool acts.
        """
        w = self.world
        with w.lock:
            w.tool_physics.command(closed)
            hold = w.physics.arm_targets()
            w.bump()
        self._execute(lambda t: hold, GRIP_CLOSE_S if not w.tool_physics.is_vacuum else SUCTION_ON_S, settle_max_s=0.0)
        if not closed:
            self._execute(lambda t: hold, 0.0, settle_max_s=RELEASE_SETTLE_MAX_S)

    def _execute(self, q_at: Callable[[float], np.ndarray], total_s: float, settle_max_s: float = SETTLE_MAX_S) -> None:
        """Follow ``q_at(t)`` for ``total_s`` simulated seconds, then settle (module docstring)."""
        w = self.world
        if self._stop.is_set():
            raise MotionStopped("the arm is stopped")
        dt = TIMESTEP_S
        n_total = int(math.ceil(total_s / dt - 1e-9))
        n_settle = int(math.ceil(settle_max_s / dt))
        wall0, sim0 = time.monotonic(), None
        k = 0
        with w.lock:
            w.arm.moving = True
            sim0 = w.physics.time_s
        try:
            while True:
                with w.lock:
                    ph = w.physics
                    for _ in range(TICK_STEPS):
                        k += 1
                        if k <= n_total:
                            ph.set_arm_targets(q_at(k * dt))
                        elif k == n_total + 1:
                            ph.set_arm_targets(q_at(total_s))
                        ph.step(1)
                        if k >= n_total + n_settle:
                            break
                    w.tool_physics.update()
                    w.bump()
                    done = k >= n_total and (k >= n_total + n_settle or self._in_position(ph))
                    sim_elapsed = ph.time_s - sim0
                if self._stop.is_set():
                    with w.lock:
                        w.physics.set_arm_targets(w.physics.arm_joints())  # hold where it is
                        w.bump()
                    raise MotionStopped("stopped during a motion")
                if done:
                    break
                if self.time_scale > 0:
                    wait = wall0 + self.time_scale * sim_elapsed - time.monotonic()
                    if wait > 0:
                        self._stop.wait(wait)
        finally:
            with w.lock:
                w.arm.moving = False

    def _in_position(self, ph) -> bool:
        err = float(np.max(np.abs(ph.arm_joints() - ph.arm_targets())))
        return err < IN_POSITION_RAD and ph.at_rest()


def _check_rates(speed: float, acc: float) -> None:
    if not (math.isfinite(speed) and math.isfinite(acc) and speed > 0 and acc > 0):
        raise ValueError(f"speed {speed} and acceleration {acc} must be positive and finite")
