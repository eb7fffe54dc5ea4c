"""The simulated tabletop: a table plane at base ``z = 0``, small objects and one container.

Every object is an upright primitive described by its footprint centre on its support and its size:

- ``box``: an axis-aligned-in-its-own-yaw cuboid, ``size_m = (sx, sy, sz)``;
- ``cylinder``: a vertical solid cylinder (a can), ``size_m = (diameter, diameter, height)``;
- ``bowl``: an open round container: a ring wall of thickness ``wall_m`` on a floor of thickness
  ``floor_m``, ``size_m = (outer diameter, outer diameter, height)``.

Positions are metres in the robot base frame (``link_base``: x forward, y left, z up). The layout is
chosen so that every object is inside the default ``pointlab.robot.workspace.Workspace()``, reachable
by the Lite 6 with the gripper pointing down, and visible to the sim camera; the objects are 3.5-5.5
cm across so that a pointing error of ~25 px (about 3 cm on the table) misses them often.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

__all__ = ["ObjectSpec", "Scene", "default_scene", "TABLE_COLOR_RGB"]

TABLE_COLOR_RGB = (150, 146, 140)


@dataclass(frozen=True)
class ObjectSpec:
    """One scene object.

    Attributes:
        name: canonical name, lower case (``"red cube"``).
        aliases: other names an instruction may use (``"red block"``).
        shape: ``box``, ``cylinder`` or ``bowl``.
        size_m: ``(sx, sy, height)`` for a box; ``(d, d, height)`` for a cylinder or bowl, metres.
        color_rgb: albedo, 0-255 RGB.
        position_m: centre of the object's bottom face in the base frame, metres.
        yaw_deg: rotation about the vertical axis (boxes), degrees.
        wall_m, floor_m: wall and floor thickness of a bowl, metres.
    """

    name: str
    shape: Literal["box", "cylinder", "bowl"]
    size_m: tuple[float, float, float]
    color_rgb: tuple[int, int, int]
    position_m: tuple[float, float, float]
    aliases: tuple[str, ...] = ()
    yaw_deg: float = 0.0
    wall_m: float = 0.006
    floor_m: float = 0.005

    def __post_init__(self) -> None:
        if self.shape not in ("box", "cylinder", "bowl"):
            raise ValueError(f"{self.name}: unknown shape {self.shape!r}")
        if min(self.size_m) <= 0:
            raise ValueError(f"{self.name}: sizes must be positive metres, got {self.size_m}")
        if self.shape == "bowl" and not (0 < self.wall_m < self.size_m[0] / 2 and 0 < self.floor_m < self.size_m[2]):
            raise ValueError(f"{self.name}: bowl wall/floor thickness out of range")

    # -- geometry ----------------------------------------------------------------------------------
    @property
    def is_container(self) -> bool:
        return self.shape == "bowl"

    @property
    def height_m(self) -> float:
        return float(self.size_m[2])

    @property
    def half_width_m(self) -> float:
        """Half of the smaller horizontal extent (the grasp width / 2), metres."""
        return float(min(self.size_m[0], self.size_m[1]) / 2.0)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def at(self, position_m, yaw_deg: float | None = None) -> "ObjectSpec":
        """A copy moved to ``position_m`` (bottom centre, metres)."""
        p = tuple(float(c) for c in np.asarray(position_m, dtype=np.float64).reshape(3))
        return replace(self, position_m=p, yaw_deg=self.yaw_deg if yaw_deg is None else float(yaw_deg))

    def local_xy(self, xy_m) -> np.ndarray:
        """Base-frame horizontal points ``(..., 2)`` -> the object's own frame (yawed), metres."""
        d = np.asarray(xy_m, dtype=np.float64) - np.asarray(self.position_m[:2])
        c, s = math.cos(math.radians(self.yaw_deg)), math.sin(math.radians(self.yaw_deg))
        return np.stack([c * d[..., 0] + s * d[..., 1], -s * d[..., 0] + c * d[..., 1]], axis=-1)

    def footprint_contains(self, xy_m, margin_m: float = 0.0) -> bool:
        """True when the horizontal point ``xy_m`` lies over the object's outer footprint
        (grown by ``margin_m``)."""
        lx, ly = self.local_xy(np.asarray(xy_m, dtype=np.float64).reshape(2))
        if self.shape == "box":
            return bool(abs(lx) <= self.size_m[0] / 2 + margin_m and abs(ly) <= self.size_m[1] / 2 + margin_m)
        return bool(math.hypot(lx, ly) <= self.size_m[0] / 2 + margin_m)

    def interior_contains(self, xy_m, margin_m: float = 0.0) -> bool:
        """True when ``xy_m`` lies over the inside of a bowl (inside the wall, shrunk by ``margin_m``)."""
        if not self.is_container:
            return False
        lx, ly = self.local_xy(np.asarray(xy_m, dtype=np.float64).reshape(2))
        return bool(math.hypot(lx, ly) <= self.size_m[0] / 2 - self.wall_m - margin_m)

    def support_z_at(self, xy_m) -> float | None:
        """Height (m) a thing dropped at ``xy_m`` comes to rest on, on this object; ``None`` if
        ``xy_m`` is not over it. A bowl supports on its floor inside and on its rim over the wall."""
        if not self.footprint_contains(xy_m):
            return None
        z0 = self.position_m[2]
        if self.is_container and self.interior_contains(xy_m):
            return z0 + self.floor_m
        return z0 + self.height_m

    @property
    def top_center_m(self) -> np.ndarray:
        """Centre of the top face (a bowl: centre of the floor's top face, what one points at to put
        something *in* it), metres ``(3,)``."""
        x, y, z = self.position_m
        return np.array([x, y, z + (self.floor_m if self.is_container else self.height_m)])

    @property
    def center_m(self) -> np.ndarray:
        x, y, z = self.position_m
        return np.array([x, y, z + self.height_m / 2.0])

    def corners_m(self) -> np.ndarray:
        """The 8 corners ``(8, 3)`` of the object's bounding box in the base frame, metres."""
        hx, hy = self.size_m[0] / 2, self.size_m[1] / 2
        c, s = math.cos(math.radians(self.yaw_deg)), math.sin(math.radians(self.yaw_deg))
        x, y, z = self.position_m
        out = []
        for dz in (0.0, self.height_m):
            for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                lx, ly = sx * hx, sy * hy
                out.append((x + c * lx - s * ly, y + s * lx + c * ly, z + dz))
        return np.array(out)


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


@dataclass(frozen=True)
class Scene:
    """A table plane and its objects (the *initial* layout; ``SimWorld`` holds the current poses).

    Attributes:
        objects: the objects, unique names.
        table_z_m: table top height in the base frame, metres.
        table_color_rgb: table albedo.
    """

    objects: tuple[ObjectSpec, ...]
    table_z_m: float = 0.0
    table_color_rgb: tuple[int, int, int] = TABLE_COLOR_RGB
    name: str = "tabletop"
    _index: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        seen: dict[str, str] = {}
        for obj in self.objects:
            for n in obj.names:
                key = _norm(n)
                if key in seen:
                    raise ValueError(f"scene name {n!r} used by both {seen[key]!r} and {obj.name!r}")
                seen[key] = obj.name
        self._index.update(seen)

    def resolve(self, name: str) -> str | None:
        """Canonical object name for a name or alias (case- and punctuation-insensitive), or ``None``."""
        return self._index.get(_norm(name))

    def mentions(self, text: str) -> list[str]:
        """Canonical names of the objects ``text`` mentions (names or aliases as whole words), in
        order of first mention; the longest alias wins where names overlap."""
        t = f" {_norm(text)} "
        hits: list[tuple[int, int, str]] = []
        for alias, canon in self._index.items():
            for m in re.finditer(rf"(?<= ){re.escape(alias)}(?= )", t):
                hits.append((m.start(), -len(alias), canon))
        hits.sort()
        out: list[str] = []
        covered_to = -1
        for start, neg_len, canon in hits:
            if start < covered_to:  # inside a longer name already matched ("blue bowl" vs "bowl")
                continue
            covered_to = start - neg_len
            if canon not in out:
                out.append(canon)
        return out

    @property
    def containers(self) -> list[ObjectSpec]:
        return [o for o in self.objects if o.is_container]


def default_scene() -> Scene:
    """The default tabletop: five small objects and a blue bowl, 0.2-0.4 m in front of the base."""
    return Scene((
        ObjectSpec("red cube", "box", (0.04, 0.04, 0.04), (205, 35, 35), (0.30, 0.10, 0.0),
                   aliases=("red block", "red box"), yaw_deg=15.0),
        ObjectSpec("green cube", "box", (0.04, 0.04, 0.04), (40, 165, 65), (0.22, -0.06, 0.0),
                   aliases=("green block", "green box"), yaw_deg=-10.0),
        ObjectSpec("yellow block", "box", (0.045, 0.035, 0.035), (235, 200, 30), (0.36, -0.02, 0.0),
                   aliases=("yellow cube", "yellow box", "yellow brick"), yaw_deg=30.0),
        ObjectSpec("orange can", "cylinder", (0.05, 0.05, 0.08), (240, 120, 20), (0.24, 0.20, 0.0),
                   aliases=("orange cylinder", "orange tin", "can")),
        ObjectSpec("purple cube", "box", (0.035, 0.035, 0.035), (135, 60, 175), (0.36, 0.20, 0.0),
                   aliases=("purple block", "purple box", "violet cube")),
        ObjectSpec("blue bowl", "bowl", (0.13, 0.13, 0.05), (40, 85, 205), (0.30, -0.19, 0.0),
                   aliases=("bowl", "blue container", "container", "blue dish"), floor_m=0.012),
    ))
