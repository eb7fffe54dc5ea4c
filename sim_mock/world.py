"""The simulated world: the tabletop scene on MuJoCo, the simulated Lite 6, the sim camera's pose.

One ``SimWorld`` is shared by the sim camera (renders it), the sim arm driver or the xArm emulator
(move it, through ``world.lite6``: ``lite6_sim.SimLite6``), the oracle model (reads the masks of
the frames the camera produced) and the session's judge, which may run in different threads: every
read or write of the physics goes through ``world.lock`` (an ``RLock``). ``default_world()``
returns one process-wide instance so that ``make_camera("sim")`` and ``make_arm("sim")`` in one
process see the same table.

Physics (``physics.Physics``): the arm, its tool and the objects are rigid bodies with mass and
friction; a pick holds an object only if the fingers' contacts lift it (``tools``), a released
object falls and comes to rest, objects collide. ``reset()`` restores the initial state exactly.
The judgement of a trial (``judge``) is read from that state.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.spatial.transform import Rotation

from pointlab.bridge.trials.placement import NEXT_TO_GAP_M, ObjectBox, Relation, check_placement
from pointlab.perception.extrinsics import Calibration, RigidTransform, optical_pose
from pointlab.perception.frame import Intrinsics
from pointlab.robot.arm import TOOL_DOWN_RPY_DEG, TOOLS

from .kinematics import Lite6Kinematics, matrix_to_rpy_deg
from .mjcf import ModelSpec
from .physics import Capture, Physics
from .scene import ObjectSpec, Scene, default_scene
from .tools import ToolPhysics

if TYPE_CHECKING:
    from .mjrender import MjRenderer  # imported on first use (it sets up OpenGL)

__all__ = [
    "SimWorld",
    "ArmSimState",
    "default_world",
    "look_at",
    "DEFAULT_INTRINSICS",
    "DEFAULT_CAMERA_EYE_M",
    "DEFAULT_CAMERA_TARGET_M",
    "HOME_TCP_M",
    "FAULT_KINDS",
    "NEAR_DISTANCE_M",
]

log = logging.getLogger(__name__)

# D435-like colour intrinsics at 640x480 (no distortion, as librealsense reports the colour stream).
DEFAULT_INTRINSICS = Intrinsics(640, 480, 615.0, 615.0, 321.0, 239.0)
# The camera stands in front of the table, facing the robot, 0.70 m from its target and 42 deg
# down: every object is in view and so is the arm above them (participants watch it work).
DEFAULT_CAMERA_EYE_M = (0.76, 0.0, 0.56)
DEFAULT_CAMERA_TARGET_M = (0.24, 0.0, 0.09)
HOME_TCP_M = (0.20, 0.0, 0.25)  # pointlab.robot.arm.MotionConfig().home
# The largest gap between two footprints that is still "near" (next to): the product's placement
# rule owns the value (bridge.trials.placement); the name stays for code that imported it here.
NEAR_DISTANCE_M = NEXT_TO_GAP_M
FAULT_KINDS = ("next_move", "next_tool", "connect", "disconnect_next_move", "no_grip")


# The relation each place expectation asks for (bridge.trials.placement.RELATIONS).
_WANTED: dict[str, Relation] = {"container": "in", "on": "on", "near": "next_to"}


def look_at(eye_m, target_m, up=(0.0, 0.0, 1.0)) -> RigidTransform:
    """``T_base_camera`` of an optical frame (x right, y down, z forward) at ``eye_m`` looking at
    ``target_m`` (base frame, metres), with the image's "up" towards ``up``.

    Raises:
        ValueError: eye and target coincide or the view is parallel to ``up``.
    """
    return RigidTransform(optical_pose(eye_m, target_m, up))


@dataclass
class ArmSimState:
    """The simulated controller's state (guarded by ``SimWorld.lock``); the pose and the tool are
    read from the physics.

    Attributes:
        error_code: controller error code (0 = none).
        estopped: emergency stop engaged (motion refused until the next ``connect``).
        connected: a driver session is open.
        moving: a motion is in progress.
    """

    world: "SimWorld"
    error_code: int = 0
    estopped: bool = False
    connected: bool = False
    moving: bool = False

    @property
    def joints_rad(self) -> np.ndarray:
        """Measured joints ``(6,)`` radians."""
        with self.world.lock:
            return self.world.physics.arm_joints()

    @property
    def tcp_m(self) -> np.ndarray:
        """Measured TCP position ``(3,)`` metres."""
        with self.world.lock:
            return self.world.physics.tcp()[0]

    @property
    def rpy_deg(self) -> np.ndarray:
        """Measured TCP orientation, xArm roll/pitch/yaw degrees ``(3,)``."""
        with self.world.lock:
            return matrix_to_rpy_deg(self.world.physics.tcp()[1])

    @property
    def tool_closed(self) -> bool:
        return self.world.tool_physics.closed

    @property
    def attached(self) -> str | None:
        """The object held by physics (``SimWorld.held``)."""
        return self.world.held()


class SimWorld:
    """A tabletop scene plus the simulated arm and camera, on MuJoCo.

    Args:
        scene: the initial layout (default: ``default_scene()``).
        tool: the arm's end effector, a key of ``pointlab.robot.arm.TOOLS``.
        T_base_camera: pose of the camera optical frame in the base frame (default: ``look_at`` of
            ``DEFAULT_CAMERA_EYE_M`` -> ``DEFAULT_CAMERA_TARGET_M``).
        intrinsics: the camera's colour intrinsics (default: ``DEFAULT_INTRINSICS``).
        kinematics: a shared ``Lite6Kinematics`` (built on first use otherwise).
        home_tcp_m: where the TCP starts (tool pointing down), metres.

    Attributes:
        lock: guards the physics and every mutable attribute; hold it to read a consistent state.
        version: increases on every change of the physics state (the camera's render cache key).
        physics: the ``physics.Physics`` (model, data).
        lite6: the arm's motion layer (``lite6_sim.SimLite6``), shared by the sim driver and the
            xArm controller emulator.
        frames: the ``frames.FrameLog`` of the camera frames produced from this world.
    """

    def __init__(
        self,
        scene: Scene | None = None,
        *,
        tool: str = "lite_gripper",
        T_base_camera: RigidTransform | None = None,
        intrinsics: Intrinsics | None = None,
        kinematics: Lite6Kinematics | None = None,
        home_tcp_m=HOME_TCP_M,
    ) -> None:
        from .frames import FrameLog
        from .lite6_sim import SimLite6

        if tool not in TOOLS:
            raise ValueError(f"unknown tool {tool!r}; known: {', '.join(sorted(TOOLS))}")
        self.scene = scene or default_scene()
        self.T_base_camera = T_base_camera or look_at(DEFAULT_CAMERA_EYE_M, DEFAULT_CAMERA_TARGET_M)
        self.intrinsics = intrinsics or DEFAULT_INTRINSICS
        self.kinematics = kinematics or _shared_kinematics()
        self.home_tcp_m = np.asarray(home_tcp_m, dtype=np.float64).reshape(3)
        self.lock = threading.RLock()
        self.version = 0
        self._faults: dict[str, int] = {}
        self.arm = ArmSimState(self)
        self.lite6 = SimLite6(self)
        self.frames = FrameLog(self)
        self._renderer: MjRenderer | None = None  # made by renderer() on first use
        self._build(tool)

    def _build(self, tool: str) -> None:
        self.tool = TOOLS[tool]
        q = self.kinematics.ik(self.home_tcp_m, TOOL_DOWN_RPY_DEG, tool=tool)
        if q is None:
            raise ValueError(f"home TCP {self.home_tcp_m.tolist()} m is not reachable tool-down")
        with self.lock:
            self.physics = Physics(ModelSpec(self.scene, tool, self.T_base_camera, self.intrinsics), q)
            self.tool_physics = ToolPhysics(self.physics)
            if self._renderer is not None:
                self._renderer.close()
                self._renderer = None
            self.version += 1

    def set_tool(self, tool: str) -> None:
        """Mount another end effector (rebuilds the model: the scene starts over at its initial state).

        Raises:
            ValueError: unknown tool.
        """
        if tool not in TOOLS:
            raise ValueError(f"unknown tool {tool!r}; known: {', '.join(sorted(TOOLS))}")
        with self.lock:
            if tool != self.tool.name:
                self._build(tool)

    # -- state -------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Restore the initial scene exactly (physics state, arm at home, tool open), and clear
        injected faults, errors and the emergency stop (the session stays connected)."""
        with self.lock:
            self.physics.reset()
            self.tool_physics.reset()
            self.arm.error_code, self.arm.estopped, self.arm.moving = 0, False, False
            self._faults.clear()
            self.lite6.clear_stop()
            self.version += 1

    def bump(self) -> None:
        """Mark the world changed (call with the lock held after changing the physics)."""
        self.version += 1

    def capture(self) -> Capture:
        """The current state, to render now or later (``frames``, ``MjRenderer.render``)."""
        with self.lock:
            return Capture(self.version, self.physics.time_s, self.physics.qpos(), self.held())

    def _canonical(self, name: str) -> str:
        canon = self.scene.resolve(name)
        if canon is None:
            raise KeyError(f"no object named {name!r} in the scene")
        return canon

    @property
    def objects(self) -> dict[str, ObjectSpec]:
        """Current poses as ``ObjectSpec`` copies (``position_m``: the body origin, i.e. the bottom
        centre in the object's own frame; ``yaw_deg``: heading of its x axis)."""
        with self.lock:
            return {o.name: self._current(o) for o in self.scene.objects}

    def _current(self, spec: ObjectSpec) -> ObjectSpec:
        p, R = self.physics.object_pose(spec.name)
        return spec.at(p, math.degrees(math.atan2(R[1, 0], R[0, 0])))

    def object(self, name: str) -> ObjectSpec:
        """Current pose of an object by name or alias (see ``objects``).

        Raises:
            KeyError: no such object.
        """
        canon = self._canonical(name)
        with self.lock:
            return self._current(self.scene.spec(canon))

    def object_rotation(self, name: str) -> np.ndarray:
        """Current rotation ``(3, 3)`` of an object (upright = its z axis is base z)."""
        with self.lock:
            return self.physics.object_pose(self._canonical(name))[1]

    def set_object_pose(self, name: str, position_m, yaw_deg: float | None = None) -> None:
        """Put an object (name or alias) upright at ``position_m`` (bottom centre, metres), at rest,
        e.g. to set up a test; then let the scene settle.

        Raises:
            KeyError: no such object.
        """
        canon = self._canonical(name)
        with self.lock:
            cur = self._current(self.scene.spec(canon))
            yaw = cur.yaw_deg if yaw_deg is None else float(yaw_deg)
            self.physics.set_object_pose(canon, np.asarray(position_m, np.float64).reshape(3), math.radians(yaw))
            self.settle()

    def clear_table(self) -> None:
        """Set every object aside, upright, in two rows along the table's sides (y = +-0.45 m,
        outside the default workspace), as a lab clears the table to calibrate on it."""
        with self.lock:
            names = [o.name for o in self.scene.objects]
            for k, name in enumerate(names):
                side = 1.0 if k % 2 == 0 else -1.0
                self.physics.set_object_pose(name, [0.02 + 0.15 * (k // 2), side * 0.46, self.scene.table_z_m], 0.0)
            self.settle()

    def settle(self, max_s: float = 1.5) -> None:
        """Step the physics until everything is at rest (at most ``max_s`` simulated seconds)."""
        with self.lock:
            t_end = self.physics.time_s + max_s
            while self.physics.time_s < t_end:
                self.physics.step(10)
                self.tool_physics.update()
                if self.physics.at_rest():
                    break
            self.bump()

    def held(self) -> str | None:
        """The object the tool holds by physics (``tools.ToolPhysics.held``), or ``None``."""
        with self.lock:
            return self.tool_physics.held()

    def snapshot(self) -> dict:
        """Current object poses: ``{name: {"position_m": [x, y, z], "yaw_deg", "upright": bool,
        "held": bool, "container": bool}}`` plus ``"_arm": {"tcp_m", "tool_closed", "attached"}``."""
        with self.lock:
            held = self.held()
            out = {}
            for o in self.scene.objects:
                p, R = self.physics.object_pose(o.name)
                out[o.name] = {
                    "position_m": [round(float(c), 6) for c in p],
                    "yaw_deg": round(math.degrees(math.atan2(R[1, 0], R[0, 0])), 4),
                    "upright": bool(R[2, 2] > math.cos(math.radians(20))),
                    "held": o.name == held,
                    "container": o.is_container,
                }
            out["_arm"] = {
                "tcp_m": [round(float(c), 6) for c in self.physics.tcp()[0]],
                "tool_closed": self.tool_physics.closed,
                "attached": held,
            }
        return out

    # -- faults (for tests) -------------------------------------------------------------------------
    def inject_fault(self, kind: str, code: int = 31) -> None:
        """Make the next matching driver call fail once.

        ``kind``: ``"next_move"`` (``move_linear`` raises ``ArmFaultError(code)``, no motion),
        ``"next_tool"`` (``set_tool`` raises ``ArmFaultError``), ``"connect"`` (``connect`` raises
        ``ArmConnectionError``), ``"disconnect_next_move"`` (``move_linear`` raises
        ``ArmConnectionError``), ``"no_grip"`` (the next close of the gripper silently does nothing:
        the Lite gripper has no feedback, so the sequence completes and nothing is held: a forced grasp
        failure). xArm code 31 is "collision caused abnormal current".

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

    # -- judgement ---------------------------------------------------------------------------------
    def object_box(self, name: str) -> ObjectBox:
        """An object's extent now, for the placement rule (``bridge.trials.placement``): footprint
        centre, size and yaw (a disc for a can, bowl or mug; a mug's handle left out), its lowest
        and highest points (exact for a tilted box or cylinder), the wall of a container; metres.

        Raises:
            KeyError: no such object.
        """
        canon = self._canonical(name)
        spec = self.scene.spec(canon)
        with self.lock:
            p, R = self.physics.object_pose(canon)
        centre = p + R[:, 2] * spec.height_m / 2
        # vertical half-extent of the solid: along its own axis plus across it (a tilted cube's
        # lowest point is a corner, a tilted can's a point on its rim)
        sx, sy, h = spec.size_m
        disc = spec.shape != "box"
        across = sx / 2 * math.hypot(R[2, 0], R[2, 1]) if disc else sx / 2 * abs(R[2, 0]) + sy / 2 * abs(R[2, 1])
        half_z = h / 2 * abs(R[2, 2]) + across
        return ObjectBox(
            center_xy_m=(float(centre[0]), float(centre[1])),
            size_xy_m=(sx, sy),
            bottom_z_m=float(centre[2] - half_z),
            top_z_m=float(centre[2] + half_z),
            yaw_deg=math.degrees(math.atan2(R[1, 0], R[0, 0])),
            footprint="disc" if disc else "rect",
            wall_m=spec.wall_m if spec.is_container else None,
        )

    def infer_expected(self, instruction: str, action: str) -> dict | None:
        """What a typed ``instruction`` asks of the sim, as a ``judge`` expectation, read before the
        trial moves anything (so the browser trials get a sim judgement too), or ``None`` when it
        names no scene object. The expectation carries ``"inferred": True``.

        pick: the first mentioned object that is not a container. place: the held object in, on
        or near the reference the instruction names (``Scene.place_target``).
        """
        text = instruction if isinstance(instruction, str) else ""
        held = self.held()
        if action == "pick":
            names = [m for m in self.scene.mentions(text) if not self.scene.spec(m).is_container]
            return {"action": "pick", "object": names[0], "inferred": True} if names else None
        if action != "place" or held is None:
            return None
        target = self.scene.place_target(text, held)
        if target is None:
            return None
        key, ref = target
        return {"action": "place", "object": held, key: ref, "inferred": True}

    def judge(self, expected: dict) -> tuple[bool, str]:
        """Did the last action do what ``expected`` says, by the physics state now? Returns
        ``(success, reason)``.

        ``expected``: ``{"action": "pick", "object": NAME}`` (the tool holds that object, lifted by
        the fingers or a sealed cup: ``held``), or a place, judged by the product's placement rule
        (``bridge.trials.placement``) on ``object_box`` of both objects, and only when the object is
        not held: ``{"action": "place", "object": NAME, "container": NAME}`` (relation ``in``: its
        centre inside the container's wall and below its rim), ``{..., "on": NAME}`` (``on``: resting
        on the other's top, its centre over it) or ``{..., "near": NAME}`` (``next_to``: resting on
        the table beside it, at most ``NEAR_DISTANCE_M`` = 6 cm between the footprints; stacked on
        top of it is a failure). Names may be aliases. Malformed input gives ``(False,
        "bad_expected: ...")``, never an exception.
        """
        if not isinstance(expected, dict):
            return False, "bad_expected: not a dict"
        action, obj = expected.get("action"), expected.get("object")
        canon = self.scene.resolve(obj) if isinstance(obj, str) else None
        if canon is None:
            return False, f"bad_expected: unknown object {obj!r}"
        with self.lock:
            held = self.held()
            if action == "pick":
                if held == canon:
                    return True, f"holding {canon}"
                return False, f"not holding {canon} (holding {held})" if held else f"not holding {canon} (tool empty)"
            if action != "place":
                return False, f"bad_expected: unknown action {action!r}"
            key = next((k for k in _WANTED if k in expected), None)
            if key is None:
                return False, "bad_expected: place needs 'container', 'on' or 'near'"
            ref = self.scene.resolve(str(expected[key]))
            if ref is None:
                return False, f"bad_expected: unknown object {expected[key]!r}"
            if key == "container" and not self.scene.spec(ref).is_container:
                return False, f"bad_expected: {expected[key]!r} is not a container"
            if ref == canon:
                return False, f"bad_expected: {canon} cannot be placed relative to itself"
            if held == canon:
                return False, f"{canon} is still held"
            return check_placement(
                self.object_box(canon),
                self.object_box(ref),
                _WANTED[key],
                table_z_m=self.scene.table_z_m,
                placed_name=canon,
                reference_name=ref,
            )

    # -- camera ------------------------------------------------------------------------------------
    def calibration(
        self, translation_noise_m: float = 0.0, rotation_noise_deg: float = 0.0, seed: int = 0
    ) -> Calibration:
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

    def renderer(self) -> MjRenderer:
        """The world's ``mjrender.MjRenderer`` for its camera (created on first use, shared)."""
        from .mjcf import CAMERA_NAME
        from .mjrender import MjRenderer

        with self.lock:
            if self._renderer is None:
                self._renderer = MjRenderer(
                    self.physics.model, CAMERA_NAME, self.intrinsics.width, self.intrinsics.height
                )
            return self._renderer

    def masks(self, frame) -> dict[str, np.ndarray]:
        """Per-object segmentation masks of a frame the sim camera produced (``frames.FrameLog.masks``):
        ``{name: (H, W) bool}`` for every scene object plus ``"robot"`` for the arm.

        Raises:
            KeyError: the frame was not produced by a camera of this world (or is too old).
        """
        return self.frames.masks(frame)

    def close(self) -> None:
        """Free the renderer's GL context (the world stays usable; a later render makes a new one)."""
        with self.lock:
            if self._renderer is not None:
                self._renderer.close()
                self._renderer = None


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
