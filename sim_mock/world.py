"""The simulated world: the tabletop scene, the simulated Lite 6's state, the sim camera's pose.

One ``SimWorld`` is shared by the sim camera (renders it), the sim arm driver (moves it) and the
oracle model (reads its ground truth), which may run in different threads: every read or write of
its state goes through ``world.lock`` (an ``RLock``). ``default_world()`` returns one process-wide
instance so that ``make_camera("sim")`` and ``make_arm("sim")`` in one process see the same table.

The physics is deliberately small: objects are upright primitives that never tip over; a closed
gripper holds at most one object, which keeps its offset to the TCP while held (objects stacked on
it ride along); an opened gripper drops the object straight down onto the highest surface under its
centre (a bowl's floor or rim, another object's top, or the table). There are no collisions: the
tool and a held object pass through other objects.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

from pointlab.perception.extrinsics import Calibration, RigidTransform, optical_pose
from pointlab.perception.frame import Intrinsics
from pointlab.robot.arm import TOOL_DOWN_RPY_DEG, TOOLS

from .kinematics import Lite6Kinematics
from .scene import ObjectSpec, Scene, default_scene

__all__ = ["SimWorld", "ArmSimState", "default_world", "look_at", "DEFAULT_INTRINSICS", "DEFAULT_CAMERA_EYE_M",
           "DEFAULT_CAMERA_TARGET_M", "HOME_TCP_M", "FAULT_KINDS", "NEAR_DISTANCE_M"]

log = logging.getLogger(__name__)

# D435-like colour intrinsics at 640x480 (no distortion, as librealsense reports the colour stream).
DEFAULT_INTRINSICS = Intrinsics(640, 480, 615.0, 615.0, 321.0, 239.0)
# The camera stands in front of the table, facing the robot, looking down at about 47 deg from
# ~0.71 m away: the whole object area is in view and the base is near the top edge.
DEFAULT_CAMERA_EYE_M = (0.78, 0.0, 0.52)
DEFAULT_CAMERA_TARGET_M = (0.29, 0.0, 0.0)
HOME_TCP_M = (0.20, 0.0, 0.25)  # pointlab.robot.arm.MotionConfig().home
NEAR_DISTANCE_M = 0.06
FAULT_KINDS = ("next_move", "next_tool", "connect", "disconnect_next_move")


def look_at(eye_m, target_m, up=(0.0, 0.0, 1.0)) -> RigidTransform:
    """``T_base_camera`` of an optical frame (x right, y down, z forward) at ``eye_m`` looking at
    ``target_m`` (base frame, metres), with the image's "up" towards ``up``.

    Raises:
        ValueError: eye and target coincide or the view is parallel to ``up``.
    """
    return RigidTransform(optical_pose(eye_m, target_m, up))


@dataclass
class ArmSimState:
    """What the simulated controller knows (guarded by ``SimWorld.lock``).

    Attributes:
        joints_rad: 6 joint angles, radians.
        tcp_m: TCP position in the base frame, metres ``(3,)``.
        rpy_deg: TCP orientation, xArm roll/pitch/yaw degrees.
        tool_closed: gripper closed / vacuum on.
        attached: canonical name of the held object, or ``None``.
        attach_offset_m: object bottom-centre minus TCP at grasp time, metres ``(3,)``.
        riders: objects stacked on the held one, carried along: name -> offset of their bottom
            centre from the held object's, metres.
        error_code: controller error code (0 = none).
        estopped: emergency stop engaged (motion refused until the next ``connect``).
        connected: a driver session is open.
        moving: a linear move is in progress.
    """

    joints_rad: np.ndarray
    tcp_m: np.ndarray
    rpy_deg: np.ndarray
    tool_closed: bool = False
    attached: str | None = None
    attach_offset_m: np.ndarray = field(default_factory=lambda: np.zeros(3))
    riders: dict = field(default_factory=dict)
    error_code: int = 0
    estopped: bool = False
    connected: bool = False
    moving: bool = False


class SimWorld:
    """A tabletop scene plus the simulated arm and camera.

    Args:
        scene: the initial layout (default: ``default_scene()``).
        tool: the arm's end effector, a key of ``pointlab.robot.arm.TOOLS``.
        T_base_camera: pose of the camera optical frame in the base frame (default: ``look_at`` of
            ``DEFAULT_CAMERA_EYE_M`` -> ``DEFAULT_CAMERA_TARGET_M``).
        intrinsics: the camera's colour intrinsics (default: ``DEFAULT_INTRINSICS``).
        kinematics: a shared ``Lite6Kinematics`` (built on first use otherwise).
        home_tcp_m: where the TCP starts (tool pointing down), metres.

    Attributes:
        lock: guards every mutable attribute; hold it to read a consistent state.
        version: increases on every change of an object pose or the TCP (the camera's render cache key).
    """

    def __init__(self, scene: Scene | None = None, *, tool: str = "lite_gripper",
                 T_base_camera: RigidTransform | None = None, intrinsics: Intrinsics | None = None,
                 kinematics: Lite6Kinematics | None = None, home_tcp_m=HOME_TCP_M) -> None:
        if tool not in TOOLS:
            raise ValueError(f"unknown tool {tool!r}; known: {', '.join(sorted(TOOLS))}")
        self.scene = scene or default_scene()
        self.tool = TOOLS[tool]
        self.T_base_camera = T_base_camera or look_at(DEFAULT_CAMERA_EYE_M, DEFAULT_CAMERA_TARGET_M)
        self.intrinsics = intrinsics or DEFAULT_INTRINSICS
        self.kinematics = kinematics or _shared_kinematics()
        self.home_tcp_m = np.asarray(home_tcp_m, dtype=np.float64).reshape(3)
        self.lock = threading.RLock()
        self.version = 0
        self._faults: dict[str, int] = {}
        self.objects: dict[str, ObjectSpec] = {}
        self.arm: ArmSimState
        self.reset()

    # -- state -------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Put every object back at its initial pose, the arm at home with the tool open, and clear
        injected faults, errors and the emergency stop (the session stays connected)."""
        q = self.kinematics.ik(self.home_tcp_m, TOOL_DOWN_RPY_DEG, tool=self.tool.name)
        if q is None:
            raise ValueError(f"home TCP {self.home_tcp_m.tolist()} m is not reachable tool-down")
        with self.lock:
            connected = getattr(self, "arm", None) is not None and self.arm.connected
            self.objects = {o.name: o for o in self.scene.objects}
            self.arm = ArmSimState(joints_rad=q, tcp_m=self.home_tcp_m.copy(),
                                   rpy_deg=np.array(TOOL_DOWN_RPY_DEG, dtype=np.float64), connected=connected)
            self._faults.clear()
            self.version += 1

    def bump(self) -> None:
        """Mark the world changed (call with the lock held after mutating state)."""
        self.version += 1

    def _canonical(self, name: str) -> str:
        canon = self.scene.resolve(name)
        if canon is None:
            raise KeyError(f"no object named {name!r} in the scene")
        return canon

    def object(self, name: str) -> ObjectSpec:
        """Current pose of an object by name or alias.

        Raises:
            KeyError: no such object.
        """
        canon = self._canonical(name)
        with self.lock:
            return self.objects[canon]

    def set_object_pose(self, name: str, position_m, yaw_deg: float | None = None) -> None:
        """Put an object (name or alias) at ``position_m`` (bottom centre, metres), e.g. to set up a
        test or a custom scene. A held object is let go of first.

        Raises:
            KeyError: no such object.
        """
        canon = self._canonical(name)
        with self.lock:
            if self.arm.attached == canon:
                self.arm.attached, self.arm.riders = None, {}
            self.objects[canon] = self.objects[canon].at(position_m, yaw_deg)
            self.bump()

    def snapshot(self) -> dict:
        """Current object poses: ``{name: {"position_m": [x, y, z_bottom], "yaw_deg", "top_z_m",
        "held": bool, "container": bool}}`` plus ``"_arm": {"tcp_m", "tool_closed", "attached"}``."""
        with self.lock:
            out = {
                name: {"position_m": [round(c, 6) for c in o.position_m], "yaw_deg": round(o.yaw_deg, 4),
                       "top_z_m": round(o.position_m[2] + o.height_m, 6), "held": name == self.arm.attached,
                       "container": o.is_container}
                for name, o in self.objects.items()
            }
            out["_arm"] = {"tcp_m": [round(float(c), 6) for c in self.arm.tcp_m],
                           "tool_closed": self.arm.tool_closed, "attached": self.arm.attached}
        return out

    # -- faults (for tests) -------------------------------------------------------------------------
    def inject_fault(self, kind: str, code: int = 31) -> None:
        """Make the next matching driver call fail once.

        ``kind``: ``"next_move"`` (``move_linear`` raises ``ArmFaultError(code)``, no motion),
        ``"next_tool"`` (``set_tool`` raises ``ArmFaultError``), ``"connect"`` (``connect`` raises
        ``ArmConnectionError``), ``"disconnect_next_move"`` (``move_linear`` raises
        ``ArmConnectionError``). xArm code 31 is "collision caused abnormal current".

        Raises:
            ValueError: unknown kind.
        """
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}; known: {', '.join(FAULT_KINDS)}")
        with self.lock:
            self._faults[kind] = int(code)

    def take_fault(self, kind: str) -> int | None:
        """Consume an injected fault of ``kind``: its code, or ``None``."""
        with self.lock:
            return self._faults.pop(kind, None)

    # -- physics -----------------------------------------------------------------------------------
    def grasp_candidate(self, tcp_m, above_top_m: float = 0.0) -> str | None:
        """The object a tool closing at ``tcp_m`` would hold, or ``None``.

        Rule: the TCP's horizontal distance from the object's vertical axis is at most
        ``min(0.6 * half_width + 0.01, 0.02)`` m and its height is between the object's bottom and
        top (plus ``above_top_m``, for a suction cup that grips on touching the top). Containers are
        not graspable. Among several, the nearest axis wins."""
        p = np.asarray(tcp_m, dtype=np.float64).reshape(3)
        best, best_d = None, math.inf
        with self.lock:
            for name, o in self.objects.items():
                if o.is_container or name == self.arm.attached:
                    continue
                d = float(np.hypot(*(p[:2] - np.asarray(o.position_m[:2]))))
                tol = min(0.6 * o.half_width_m + 0.01, 0.02)
                z0 = o.position_m[2]
                if d <= tol and z0 <= p[2] <= z0 + o.height_m + above_top_m and d < best_d:
                    best, best_d = name, d
        return best

    def riders(self, name: str) -> list[str]:
        """Objects resting (directly or through others) on top of ``name``, bottom-up."""
        out: list[str] = []
        with self.lock:
            frontier = [name]
            while frontier:
                base = self.objects[frontier.pop(0)]
                top_z = base.position_m[2] + base.height_m
                for other, o in self.objects.items():
                    if other == name or other in out or o.is_container:
                        continue
                    if abs(o.position_m[2] - top_z) < 1e-6 and base.footprint_contains(o.position_m[:2]):
                        out.append(other)
                        frontier.append(other)
        return out

    def attach(self, name: str) -> None:
        """Hold ``name`` at its current offset from the TCP; whatever rests on it rides along."""
        with self.lock:
            o = self.objects[name]
            self.arm.attached = name
            self.arm.attach_offset_m = np.asarray(o.position_m) - self.arm.tcp_m
            self.arm.riders = {r: np.asarray(self.objects[r].position_m) - np.asarray(o.position_m)
                               for r in self.riders(name)}
            self.bump()

    def set_tcp(self, tcp_m, rpy_deg, joints_rad) -> None:
        """Move the TCP (and a held object, with anything resting on it)."""
        with self.lock:
            self.arm.tcp_m = np.asarray(tcp_m, dtype=np.float64).reshape(3).copy()
            self.arm.rpy_deg = np.asarray(rpy_deg, dtype=np.float64).reshape(3).copy()
            self.arm.joints_rad = np.asarray(joints_rad, dtype=np.float64).reshape(6).copy()
            if self.arm.attached is not None:
                self._move_held(self.arm.tcp_m + self.arm.attach_offset_m)
            self.bump()

    def _move_held(self, position_m: np.ndarray) -> None:
        name = self.arm.attached
        self.objects[name] = self.objects[name].at(position_m)
        for r, offset in self.arm.riders.items():
            self.objects[r] = self.objects[r].at(position_m + offset)

    def support_z_under(self, name: str, xy_m, ignore=()) -> float:
        """Height (m) an object ``name`` dropped with its centre at ``xy_m`` comes to rest on: the
        highest bowl floor/rim or object top under that point that is not above the object's
        current bottom, else the table (objects in ``ignore`` do not count)."""
        with self.lock:
            bottom = self.objects[name].position_m[2]
            best = self.scene.table_z_m
            for other, o in self.objects.items():
                if other == name or other in ignore:
                    continue
                z = o.support_z_at(xy_m)
                if z is not None and z <= bottom + 1e-6 and z > best:
                    best = z
        return best

    def release(self) -> str | None:
        """Drop the held object straight down; returns its name (or ``None`` if nothing was held)."""
        with self.lock:
            name = self.arm.attached
            if name is None:
                return None
            o = self.objects[name]
            xy = np.asarray(o.position_m[:2])
            riders = set(self.arm.riders)
            z = self.support_z_under(name, xy, ignore=riders)
            self._move_held(np.array([xy[0], xy[1], z]))
            self.arm.attached = None
            self.arm.riders = {}
            self.bump()
            log.debug("dropped %s at (%.3f, %.3f, %.3f)", name, xy[0], xy[1], z)
            return name

    # -- judgement ---------------------------------------------------------------------------------
    def infer_expected(self, instruction: str, action: str) -> dict | None:
        """What a typed ``instruction`` asks of the sim, as a ``judge`` expectation, read before the
        trial moves anything (so the browser trials get a sim judgement too), or ``None`` when it
        names no scene object. The expectation carries ``"inferred": True``.

        pick: the first mentioned object that is not a container. place: the held object goes into
        the first mentioned container, or near the first other mentioned object.
        """
        mentioned = self.scene.mentions(instruction if isinstance(instruction, str) else "")
        with self.lock:
            held = self.arm.attached
            if action == "pick":
                names = [m for m in mentioned if not self.objects[m].is_container]
                return {"action": "pick", "object": names[0], "inferred": True} if names else None
            if action != "place" or held is None:
                return None
            others = [m for m in mentioned if m != held]
            if not others:
                return None
            key = "container" if self.objects[others[0]].is_container else "near"
            return {"action": "place", "object": held, key: others[0], "inferred": True}

    def judge(self, expected: dict) -> tuple[bool, str]:
        """Did the last action do what ``expected`` says? Returns ``(success, reason)``.

        ``expected``: ``{"action": "pick", "object": NAME}`` (the tool holds that object),
        ``{"action": "place", "object": NAME, "container": NAME}`` (the object rests, not held,
        with its centre over the container's interior), or ``{"action": "place", "object": NAME,
        "near": NAME}`` (not held, centres within 6 cm horizontally). Names may be aliases.
        Malformed input gives ``(False, "bad_expected: ...")``, never an exception.
        """
        if not isinstance(expected, dict):
            return False, "bad_expected: not a dict"
        action, obj = expected.get("action"), expected.get("object")
        canon = self.scene.resolve(obj) if isinstance(obj, str) else None
        if canon is None:
            return False, f"bad_expected: unknown object {obj!r}"
        with self.lock:
            held = self.arm.attached
            o = self.objects[canon]
            if action == "pick":
                if held == canon:
                    return True, f"holding {canon}"
                return False, f"not holding {canon} (holding {held})" if held else f"not holding {canon} (tool empty)"
            if action != "place":
                return False, f"bad_expected: unknown action {action!r}"
            if held == canon:
                return False, f"{canon} is still held"
            if "container" in expected:
                cname = self.scene.resolve(str(expected["container"]))
                if cname is None or not self.objects[cname].is_container:
                    return False, f"bad_expected: {expected['container']!r} is not a container"
                c = self.objects[cname]
                inside = c.interior_contains(o.position_m[:2]) and o.position_m[2] < c.position_m[2] + c.height_m
                return (True, f"{canon} is in {cname}") if inside else (False, f"{canon} is not in {cname}")
            if "near" in expected:
                nname = self.scene.resolve(str(expected["near"]))
                if nname is None:
                    return False, f"bad_expected: unknown object {expected['near']!r}"
                d = float(np.hypot(*(np.asarray(o.position_m[:2]) - np.asarray(self.objects[nname].position_m[:2]))))
                ok = d <= NEAR_DISTANCE_M
                verdict = "within" if ok else "beyond"
                return ok, f"{canon} is {100 * d:.1f} cm from {nname} ({verdict} {100 * NEAR_DISTANCE_M:.0f} cm)"
            return False, "bad_expected: place needs 'container' or 'near'"

    # -- camera ------------------------------------------------------------------------------------
    def calibration(self, translation_noise_m: float = 0.0, rotation_noise_deg: float = 0.0,
                    seed: int = 0) -> Calibration:
        """The sim camera's ``T_base_camera`` as a ``Calibration``: exact by default, or perturbed
        by a random translation of norm ``translation_noise_m`` and a random rotation of angle
        ``rotation_noise_deg`` (like a real hand-eye calibration's 3-10 mm error)."""
        T = self.T_base_camera.matrix.copy()
        if translation_noise_m or rotation_noise_deg:
            rng = np.random.default_rng(seed)
            t_dir = rng.normal(size=3)
            r_dir = rng.normal(size=3)
            T[:3, 3] += translation_noise_m * t_dir / np.linalg.norm(t_dir)
            dR = Rotation.from_rotvec(np.radians(rotation_noise_deg) * r_dir / np.linalg.norm(r_dir)).as_matrix()
            T[:3, :3] = T[:3, :3] @ dR
        residuals = {"translation_noise_m": translation_noise_m, "rotation_noise_deg": rotation_noise_deg}
        return Calibration(RigidTransform(T), method="sim", residuals=residuals)


_KIN: Lite6Kinematics | None = None
_WORLD: SimWorld | None = None
_SINGLETON_LOCK = threading.Lock()


def _shared_kinematics() -> Lite6Kinematics:
    global _KIN
    with _SINGLETON_LOCK:
        if _KIN is None:
            _KIN = Lite6Kinematics()
        return _KIN


def default_world() -> SimWorld:
    """The process-wide world (created on first call) shared by ``make_camera("sim")``,
    ``make_arm("sim")`` and the oracle model server."""
    global _WORLD
    if _WORLD is None:
        kin = _shared_kinematics()
        with _SINGLETON_LOCK:
            if _WORLD is None:
                _WORLD = SimWorld(kinematics=kin)
    return _WORLD
