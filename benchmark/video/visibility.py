"""Which objects each frame shows, and whether a question is answerable from a budget's frames
(ReVSI sec. 5 "Frame-aware evaluation", App. B.4).

Two ways to know what a frame shows:

* **From camera poses** (:func:`box_visibility`): the object's oriented box is projected with the
  frame's pose and intrinsics; the object is visible when the projected box, clipped to the image,
  covers at least ``min_coverage_frac`` of the frame (default 5%, the ReVSI line below which
  visibility was labelled by hand: such objects come back with ``needs_review``), and, when a depth
  image aligned to the frame is given, is not hidden behind nearer surfaces.
* **From a visibility table** (:class:`VisibilityTable`) when there are no poses (the shared
  ARKitScenes frames have none): ``{"frames": {"<frame index>": ["chair#0", "sofa#0", ...]}}``
  listing object ids (``<label>#<index>``, the ids of ``pointlab.benchmark.scenes`` for the
  VSI-Bench meta format). A frame absent from the table is *unknown*: it shows nothing for
  answerability, and it is dropped from query-dropped dummy videos (it cannot be certified free).

Object references in questions are ids (``"chair#2"``) or bare labels (``"chair"`` = any chair).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import RecordError

__all__ = ["VisibilityTable", "BoxVisibility", "box_visibility", "label_of", "matches"]

# the 12 edges of a box whose corners are ordered as OrientedBox.corners() (sx, sy, sz loops)
_EDGES = [(a, b) for a in range(8) for b in range(a + 1, 8) if bin(a ^ b).count("1") == 1]


def label_of(object_id: str) -> str:
    """``"chair#2"`` -> ``"chair"``; a bare label is returned unchanged."""
    return object_id.split("#", 1)[0]


def matches(object_id: str, ref: str) -> bool:
    """True when ``object_id`` is the object ``ref`` names (an id, or a bare label = any instance)."""
    return object_id == ref if "#" in ref else label_of(object_id) == ref


@dataclass(frozen=True)
class VisibilityTable:
    """Object ids visible in each annotated frame (frame index -> ids)."""

    frames: Mapping[int, frozenset[str]]
    source: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "") -> "VisibilityTable":
        """From ``{"frames": {"<index>": [ids]}}``. Raises ``RecordError`` when malformed."""
        frames = data.get("frames") if isinstance(data, Mapping) else None
        if not isinstance(frames, Mapping):
            raise RecordError(f'{source or "visibility table"}: expected {{"frames": {{index: [object ids]}}}}')
        out: dict[int, frozenset[str]] = {}
        for key, ids in frames.items():
            try:
                idx = int(key)
            except (TypeError, ValueError) as e:
                raise RecordError(f"{source}: frame key {key!r} is not an integer") from e
            if idx < 0 or not isinstance(ids, list) or not all(isinstance(x, str) and x for x in ids):
                raise RecordError(f"{source}: frame {key!r}: expected a list of object ids")
            out[idx] = frozenset(ids)
        return cls(frames=out, source=source)

    @classmethod
    def load(cls, path: str | Path) -> "VisibilityTable":
        """Read a JSON visibility table. Raises ``RecordError`` (missing, not JSON, malformed)."""
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8-sig"))  # -sig: a BOM is not an error
        except (OSError, ValueError, RecursionError) as e:
            raise RecordError(f"{p}: cannot read visibility table ({e})") from e
        return cls.from_dict(data, str(p))

    def to_dict(self) -> dict[str, Any]:
        return {"frames": {str(k): sorted(v) for k, v in sorted(self.frames.items())}}

    def objects_in(self, indices: Iterable[int]) -> set[str]:
        """Ids visible in at least one of ``indices`` (unknown frames contribute nothing)."""
        out: set[str] = set()
        for i in indices:
            out |= self.frames.get(int(i), frozenset())
        return out

    def shows(self, index: int, refs: Iterable[str]) -> bool | None:
        """Whether frame ``index`` shows any of ``refs``; ``None`` when the frame is not annotated."""
        ids = self.frames.get(int(index))
        if ids is None:
            return None
        return any(matches(o, r) for o in ids for r in refs)

    def visible(self, refs: Iterable[str], indices: Iterable[int]) -> bool:
        """True when every reference is seen in at least one of ``indices``."""
        seen = self.objects_in(indices)
        return all(any(matches(o, r) for o in seen) for r in refs)

    def count(self, label: str, indices: Iterable[int]) -> int:
        """Distinct instances of ``label`` seen in ``indices`` (the per-budget count ground truth)."""
        return sum(1 for o in self.objects_in(indices) if label_of(o) == label)

    @classmethod
    def from_visibilities(cls, per_frame: Mapping[int, Mapping[str, "BoxVisibility"]]) -> "VisibilityTable":
        """A table from :func:`box_visibility` results ``{frame: {object_id: BoxVisibility}}``."""
        return cls(
            {int(f): frozenset(o for o, v in objs.items() if v.visible) for f, objs in per_frame.items()},
            source="poses",
        )


@dataclass(frozen=True)
class BoxVisibility:
    """Visibility of one box in one frame.

    Attributes:
        in_front: some part of the box lies in front of the camera (z > near).
        coverage_frac: area of the projected box clipped to the image / image area, in [0, 1].
        unoccluded_frac: share of depth pixels inside the projected box that are not in front
            of the box (None without depth or when no pixel had valid depth).
        visible: ``coverage_frac >= min_coverage_frac`` and not occluded.
        needs_review: some coverage but below the threshold (ReVSI labels these by hand).
    """

    in_front: bool
    coverage_frac: float
    unoccluded_frac: float | None
    visible: bool
    needs_review: bool
    box_px: tuple[float, float, float, float] | None  # (u_min, v_min, u_max, v_max) clipped


def box_visibility(
    corners_world: np.ndarray,
    T_world_camera: np.ndarray,
    K: np.ndarray,
    width: int,
    height: int,
    depth_m: np.ndarray | None = None,
    *,
    min_coverage_frac: float = 0.05,
    min_unoccluded_frac: float = 0.3,
    occlusion_tol_m: float = 0.1,
    near_m: float = 0.05,
) -> BoxVisibility:
    """Project a box into a frame and decide whether the frame shows it.

    Args:
        corners_world: (8, 3) float, metres, ordered as ``OrientedBox.corners()``.
        T_world_camera: (4, 4) camera pose in the world (optical frame: x right, y down, z forward).
        K: (3, 3) intrinsics, pixels.
        width, height: image size, pixels.
        depth_m: optional (height, width) float depth in metres aligned to the frame (0 = no data).
            A pixel of the projected box whose depth is more than ``occlusion_tol_m`` nearer than
            the box's nearest point counts as an occluder; pixels within the box's depth range
            count as the object; farther pixels (background seen past the box outline) are ignored.
        min_coverage_frac: visibility threshold on the clipped projected area (ReVSI: 5%).
        min_unoccluded_frac: minimum share of object pixels among object + occluder pixels.
        near_m: near plane; box edges crossing it are clipped there.
    Raises:
        ValueError: wrong array shapes.
    """
    c = np.asarray(corners_world, dtype=np.float64)
    T = np.asarray(T_world_camera, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    if c.shape != (8, 3) or T.shape != (4, 4) or K.shape != (3, 3):
        raise ValueError(f"expected corners (8,3), pose (4,4), K (3,3); got {c.shape}, {T.shape}, {K.shape}")
    proj = project_box_px(c, T, K, width, height, near_m=near_m)
    if proj is None:
        return BoxVisibility(False, 0.0, None, False, False, None)
    (u0, v0, u1, v1), pc = proj
    coverage = max(0.0, u1 - u0) * max(0.0, v1 - v0) / float(width * height)
    box_px = (u0, v0, u1, v1) if coverage > 0 else None
    unoccluded = None
    if depth_m is not None and coverage > 0:
        d = np.asarray(depth_m, dtype=np.float64)
        if d.shape != (height, width):
            raise ValueError(f"depth must be ({height}, {width}), got {d.shape}")
        win = d[int(np.ceil(v0)) : int(np.floor(v1)) + 1, int(np.ceil(u0)) : int(np.floor(u1)) + 1]
        win = win[win > 0]
        z_near, z_far = max(pc[:, 2].min(), near_m), pc[:, 2].max()
        occluder = np.count_nonzero(win < z_near - occlusion_tol_m)
        on_object = np.count_nonzero((win >= z_near - occlusion_tol_m) & (win <= z_far + occlusion_tol_m))
        if occluder + on_object > 0:
            unoccluded = on_object / (occluder + on_object)
    visible = coverage >= min_coverage_frac and (unoccluded is None or unoccluded >= min_unoccluded_frac)
    return BoxVisibility(
        True, float(coverage), unoccluded, bool(visible), bool(0 < coverage < min_coverage_frac), box_px
    )


def project_box_px(
    corners_world: np.ndarray, T_world_camera: np.ndarray, K: np.ndarray, width: int, height: int, near_m: float = 0.05
) -> tuple[tuple[float, float, float, float], np.ndarray] | None:
    """The 2D box ``(u_min, v_min, u_max, v_max)`` of a 3D box's projection, clipped to the image
    ``[-0.5, W-0.5] x [-0.5, H-0.5]`` (pixel centres at integers), and the (8, 3) corners in the
    camera optical frame. Edges crossing the near plane are clipped there. ``None`` when the box
    lies wholly behind the near plane. A box outside the image gives a zero-area (degenerate) box.

    Args:
        corners_world: (N, 3) float box corners (8 for a box; any hull points work), metres.
        T_world_camera: (4, 4) camera pose, optical frame (x right, y down, z forward).
        K: (3, 3) intrinsics, pixels.
    Raises:
        ValueError: wrong shapes.
    """
    c = np.asarray(corners_world, dtype=np.float64)
    T = np.asarray(T_world_camera, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    if c.ndim != 2 or c.shape[1] != 3 or T.shape != (4, 4) or K.shape != (3, 3):
        raise ValueError(f"expected corners (N,3), pose (4,4), K (3,3); got {c.shape}, {T.shape}, {K.shape}")
    T_cw = np.linalg.inv(T)
    pc = c @ T_cw[:3, :3].T + T_cw[:3, 3]
    pts = [p for p in pc if p[2] > near_m]
    if len(c) == 8:
        for a, b in _EDGES:
            za, zb = pc[a, 2], pc[b, 2]
            if (za > near_m) != (zb > near_m):
                t = (near_m - za) / (zb - za)
                pts.append(pc[a] + t * (pc[b] - pc[a]))
    if not pts:
        return None
    P = np.array(pts)
    uv = (P[:, :2] / P[:, 2:3]) * [K[0, 0], K[1, 1]] + [K[0, 2], K[1, 2]]
    lo = np.clip(uv.min(axis=0), -0.5, [width - 0.5, height - 0.5])
    hi = np.clip(uv.max(axis=0), -0.5, [width - 0.5, height - 0.5])
    return (float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])), pc


def table_from_poses(
    objects: Mapping[str, np.ndarray],
    poses: Sequence[np.ndarray],
    K: np.ndarray,
    width: int,
    height: int,
    depths: Sequence[np.ndarray | None] | None = None,
    **kwargs: Any,
) -> tuple[VisibilityTable, dict[int, dict[str, BoxVisibility]]]:
    """A visibility table for a posed video: ``objects`` maps object id -> (8, 3) box corners;
    ``poses[i]`` is frame ``i``'s ``T_world_camera``. Returns the table and every per-frame result
    (for the ``needs_review`` list). ``kwargs`` go to :func:`box_visibility`."""
    per_frame: dict[int, dict[str, BoxVisibility]] = {}
    for i, T in enumerate(poses):
        depth = depths[i] if depths is not None else None
        per_frame[i] = {oid: box_visibility(c, T, K, width, height, depth, **kwargs) for oid, c in objects.items()}
    return VisibilityTable.from_visibilities(per_frame), per_frame


__all__ += ["table_from_poses", "project_box_px"]
