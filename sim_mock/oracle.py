"""``SceneOracle``: where a perfect pointing model would point, from the sim world's ground truth.

The sim model server answers as a model would (in a chosen point format, optionally with pixel
noise) from these points; the rule is the one a Point-Act participant expects (PointArena sec. 3.4):

- find the scene objects named in the instruction (names and aliases, case-insensitive, whole words);
- if the tool holds something, the target is the first mentioned object that is *not* held (the
  container in "put it in the blue bowl") and the point is the centre of its interior floor (a
  container) or of its top face (another object: "put it on the green cube");
- otherwise the target is the first mentioned graspable object (else the first mentioned one), and
  the point is the centre of its top face;
- nothing named, or the point off the image: no points.

Like a person looking at the image, the oracle points at what it can *see*: when the target's
top-centre pixel shows something else (the held object hovering in front of it, say), it points at
the middle of the target's visible top face instead (or of any visible part of it), at least
6 px inside its silhouette where it can (depth holes line silhouettes). Points on an
object resting inside a container count as the container. The visibility check renders the world's
clean object-id map (cached until the world changes).
"""

from __future__ import annotations

import threading

import cv2
import numpy as np

from .render import Renderer
from .world import SimWorld, default_world

__all__ = ["SceneOracle"]

_TOP_FACE_TOL_M = 0.004
_EDGE_MARGIN_PX = 6


class SceneOracle:
    """Ground-truth pointing on a ``SimWorld`` (thread-safe: reads the world under its lock).

    Args:
        world: the world (default: the process-wide ``default_world()``).
        visibility: point at the visible part of an occluded target (see module docstring); when
            ``False`` the point is always the projected ground-truth centre.
    """

    def __init__(self, world: SimWorld | None = None, visibility: bool = True) -> None:
        self.world = world or default_world()
        self.visibility = visibility
        self._lock = threading.Lock()
        self._renderer: Renderer | None = None
        self._cache_key = None
        self._cache = None

    def target(self, instruction: str) -> tuple[str, np.ndarray] | None:
        """``(object name, 3D point in the base frame (m))`` the instruction asks to point at, or ``None``."""
        w = self.world
        mentioned = w.scene.mentions(instruction if isinstance(instruction, str) else "")
        with w.lock:
            held = w.arm.attached
            if held is not None:
                names = [m for m in mentioned if m != held]
            else:
                names = [m for m in mentioned if not w.objects[m].is_container] or mentioned
            if not names:
                return None
            obj = w.objects[names[0]]
            return obj.name, obj.top_center_m

    def points(self, instruction: str, width: int, height: int) -> list[tuple[float, float]]:
        """The target as pixels ``[(u, v)]`` of an image of ``width`` x ``height`` (the camera image
        scaled to that size), or ``[]`` when nothing matches or the point is off the image."""
        try:
            width, height = int(width), int(height)
        except (TypeError, ValueError):
            return []
        hit = self.target(instruction)
        if hit is None or width <= 0 or height <= 0:
            return []
        native = self.world.intrinsics
        uv = native.project(self.world.T_base_camera.inverse().apply(hit[1]))[0]
        if not native.contains(uv[0], uv[1]):
            return []
        if self.visibility:
            uv = self._visible_point(hit[0], uv)
        sx, sy = width / native.width, height / native.height
        u, v = (uv[0] + 0.5) * sx - 0.5, (uv[1] + 0.5) * sy - 0.5  # pixel centres at integers
        return [(float(u), float(v))]

    def mask_of(self, name: str) -> np.ndarray | None:
        """``(H, W)`` bool: the pixels of object ``name`` on the camera image of the current scene
        (a container's include what lies in it), or ``None`` for an unknown name."""
        objects, _, ids = self._id_map()
        names = [o.name for o in objects]
        if name not in names:
            return None
        return np.isin(ids, list(_accepted_ids(objects, names.index(name))))

    # -- visibility -------------------------------------------------------------------------------
    def _id_map(self):
        w = self.world
        with w.lock:
            key = (w.version, id(w))
            objects = list(w.objects.values())
        with self._lock:
            if self._cache_key == key:
                return self._cache
            if self._renderer is None:
                self._renderer = Renderer(w.intrinsics, w.T_base_camera, w.scene.table_z_m, w.scene.table_color_rgb)
            _, depth, ids = self._renderer.render(objects, with_ids=True)
            self._cache_key, self._cache = key, (objects, depth, ids)
            return self._cache

    def _visible_point(self, name: str, uv: np.ndarray) -> np.ndarray:
        objects, depth, ids = self._id_map()
        names = [o.name for o in objects]
        if name not in names:
            return uv
        k = names.index(name)
        target = objects[k]
        accept = _accepted_ids(objects, k)
        mask = np.isin(ids, list(accept)).astype(np.uint8)
        # Keep clear of the silhouette: a depth camera leaves holes there, and the robust depth rule
        # then takes the nearest surface, which may be the occluder.
        kernel = np.ones((2 * _EDGE_MARGIN_PX + 1, 2 * _EDGE_MARGIN_PX + 1), np.uint8)
        inner = cv2.erode(mask, kernel, borderValue=0).astype(bool)
        col, row = int(round(uv[0])), int(round(uv[1]))
        if inner[row, col]:
            return uv
        for region in (inner & (ids == k), ids == k):
            rows, cols = np.nonzero(region)
            if rows.size == 0:
                continue
            z = self._renderer.points_base_m(depth, rows, cols)[:, 2]
            top = np.abs(z - target.top_center_m[2]) <= _TOP_FACE_TOL_M
            if np.any(top):
                rows, cols = rows[top], cols[top]
            # the pixel nearest to the middle of the visible (top) region
            mid = np.array([np.median(cols), np.median(rows)])
            i = int(np.argmin((cols - mid[0]) ** 2 + (rows - mid[1]) ** 2))
            return np.array([float(cols[i]), float(rows[i])])
        return uv  # not visible at all: point where ground truth says it is


def _accepted_ids(objects: list, k: int) -> set[int]:
    """Render ids that count as object ``k``: itself, and for a container what lies in it (something
    lying in the bowl is part of "in the bowl")."""
    target = objects[k]
    accept = {k}
    if target.is_container:
        accept |= {i for i, o in enumerate(objects)
                   if i != k and target.interior_contains(o.position_m[:2])
                   and o.position_m[2] < target.position_m[2] + target.height_m}
    return accept
