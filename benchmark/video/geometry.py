"""Geometry of the VSI-Bench / ReVSI tasks on oriented boxes (metres, z up).

* :func:`box_distance_m`: the exact shortest distance between two oriented boxes ("measuring from
  the closest point of each object", VSI-Bench), solved as a 6-variable bounded least-squares
  problem (``scipy.optimize.lsq_linear``): minimise ``|c1 + R1 a - c2 - R2 b|`` with
  ``|a_i| <= e1_i / 2``, ``|b_i| <= e2_i / 2``. Convex, so the solver's optimum is the distance
  (0 when the boxes touch or overlap).
* :func:`direction_angle_deg`: the angle, counter-clockwise seen from above, from the facing
  direction (positioning -> orienting object) to the querying object, in [0, 360); 0-180 is the
  left half (VSI-Bench's relative-direction convention).
* :func:`polygon_area_m2`: the shoelace area of a floor polygon (room size from a polygon).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.optimize import lsq_linear

__all__ = [
    "box_distance_m",
    "min_distance_m",
    "longest_side_cm",
    "direction_angle_deg",
    "polygon_area_m2",
    "horizontal_extent_m",
]


def box_distance_m(box1, box2) -> float:
    """Shortest distance between two ``OrientedBox`` es (``center``, ``extent``, ``rotation`` with the
    box axes as columns), metres; 0.0 when they touch or overlap."""
    A = np.hstack([box1.rotation, -box2.rotation])
    rhs = np.asarray(box2.center, dtype=np.float64) - np.asarray(box1.center, dtype=np.float64)
    half = np.concatenate([box1.extent, box2.extent]) / 2.0
    # a degenerate (zero) extent needs a non-empty interval for the solver
    lo, hi = -half - 1e-12, half + 1e-12
    res = lsq_linear(A, rhs, bounds=(lo, hi), method="bvls", tol=1e-12)
    return float(np.linalg.norm(A @ res.x - rhs))


def min_distance_m(objects_a: Sequence, objects_b: Sequence) -> float:
    """Smallest box distance between any instance of ``objects_a`` and any of ``objects_b``
    (``SceneObject`` s with boxes), metres."""
    return min(box_distance_m(a.box, b.box) for a in objects_a for b in objects_b)


def longest_side_cm(obj) -> float:
    """Longest side of an object's box ("length, width, or height"), centimetres."""
    return float(np.max(obj.box.extent)) * 100.0


def horizontal_extent_m(obj) -> tuple[float, float]:
    """Size of the box's world-axis-aligned bounds along x and y, metres (ReVSI B.8's "objects
    exceeding 1.4 m along x or y")."""
    lo, hi = obj.box.aabb()
    return float(hi[0] - lo[0]), float(hi[1] - lo[1])


def direction_angle_deg(positioning, orienting, querying) -> float:
    """Angle of the querying point seen from the positioning point, counter-clockwise from the
    facing direction towards the orienting point, in the horizontal plane, degrees in [0, 360).

    Args: (3,) points (only x and y are used), metres.
    Raises:
        ValueError: the facing or querying direction has no horizontal length.
    """
    p = np.asarray(positioning, dtype=np.float64)[:2]
    f = np.asarray(orienting, dtype=np.float64)[:2] - p
    q = np.asarray(querying, dtype=np.float64)[:2] - p
    if np.linalg.norm(f) < 1e-9 or np.linalg.norm(q) < 1e-9:
        raise ValueError("direction undefined: objects coincide in the horizontal plane")
    ang = math.degrees(math.atan2(f[0] * q[1] - f[1] * q[0], f @ q))
    return ang % 360.0


def polygon_area_m2(polygon_xy: Sequence[Sequence[float]]) -> float:
    """Area of a simple polygon given as (N >= 3, 2+) vertices (x, y[, z]), square metres (shoelace).
    Raises ``ValueError`` for fewer than three vertices."""
    P = np.asarray(polygon_xy, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] < 3 or P.shape[1] < 2:
        raise ValueError(f"a polygon needs >= 3 vertices (x, y), got shape {P.shape}")
    x, y = P[:, 0], P[:, 1]
    return float(abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))) / 2.0)
