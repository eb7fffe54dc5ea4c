"""Ray casting of the tabletop primitives: clean colour and depth of a pinhole camera, fast enough for
a live view (well above 30 fps at 640x480 on one core).

How it stays fast: the per-pixel ray directions and the static background (table plane and the floor
around it, with their shading and texture) are computed once per camera; each object is
intersected only with the rays inside the image rectangle its bounding box projects to, with numpy
over that rectangle, and the result is cached by the object's pose, so a frame in which one object
moves ray-casts that one alone; the patches are z-buffered into a copy of the background.

Ray parameterisation: ``p = eye + t * R @ [(u - ppx)/fx, (v - ppy)/fy, 1]``, so the ray parameter
``t`` at a hit is the optical-frame z of the point, i.e. exactly what a depth camera reports.

Shading is Lambertian under one directional light plus ambient, so the faces of a cube differ in
brightness while keeping their hue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pointlab.perception.extrinsics import RigidTransform
from pointlab.perception.frame import Intrinsics

from .scene import ObjectSpec

__all__ = ["Renderer", "LIGHT_DIR", "AMBIENT", "DIFFUSE", "FLOOR_Z_M", "TABLE_EXTENT_M", "ToolShape"]

LIGHT_DIR = np.array([0.35, 0.25, 1.0]) / np.linalg.norm([0.35, 0.25, 1.0])  # towards the light, base frame
AMBIENT, DIFFUSE = 0.42, 0.62
FLOOR_Z_M = -0.74                                     # the room floor under the table
FLOOR_COLOR_RGB = (70, 66, 62)
TABLE_EXTENT_M = ((-0.25, 1.05), (-0.75, 0.75))       # table top x and y ranges, base frame
_MAX_PATCHES = 64


@dataclass(frozen=True)
class ToolShape:
    """The end effector drawn as a vertical cylinder from ``tcp_m`` upwards (optional)."""

    tcp_m: tuple[float, float, float]
    radius_m: float = 0.028
    length_m: float = 0.16
    color_rgb: tuple[int, int, int] = (58, 58, 64)


def _shade(albedo, normals: np.ndarray) -> np.ndarray:
    """Lambertian shading: ``(N, 3)`` unit normals -> ``(N, 3)`` float32 RGB 0-255."""
    lam = AMBIENT + DIFFUSE * np.clip(normals @ LIGHT_DIR, 0.0, None)
    return (lam[:, None] * np.asarray(albedo, dtype=np.float32)[None, :]).astype(np.float32)


class Renderer:
    """Renders clean (noise-free) colour and depth of a table and upright primitives.

    Args:
        intrinsics: the camera's pinhole intrinsics (no distortion).
        T_base_camera: the optical frame's pose in the base frame (metres).
        table_z_m: table top height, metres.
        table_color_rgb: table albedo.
    """

    def __init__(self, intrinsics: Intrinsics, T_base_camera: RigidTransform, table_z_m: float = 0.0,
                 table_color_rgb=(150, 146, 140)) -> None:
        if intrinsics.has_distortion:
            raise ValueError("the sim renderer models an undistorted pinhole camera")
        self.intrinsics, self.T = intrinsics, T_base_camera
        self.table_z_m = float(table_z_m)
        w, h = intrinsics.width, intrinsics.height
        u, v = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
        rays_cam = np.stack([(u - intrinsics.ppx) / intrinsics.fx, (v - intrinsics.ppy) / intrinsics.fy,
                             np.ones_like(u)], axis=-1)
        self.eye = T_base_camera.translation_m.copy()
        self.rays = (rays_cam @ T_base_camera.rotation.T).astype(np.float64)  # (H, W, 3), base frame
        bg_color, bg_depth = self._background(np.asarray(table_color_rgb, dtype=np.float32))
        self._bg_rgb = np.clip(bg_color, 0, 255).astype(np.uint8)
        self._bg_zbuf = np.where(bg_depth > 0, bg_depth, np.inf).astype(np.float32)
        self._patches: dict = {}

    # -- static background ------------------------------------------------------------------------
    def _background(self, table_albedo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        h, w = self.rays.shape[:2]
        color = np.zeros((h, w, 3), np.float32)
        depth = np.zeros((h, w), np.float32)
        dz = self.rays[..., 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            t_table = (self.table_z_m - self.eye[2]) / dz
            t_floor = (FLOOR_Z_M - self.eye[2]) / dz
        p = self.eye + t_table[..., None] * self.rays
        (x0, x1), (y0, y1) = TABLE_EXTENT_M
        on_table = (t_table > 0) & (p[..., 0] >= x0) & (p[..., 0] <= x1) & (p[..., 1] >= y0) & (p[..., 1] <= y1)
        # a faint wood-like grain fixed to the table, so the surface is not a flat colour
        grain = 1.0 + 0.035 * np.sin(55.0 * p[..., 0] + 4.0 * np.sin(9.0 * p[..., 1])) \
            + 0.02 * np.sin(230.0 * p[..., 0] + 1.7 * np.sin(31.0 * p[..., 1]))
        up = np.array([[0.0, 0.0, 1.0]])
        table_rgb = _shade(table_albedo, up)[0]
        color[on_table] = grain[on_table][:, None] * table_rgb
        depth[on_table] = t_table[on_table]
        on_floor = ~on_table & (t_floor > 0)
        color[on_floor] = _shade(np.asarray(FLOOR_COLOR_RGB, np.float32), up)[0]
        depth[on_floor] = t_floor[on_floor]
        return color, depth

    # -- objects -------------------------------------------------------------------------------------
    def _rect(self, corners_m: np.ndarray) -> tuple[int, int, int, int] | None:
        """Pixel rectangle ``(r0, r1, c0, c1)`` (end-exclusive) covering the projected corners."""
        h, w = self.rays.shape[:2]
        pc = self.T.inverse().apply(corners_m)
        if np.any(pc[:, 2] <= 1e-3):
            return 0, h, 0, w
        uv = self.intrinsics.project(pc)
        c0, r0 = np.floor(uv.min(axis=0)).astype(int) - 1
        c1, r1 = np.ceil(uv.max(axis=0)).astype(int) + 2
        r0, r1, c0, c1 = max(r0, 0), min(r1, h), max(c0, 0), min(c1, w)
        if r0 >= r1 or c0 >= c1:
            return None
        return r0, r1, c0, c1

    def _local(self, obj_xy, yaw_deg, rays: np.ndarray):
        """Ray origin and directions in an upright object's frame (yaw about z at ``obj_xy``)."""
        c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
        o = self.eye - np.array([obj_xy[0], obj_xy[1], 0.0])
        rot = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])  # base -> object
        return rot @ o, rays @ rot.T, rot

    @staticmethod
    def _cylinder_side(o, d, radius, z0, z1, far: bool):
        """Ray parameter of the near (or far) hit with a vertical cylinder side within z0..z1 (inf = miss)."""
        a = d[..., 0] ** 2 + d[..., 1] ** 2
        b = 2.0 * (o[0] * d[..., 0] + o[1] * d[..., 1])
        c = o[0] ** 2 + o[1] ** 2 - radius ** 2
        disc = b * b - 4.0 * a * c
        with np.errstate(invalid="ignore", divide="ignore"):
            sq = np.sqrt(disc)
            t = (-b + sq) / (2.0 * a) if far else (-b - sq) / (2.0 * a)
        z = o[2] + t * d[..., 2]
        ok = (disc >= 0) & (t > 0) & (z >= z0) & (z <= z1)
        return np.where(ok, t, np.inf)

    @staticmethod
    def _disk(o, d, z, r_in, r_out):
        """Ray parameter of the hit with a horizontal annulus at height ``z`` (inf = miss)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            t = (z - o[2]) / d[..., 2]
        x, y = o[0] + t * d[..., 0], o[1] + t * d[..., 1]
        r2 = x * x + y * y
        ok = (t > 0) & (r2 <= r_out ** 2) & (r2 >= r_in ** 2)
        return np.where(ok, t, np.inf)

    def _intersect(self, shape: str, size, z0: float, wall: float, floor: float, o, d):
        """Nearest hit ``t`` (inf = miss) and its unit normal (object frame), over a ray block."""
        if shape == "box":
            half = np.array([size[0] / 2, size[1] / 2, size[2] / 2])
            oc = o - np.array([0.0, 0.0, z0 + size[2] / 2])
            with np.errstate(divide="ignore", invalid="ignore"):
                inv = 1.0 / d
                t1, t2 = (-half - oc) * inv, (half - oc) * inv
            tnear_axes = np.minimum(t1, t2)
            tmin = np.nanmax(tnear_axes, axis=-1)
            tmax = np.nanmin(np.maximum(t1, t2), axis=-1)
            hit = (tmax >= tmin) & (tmin > 0)
            t = np.where(hit, tmin, np.inf)
            axis = np.argmax(np.nan_to_num(tnear_axes, nan=-np.inf), axis=-1)
            normal = np.zeros(d.shape)
            idx = np.indices(axis.shape)
            normal[(*idx, axis)] = -np.sign(np.take_along_axis(d, axis[..., None], axis=-1)[..., 0])
            return t, normal
        radius, height = size[0] / 2, size[2]
        z1 = z0 + height
        cands = [self._cylinder_side(o, d, radius, z0, z1, far=False)]
        if shape == "cylinder":
            cands.append(self._disk(o, d, z1, 0.0, radius))
        else:  # bowl: outer wall, rim, inner wall (seen from inside), floor
            r_in = radius - wall
            cands += [self._disk(o, d, z1, r_in, radius),
                      self._cylinder_side(o, d, r_in, z0 + floor, z1, far=True),
                      self._disk(o, d, z0 + floor, 0.0, r_in)]
        ts = np.stack(cands, axis=0)
        which = np.argmin(ts, axis=0)
        t = np.take_along_axis(ts, which[None], axis=0)[0]
        with np.errstate(invalid="ignore", divide="ignore"):  # misses: inf * 0 -> nan, masked later
            p = o + t[..., None] * d
            rxy = np.hypot(p[..., 0], p[..., 1])
            side = np.stack([p[..., 0] / rxy, p[..., 1] / rxy, np.zeros_like(rxy)], axis=-1)
        up = np.zeros(d.shape)
        up[..., 2] = 1.0
        # candidate order: 0 outer side, then cylinder: 1 top | bowl: 1 rim, 2 inner wall, 3 floor
        normal = np.where((which == 0)[..., None], side, up)
        if shape == "bowl":
            normal = np.where((which == 2)[..., None], -side, normal)
        return t, np.nan_to_num(normal)

    def render(self, objects: list[ObjectSpec], tool: ToolShape | None = None, with_ids: bool = False):
        """Clean colour ``(H, W, 3)`` uint8 RGB and depth ``(H, W)`` float32 metres (optical z,
        0 = nothing hit) of the table with ``objects`` (and the tool, if given).

        With ``with_ids`` a third array ``(H, W)`` int16 says which item each pixel shows: the index
        into ``objects``, ``len(objects)`` for the tool, ``-1`` for the table or floor."""
        color = self._bg_rgb.copy()
        ids = np.full(self._bg_zbuf.shape, -1, np.int16) if with_ids else None
        zbuf = self._bg_zbuf.copy()
        items = [(o.shape, o.size_m, o.position_m, o.yaw_deg, o.wall_m, o.floor_m, o.color_rgb, o.corners_m())
                 for o in objects]
        if tool is not None:
            x, y, z = tool.tcp_m
            size = (2 * tool.radius_m, 2 * tool.radius_m, tool.length_m)
            corners = ObjectSpec("_tool", "cylinder", size, tool.color_rgb, (x, y, z)).corners_m()
            items.append(("cylinder", size, (x, y, z), 0.0, 0.0, 0.0, tool.color_rgb, corners))
        for k, item in enumerate(items):
            patch = self._patch(item)
            if patch is None:
                continue
            (r0, r1, c0, c1), t, rgb8 = patch
            closer = t < zbuf[r0:r1, c0:c1]
            zbuf[r0:r1, c0:c1][closer] = t[closer]
            color[r0:r1, c0:c1][closer] = rgb8[closer]
            if ids is not None:
                ids[r0:r1, c0:c1][closer] = k
        zbuf[np.isinf(zbuf)] = 0.0
        depth = zbuf
        return (color, depth, ids) if with_ids else (color, depth)

    def _patch(self, item):
        """``(rect, t, rgb)`` of one primitive alone: its pixel rectangle, the hit range per pixel
        (inf = miss) and the shaded colour. Cached by the primitive's pose, so a frame in which one
        object moves ray-casts only that one."""
        key = item[:7]
        hit = self._patches.get(key)
        if hit is not None or key in self._patches:
            return hit
        shape, size, pos, yaw, wall, floor, rgb, corners = item
        rect = self._rect(corners)
        if rect is None:
            patch = None
        else:
            r0, r1, c0, c1 = rect
            o, d, rot = self._local(pos[:2], yaw, self.rays[r0:r1, c0:c1])
            t, n_local = self._intersect(shape, size, pos[2], wall, floor, o, d)
            t = t.astype(np.float32)
            rgb8 = np.zeros(t.shape + (3,), np.uint8)
            hit_mask = np.isfinite(t)
            n_base = n_local[hit_mask] @ rot  # object -> base (rot is orthonormal)
            rgb8[hit_mask] = np.clip(_shade(np.asarray(rgb, np.float32), n_base), 0, 255).astype(np.uint8)
            patch = (rect, t, rgb8)
        if len(self._patches) >= _MAX_PATCHES:
            self._patches.pop(next(iter(self._patches)))  # oldest first (dicts keep insertion order)
        self._patches[key] = patch
        return patch

    def points_base_m(self, depth_m: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Base-frame points ``(N, 3)`` (metres) seen at pixels ``(rows, cols)`` with clean depth."""
        return self.eye + depth_m[rows, cols][:, None] * self.rays[rows, cols]
