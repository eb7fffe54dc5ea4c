"""The intermediate spatial representation of PinpointQA (sec. 3.2, App. A.2).

For each valid target:

- **neighbourhood**: annotated objects whose centroid lies within 1.0 m of the target's centroid,
  structural categories excluded (the centroid distance is used for nothing else);
- per neighbour: the **shortest vertex-to-vertex distance** (scipy ``cKDTree``: the smaller point
  set is queried against a cached tree of the larger; never all pairs), the **XY separation** and
  the **Z offset** of the centroids; **level** ``above``/``below`` when the centroid heights differ
  by more than 5 cm, else ``same``; **contact** when the shortest distance is 2 cm or less;
- the **supporting surface**: among neighbours whose category can support (``vocabulary``) and on
  which the target rests -- their top under the target's centroid (for a box, exactly along the
  vertical line; for a mesh, the highest vertex near it) is at most 10 cm below the target's
  bottom and at most 2 cm above the target's centroid -- the one in contact first, then the most
  suitable category tier, then the smallest gap, then the smallest horizontal separation; a
  neighbour the target is stacked on in contact (level above, footprints overlapping, <= 2 cm)
  is a candidate too, ranked after those that pass the top test (box annotations often enclose
  what stands on them);
- each neighbour's **relation**, one of the nine tokens (``relation_of``).

Thresholds are module constants so that a lab can see and change them in one place. All lengths
are metres.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial import cKDTree

from ..scenes.model import Scene, SceneObject
from .vocabulary import WALL_LIKE, category_of, is_floor_or_wall, is_structural, support_tier

__all__ = [
    "NEIGHBOUR_RADIUS_M",
    "LEVEL_DZ_M",
    "CONTACT_M",
    "Neighbour",
    "TargetRepresentation",
    "SceneIndex",
    "valid_targets",
    "build_representation",
    "relation_of",
]

NEIGHBOUR_RADIUS_M = 1.0  # sec. 3.2: centroids within 1.0 m
LEVEL_DZ_M = 0.05  # sec. 3.2: centroid heights differing by more than 5 cm
CONTACT_M = 0.02  # sec. 3.2: shortest distance of no more than 2 cm is contact
FOOTPRINT_M = 0.05  # a point lies "over" an object when an object point is this close in XY
SUPPORT_GAP_ABOVE_M = 0.10  # a support's top under the target is at most this far below the target's bottom
SUPPORT_CENTRE_BELOW_M = 0.02  # ... and at most this far above the target's centroid (box annotations overlap)
UNDER_M = 0.30  # "under": below, overlapping in XY, and at most this far; farther is "below"
NEXT_TO_M = 0.10  # same level and this close (or sharing the support and within 2x) is "next_to"
BOX_SPACING_M = 0.01  # surface sampling step of box-mode objects


@dataclass
class Neighbour:
    """One object in a target's neighbourhood, with the measurements of sec. 3.2 (metres)."""

    obj: SceneObject
    centroid_dist_m: float
    shortest_m: float
    xy_sep_m: float
    z_offset_m: float  # target centroid z minus neighbour centroid z
    level: str  # "above" / "below" / "same": where the TARGET is
    contact: bool
    xy_overlap: bool  # one centroid lies over the other's footprint (stacked, not side by side)
    support_gap_m: float | None  # target bottom minus the neighbour's top under the target (None: not under)
    rests_on: bool = False  # geometrically consistent placement on this neighbour (see module docstring)
    relation: str = ""

    @property
    def label(self) -> str:
        return self.obj.label

    def to_dict(self) -> dict:
        return {
            "object_id": self.obj.object_id,
            "label": self.label,
            "centroid_dist_m": self.centroid_dist_m,
            "shortest_m": self.shortest_m,
            "xy_sep_m": self.xy_sep_m,
            "z_offset_m": self.z_offset_m,
            "level": self.level,
            "contact": self.contact,
            "xy_overlap": self.xy_overlap,
            "support_gap_m": self.support_gap_m,
            "rests_on": self.rests_on,
            "relation": self.relation,
        }


@dataclass
class TargetRepresentation:
    """A target with its neighbourhood, support and ranked references."""

    scene_id: str
    source_dataset: str
    target: SceneObject
    category: str
    neighbours: list[Neighbour]
    support: Neighbour | None
    references: list[Neighbour] = field(default_factory=list)  # valid, one per label, closest first

    def to_dict(self) -> dict:
        return {
            "scene_id": self.scene_id,
            "source_dataset": self.source_dataset,
            "target": self.target.label,
            "target_id": self.target.object_id,
            "category": self.category,
            "support": None if self.support is None else self.support.to_dict(),
            "references": [n.to_dict() for n in self.references],
            "neighbours": [n.to_dict() for n in self.neighbours],
        }


class SceneIndex:
    """Per-scene cache of object point sets and their KD-trees (built lazily, once)."""

    def __init__(self, scene: Scene, box_spacing_m: float = BOX_SPACING_M) -> None:
        self.scene = scene
        self.box_spacing_m = box_spacing_m
        self._points: dict[int, np.ndarray] = {}
        self._trees: dict[int, cKDTree] = {}
        self._bounds: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.centroids = np.array([o.centroid for o in scene.objects]).reshape(-1, 3)

    def points(self, i: int) -> np.ndarray:
        if i not in self._points:
            self._points[i] = self.scene.objects[i].surface_points(self.box_spacing_m)
        return self._points[i]

    def bounds(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """World AABB of object i (cached), metres."""
        if i not in self._bounds:
            self._bounds[i] = self.scene.objects[i].bounds()
        return self._bounds[i]

    def gap_lower_bound(self, i: int, j: int) -> float:
        """Distance between the AABBs of objects i and j: a lower bound of ``shortest(i, j)``
        that needs no point sampling."""
        (lo_i, hi_i), (lo_j, hi_j) = self.bounds(i), self.bounds(j)
        gap = np.maximum(0.0, np.maximum(lo_j - hi_i, lo_i - hi_j))
        return float(np.linalg.norm(gap))

    def tree(self, i: int) -> cKDTree:
        if i not in self._trees:
            self._trees[i] = cKDTree(self.points(i))
        return self._trees[i]

    def shortest(self, i: int, j: int) -> float:
        """Shortest distance between the point sets of objects i and j, metres (KD-tree)."""
        a, b = (i, j) if len(self.points(i)) <= len(self.points(j)) else (j, i)
        pa, tree = self.points(a), self.tree(b)
        # an upper bound from a subsample, then only the points of `a` that can beat it (inside
        # b's bounds grown by the bound), queried with that bound so the tree search prunes early
        step = max(1, len(pa) // 512)
        ub = float(tree.query(pa[::step], k=1)[0].min())
        lo, hi = tree.mins - ub, tree.maxes + ub
        cand = pa[np.all((pa >= lo) & (pa <= hi), axis=1)]
        d, _ = tree.query(cand, k=1, distance_upper_bound=ub * (1 + 1e-9) + 1e-12)
        return min(ub, float(d.min())) if len(d) else ub


def valid_targets(scene: Scene) -> list[int]:
    """Indices of the objects that can be targets: a vocabulary label whose category occurs once
    among the scene's vocabulary objects (sec. 3.2: ambiguous targets are removed)."""
    counts: dict[str, int] = {}
    for o in scene.objects:
        cat = category_of(o.label)
        if cat is not None:
            counts[cat] = counts.get(cat, 0) + 1
    return [i for i, o in enumerate(scene.objects) if (c := category_of(o.label)) is not None and counts[c] == 1]


def _xy_near(points: np.ndarray, xy: np.ndarray, radius: float) -> np.ndarray:
    return np.einsum("ij,ij->i", points[:, :2] - xy, points[:, :2] - xy) <= radius * radius


def _box_column(box, xy: np.ndarray, slack_m: float) -> tuple[float, float] | None:
    """The z interval where the vertical line through ``xy`` crosses ``box`` (half extents grown by
    ``slack_m``), or None when it misses. Exact for any box orientation."""
    half = box.extent / 2.0 + slack_m
    a = box.rotation.T @ (np.array([xy[0], xy[1], 0.0]) - box.center)  # local coords at z = 0
    b = box.rotation[2, :]  # d(local)/dz
    lo, hi = -np.inf, np.inf
    for ai, bi, hi_ in zip(a, b, half):
        if abs(bi) < 1e-12:
            if abs(ai) > hi_:
                return None
            continue
        t0, t1 = sorted(((-hi_ - ai) / bi, (hi_ - ai) / bi))
        lo, hi = max(lo, t0), min(hi, t1)
    return (lo, hi) if lo <= hi else None


def _column_top(obj: SceneObject, points: np.ndarray, xy: np.ndarray, z_max: float, radius: float) -> float | None:
    """Height of ``obj``'s top under the point ``xy``: for a box, the top of the box along the
    vertical line through ``xy``; for a mesh, the highest vertex within ``radius`` (XY) of ``xy``
    and not above ``z_max``. None when ``obj`` is not under ``xy``."""
    if obj.vertices is None and obj.box is not None:
        col = _box_column(obj.box, xy, 0.0)
        if col is None:  # just past the edge: grow the box 2 cm, and take its top back down
            col = _box_column(obj.box, xy, 0.02)
            return None if col is None else float(col[1]) - 0.02
        return float(col[1])
    sel = points[_xy_near(points, xy, radius) & (points[:, 2] <= z_max)]
    return float(sel[:, 2].max()) if len(sel) else None


def _stacked(a: SceneObject, pa: np.ndarray, b: SceneObject, pb: np.ndarray) -> bool:
    """True when either centroid lies over the other's footprint (XY), i.e. the two are stacked."""
    for obj, pts, other in ((a, pa, b), (b, pb, a)):
        if obj.vertices is None and obj.box is not None:
            if _box_column(obj.box, other.centroid[:2], 0.02) is not None:
                return True
        elif _xy_near(pts, other.centroid[:2], FOOTPRINT_M).any():
            return True
    return False


def relation_of(n: Neighbour, *, is_support: bool, shares_support: bool) -> str:
    """The relation of the target to neighbour ``n`` (one of the nine tokens).

    - the support: ``on`` (``attached_to`` when it is wall-like);
    - contact with a wall-like object (wall, whiteboard, monitor, ...): ``attached_to``;
    - target higher (level ``above``): ``on`` when over the neighbour and in contact, ``above`` when
      over it, else ``side_above``;
    - target lower: ``under`` when the neighbour is over the target and within ``UNDER_M``,
      ``below`` when over it but farther, else ``side_below``;
    - same level: ``next_to`` when within ``NEXT_TO_M`` (or within twice that and sharing the
      support), else ``near``.
    """
    label = n.label
    if is_support:
        return "attached_to" if label in WALL_LIKE else "on"
    if n.contact and label in WALL_LIKE:
        return "attached_to"
    if n.level == "above":
        if n.xy_overlap:
            return "on" if n.contact else "above"
        return "side_above"
    if n.level == "below":
        if n.xy_overlap:
            return "under" if n.shortest_m <= UNDER_M else "below"
        return "side_below"
    limit = NEXT_TO_M * (2.0 if shares_support else 1.0)
    return "next_to" if n.shortest_m <= limit else "near"


def _support_of(neighbours: list[tuple[int, Neighbour]]) -> tuple[int, Neighbour] | None:
    candidates = []
    for j, n in neighbours:
        tier = support_tier(n.label)
        # resting on it (see _measure), or stacked on it in contact (box annotations often
        # enclose what stands on them, so the top test alone misses such supports)
        stacked_contact = n.level == "above" and n.xy_overlap and n.contact
        if tier is None or not (n.rests_on or stacked_contact):
            continue
        # direct contact and geometrically consistent placement first; then semantic
        # suitability, then proximity (sec. 3.2)
        gap = abs(n.support_gap_m) if n.support_gap_m is not None else np.inf
        candidates.append(((not n.contact, not n.rests_on, tier, gap, n.xy_sep_m), j, n))
    if not candidates:
        return None
    candidates.sort(key=lambda c: c[0])
    return candidates[0][1], candidates[0][2]


def _measure(idx: SceneIndex, i: int, j: int) -> Neighbour:
    t, o = idx.scene.objects[i], idx.scene.objects[j]
    delta = t.centroid - o.centroid
    shortest = idx.shortest(i, j)
    dz = float(delta[2])
    level = "above" if dz > LEVEL_DZ_M else "below" if dz < -LEVEL_DZ_M else "same"
    tp, op = idx.points(i), idx.points(j)
    t_lo, t_hi = tp.min(axis=0), tp.max(axis=0)
    radius = max(FOOTPRINT_M, 0.5 * float(np.max(t_hi[:2] - t_lo[:2])))
    top = _column_top(o, op, t.centroid[:2], float(t.centroid[2]) + SUPPORT_CENTRE_BELOW_M, radius)
    gap = None if top is None else float(t_lo[2] - top)
    rests = (
        top is not None
        and gap is not None
        and gap <= SUPPORT_GAP_ABOVE_M
        and float(t.centroid[2]) - top >= -SUPPORT_CENTRE_BELOW_M
    )
    return Neighbour(
        obj=o,
        centroid_dist_m=float(np.linalg.norm(delta)),
        shortest_m=shortest,
        xy_sep_m=float(np.hypot(delta[0], delta[1])),
        z_offset_m=dz,
        level=level,
        contact=shortest <= CONTACT_M,
        xy_overlap=_stacked(t, tp, o, op),
        support_gap_m=gap,
        rests_on=bool(rests),
    )


def build_representation(idx: SceneIndex, i: int) -> TargetRepresentation:
    """The intermediate spatial representation of target ``i`` of ``idx.scene`` (see module docstring)."""
    scene = idx.scene
    target = scene.objects[i]
    dists = np.linalg.norm(idx.centroids - target.centroid, axis=1)
    measured: list[tuple[int, Neighbour]] = []
    for near in np.flatnonzero(dists <= NEIGHBOUR_RADIUS_M):
        j = int(near)
        if j == i or is_structural(scene.objects[j].label):
            continue
        measured.append((j, _measure(idx, i, j)))
    sup = _support_of(measured)
    support_j = sup[0] if sup else None
    for j, n in measured:
        shares = False
        if sup is not None and j != support_j:
            # the neighbour rests on the same support when it touches it from above
            shares = scene.objects[j].centroid[2] > sup[1].obj.centroid[2] and idx.shortest(j, sup[0]) <= CONTACT_M
        n.relation = relation_of(n, is_support=(j == support_j), shares_support=shares)
    neighbours = sorted((n for _, n in measured), key=lambda n: n.shortest_m)
    refs: list[Neighbour] = []
    seen: set[str] = set()
    for j, n in sorted(measured, key=lambda jn: jn[1].shortest_m):
        if j == support_j or is_floor_or_wall(n.label) or n.label == "ceiling":
            continue
        if sup is not None and n.label == sup[1].label:  # "on the table ... next to the table" says nothing
            continue
        if category_of(n.label) is not None and category_of(n.label) == category_of(target.label):
            continue
        if n.label in seen:  # sec. 3.2: one instance per label, the closest
            continue
        seen.add(n.label)
        refs.append(n)
    return TargetRepresentation(
        scene_id=scene.scene_id,
        source_dataset=scene.source_dataset,
        target=target,
        category=category_of(target.label) or target.label,
        neighbours=neighbours,
        support=sup[1] if sup else None,
        references=refs,
    )
