"""``Physics``: the MuJoCo model and data of one sim world, and what the rest of the sim reads from it.

It compiles the MJCF of ``mjcf.build_mjcf``, puts the arm at its home joints, lets the objects
come to rest on the table (``SETTLE_INITIAL_S``) and keeps that state, so ``reset()`` restores the
initial scene exactly (``mj_setState`` of the full integration state: positions, velocities,
controls, warm start, time). Everything here runs under the owning ``SimWorld``'s lock; ``Physics``
itself is not thread-safe.

The simulation is event-driven: time advances only while something acts (an arm motion, a tool
closing, objects settling after a release: ``advance``, ``settle``), and every action ends with the
scene at rest. Between actions nothing moves, so a frozen world is a resting world and the camera
can reuse its last render.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from .mjcf import (
    ARM_ACTUATORS,
    ARM_JOINTS,
    CUP_GEOM,
    FINGER_ACTUATOR,
    FINGER_JOINTS,
    OBJECT_PREFIX,
    PAD_GEOMS,
    SUCTION_ACTUATOR,
    TABLE_GEOM,
    TCP_SITE,
    ModelSpec,
    build_mjcf,
)
from .mjrender import ensure_gl_backend

__all__ = ["Physics", "Capture", "SETTLE_INITIAL_S", "REST_SPEED_M_S", "ROBOT_LABEL", "TABLE_LABEL"]

SETTLE_INITIAL_S = 0.4
REST_SPEED_M_S = 0.002  # an object slower than this (and spinning < 0.05 rad/s) is at rest
REST_SPIN_RAD_S = 0.05
ROBOT_LABEL = "robot"
TABLE_LABEL = "table"


@dataclass(frozen=True)
class Capture:
    """The physics state at one instant, enough to render it again (``MjRenderer.render(qpos)``).

    Attributes:
        version: ``SimWorld.version`` at the capture (same version = same state).
        sim_time_s: simulated time, seconds.
        qpos: ``(nq,)`` float64 joint positions (free joints: position + quaternion wxyz).
        held: the object the tool held, or ``None``.
    """

    version: int
    sim_time_s: float
    qpos: np.ndarray
    held: str | None


class Physics:
    """One compiled sim (see the module docstring).

    Args:
        spec: the scene, tool, camera pose and intrinsics to build.
        home_joints_rad: the arm's joints at rest (6, radians).

    Attributes:
        model, data: ``mujoco.MjModel`` / ``MjData``.
        object_names: scene object names in model order.
        geom_label: ``(ngeom,)`` int32 label of each geom: ``k`` = ``object_names[k]``, ``-2`` =
            the robot, ``-3`` = the table/floor.
    """

    def __init__(self, spec: ModelSpec, home_joints_rad) -> None:
        ensure_gl_backend()
        import mujoco

        self._mj = mujoco
        self.spec = spec
        self.model = mujoco.MjModel.from_xml_string(build_mjcf(spec))
        self.data = mujoco.MjData(self.model)
        m = self.model
        name2id = lambda kind, n: mujoco.mj_name2id(m, kind, n)  # noqa: E731
        self._arm_qadr = np.array([m.jnt_qposadr[name2id(mujoco.mjtObj.mjOBJ_JOINT, j)] for j in ARM_JOINTS])
        self._arm_dadr = np.array([m.jnt_dofadr[name2id(mujoco.mjtObj.mjOBJ_JOINT, j)] for j in ARM_JOINTS])
        self._arm_act = np.array([name2id(mujoco.mjtObj.mjOBJ_ACTUATOR, a) for a in ARM_ACTUATORS])
        self._tcp_site = name2id(mujoco.mjtObj.mjOBJ_SITE, TCP_SITE)
        self.tool = spec.tool
        self.finger_act = name2id(mujoco.mjtObj.mjOBJ_ACTUATOR, FINGER_ACTUATOR)
        self.suction_act = name2id(mujoco.mjtObj.mjOBJ_ACTUATOR, SUCTION_ACTUATOR)
        self.finger_qadr = (
            [m.jnt_qposadr[name2id(mujoco.mjtObj.mjOBJ_JOINT, j)] for j in FINGER_JOINTS]
            if self.tool == "lite_gripper"
            else []
        )
        self.pad_geoms = (
            {name2id(mujoco.mjtObj.mjOBJ_GEOM, g) for g in PAD_GEOMS} if self.tool == "lite_gripper" else set()
        )
        self.plate_geoms = (
            [name2id(mujoco.mjtObj.mjOBJ_GEOM, f"plate_{s}") for s in ("left", "right")]
            if self.tool == "lite_gripper"
            else []
        )
        self.cup_geom = name2id(mujoco.mjtObj.mjOBJ_GEOM, CUP_GEOM)
        self.table_geom = name2id(mujoco.mjtObj.mjOBJ_GEOM, TABLE_GEOM)
        self.object_names = [o.name for o in spec.scene.objects]
        self.object_body = {n: name2id(mujoco.mjtObj.mjOBJ_BODY, OBJECT_PREFIX + n) for n in self.object_names}
        self._body_object = {b: n for n, b in self.object_body.items()}
        jadr = {n: m.body_jntadr[b] for n, b in self.object_body.items()}
        self._obj_qadr = {n: m.jnt_qposadr[j] for n, j in jadr.items()}
        self._obj_dadr = {n: m.jnt_dofadr[j] for n, j in jadr.items()}
        self.geom_label = np.full(m.ngeom, -3, np.int32)
        arm_root = name2id(mujoco.mjtObj.mjOBJ_BODY, "link_base")
        for g in range(m.ngeom):
            b = m.geom_bodyid[g]
            if b in self._body_object:
                self.geom_label[g] = self.object_names.index(self._body_object[b])
            elif b != 0 and m.body_rootid[b] == arm_root:
                self.geom_label[g] = -2
        # what each geom is in a contact, by index: touching() runs for every camera frame while the
        # gripper is closed, and a name lookup per contact showed in the camera's profile
        self._contact_labels = [self._label_of(g) for g in range(m.ngeom)]
        self.steps_total = 0
        self.step_wall_s = 0.0
        self.data.qpos[self._arm_qadr] = home_joints_rad
        self.data.ctrl[self._arm_act] = home_joints_rad
        self.set_gripper_ctrl(-1.0)
        mujoco.mj_forward(m, self.data)
        self.step_s(SETTLE_INITIAL_S)
        self._initial = self._get_state()

    # -- state -----------------------------------------------------------------------------------
    def _get_state(self) -> np.ndarray:
        spec = self._mj.mjtState.mjSTATE_INTEGRATION
        state = np.empty(self._mj.mj_stateSize(self.model, spec))
        self._mj.mj_getState(self.model, self.data, state, spec)
        return state

    def reset(self) -> None:
        """Back to the initial resting state, exactly."""
        self._mj.mj_setState(self.model, self.data, self._initial, self._mj.mjtState.mjSTATE_INTEGRATION)
        self._mj.mj_forward(self.model, self.data)

    @property
    def time_s(self) -> float:
        return float(self.data.time)

    def qpos(self) -> np.ndarray:
        return self.data.qpos.copy()

    # -- stepping ----------------------------------------------------------------------------------
    def step(self, n: int = 1) -> None:
        """``n`` physics steps of ``TIMESTEP_S`` (timed: ``steps_total``, ``step_wall_s``)."""
        t0 = time.perf_counter()
        self._mj.mj_step(self.model, self.data, nstep=int(n))
        self.step_wall_s += time.perf_counter() - t0
        self.steps_total += int(n)

    def step_s(self, seconds: float) -> None:
        self.step(max(1, int(round(seconds / self.model.opt.timestep))))

    def at_rest(self) -> bool:
        """Every free object slower than ``REST_SPEED_M_S`` and the arm's joints slower than 0.01 rad/s."""
        v = self.data.qvel
        for n in self.object_names:
            a = self._obj_dadr[n]
            if np.linalg.norm(v[a : a + 3]) > REST_SPEED_M_S or np.linalg.norm(v[a + 3 : a + 6]) > REST_SPIN_RAD_S:
                return False
        return bool(np.all(np.abs(v[self._arm_dadr]) < 0.01))

    # -- the arm -------------------------------------------------------------------------------------
    def arm_joints(self) -> np.ndarray:
        return self.data.qpos[self._arm_qadr].copy()

    def arm_targets(self) -> np.ndarray:
        return self.data.ctrl[self._arm_act].copy()

    def set_arm_targets(self, q) -> None:
        self.data.ctrl[self._arm_act] = q

    def tcp(self) -> tuple[np.ndarray, np.ndarray]:
        """TCP position ``(3,)`` (m) and rotation ``(3, 3)`` in the base frame, as measured."""
        return self.data.site_xpos[self._tcp_site].copy(), self.data.site_xmat[self._tcp_site].reshape(3, 3).copy()

    def set_gripper_ctrl(self, value: float) -> None:
        if self.finger_act >= 0:
            self.data.ctrl[self.finger_act] = value

    def set_suction_ctrl(self, value: float) -> None:
        if self.suction_act >= 0:
            self.data.ctrl[self.suction_act] = value

    def finger_gap_m(self) -> float | None:
        """Distance between the two finger pads, metres (``None`` for the vacuum)."""
        if not self.finger_qadr:
            return None
        from .mjcf import FINGER_OPEN_GAP_M

        return float(FINGER_OPEN_GAP_M - sum(self.data.qpos[a] for a in self.finger_qadr))

    # -- objects ---------------------------------------------------------------------------------------
    def object_pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Body origin (the bottom centre in the object's own frame), metres ``(3,)``, and rotation ``(3, 3)``."""
        b = self.object_body[name]
        return self.data.xpos[b].copy(), self.data.xmat[b].reshape(3, 3).copy()

    def set_object_pose(self, name: str, position_m, yaw_rad: float) -> None:
        """Teleport an object upright to ``position_m`` with ``yaw_rad``, at rest."""
        a, d = self._obj_qadr[name], self._obj_dadr[name]
        self.data.qpos[a : a + 3] = position_m
        self.data.qpos[a + 3 : a + 7] = [math.cos(yaw_rad / 2), 0.0, 0.0, math.sin(yaw_rad / 2)]
        self.data.qvel[d : d + 6] = 0.0
        self._mj.mj_forward(self.model, self.data)

    # -- contacts ------------------------------------------------------------------------------------
    def contacts(self) -> list[tuple[int, int]]:
        """Geom pairs in contact now (penetrating or touching: ``dist <= 0``)."""
        c = self.data.contact
        n = self.data.ncon
        if n == 0:
            return []
        dist = c.dist[:n]
        g1, g2 = c.geom1[:n], c.geom2[:n]
        keep = dist <= 1e-4
        return list(zip(g1[keep].tolist(), g2[keep].tolist()))

    def body_object(self, geom: int) -> str | None:
        return self._body_object.get(int(self.model.geom_bodyid[geom]))

    def touching(self) -> dict[str, set]:
        """For each object: the set of things it touches (other object names, ``"table"``,
        ``"pad_left"``/``"pad_right"`` for either part of a finger, ``"cup"``, ``"robot"``)."""
        out: dict[str, set] = {n: set() for n in self.object_names}
        label = self._contact_label
        for g1, g2 in self.contacts():
            o1, o2 = self.body_object(g1), self.body_object(g2)
            if o1 is not None:
                out[o1].add(o2 if o2 is not None else label(g2))
            if o2 is not None:
                out[o2].add(o1 if o1 is not None else label(g1))
        return out

    def _contact_label(self, geom: int) -> str:
        return self._contact_labels[geom]

    def _label_of(self, geom: int) -> str:
        if geom == self.table_geom:
            return TABLE_LABEL
        if geom == self.cup_geom:
            return "cup"
        name = self._mj.mj_id2name(self.model, self._mj.mjtObj.mjOBJ_GEOM, geom) or ""
        for side in ("left", "right"):
            if name in (f"pad_{side}", f"plate_{side}"):
                return f"pad_{side}"
        return ROBOT_LABEL

    def ray_object(self, origin, direction, max_m: float) -> tuple[str | None, float]:
        """The object hit first by a ray from ``origin`` along unit ``direction`` within ``max_m``
        (objects only, geom group 0), and the distance (inf when nothing)."""
        from .mjcf import GROUP_OBJECTS

        groups = np.zeros(6, np.uint8)
        groups[GROUP_OBJECTS] = 1
        gid = np.array([-1], np.int32)
        d = self._mj.mj_ray(
            self.model, self.data, np.asarray(origin, np.float64), np.asarray(direction, np.float64), groups, 1, -1, gid
        )
        if gid[0] < 0 or d < 0 or d > max_m:
            return None, math.inf
        return self.body_object(int(gid[0])), float(d)
