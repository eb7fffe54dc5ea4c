"""Where a placed object ended up relative to a reference object: ``in``, ``on``, ``next_to``, ...

A pure rule over geometry (height and footprint), owned by the product so that every world judges
a place the same way: the simulator (``sim_mock.world.SimWorld.judge``) builds the two boxes from
its physics state; a depth-based check for real hardware could build the same ``ObjectBox`` from
the object's segmented point cloud (footprint from a fitted rectangle or circle, bottom and top
from the lowest and highest points) and call the same rule. Only the simulator's boxes exist today.

The rule, in order (``placement_relation``; all lengths metres, base frame, z up):

1. **in**: the reference is a container (``wall_m`` set), the placed object's footprint centre lies
   inside the container's inner wall (its footprint shrunk by the wall) and its bottom is below the
   rim (the reference's top) by more than ``RESTING_TOL_M``: it went down into the container. A can
   taller than the bowl it stands in is in it (its centre may be above the rim: that was the first
   rule, and a newcomer saw it judge a can standing in the bowl "not in"); an object lying across
   the rim is not. The wall itself is the boundary of the footprint.
2. **on**: the placed object's bottom is within ``RESTING_TOL_M`` of the reference's top and its
   footprint centre is over the reference's footprint (no margin: an object whose centre of mass
   is beyond the edge of its only support falls off).
3. **next_to**: it rests on the table (bottom within ``RESTING_TOL_M`` of the table), the two
   footprints do not overlap (by more than ``OVERLAP_TOL_M``) and the gap between them is at most
   ``NEXT_TO_GAP_M``.
4. **apart**: it rests on the table beside the reference, farther than ``NEXT_TO_GAP_M``.
5. **elsewhere**: anything else (on a third object, fallen into a non-container, tilted on an edge
   between two supports).

Tolerances:

- ``RESTING_TOL_M`` = 0.010 m: how far an object's bottom may be from the surface it is said to
  rest on. A resting body in the simulator sinks under 1 mm into its support; a RealSense D435's
  depth error at 0.7 m is about 2 mm, and a box fitted to a segmented point cloud puts its bottom
  a few mm off. It stays below the height of the smallest object in the default scene (3 cm), so
  an object standing on *another* object on the reference is not "on" the reference.
- ``OVERLAP_TOL_M`` = 0.005 m: how deeply two footprints may overlap and still count as side by
  side. Two objects pushed together on the table interpenetrate by under 1 mm in the simulator, and
  a fitted box's edge is a few pixels (1.1 mm per pixel at 0.7 m) off; anything stacked overlaps
  by at least half its own width (its centre is over the reference).
- ``NEXT_TO_GAP_M`` = 0.06 m: the largest gap between the footprints that is still "next to":
  the simulator's former near distance (``NEAR_DISTANCE_M``, 6 cm), one and a half widths of the
  default scene's 4 cm blocks.

Footprints are a rectangle (``footprint="rect"``, yawed by ``yaw_deg``) or a disc (``"disc"``: a
can, a bowl, a mug's body). A tilted object keeps its upright footprint at its centre (its bottom
and top are still its lowest and highest points), an approximation that only matters for objects
lying on an edge, which the rule calls ``elsewhere`` anyway unless one of them rests flat.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ObjectBox",
    "Placement",
    "Relation",
    "RELATIONS",
    "RESTING_TOL_M",
    "OVERLAP_TOL_M",
    "NEXT_TO_GAP_M",
    "footprint_gap_m",
    "placement_relation",
    "check_placement",
]

Relation = Literal["in", "on", "next_to", "apart", "elsewhere"]
RELATIONS: tuple[str, ...] = ("in", "on", "next_to", "apart", "elsewhere")

RESTING_TOL_M = 0.010
OVERLAP_TOL_M = 0.005
NEXT_TO_GAP_M = 0.06

# How an instruction's relation reads in a judgement ("on top of, not next to").
_PHRASE = {"in": "in", "on": "on top of", "next_to": "next to"}


@dataclass(frozen=True)
class ObjectBox:
    """An object's extent in the base frame (metres, z up): a footprint on the horizontal plane
    between a bottom and a top height.

    Attributes:
        center_xy_m: footprint centre ``(x, y)``, metres.
        size_xy_m: footprint extents along the object's own x and y axes, metres (a disc: its
            diameter twice).
        bottom_z_m, top_z_m: lowest and highest point, metres.
        yaw_deg: heading of the object's x axis about base z, degrees (a disc ignores it).
        footprint: ``"rect"`` or ``"disc"``.
        wall_m: a container's wall thickness, metres: its inside is the footprint shrunk by it;
            ``None`` for an object that is not a container.

    Raises:
        ValueError: a non-positive size, a top not above the bottom, a disc whose two extents
            differ, an unknown footprint, or a wall not thinner than half the footprint.
    """

    center_xy_m: tuple[float, float]
    size_xy_m: tuple[float, float]
    bottom_z_m: float
    top_z_m: float
    yaw_deg: float = 0.0
    footprint: Literal["rect", "disc"] = "rect"
    wall_m: float | None = None

    def __post_init__(self) -> None:
        sx, sy = self.size_xy_m
        if not (sx > 0 and sy > 0):
            raise ValueError(f"footprint sizes must be positive metres, got {self.size_xy_m}")
        if not self.top_z_m > self.bottom_z_m:
            raise ValueError(f"top {self.top_z_m} m must be above bottom {self.bottom_z_m} m")
        if self.footprint not in ("rect", "disc"):
            raise ValueError(f"footprint must be rect or disc, got {self.footprint!r}")
        if self.footprint == "disc" and not math.isclose(sx, sy, abs_tol=1e-9):
            raise ValueError(f"a disc has one diameter, got {self.size_xy_m}")
        if self.wall_m is not None and not 0 < self.wall_m < min(sx, sy) / 2:
            raise ValueError(f"wall {self.wall_m} m must be positive and thinner than half of {self.size_xy_m}")

    @property
    def center_z_m(self) -> float:
        """Half-way between bottom and top, metres."""
        return (self.bottom_z_m + self.top_z_m) / 2

    def depth_inside_m(self, xy_m: tuple[float, float]) -> float:
        """How far a horizontal point lies inside the footprint's edge, metres (negative: outside,
        minus its distance to the footprint)."""
        dx, dy = xy_m[0] - self.center_xy_m[0], xy_m[1] - self.center_xy_m[1]
        if self.footprint == "disc":
            return self.size_xy_m[0] / 2 - math.hypot(dx, dy)
        c, s = math.cos(math.radians(self.yaw_deg)), math.sin(math.radians(self.yaw_deg))
        ox = abs(c * dx + s * dy) - self.size_xy_m[0] / 2  # beyond the edge along the object's x
        oy = abs(-s * dx + c * dy) - self.size_xy_m[1] / 2
        if ox <= 0 and oy <= 0:
            return -max(ox, oy)
        return -math.hypot(max(ox, 0.0), max(oy, 0.0))

    def _axes(self) -> tuple[tuple[float, float], tuple[float, float]]:
        c, s = math.cos(math.radians(self.yaw_deg)), math.sin(math.radians(self.yaw_deg))
        return (c, s), (-s, c)

    def _corners(self) -> list[tuple[float, float]]:
        (ux, uy), (vx, vy) = self._axes()
        hx, hy = self.size_xy_m[0] / 2, self.size_xy_m[1] / 2
        cx, cy = self.center_xy_m
        return [
            (cx + a * hx * ux + b * hy * vx, cy + a * hx * uy + b * hy * vy)
            for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1))
        ]

    def _half_extent_along(self, n: tuple[float, float]) -> float:
        (ux, uy), (vx, vy) = self._axes()
        return self.size_xy_m[0] / 2 * abs(n[0] * ux + n[1] * uy) + self.size_xy_m[1] / 2 * abs(n[0] * vx + n[1] * vy)


def footprint_gap_m(a: ObjectBox, b: ObjectBox) -> float:
    """The horizontal gap between two footprints, metres: the shortest distance between them when
    they are apart, zero when they touch, minus the depth of their overlap when they overlap (the
    shortest horizontal shift that would separate them)."""
    if a.footprint == "disc" and b.footprint == "disc":
        return math.dist(a.center_xy_m, b.center_xy_m) - a.size_xy_m[0] / 2 - b.size_xy_m[0] / 2
    if a.footprint == "disc" or b.footprint == "disc":
        disc, rect = (a, b) if a.footprint == "disc" else (b, a)
        return -rect.depth_inside_m(disc.center_xy_m) - disc.size_xy_m[0] / 2
    # Two rectangles: the separating-axis test over the four edge normals gives the overlap depth
    # exactly (convex polygons); when they are apart the nearest points include a corner of one.
    separation = -math.inf
    for n in (*a._axes(), *b._axes()):
        d = abs((b.center_xy_m[0] - a.center_xy_m[0]) * n[0] + (b.center_xy_m[1] - a.center_xy_m[1]) * n[1])
        separation = max(separation, d - a._half_extent_along(n) - b._half_extent_along(n))
    if separation <= 0:
        return separation
    return min(min(-b.depth_inside_m(p) for p in a._corners()), min(-a.depth_inside_m(p) for p in b._corners()))


@dataclass(frozen=True)
class Placement:
    """What ``placement_relation`` found.

    Attributes:
        relation: one of ``RELATIONS``.
        gap_m: ``footprint_gap_m(placed, reference)``, metres (negative: overlap depth).
        above_table_m: the placed object's bottom above the table, metres.
        above_reference_m: the placed object's bottom above the reference's top, metres.
    """

    relation: Relation
    gap_m: float
    above_table_m: float
    above_reference_m: float


def placement_relation(placed: ObjectBox, reference: ObjectBox, table_z_m: float = 0.0) -> Placement:
    """The relation of ``placed`` to ``reference`` by the rule of the module docstring
    (docs/trials.md, "Automatic outcome check"). ``table_z_m``: the table top's height, metres.
    Never raises."""
    gap = footprint_gap_m(placed, reference)
    above_table = placed.bottom_z_m - table_z_m
    above_ref = placed.bottom_z_m - reference.top_z_m

    def found(relation: Relation) -> Placement:
        return Placement(relation, gap, above_table, above_ref)

    centre = placed.center_xy_m
    if (
        reference.wall_m is not None
        and reference.depth_inside_m(centre) >= reference.wall_m
        and placed.bottom_z_m < reference.top_z_m - RESTING_TOL_M
    ):
        return found("in")
    if abs(above_ref) <= RESTING_TOL_M and reference.depth_inside_m(centre) >= 0:
        return found("on")
    if abs(above_table) <= RESTING_TOL_M and gap >= -OVERLAP_TOL_M:
        return found("next_to" if gap <= NEXT_TO_GAP_M else "apart")
    return found("elsewhere")


def check_placement(
    placed: ObjectBox,
    reference: ObjectBox,
    wanted: Relation,
    *,
    table_z_m: float = 0.0,
    placed_name: str = "the object",
    reference_name: str = "the reference",
) -> tuple[bool, str]:
    """Did a place end in the ``wanted`` relation (``in``, ``on`` or ``next_to``)? Returns
    ``(success, reason)``; the reason names what was found instead ("... is on top of, not next
    to, ..."), with the gap in centimetres where it decides.

    Raises:
        ValueError: ``wanted`` is not ``in``, ``on`` or ``next_to``.
    """
    if wanted not in _PHRASE:
        raise ValueError(f"wanted must be one of {', '.join(_PHRASE)}, got {wanted!r}")
    p = placement_relation(placed, reference, table_z_m)
    a, b, want = placed_name, reference_name, _PHRASE[wanted]
    limit_cm = f"{100 * NEXT_TO_GAP_M:.0f} cm"
    if p.relation == wanted == "next_to":
        return True, f"{a} is next to {b}, {100 * p.gap_m:.1f} cm away (within {limit_cm})"
    if p.relation == wanted:
        return True, f"{a} is {want} {b}"
    if p.relation in _PHRASE:
        return False, f"{a} is {_PHRASE[p.relation]}, not {want}, {b}"
    if p.relation == "apart":
        return False, f"{a} is {100 * p.gap_m:.1f} cm from {b} (beyond {limit_cm}), not {want} it"
    return False, (
        f"{a} is not {want} {b}: its bottom is {100 * p.above_table_m:.1f} cm above the table and "
        f"{100 * p.above_reference_m:+.1f} cm from the top of {b}"
    )
