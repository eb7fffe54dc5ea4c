"""The simulated tabletop as data: a table plane at base ``z = 0``, objects and their names.

A scene is a TOML file (``load_scene(path)``; the default is the packaged
``scenes/default.toml``) that ``sim_mock.mjcf`` turns into a MuJoCo model. Every object is a free
rigid body described by its footprint centre on the table, its size, mass and friction:

- ``box``: a cuboid, ``size_m = (sx, sy, sz)``;
- ``cylinder``: a vertical solid cylinder (a can), ``size_m = (diameter, diameter, height)``;
- ``bowl``: an open round container: a ring wall of thickness ``wall_m`` on a floor of thickness
  ``floor_m``, ``size_m = (outer diameter, outer diameter, height)``;
- ``mug``: a bowl-like cup with a handle on its local +x side (``handle_m``: how far the handle
  stands out from the wall).

``surface`` is ``matte`` or ``shiny`` (the sim camera's depth drops out on shiny surfaces, as a
RealSense does on metal). Positions are metres in the robot base frame (``link_base``: x forward,
y left, z up); ``position_m`` is the bottom centre of the object at rest, ``yaw_deg`` its rotation
about the vertical axis. These are the *initial* poses: ``SimWorld`` reads the current ones from
the physics.

TOML layout (every key of ``ObjectSpec`` may be given; ``mass_kg`` defaults to ``density_kg_m3``
times the solid volume)::

    name = "tabletop"
    table_z_m = 0.0
    [[objects]]
    name = "red cube"
    aliases = ["red block"]
    shape = "box"
    size_m = [0.04, 0.04, 0.04]
    color_rgb = [205, 35, 35]
    position_m = [0.30, 0.10, 0.0]
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np

__all__ = [
    "ObjectSpec",
    "Scene",
    "default_scene",
    "load_scene",
    "normalize_text",
    "TABLE_COLOR_RGB",
    "SHAPES",
    "DEFAULT_SCENE_FILE",
]

TABLE_COLOR_RGB = (150, 146, 140)
SHAPES = ("box", "cylinder", "bowl", "mug")
DEFAULT_SCENE_FILE = "scenes/default.toml"
# Words right before a name that make it the reference of a place ("can you put it next to the
# mug": the mug, not the "can" a question starts with): those asking for "on", and for "near".
_DETERMINER = r"(?: (?:the|a|an|this|that))?"
_ON_WORDS = r"on (?:the )?top of|onto|on|upon|atop"
_NEAR_WORDS = r"next to|beside|near|by|close to"
_RELATION_BEFORE = re.compile(rf"(?:^| )(?:{_ON_WORDS}|{_NEAR_WORDS}|in|into|inside(?: of)?){_DETERMINER} $")
_ON_BEFORE = re.compile(rf"(?:^| )(?:{_ON_WORDS}){_DETERMINER} $")
_NEAR_BEFORE = re.compile(rf"(?:^| )(?:{_NEAR_WORDS}){_DETERMINER} $")


@dataclass(frozen=True)
class ObjectSpec:
    """One scene object (see the module docstring).

    Attributes:
        name: canonical name, lower case (``"red cube"``).
        shape: one of ``SHAPES``.
        size_m: ``(sx, sy, height)`` for a box; ``(d, d, height)`` otherwise, metres.
        color_rgb: albedo, 0-255 RGB.
        position_m: bottom centre at rest in the base frame, metres.
        aliases: other names an instruction may use (``"red block"``).
        yaw_deg: rotation about the vertical axis, degrees.
        wall_m, floor_m: wall and floor thickness of a bowl or mug, metres.
        handle_m: how far a mug's handle stands out from its wall, metres.
        mass_kg: mass; ``None`` = ``density_kg_m3`` x solid volume.
        density_kg_m3: used when ``mass_kg`` is not given (wood ~600, ceramic ~2000).
        friction: sliding friction coefficient against the table and the gripper pads.
        surface: ``matte`` or ``shiny``.
    """

    name: str
    shape: Literal["box", "cylinder", "bowl", "mug"]
    size_m: tuple[float, float, float]
    color_rgb: tuple[int, int, int]
    position_m: tuple[float, float, float]
    aliases: tuple[str, ...] = ()
    yaw_deg: float = 0.0
    wall_m: float = 0.006
    floor_m: float = 0.005
    handle_m: float = 0.025
    mass_kg: float | None = None
    density_kg_m3: float = 600.0
    friction: float = 0.8
    surface: Literal["matte", "shiny"] = "matte"
    # read by pydantic when a scene file is validated: an unknown key is an error, not ignored
    __pydantic_config__ = {"extra": "forbid"}

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"{self.name}: unknown shape {self.shape!r}; known: {', '.join(SHAPES)}")
        if len(self.size_m) != 3 or min(self.size_m) <= 0:
            raise ValueError(f"{self.name}: sizes must be 3 positive metres, got {self.size_m}")
        if self.is_container or self.shape == "mug":
            if not (0 < self.wall_m < self.size_m[0] / 2 and 0 < self.floor_m < self.size_m[2]):
                raise ValueError(f"{self.name}: wall/floor thickness out of range")
        if self.mass_kg is not None and not self.mass_kg > 0:
            raise ValueError(f"{self.name}: mass_kg must be positive, got {self.mass_kg}")
        if not (self.friction > 0 and self.density_kg_m3 > 0):
            raise ValueError(f"{self.name}: friction and density must be positive")
        if self.surface not in ("matte", "shiny"):
            raise ValueError(f"{self.name}: surface must be matte or shiny, got {self.surface!r}")

    # -- geometry ----------------------------------------------------------------------------------
    @property
    def is_container(self) -> bool:
        """Things are placed *into* a bowl (the mug is picked, not filled)."""
        return self.shape == "bowl"

    @property
    def height_m(self) -> float:
        return float(self.size_m[2])

    @property
    def half_width_m(self) -> float:
        """Half of the smaller horizontal extent, metres."""
        return float(min(self.size_m[0], self.size_m[1]) / 2.0)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def volume_m3(self) -> float:
        """Solid volume (walls and floor only for a bowl or mug; handle not counted), m^3."""
        sx, sy, h = self.size_m
        if self.shape == "box":
            return sx * sy * h
        r = sx / 2
        if self.shape == "cylinder":
            return math.pi * r * r * h
        ri = r - self.wall_m
        return math.pi * (r * r - ri * ri) * (h - self.floor_m) + math.pi * r * r * self.floor_m

    @property
    def mass(self) -> float:
        """Mass in kg (given, or density x volume)."""
        return float(self.mass_kg) if self.mass_kg is not None else self.density_kg_m3 * self.volume_m3

    def at(self, position_m, yaw_deg: float | None = None) -> "ObjectSpec":
        """A copy moved to ``position_m`` (bottom centre, metres)."""
        x, y, z = (float(c) for c in np.asarray(position_m, dtype=np.float64).reshape(3))
        return replace(self, position_m=(x, y, z), yaw_deg=self.yaw_deg if yaw_deg is None else float(yaw_deg))

    def local_xy(self, xy_m) -> np.ndarray:
        """Base-frame horizontal points ``(..., 2)`` -> the object's own frame (yawed), metres."""
        d = np.asarray(xy_m, dtype=np.float64) - np.asarray(self.position_m[:2])
        c, s = math.cos(math.radians(self.yaw_deg)), math.sin(math.radians(self.yaw_deg))
        return np.stack([c * d[..., 0] + s * d[..., 1], -s * d[..., 0] + c * d[..., 1]], axis=-1)

    def interior_contains(self, xy_m, margin_m: float = 0.0) -> bool:
        """True when ``xy_m`` lies over the inside of a bowl (inside the wall, shrunk by ``margin_m``)."""
        if not self.is_container:
            return False
        lx, ly = self.local_xy(np.asarray(xy_m, dtype=np.float64).reshape(2))
        return bool(math.hypot(lx, ly) <= self.size_m[0] / 2 - self.wall_m - margin_m)

    @property
    def top_center_m(self) -> np.ndarray:
        """Centre of the top face (a bowl: centre of its floor's top face, what one points at to put
        something *in* it), metres ``(3,)``."""
        x, y, z = self.position_m
        return np.array([x, y, z + (self.floor_m if self.is_container else self.height_m)])

    def corners_m(self) -> np.ndarray:
        """The 8 corners ``(8, 3)`` of the object's bounding box in the base frame, metres (a mug's
        handle included)."""
        hx, hy = self.size_m[0] / 2, self.size_m[1] / 2
        x_max = hx + (self.handle_m if self.shape == "mug" else 0.0)
        c, s = math.cos(math.radians(self.yaw_deg)), math.sin(math.radians(self.yaw_deg))
        x, y, z = self.position_m
        out = []
        for dz in (0.0, self.height_m):
            for lx, ly in ((-hx, -hy), (x_max, -hy), (x_max, hy), (-hx, hy)):
                out.append((x + c * lx - s * ly, y + s * lx + c * ly, z + dz))
        return np.array(out)


def normalize_text(text: str) -> str:
    """Lower case, every run of other characters than ``a-z0-9`` one space, stripped: the text
    names are matched in (``Scene.resolve``, ``Scene.mention_spans``)."""
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


@dataclass(frozen=True)
class Scene:
    """A table plane and its objects (the *initial* layout; ``SimWorld`` holds the current poses).

    Attributes:
        objects: the objects, unique names.
        table_z_m: table top height in the base frame, metres.
        table_color_rgb: table albedo.
        name: the scene's name.
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
                key = normalize_text(n)
                if key in seen:
                    raise ValueError(f"scene name {n!r} used by both {seen[key]!r} and {obj.name!r}")
                seen[key] = obj.name
        self._index.update(seen)

    def resolve(self, name: str) -> str | None:
        """Canonical object name for a name or alias (case- and punctuation-insensitive), or ``None``."""
        return self._index.get(normalize_text(name))

    def mentions(self, text: str) -> list[str]:
        """Canonical names of the objects ``text`` mentions (names or aliases as whole words), in
        order of first mention; the longest alias wins where names overlap."""
        out: list[str] = []
        for _, _, canon in self.mention_spans(text):
            if canon not in out:
                out.append(canon)
        return out

    def mention_spans(self, text: str) -> list[tuple[int, int, str]]:
        """Every mention of an object in ``text`` as ``(start, end, canonical name)``, in order;
        ``start:end`` indexes ``normalize_text(text)`` (so the words before a mention can be read,
        e.g. "on top of" in ``SimWorld.infer_expected``). The longest alias wins where names
        overlap ("blue bowl", not "bowl")."""
        t = f" {normalize_text(text)} "
        hits: list[tuple[int, int, str]] = []
        for alias, canon in self._index.items():
            for m in re.finditer(rf"(?<= ){re.escape(alias)}(?= )", t):
                hits.append((m.start(), -len(alias), canon))
        hits.sort()
        out: list[tuple[int, int, str]] = []
        covered_to = -1
        for start, neg_len, canon in hits:
            if start < covered_to:  # inside a longer name already matched ("blue bowl" vs "bowl")
                continue
            covered_to = start - neg_len
            out.append((start - 1, covered_to - 1, canon))  # -1: the padding space in front
        return out

    def place_target(self, text: str, held: str | None) -> tuple[Literal["container", "on", "near"], str] | None:
        """Where a place instruction puts the ``held`` object, as ``(key, reference)`` for a
        ``SimWorld.judge`` expectation, or ``None`` when it names no other object.

        The reference is the first object other than ``held`` named right after a relation word
        ("in", "into", "on", "on top of", "onto", "next to", "beside", "near", "by", ...), else the
        first other object named. ``near`` when the words right before it are "next to", "beside",
        "near", "by" or "close to"; else ``container`` when it is a container (a bowl is filled,
        whatever the word), ``on`` when they are "on", "on top of", "onto", "upon" or "atop", else
        ``near`` (a mug is not a container: "in the mug" is near).
        """
        words = normalize_text(text)
        others = [(words[:start], canon) for start, _, canon in self.mention_spans(text) if canon != held]
        if not others:
            return None
        before, ref = next(((b, c) for b, c in others if _RELATION_BEFORE.search(b)), others[0])
        if _NEAR_BEFORE.search(before):
            return "near", ref
        if self.spec(ref).is_container:
            return "container", ref
        return ("on" if _ON_BEFORE.search(before) else "near"), ref

    @property
    def containers(self) -> list[ObjectSpec]:
        return [o for o in self.objects if o.is_container]

    def spec(self, name: str) -> ObjectSpec:
        """The initial spec of an object by name or alias. Raises ``KeyError``."""
        canon = self.resolve(name)
        for o in self.objects:
            if o.name == canon:
                return o
        raise KeyError(f"no object named {name!r} in the scene")


def load_scene(path: str | Path) -> Scene:
    """Read a scene TOML file (format in the module docstring).

    Raises:
        ValueError: unreadable TOML, an unknown key, a missing or wrongly typed field (the message
            names the object), or a name used twice.
    """
    from pydantic import TypeAdapter, ValidationError

    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"{path}: not a readable scene TOML file: {e}") from e
    unknown = set(doc) - {"name", "table_z_m", "table_color_rgb", "objects"}
    if unknown:
        raise ValueError(f"{path}: unknown scene keys {sorted(unknown)}")
    adapter = TypeAdapter(ObjectSpec)
    objects = []
    for i, raw in enumerate(doc.get("objects", [])):
        where = f"{path}: objects[{i}] ({raw.get('name', '?') if isinstance(raw, dict) else '?'})"
        try:
            objects.append(adapter.validate_python(raw))
        except ValidationError as e:
            first = e.errors()[0]
            raise ValueError(f"{where}: {'.'.join(map(str, first['loc'])) or 'object'}: {first['msg']}") from None
        except ValueError as e:  # __post_init__
            raise ValueError(f"{where}: {e}") from None
    if not objects:
        raise ValueError(f"{path}: a scene needs at least one [[objects]] entry")
    try:
        rgb = [int(c) for c in doc.get("table_color_rgb", TABLE_COLOR_RGB)]
        if len(rgb) != 3:  # (a list of another length reached the MJCF's rgba)
            raise ValueError(f"table_color_rgb must be three integers, got {rgb}")
        return Scene(
            tuple(objects),
            table_z_m=float(doc.get("table_z_m", 0.0)),
            table_color_rgb=(rgb[0], rgb[1], rgb[2]),
            name=str(doc.get("name", path.stem)),
        )
    except (TypeError, ValueError) as e:
        raise ValueError(f"{path}: {e}") from None


def default_scene() -> Scene:
    """The default tabletop (``scenes/default.toml``): the demo script's six objects, a smaller
    second green cube and a mug with a handle, 0.17-0.41 m in front of the base."""
    return load_scene(Path(str(resources.files("pointlab.sim_mock").joinpath(DEFAULT_SCENE_FILE))))
