"""Build the MuJoCo model (MJCF) of the sim: the Lite 6 with its tool, the table, the scene's
objects, the light and the calibrated camera.

The arm is built from the joint table ``kinematics.LITE6_JOINTS`` (the one the IK uses, so MuJoCo's
forward kinematics and ikpy's agree) and the shipped ``assets/lite6`` data (``lite6_assets``):
visual meshes for the camera, convex-hull collision meshes, and the xacro's masses and inertias.
Each joint has a position servo (``kp`` below, damping ratio 1) and gravity compensation, which is
how a position-controlled arm follows its joint targets; the servos' torques are bounded, so an arm
pushing on the table stalls instead of driving through it.

Tools (the model holds one):

- ``lite_gripper``: the gripper body mesh (finger plates removed from the mesh) and two finger
  bodies on slide joints along the gripper's y axis, coupled by an equality (a parallel gripper),
  driven by one force actuator: ``FINGER_FORCE_N`` closing or opening, stopped by the joint range
  or by what is between the fingers. Each finger is a plate with a high-friction pad on its inner
  face. Open, the pads are ``FINGER_OPEN_GAP_M`` apart; closed on nothing, ``FINGER_CLOSED_GAP_M``.
- ``lite_vacuum``: the vacuum gripper mesh and a suction-cup disc at the TCP with an adhesion
  actuator; ``tools.Suction`` switches it on only while the cup is sealed on a surface.

Collision classes (``contype``/``conaffinity`` bits): the table and the objects collide with
everything; the arm's links collide with the table and the objects but not with each other (their
hulls overlap near the joints). Geom groups: 0 objects, 1 arm, 2 table (``mj_ray`` filters on them).

Contact settings for grasping: elliptic friction cones with ``impratio`` 10 (friction as stiff as
the normal, so a held object does not creep), torsional friction (``condim`` 4) on pads and objects.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from pointlab.perception.extrinsics import RigidTransform
from pointlab.perception.frame import Intrinsics

from .kinematics import LITE6_JOINTS, LITE6_TOOL_OFFSETS_M
from .lite6_assets import LINK_MESHES, asset_dir, load_inertials
from .scene import ObjectSpec, Scene

__all__ = [
    "ModelSpec",
    "build_mjcf",
    "TIMESTEP_S",
    "CAMERA_NAME",
    "TCP_SITE",
    "ARM_JOINTS",
    "ARM_ACTUATORS",
    "FINGER_JOINTS",
    "FINGER_ACTUATOR",
    "SUCTION_ACTUATOR",
    "CUP_GEOM",
    "PAD_GEOMS",
    "FINGER_FORCE_N",
    "FINGER_OPEN_GAP_M",
    "FINGER_CLOSED_GAP_M",
    "CUP_RADIUS_M",
    "OBJECT_PREFIX",
    "ARM_KP",
    "GROUP_OBJECTS",
    "GROUP_ARM",
    "GROUP_TABLE",
    "TABLE_GEOM",
    "SUCTION_FORCE_N",
]

TIMESTEP_S = 0.002
CAMERA_NAME = "sim_camera"
TCP_SITE = "tcp"
ARM_JOINTS = tuple(j.name for j in LITE6_JOINTS)
ARM_ACTUATORS = tuple(f"servo_{j}" for j in ARM_JOINTS)
FINGER_JOINTS = ("finger_left", "finger_right")
FINGER_ACTUATOR = "gripper"
SUCTION_ACTUATOR = "suction"
CUP_GEOM = "suction_cup"
PAD_GEOMS = ("pad_left", "pad_right")
TABLE_GEOM = "table"
OBJECT_PREFIX = "obj:"
GROUP_OBJECTS, GROUP_ARM, GROUP_TABLE = 0, 1, 2

# Position servo stiffness per joint, N m/rad (bigger for the shoulder joints that carry the arm).
ARM_KP = (600.0, 900.0, 700.0, 250.0, 250.0, 120.0)
ARM_TORQUE_NM = (50.0, 50.0, 32.0, 32.0, 32.0, 20.0)
ARM_ARMATURE = 0.05

FINGER_FORCE_N = 12.0
FINGER_OPEN_GAP_M = 0.068  # assumption (see docs/simulation.md): wide enough for the yawed blocks
FINGER_CLOSED_GAP_M = 0.012
FINGER_PLATE_M = (0.012, 0.0025, 0.022)  # x (width), y (thickness), z (length) of the mesh's plates
FINGER_PAD_M = 0.0015  # pad thickness on the inner face
FINGER_TOP_Z_M = 0.0616  # the plates' top in the gripper frame (the mesh's, 0.0636, less 2 mm)
PAD_FRICTION = 1.2
CUP_RADIUS_M = 0.009
CUP_HEIGHT_M = 0.004
SUCTION_FORCE_N = 8.0

_RGBA_ARM = "0.93 0.93 0.92 1"
_RGBA_DARK = "0.18 0.18 0.2 1"


@dataclass(frozen=True)
class ModelSpec:
    """What a model is built from.

    Attributes:
        scene: the objects and the table.
        tool: ``lite_gripper`` or ``lite_vacuum``.
        T_base_camera: pose of the camera's optical frame in the base frame.
        intrinsics: the camera's pinhole model (no distortion).
    """

    scene: Scene
    tool: str
    T_base_camera: RigidTransform
    intrinsics: Intrinsics


def _f(values) -> str:
    return " ".join(repr(round(float(v), 9)) for v in np.asarray(values, dtype=np.float64).reshape(-1))


def _rgba(rgb, a: float = 1.0) -> str:
    return _f([c / 255.0 for c in rgb] + [a])


def _quat_from_rpy(rpy_rad) -> str:
    x, y, z, w = Rotation.from_euler("xyz", rpy_rad).as_quat()
    return _f([w, x, y, z])


def _quat_from_matrix(R: np.ndarray) -> str:
    x, y, z, w = Rotation.from_matrix(R).as_quat()
    return _f([w, x, y, z])


def _sub(parent: ET.Element, tag: str, **attrs) -> ET.Element:
    return ET.SubElement(parent, tag, {k.rstrip("_"): str(v) for k, v in attrs.items() if v is not None})


# -- the arm -------------------------------------------------------------------------------------
def _link_geoms(body: ET.Element, stem: str) -> None:
    _sub(
        body,
        "geom",
        name=f"vis_{stem}",
        type="mesh",
        mesh=f"{stem}_visual",
        contype=0,
        conaffinity=0,
        group=GROUP_ARM,
        rgba=_RGBA_ARM,
        material="arm",
    )
    _sub(
        body,
        "geom",
        name=f"col_{stem}",
        type="mesh",
        mesh=f"{stem}_collision",
        contype=2,
        conaffinity=1,
        group=GROUP_ARM,
        rgba="0 0 0 0",
    )


def _inertial(body: ET.Element, link: str, inertials: dict) -> None:
    d = inertials.get(link)
    if d is None:
        return
    _sub(body, "inertial", pos=_f(d["com_m"]), mass=repr(d["mass_kg"]), fullinertia=_f(d["inertia"]))


def _arm(world: ET.Element, tool: str, inertials: dict) -> None:
    stems = {link: stem for stem, link in LINK_MESHES.items()}
    base = _sub(world, "body", name="link_base", pos="0 0 0")
    _link_geoms(base, "base")
    parent = base
    for j, kp in zip(LITE6_JOINTS, ARM_KP):
        body = _sub(parent, "body", name=j.child, pos=_f(j.xyz_m), quat=_quat_from_rpy(j.rpy_rad), gravcomp="1")
        _inertial(body, j.child, inertials)
        _sub(
            body,
            "joint",
            name=j.name,
            type="hinge",
            axis=_f(j.axis),
            range=_f([j.lower_rad, j.upper_rad]),
            damping="1.0",
            armature=repr(ARM_ARMATURE),
            limited="true",
        )
        _link_geoms(body, stems[j.child])
        parent = body
    if tool == "lite_gripper":
        _gripper(parent, inertials)
    else:
        _vacuum(parent, inertials)


def _gripper(link6: ET.Element, inertials: dict) -> None:
    body = _sub(link6, "body", name="gripper", pos="0 0 0", gravcomp="1")
    _inertial(body, "uflite_gripper_link", inertials)
    _link_geoms(body, "gripper_lite")
    _sub(body, "site", name=TCP_SITE, pos=_f([0, 0, LITE6_TOOL_OFFSETS_M["lite_gripper"]]), size="0.002", group="4")
    px, py, pz = FINGER_PLATE_M
    open_y = FINGER_OPEN_GAP_M / 2 + FINGER_PAD_M + py / 2  # plate centre, open
    travel = (FINGER_OPEN_GAP_M - FINGER_CLOSED_GAP_M) / 2
    zc = FINGER_TOP_Z_M + pz / 2
    for side, sign in (("left", 1.0), ("right", -1.0)):
        f = _sub(body, "body", name=f"finger_{side}", pos=_f([0, sign * open_y, zc]), gravcomp="1")
        _sub(f, "inertial", pos="0 0 0", mass="0.02", diaginertia="2e-6 2e-6 1e-6")
        # the joint moves the finger inwards (towards y = 0) for positive values
        _sub(
            f,
            "joint",
            name=f"finger_{side}",
            type="slide",
            axis=_f([0, -sign, 0]),
            range=_f([0, travel]),
            damping="4",
            armature="0.01",
            limited="true",
            solreflimit="0.004 1",
        )
        _sub(
            f,
            "geom",
            name=f"plate_{side}",
            type="box",
            size=_f([px / 2, py / 2, pz / 2]),
            rgba=_RGBA_ARM,
            material="arm",
            contype=2,
            conaffinity=1,
            group=GROUP_ARM,
            friction="0.5 0.005 0.0001",
        )
        _sub(
            f,
            "geom",
            name=f"pad_{side}",
            type="box",
            size=_f([px / 2, FINGER_PAD_M / 2, pz / 2 - 0.001]),
            pos=_f([0, -sign * (py + FINGER_PAD_M) / 2, 0.0005]),
            rgba=_RGBA_DARK,
            contype=2,
            conaffinity=1,
            group=GROUP_ARM,
            condim="4",
            friction=f"{PAD_FRICTION} 0.01 0.0001",
            solref="0.004 1",
            solimp="0.95 0.99 0.001",
        )


def _vacuum(link6: ET.Element, inertials: dict) -> None:
    body = _sub(link6, "body", name="vacuum", pos="0 0 0", gravcomp="1")
    _inertial(body, "uflite_vacuum_gripper_link", inertials)
    _link_geoms(body, "vacuum_gripper_lite")
    tcp = LITE6_TOOL_OFFSETS_M["lite_vacuum"]
    _sub(body, "site", name=TCP_SITE, pos=_f([0, 0, tcp]), size="0.002", group="4")
    cup = _sub(body, "body", name="cup", pos=_f([0, 0, tcp - CUP_HEIGHT_M / 2]), gravcomp="1")
    _sub(cup, "inertial", pos="0 0 0", mass="0.005", diaginertia="1e-7 1e-7 1e-7")
    # the cup is welded to the tool body (no joint): adhesion acts on the cup body's contacts
    _sub(
        cup,
        "geom",
        name=CUP_GEOM,
        type="cylinder",
        size=_f([CUP_RADIUS_M, CUP_HEIGHT_M / 2]),
        rgba=_RGBA_DARK,
        contype=2,
        conaffinity=1,
        group=GROUP_ARM,
        condim="4",
        friction="1.0 0.01 0.0001",
        margin="0.002",
        gap="0.002",
    )


# -- the table and the objects ----------------------------------------------------------------------
def _ring(
    body: ET.Element,
    name: str,
    o: ObjectSpec,
    rgba: str,
    material: str,
    density: float,
    segments: int,
    z0: float,
    z1: float,
) -> None:
    """A round wall of ``segments`` boxes between heights z0 and z1 (object frame)."""
    r_out = o.size_m[0] / 2
    r_mid = r_out - o.wall_m / 2
    half_len = r_out * math.tan(math.pi / segments) * 1.02
    for k in range(segments):
        a = 2 * math.pi * k / segments
        _sub(
            body,
            "geom",
            name=f"{name}/wall{k}",
            type="box",
            size=_f([o.wall_m / 2, half_len, (z1 - z0) / 2]),
            pos=_f([r_mid * math.cos(a), r_mid * math.sin(a), (z0 + z1) / 2]),
            euler=_f([0, 0, a]),
            rgba=rgba,
            material=material,
            density=repr(density),
            condim="4",
            friction=f"{o.friction} 0.005 0.0001",
            group=GROUP_OBJECTS,
        )


def _object_volume_of_geoms(o: ObjectSpec, segments: int) -> float:
    """Volume of the geoms ``_object`` makes (to give them the density that yields ``o.mass``)."""
    if o.shape in ("box", "cylinder"):
        return o.volume_m3  # one geom that is the solid itself
    sx, _, h = o.size_m
    r = sx / 2
    half_len = r * math.tan(math.pi / segments) * 1.02
    wall = segments * o.wall_m * 2 * half_len * (h - o.floor_m)
    floor = math.pi * r * r * o.floor_m
    handle = 0.0
    if o.shape == "mug":
        t = 0.008  # the handle's bar thickness in _object: two arms and an upright grip
        handle = 2 * (o.handle_m + t) * t * t + (0.5 * h + t) * t * t
    return wall + floor + handle


def _object(world: ET.Element, o: ObjectSpec) -> None:
    name = OBJECT_PREFIX + o.name
    x, y, z = o.position_m
    body = _sub(world, "body", name=name, pos=_f([x, y, z]), euler=_f([0, 0, math.radians(o.yaw_deg)]))
    _sub(body, "freejoint", name=name)
    rgba = _rgba(o.color_rgb)
    material = "shiny" if o.surface == "shiny" else "matte"
    segments = 24 if o.shape == "bowl" else 20
    density = o.mass / _object_volume_of_geoms(o, segments)
    common = dict(
        rgba=rgba,
        material=material,
        density=repr(density),
        condim="4",
        friction=f"{o.friction} 0.005 0.0001",
        group=GROUP_OBJECTS,
    )
    sx, sy, h = o.size_m
    if o.shape == "box":
        _sub(
            body,
            "geom",
            name=f"{name}/box",
            type="box",
            size=_f([sx / 2, sy / 2, h / 2]),
            pos=_f([0, 0, h / 2]),
            **common,
        )
    elif o.shape == "cylinder":
        _sub(
            body, "geom", name=f"{name}/cyl", type="cylinder", size=_f([sx / 2, h / 2]), pos=_f([0, 0, h / 2]), **common
        )
    else:
        _sub(
            body,
            "geom",
            name=f"{name}/floor",
            type="cylinder",
            size=_f([sx / 2, o.floor_m / 2]),
            pos=_f([0, 0, o.floor_m / 2]),
            **common,
        )
        _ring(body, name, o, rgba, material, density, segments, o.floor_m, h)
        if o.shape == "mug":
            t, r = 0.008, sx / 2
            reach = r + o.handle_m
            zs = (0.25 * h, 0.75 * h)
            for k, zk in enumerate(zs):  # two horizontal arms and an upright grip, on the local +x side
                _sub(
                    body,
                    "geom",
                    name=f"{name}/handle{k}",
                    type="box",
                    size=_f([o.handle_m / 2 + t / 2, t / 2, t / 2]),
                    pos=_f([r + o.handle_m / 2 - t / 2, 0, zk]),
                    **common,
                )
            _sub(
                body,
                "geom",
                name=f"{name}/handle2",
                type="box",
                size=_f([t / 2, t / 2, (zs[1] - zs[0]) / 2 + t / 2]),
                pos=_f([reach - t / 2, 0, h / 2]),
                **common,
            )


def _camera(world: ET.Element, T_base_camera: RigidTransform, intr: Intrinsics) -> None:
    # MuJoCo cameras look along their -z with +y up; the optical frame looks along +z with +y down.
    R = T_base_camera.rotation @ np.diag([1.0, -1.0, -1.0])
    # principalpixel is the offset of the principal point from the image centre, whose continuous
    # coordinate is (W/2 - 0.5, H/2 - 0.5) with pixel centres at integers (our convention);
    # MuJoCo's y offset points up.
    dx = intr.ppx - (intr.width / 2 - 0.5)
    dy = (intr.height / 2 - 0.5) - intr.ppy
    pixel_m = 5.6e-6  # any sensor pixel size gives the same image; fx in pixels is what counts
    _sub(
        world,
        "camera",
        name=CAMERA_NAME,
        pos=_f(T_base_camera.translation_m),
        quat=_quat_from_matrix(R),
        resolution=f"{intr.width} {intr.height}",
        focalpixel=_f([intr.fx, intr.fy]),
        principalpixel=_f([dx, dy]),
        sensorsize=_f([intr.width * pixel_m, intr.height * pixel_m]),
    )


def build_mjcf(spec: ModelSpec) -> str:
    """The MJCF XML text of the whole sim (meshes referenced from the shipped asset folder).

    Raises:
        ValueError: unknown tool.
    """
    if spec.tool not in LITE6_TOOL_OFFSETS_M:
        raise ValueError(f"unknown tool {spec.tool!r}; known: {', '.join(sorted(LITE6_TOOL_OFFSETS_M))}")
    root = ET.Element("mujoco", model="pointlab_lite6_tabletop")
    _sub(root, "compiler", angle="radian", meshdir=str(asset_dir()), inertiafromgeom="auto", autolimits="true")
    _sub(root, "option", timestep=repr(TIMESTEP_S), integrator="implicitfast", cone="elliptic", impratio="10")
    vis = _sub(root, "visual")
    _sub(vis, "global", offwidth=str(spec.intrinsics.width), offheight=str(spec.intrinsics.height))
    _sub(vis, "quality", shadowsize="0", offsamples="0")
    _sub(vis, "map", znear="0.02", zfar="20")
    _sub(vis, "headlight", ambient="0.35 0.35 0.35", diffuse="0.25 0.25 0.25", specular="0.05 0.05 0.05")
    asset = _sub(root, "asset")
    for stem in LINK_MESHES:
        _sub(asset, "mesh", name=f"{stem}_visual", file=f"visual/{stem}.stl")
        _sub(asset, "mesh", name=f"{stem}_collision", file=f"collision/{stem}.stl")
    _sub(asset, "material", name="arm", specular="0.3", shininess="0.4")
    _sub(asset, "material", name="matte", specular="0.05", shininess="0.1")
    _sub(asset, "material", name="shiny", specular="0.9", shininess="0.9", reflectance="0.0")
    _sub(asset, "material", name="table", specular="0.02", shininess="0.0")
    world = _sub(root, "worldbody")
    _sub(
        world,
        "light",
        name="sun",
        pos="0.5 0.3 1.5",
        dir="-0.3 -0.2 -1",
        directional="true",
        diffuse="0.55 0.55 0.55",
        specular="0.2 0.2 0.2",
        castshadow="false",
    )
    sc = spec.scene
    # table top at table_z_m, 1.0 x 1.1 m, extending behind the robot's base
    _sub(
        world,
        "geom",
        name=TABLE_GEOM,
        type="box",
        size="0.5 0.55 0.02",
        pos=_f([0.3, 0.0, sc.table_z_m - 0.02]),
        rgba=_rgba(sc.table_color_rgb),
        material="table",
        group=GROUP_TABLE,
        friction="0.6 0.005 0.0001",
    )
    _sub(
        world,
        "geom",
        name="floor",
        type="plane",
        size="3 3 0.1",
        pos=_f([0, 0, sc.table_z_m - 0.75]),
        rgba="0.25 0.25 0.27 1",
        group=GROUP_TABLE,
        contype=0,
        conaffinity=0,
    )
    _arm(world, spec.tool, load_inertials())
    for o in sc.objects:
        _object(world, o)
    _camera(world, spec.T_base_camera, spec.intrinsics)
    act = _sub(root, "actuator")
    for jname, aname, kp, tau in zip(ARM_JOINTS, ARM_ACTUATORS, ARM_KP, ARM_TORQUE_NM):
        _sub(
            act,
            "position",
            name=aname,
            joint=jname,
            kp=repr(kp),
            dampratio="1",
            forcerange=_f([-tau, tau]),
            inheritrange="1",
        )
    if spec.tool == "lite_gripper":
        # ctrl +1 closes, -1 opens (an on/off gripper with no position feedback, like the Lite's)
        _sub(act, "motor", name=FINGER_ACTUATOR, joint=FINGER_JOINTS[0], gear=repr(FINGER_FORCE_N), ctrlrange="-1 1")
        eq = _sub(root, "equality")
        _sub(eq, "joint", joint1=FINGER_JOINTS[1], joint2=FINGER_JOINTS[0], polycoef="0 1 0 0 0", solref="0.005 1")
        contact = _sub(root, "contact")
        _sub(contact, "exclude", body1="gripper", body2="finger_left")
        _sub(contact, "exclude", body1="gripper", body2="finger_right")
    else:
        _sub(act, "adhesion", name=SUCTION_ACTUATOR, body="cup", ctrlrange="0 1", gain=repr(SUCTION_FORCE_N))
    return ET.tostring(root, encoding="unicode")
