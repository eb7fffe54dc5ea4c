"""One scene model for every 3D source: labelled objects with mesh vertices or an oriented box.

Coordinates are metres in the scene's (aligned) world frame, z up. A ``SceneObject`` carries
either its mesh ``vertices`` (ScanNet, ScanNet++) or an oriented ``box`` (VSI-Bench meta, ReVSI),
or both; ``surface_points`` gives one point set in either case (box mode samples the box
surface, PinpointQA sec. 3.2 measures "the shortest distance between mesh vertices").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .errors import SceneFormatError

__all__ = ["OrientedBox", "SceneObject", "Scene"]


def _vec3(value, what: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64).reshape(3)
    except (TypeError, ValueError) as e:
        raise SceneFormatError(f"{what}: expected 3 numbers, got {value!r}") from e
    if not np.all(np.isfinite(arr)):
        raise SceneFormatError(f"{what}: not finite: {value!r}")
    return arr


@dataclass(frozen=True, eq=False)
class OrientedBox:
    """An oriented box.

    Attributes:
        center: (3,) float64, metres.
        extent: (3,) float64, full side lengths along the box's own axes, metres (>= 0).
        rotation: (3, 3) float64; column ``i`` is the world direction of box axis ``i``
            (world = rotation @ local + center, the Open3D / ReVSI convention).

    Raises:
        SceneFormatError: wrong shapes, negative extent, or a rotation that is not orthonormal
            (tolerance 1e-2, enough for the 3-decimal rotations of the ReVSI files).
    """

    center: np.ndarray
    extent: np.ndarray
    rotation: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "center", _vec3(self.center, "box center"))
        object.__setattr__(self, "extent", _vec3(self.extent, "box extent"))
        try:
            rot = np.asarray(self.rotation, dtype=np.float64).reshape(3, 3)
        except (TypeError, ValueError) as e:
            raise SceneFormatError(f"box rotation: expected 3x3 numbers, got {self.rotation!r}") from e
        if np.any(self.extent < 0):
            raise SceneFormatError(f"box extent must be >= 0, got {self.extent.tolist()}")
        if not np.all(np.isfinite(rot)) or np.abs(rot.T @ rot - np.eye(3)).max() > 1e-2:
            raise SceneFormatError(f"box rotation is not orthonormal: {rot.tolist()}")
        object.__setattr__(self, "rotation", rot)

    def corners(self) -> np.ndarray:
        """(8, 3) float64 world corners, metres."""
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=np.float64)
        return self.center + (signs * (self.extent / 2.0)) @ self.rotation.T

    def aabb(self) -> tuple[np.ndarray, np.ndarray]:
        """World axis-aligned bounds ``(min (3,), max (3,))``, metres."""
        c = self.corners()
        return c.min(axis=0), c.max(axis=0)

    def sample_surface(self, spacing_m: float = 0.01) -> np.ndarray:
        """Points on the six faces on a regular grid, edges and corners included.

        Neighbouring samples on a face are at most ``spacing_m`` apart, so the shortest distance
        between two sampled boxes overestimates the true surface distance by at most
        ``spacing_m * sqrt(2)`` (half a diagonal on each side). Deterministic (no randomness).

        Args:
            spacing_m: grid step, metres (> 0).
        Returns:
            (N, 3) float64 world points, metres. A degenerate (zero-extent) axis collapses
            its two faces onto one.
        Raises:
            ValueError: spacing_m <= 0.
        """
        if not spacing_m > 0:
            raise ValueError(f"spacing_m must be > 0, got {spacing_m}")
        half = self.extent / 2.0
        counts = [max(2, int(math.ceil(e / spacing_m)) + 1) if e > 0 else 1 for e in self.extent]
        axes = [np.linspace(-h, h, n) for h, n in zip(half, counts)]
        # Faces without repeated edges: the two x faces take the full (y, z) grid, the y faces
        # the x-interior, the z faces the x- and y-interior (a degenerate axis has one face).
        inner = [a[1:-1] if len(a) > 2 else a[:0] for a in axes]
        faces = []
        for fixed, (ga_axis, gb_axis) in ((0, (axes[1], axes[2])), (1, (inner[0], axes[2])), (2, (inner[0], inner[1]))):
            a, b = [i for i in range(3) if i != fixed]
            if len(axes[fixed]) == 1 and fixed > 0:
                # a flat box: the interior of a collapsed axis is empty, so fill its one face fully
                ga_axis = axes[a] if fixed == 1 else axes[0]
                gb_axis = axes[b] if fixed == 1 else axes[1]
            ga, gb = np.meshgrid(ga_axis, gb_axis, indexing="ij")
            sides = (-half[fixed], half[fixed]) if half[fixed] > 0 else (0.0,)
            for side in sides:
                pts = np.empty((ga.size, 3))
                pts[:, a] = ga.ravel()
                pts[:, b] = gb.ravel()
                pts[:, fixed] = side
                faces.append(pts)
        local = np.concatenate(faces)
        if min(counts) == 1:  # collapsed axes make faces coincide: drop the repeats
            local = np.unique(local, axis=0)
        return self.center + local @ self.rotation.T


@dataclass(frozen=True, eq=False)
class SceneObject:
    """One annotated object instance.

    Attributes:
        object_id: the source's instance id, as a string.
        label: the source label, lower-cased and stripped (PinpointQA sec. 3.2 matches lower-case
            labels exactly; the original wording is otherwise kept).
        centroid: (3,) float64 metres: mean of the vertices (sec. 3.2) for mesh sources, the
            given centroid / box centre for box sources.
        box: the oriented box, or None.
        vertices: (N, 3) float64 metres, or None.

    Raises:
        SceneFormatError: empty label, neither vertices nor box, bad shapes.
    """

    object_id: str
    label: str
    centroid: np.ndarray
    box: OrientedBox | None = None
    vertices: np.ndarray | None = None

    def __post_init__(self) -> None:
        label = str(self.label).strip().lower()
        if not label:
            raise SceneFormatError(f"object {self.object_id!r} has an empty label")
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "object_id", str(self.object_id))
        object.__setattr__(self, "centroid", _vec3(self.centroid, f"centroid of object {self.object_id!r}"))
        if self.vertices is not None:
            v = np.asarray(self.vertices, dtype=np.float64)
            if v.ndim != 2 or v.shape[1] != 3 or len(v) == 0:
                raise SceneFormatError(f"object {self.object_id!r}: vertices must be (N>0, 3), got {v.shape}")
            object.__setattr__(self, "vertices", v)
        if self.vertices is None and self.box is None:
            raise SceneFormatError(f"object {self.object_id!r} has neither vertices nor a box")

    @classmethod
    def from_vertices(cls, object_id: str, label: str, vertices: np.ndarray) -> "SceneObject":
        """A mesh object whose centroid is the mean of its vertices (PinpointQA sec. 3.2)."""
        v = np.asarray(vertices, dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != 3 or len(v) == 0:
            raise SceneFormatError(f"object {object_id!r}: vertices must be (N>0, 3), got {v.shape}")
        return cls(object_id=object_id, label=label, centroid=v.mean(axis=0), vertices=v)

    def surface_points(self, spacing_m: float = 0.01) -> np.ndarray:
        """(N, 3) float64 metres: the mesh vertices if present, else the sampled box surface."""
        if self.vertices is not None:
            return self.vertices
        assert self.box is not None  # guaranteed by __post_init__
        return self.box.sample_surface(spacing_m)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """World axis-aligned bounds ``(min (3,), max (3,))``, metres."""
        if self.vertices is not None:
            return self.vertices.min(axis=0), self.vertices.max(axis=0)
        assert self.box is not None
        return self.box.aabb()


@dataclass(frozen=True, eq=False)
class Scene:
    """A scanned room.

    Attributes:
        scene_id: the source's scene id (``scene0011_00``, ``7b6477cb95``, ``41069025``).
        source_dataset: ``scannet``, ``scannetpp`` or ``arkitscenes``.
        objects: the annotated instances.
        room_size_m2: floor area in square metres when the source gives it, else None.
        room_center: (3,) float64 metres when given, else None.
        variant: which annotation of the same scene this is when a file holds several
            (ReVSI files may hold ``revsi`` and ``vsi``); empty otherwise.
        source_path: the file or folder the scene was read from.
    """

    scene_id: str
    source_dataset: str
    objects: list[SceneObject]
    room_size_m2: float | None = None
    room_center: np.ndarray | None = None
    variant: str = ""
    source_path: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def room_size(self) -> float | None:
        """Alias of ``room_size_m2`` (square metres), the VSI-Bench field name."""
        return self.room_size_m2

    def labels(self) -> list[str]:
        return [o.label for o in self.objects]
