"""The arm behind the xArm controller emulator: a narrow motion interface (``ArmBackend``) and the
kinematic Lite 6 that implements it today (``KinematicArmBackend``).

The emulator (``xarm_controller`` + ``xarm_model``) owns everything the *controller* decides: states,
modes, the command cache, error codes, TCP offset, speed limits, the wire protocol. The backend owns
what the *arm* does: where the joints are, how a commanded motion unfolds in time, the tool. A
physics world (the MuJoCo Lite 6 of issue 11) plugs in by implementing the same methods; nothing in
the emulator changes.

Units (SI inside, the emulator converts the protocol's mm): joints in radians ``(6,)``, poses as 4x4
homogeneous transforms in metres in ``link_base``, speeds m/s or rad/s, accelerations m/s^2 or
rad/s^2. Motions are non-blocking: ``move_*`` plans, starts the motion now and returns its duration;
``moving()`` says whether it is still running; ``stop()`` ends it where the arm is.

Timing (what the real controller does, UFACTORY "Motion" docs and xarm-python-sdk 1.18
``set_position``/``set_servo_angle``): a rest-to-rest trapezoidal speed profile (``trapezoid``). A
joint move is synchronous: every joint follows the same normalised profile, paced by the joint that
moves furthest. A linear move keeps the TCP on the straight line (orientation by slerp), paced by the
translation at ``speed`` or by the rotation at ``rot_speed_rad_s``, whichever takes longer.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
from scipy.spatial.transform import Rotation, Slerp

from .trapezoid import trapezoid_duration_s, trapezoid_fraction

if TYPE_CHECKING:
    from .kinematics import Lite6Kinematics

log = logging.getLogger(__name__)

__all__ = [
    "ArmBackend",
    "KinematicArmBackend",
    "MotionLayerBackend",
    "PlanningError",
    "check_line_joint_speeds",
    "world_backend",
    "KINEMATIC_ERROR",
    "JOINT_LIMIT_ERROR",
    "SPEED_LIMIT_ERROR",
    "LITE6_MAX_JOINT_SPEED_RAD_S",
]

# Controller error codes a planning failure becomes (the SDK's ControllerErrorCodeMap titles).
KINEMATIC_ERROR = 21  # C21 "Kinematic Error": no joint solution along the path
JOINT_LIMIT_ERROR = 23  # C23 "Joints Angle Exceed Limit"
SPEED_LIMIT_ERROR = 24  # C24 "Speed Exceeds Limit": the path needs a joint faster than its limit (singularity)
LITE6_MAX_JOINT_SPEED_RAD_S = math.pi  # Lite 6 specification: 180 deg/s


class PlanningError(Exception):
    """A motion the arm cannot execute; nothing moved.

    Attributes:
        code: the controller error it becomes (``KINEMATIC_ERROR``, ``JOINT_LIMIT_ERROR``,
            ``SPEED_LIMIT_ERROR``).
        detail: what failed and where.
    """

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(f"C{code}: {detail}")
        self.code, self.detail = int(code), detail


@runtime_checkable
class ArmBackend(Protocol):
    """What the controller emulator needs from an arm (simulated kinematically or physically).

    Attributes:
        joint_limits_rad: ``(6, 2)`` lower and upper joint limits, radians.
    """

    joint_limits_rad: np.ndarray

    def joints_rad(self) -> np.ndarray:
        """The six joint angles now, radians ``(6,)``."""

    def fk(self, joints_rad) -> np.ndarray:
        """Flange pose (4x4, metres, base frame) at ``joints_rad``; no motion."""

    def ik(self, flange_T: np.ndarray, seed_rad) -> np.ndarray | None:
        """Joint angles (6, rad) within the limits that put the flange at ``flange_T``, searched from
        ``seed_rad``; ``None`` when there are none. No motion."""

    def move_joints(self, target_rad, speed_rad_s: float, acc_rad_s2: float) -> float:
        """Start a synchronous joint move to ``target_rad``; return its duration (s).

        Raises:
            PlanningError: a target outside the joint limits (``JOINT_LIMIT_ERROR``); nothing moves.
        """

    def move_linear(self, tcp_goal_T: np.ndarray, tool_T: np.ndarray, speed_m_s: float, acc_m_s2: float) -> float:
        """Start a straight-line move of the TCP (flange @ ``tool_T``) to ``tcp_goal_T``; return its
        duration (s).

        Raises:
            PlanningError: no joint solution along the line, or a joint would exceed its speed limit;
                nothing moves.
        """

    def moving(self) -> bool:
        """Whether a motion is still running."""

    def stop(self) -> None:
        """End the running motion where the arm is now (a no-op when idle)."""

    def set_tool(self, closed: bool | None) -> None:
        """Lite gripper: close (``True``), open (``False``), stop driving (``None``). Lite vacuum:
        suction on (``True``) or off (``False``/``None``)."""

    def tool_holding(self) -> bool:
        """The tool's sensor: the vacuum cup is sealed on something (the Lite gripper has none:
        ``False``)."""


def check_line_joint_speeds(fracs, path, profile: tuple[float, float, float], max_joint_speed_rad_s: float) -> None:
    """Refuse a line whose joints would outrun their speed limit at the commanded pace (a branch flip
    or a pass near a singularity shows up as a large joint step between waypoints).

    Args:
        fracs: ``(n,)`` path parameter (0..1) of the waypoints; ``path``: ``(n, 6)`` joints there, rad.
        profile: distance, peak speed and acceleration of the axis that paces the line (m or rad).
        max_joint_speed_rad_s: the joint speed limit.

    Raises:
        PlanningError: ``SPEED_LIMIT_ERROR`` with the joint and the speed it would need.
    """
    dist, speed, acc = profile
    if dist <= 0:
        return
    peak_path_rate = min(speed, math.sqrt(acc * dist)) / dist  # ds/dt at the profile's top speed
    dq_ds = np.abs(np.diff(np.asarray(path), axis=0)) / np.diff(np.asarray(fracs))[:, None]
    need = float(np.max(dq_ds)) * peak_path_rate
    if need > max_joint_speed_rad_s * 1.001:
        joint = int(np.argmax(np.max(dq_ds, axis=0))) + 1
        raise PlanningError(
            SPEED_LIMIT_ERROR,
            f"joint {joint} would need {math.degrees(need):.0f} deg/s "
            f"(limit {math.degrees(max_joint_speed_rad_s):.0f} deg/s) on this line",
        )


@dataclass
class _Motion:
    t0: float
    duration_s: float
    fracs: np.ndarray  # path parameter (0..1) at each waypoint
    path: np.ndarray  # joints at each waypoint, (n, 6)
    profile: tuple[float, float, float]  # distance, speed, acc of the axis that paces the motion


class _FlangeKinematics:
    """The backends' kinematic queries: flange FK/IK of ``self.kin`` (a ``Lite6Kinematics``) and the
    joint-limit test against ``self.joint_limits_rad``."""

    kin: Lite6Kinematics
    joint_limits_rad: np.ndarray

    def fk(self, joints_rad) -> np.ndarray:
        return self.kin.fk(np.asarray(joints_rad, dtype=np.float64).reshape(6), tool=None)

    def ik(self, flange_T: np.ndarray, seed_rad) -> np.ndarray | None:
        from .kinematics import matrix_to_rpy_deg

        T = np.asarray(flange_T, dtype=np.float64)
        if not np.all(np.isfinite(T)):
            return None
        q = self.kin.ik(
            T[:3, 3], matrix_to_rpy_deg(T[:3, :3]), seed_rad=np.asarray(seed_rad, dtype=np.float64), tool=None
        )
        return None if q is None else np.asarray(q, dtype=np.float64)

    def within_limits(self, joints_rad) -> bool:
        q = np.asarray(joints_rad, dtype=np.float64).reshape(6)
        lo, hi = self.joint_limits_rad[:, 0], self.joint_limits_rad[:, 1]
        return bool(np.all(np.isfinite(q)) and np.all(q >= lo - 1e-6) and np.all(q <= hi + 1e-6))


class KinematicArmBackend(_FlangeKinematics):
    """The Lite 6 as kinematics and time: no dynamics, no contact.

    Args:
        kinematics: a ``Lite6Kinematics``-like object (``fk(q, tool=None)``, ``ik(p, rpy, seed_rad,
            tool=None)``, ``joint_limits_rad``); default ``sim_mock.kinematics.Lite6Kinematics()``.
        joints_rad: the power-on joints; default the kinematics' tool-down seed.
        time_scale: multiplies every motion's duration (1 real time; tests use ~0.05).
        min_motion_s: shortest duration of a motion that moves at all (s, after scaling), so that a
            client polling the state sees it running.
        max_joint_speed_rad_s: the Lite 6 joint speed limit (180 deg/s); a linear move that would
            need a faster joint (near a singularity) is refused with ``SPEED_LIMIT_ERROR``.
        line_step_m / line_step_rad: spacing of the inverse-kinematics waypoints along a line;
            at most ``max_line_points`` waypoints.
        rot_speed_rad_s / rot_acc_rad_s2: pace of the orientation change of a linear move.
        vacuum: ``True`` when the mounted tool is the Lite vacuum (``vacuum_contact`` then says
            whether the cup is sealed on a surface).
        clock: the time source (s), ``time.monotonic`` by default; tests pass a fake one.
    """

    def __init__(
        self,
        kinematics=None,
        *,
        joints_rad=None,
        time_scale: float = 1.0,
        min_motion_s: float = 0.1,
        max_joint_speed_rad_s: float = LITE6_MAX_JOINT_SPEED_RAD_S,
        line_step_m: float = 0.01,
        line_step_rad: float = math.radians(5.0),
        max_line_points: int = 60,
        rot_speed_rad_s: float = 1.0,
        rot_acc_rad_s2: float = 2.7,
        vacuum: bool = False,
        clock=time.monotonic,
    ) -> None:
        if kinematics is None:
            from .kinematics import Lite6Kinematics

            kinematics = Lite6Kinematics()
        if not time_scale > 0:
            raise ValueError("time_scale must be positive")
        self.kin = kinematics
        self.joint_limits_rad = np.asarray(kinematics.joint_limits_rad, dtype=np.float64).reshape(6, 2)
        self.time_scale, self.min_motion_s = float(time_scale), float(min_motion_s)
        self.max_joint_speed_rad_s = float(max_joint_speed_rad_s)
        self.line_step_m, self.line_step_rad, self.max_line_points = line_step_m, line_step_rad, int(max_line_points)
        self.rot_speed_rad_s, self.rot_acc_rad_s2 = float(rot_speed_rad_s), float(rot_acc_rad_s2)
        self.vacuum = bool(vacuum)
        self.clock = clock
        self.vacuum_contact = True
        self.tool_closed: bool | None = None
        seed = getattr(kinematics, "TOOL_DOWN_SEED_RAD", np.zeros(6)) if joints_rad is None else joints_rad
        self._q = np.asarray(seed, dtype=np.float64).reshape(6).copy()
        self._motion: _Motion | None = None
        self._lock = threading.RLock()

    # -- reading ---------------------------------------------------------------------------------
    def _advance(self, now: float | None = None) -> None:
        m = self._motion
        if m is None:
            return
        t = (self.clock() if now is None else now) - m.t0
        s = trapezoid_fraction(t, *m.profile, m.duration_s)
        i = min(int(np.searchsorted(m.fracs, s, side="right")) - 1, len(m.fracs) - 2)
        a = (s - m.fracs[i]) / (m.fracs[i + 1] - m.fracs[i])
        self._q = m.path[i] + min(max(a, 0.0), 1.0) * (m.path[i + 1] - m.path[i])
        if s >= 1.0:
            self._q = m.path[-1].copy()
            self._motion = None

    def joints_rad(self) -> np.ndarray:
        with self._lock:
            self._advance()
            return self._q.copy()

    def moving(self) -> bool:
        with self._lock:
            self._advance()
            return self._motion is not None

    # -- motion ----------------------------------------------------------------------------------
    def _start(self, fracs, path, profile, natural_s: float) -> float:
        dur = natural_s * self.time_scale
        moves = bool(np.any(np.abs(path[-1] - path[0]) > 1e-9)) or natural_s > 0
        if moves:
            dur = max(dur, self.min_motion_s)
        self._motion = _Motion(self.clock(), dur, np.asarray(fracs, dtype=np.float64), np.asarray(path), profile)
        if dur <= 0:
            self._advance()
        return dur

    def move_joints(self, target_rad, speed_rad_s: float, acc_rad_s2: float) -> float:
        q1 = np.asarray(target_rad, dtype=np.float64).reshape(6)
        if not self.within_limits(q1):
            raise PlanningError(
                JOINT_LIMIT_ERROR,
                f"joint target {np.degrees(q1).round(1).tolist()} deg is outside "
                f"the limits {np.degrees(self.joint_limits_rad).round(1).tolist()}",
            )
        with self._lock:
            self._advance()
            q0 = self._q.copy()
            dist = float(np.max(np.abs(q1 - q0)))
            natural = trapezoid_duration_s(dist, speed_rad_s, acc_rad_s2)
            return self._start([0.0, 1.0], np.stack([q0, q1]), (dist, speed_rad_s, acc_rad_s2), natural)

    def move_linear(self, tcp_goal_T: np.ndarray, tool_T: np.ndarray, speed_m_s: float, acc_m_s2: float) -> float:
        goal, tool = np.asarray(tcp_goal_T, dtype=np.float64), np.asarray(tool_T, dtype=np.float64)
        with self._lock:
            self._advance()
            q0 = self._q.copy()
            start = self.fk(q0) @ tool
            dist = float(np.linalg.norm(goal[:3, 3] - start[:3, 3]))
            rots = Rotation.from_matrix(np.stack([start[:3, :3], goal[:3, :3]]))
            angle = float((rots[1] * rots[0].inv()).magnitude())
            fracs, path = self._line_path(start, goal, rots, dist, angle, tool, q0)
            t_lin = trapezoid_duration_s(dist, speed_m_s, acc_m_s2)
            t_rot = trapezoid_duration_s(angle, self.rot_speed_rad_s, self.rot_acc_rad_s2)
            profile = (
                (dist, speed_m_s, acc_m_s2) if t_lin >= t_rot else (angle, self.rot_speed_rad_s, self.rot_acc_rad_s2)
            )
            natural = max(t_lin, t_rot)
            check_line_joint_speeds(fracs, path, profile, self.max_joint_speed_rad_s)
            return self._start(fracs, path, profile, natural)

    def _line_path(self, start, goal, rots, dist, angle, tool, q0) -> tuple[np.ndarray, np.ndarray]:
        """Inverse kinematics at waypoints along the line, each seeded from the previous one (so the
        solution follows one branch, as the controller's Cartesian interpolation does)."""
        n = max(1, math.ceil(dist / self.line_step_m), math.ceil(angle / self.line_step_rad))
        n = min(n, self.max_line_points)
        fracs = np.linspace(0.0, 1.0, n + 1)
        slerp = Slerp([0.0, 1.0], rots)
        tool_inv = np.linalg.inv(tool)
        path = [q0]
        for s in fracs[1:]:
            T = np.eye(4)
            T[:3, :3] = goal[:3, :3] if s == 1.0 else slerp([s]).as_matrix()[0]
            T[:3, 3] = start[:3, 3] + s * (goal[:3, 3] - start[:3, 3])
            q = self.ik(T @ tool_inv, path[-1])
            if q is None:
                where = "at the goal" if s == 1.0 else f"{100 * s:.0f}% along the line"
                raise PlanningError(
                    KINEMATIC_ERROR, f"no joint solution {where}: TCP {np.round(T[:3, 3] * 1000, 1).tolist()} mm"
                )
            path.append(q)
        return fracs, np.stack(path)

    def stop(self) -> None:
        with self._lock:
            self._advance()
            self._motion = None

    # -- tool ------------------------------------------------------------------------------------
    def set_tool(self, closed: bool | None) -> None:
        with self._lock:
            self.tool_closed = closed

    def tool_holding(self) -> bool:
        with self._lock:
            return self.vacuum and self.tool_closed is True and self.vacuum_contact


class MotionLayerBackend(_FlangeKinematics):
    """An ``ArmBackend`` over a *blocking* motion layer: the MuJoCo Lite 6 of issue 11
    (``sim_mock.lite6_sim.SimLite6``, ``world.lite6``), or anything with its methods:
    ``joints_rad()``, ``commanded_pose() -> (xyz_m, rpy_deg)``, ``plan_linear(start_m, start_rpy_deg,
    seed_rad, goal_m, goal_rpy_deg) -> (distance_m, fractions, joint path)``, ``move_linear(xyz_m,
    rpy_deg, speed_m_s, acc_m_s2)`` and ``move_joints(joints_rad, speed_rad_s, acc_rad_s2)`` that
    return when the arm is there, ``set_tool(closed)``, ``holding()``, ``stop()`` from another thread
    (the motion raises) and ``clear_stop()``. Its poses are those of its own tool's TCP.

    The layer's blocking calls run one at a time on a worker thread, in order (motions and tool
    actions both step the physics, so they never overlap); ``moving()`` is true while a motion runs.
    A linear move is planned on the caller's thread first (``plan_linear``), so that a goal with no
    joint solution or a line too fast for the joints is refused at once, as the controller does.

    The emulator's TCP (the controller's TCP offset, ``tool_T``) may differ from the layer's tool
    (a script that sets no TCP offset moves the flange): goals are converted through the flange,
    so the flange ends where the controller would put it; in between, the layer keeps *its* TCP on
    a straight line, which differs from the controller's only while the orientation changes.

    Args:
        layer: the motion layer.
        kinematics: the ``Lite6Kinematics`` of the layer's arm (flange FK/IK for the queries).
        layer_tool_T: 4x4 flange -> the layer's TCP (e.g. 83.6 mm along z for the Lite gripper).
        max_joint_speed_rad_s: as ``KinematicArmBackend``.
    """

    def __init__(
        self,
        layer,
        kinematics,
        layer_tool_T,
        *,
        max_joint_speed_rad_s: float = LITE6_MAX_JOINT_SPEED_RAD_S,
        stop_timeout_s: float = 5.0,
    ) -> None:
        self.layer, self.kin = layer, kinematics
        self.layer_tool_T = np.asarray(layer_tool_T, dtype=np.float64)
        self.joint_limits_rad = np.asarray(kinematics.joint_limits_rad, dtype=np.float64).reshape(6, 2)
        self.max_joint_speed_rad_s, self.stop_timeout_s = float(max_joint_speed_rad_s), float(stop_timeout_s)
        self._jobs: queue.Queue = queue.Queue()
        self._busy = threading.Event()  # a job is queued or running
        self._motion = threading.Event()  # a motion job is running
        self._pending = 0
        self._lock = threading.Lock()
        self._tool_closed: bool | None = None
        self._worker = threading.Thread(target=self._work, daemon=True, name="motion-layer-backend")
        self._worker.start()

    # -- the worker ------------------------------------------------------------------------------
    def _submit(self, fn, *args, motion: bool) -> None:
        with self._lock:
            self._pending += 1
            self._busy.set()
            if motion:
                self._motion.set()  # moving from the moment it is accepted
        self._jobs.put((fn, args, motion))

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:  # close()
                return
            fn, args, motion = job
            try:
                fn(*args)
            except Exception as e:  # MotionStopped after stop(), or a physics refusal: the arm holds
                log.info("motion layer job ended: %s", e)
            finally:
                with self._lock:
                    self._pending -= 1
                    if self._pending == 0:
                        self._busy.clear()
                        self._motion.clear()

    # -- ArmBackend ------------------------------------------------------------------------------
    def joints_rad(self) -> np.ndarray:
        return np.asarray(self.layer.joints_rad(), dtype=np.float64).reshape(6)

    def move_joints(self, target_rad, speed_rad_s: float, acc_rad_s2: float) -> float:
        q1 = np.asarray(target_rad, dtype=np.float64).reshape(6)
        if not self.within_limits(q1):
            raise PlanningError(
                JOINT_LIMIT_ERROR, f"joint target {np.degrees(q1).round(1).tolist()} deg is outside the limits"
            )
        dist = float(np.max(np.abs(q1 - self.joints_rad())))
        self._submit(self.layer.move_joints, q1, speed_rad_s, acc_rad_s2, motion=True)
        return trapezoid_duration_s(dist, speed_rad_s, acc_rad_s2)

    def move_linear(self, tcp_goal_T: np.ndarray, tool_T: np.ndarray, speed_m_s: float, acc_m_s2: float) -> float:
        from .kinematics import matrix_to_rpy_deg

        goal = np.asarray(tcp_goal_T, dtype=np.float64) @ np.linalg.inv(np.asarray(tool_T, dtype=np.float64))
        goal = goal @ self.layer_tool_T  # the same flange pose, as the layer's TCP
        goal_xyz, goal_rpy = goal[:3, 3], matrix_to_rpy_deg(goal[:3, :3])
        start_xyz, start_rpy = self.layer.commanded_pose()
        try:
            dist, fracs, path = self.layer.plan_linear(start_xyz, start_rpy, self.joints_rad(), goal_xyz, goal_rpy)
        except Exception as e:  # the layer's own "no joint solution" (UnreachableTargetError)
            raise PlanningError(KINEMATIC_ERROR, str(e)) from e
        check_line_joint_speeds(fracs, path, (dist, speed_m_s, acc_m_s2), self.max_joint_speed_rad_s)
        self._submit(self.layer.move_linear, goal_xyz, goal_rpy, speed_m_s, acc_m_s2, motion=True)
        return trapezoid_duration_s(dist, speed_m_s, acc_m_s2)

    def moving(self) -> bool:
        return self._motion.is_set()

    def stop(self) -> None:
        """Halt the running job and drop the queued ones; wait until the worker is idle."""
        while True:  # queued jobs never run
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is None:  # keep a close() request
                self._jobs.put(None)
                break
            with self._lock:
                self._pending -= 1
        with self._lock:
            if self._pending <= 0:
                self._pending = 0
                self._busy.clear()
                self._motion.clear()
        self.layer.stop()
        deadline = time.monotonic() + self.stop_timeout_s
        while self._busy.is_set() and time.monotonic() < deadline:
            time.sleep(0.005)
        self.layer.clear_stop()

    def set_tool(self, closed: bool | None) -> None:
        self._tool_closed = closed
        if closed is not None:  # None (the Lite gripper's "stop"): the fingers stay where they are
            self._submit(self.layer.set_tool, bool(closed), motion=False)

    def tool_holding(self) -> bool:
        return self.layer.holding() is not None

    def close(self) -> None:
        """Stop what runs and end the worker thread."""
        self.stop()
        self._jobs.put(None)
        self._worker.join(timeout=self.stop_timeout_s)


def world_backend(world, time_scale: float | None = None) -> MotionLayerBackend:
    """The emulator's backend driving a MuJoCo ``SimWorld``'s Lite 6 (``world.lite6``) with the
    world's tool: ``XArmControllerEmulator(host, port, tool=world.tool.name,
    backend=world_backend(world))``. ``time_scale`` (default: the layer's) sets the wall seconds per
    simulated second of its motions."""
    from .kinematics import LITE6_TOOL_OFFSETS_M

    if time_scale is not None:
        world.lite6.time_scale = float(time_scale)
    tool_T = np.eye(4)
    tool_T[2, 3] = LITE6_TOOL_OFFSETS_M[world.tool.name]
    return MotionLayerBackend(world.lite6, world.kinematics, tool_T)
