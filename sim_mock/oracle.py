"""``SceneOracle``: where a perfect pointing model would point, on the image it was sent.

The sim model server answers as a model would (in a chosen point format, optionally with pixel
noise) from these points. The oracle answers from the **image**: it finds the sim camera frame the
image shows (``frames.FrameLog.match_image``: the image may be JPEG-compressed and resized on its
way) and reads that frame's segmentation masks and clean depth (MuJoCo's segmentation pass of the
physics state the frame shows). Two requests with the same text on different images get the
points of their own images; an image that is no frame of this world gets no point.

Which object (PointArena sec. 3.4, what a Point-Act participant expects):

- the scene objects named in the instruction (names and aliases, case-insensitive, whole words);
- if the tool held something in that frame, the place's reference (``Scene.place_target``: the
  first other named object after a relation word, else the first other named one: the container
  in "put it in the blue bowl"); otherwise the first named graspable object (else the first
  named one);
- "handle" in the instruction and a mug as the target: the mug's handle;
- nothing named, or the target not visible in the frame: no points.

Which pixel, like a person looking at the picture: the middle of the target's visible top face
(the mask pixels whose 3D point, from the frame's clean depth, lies within ``TOP_FACE_TOL_M`` of
the highest part of the object), at least ``EDGE_MARGIN_PX`` inside the silhouette where it can
(a depth camera leaves holes along silhouettes); for a container the middle of its visible floor,
where anything lying in it counts as the container. A place *next to* an object ("put it next to
the orange can", ``Scene.place_target`` gives ``near``) points at the table beside it instead: the
centre of a free, visible patch of table where the held object fits, ``BESIDE_GAP_M`` from the
reference (``_beside``).
"""

from __future__ import annotations

import cv2
import numpy as np

from pointlab.robot.workspace import Workspace

from .frames import FrameLabels
from .world import DEFAULT_CAMERA_TARGET_M, SimWorld, default_world

__all__ = ["SceneOracle", "TOP_FACE_TOL_M", "EDGE_MARGIN_PX", "BESIDE_GAP_M"]

TOP_FACE_TOL_M = 0.004
EDGE_MARGIN_PX = 6
# Aimed gap between the held object and the reference for "next to", metres: placing lands within
# about a centimetre of the point, so 1.5 cm keeps the two apart and well inside the 6 cm of
# bridge.trials.placement.NEXT_TO_GAP_M (the footprints are bounded by their corner circles, so
# the real gap is 1.5-3.5 cm).
BESIDE_GAP_M = 0.015
_TABLE_LABEL = -3  # frames.FrameLabels: table or floor


class SceneOracle:
    """Ground-truth pointing on the frames of a ``SimWorld`` (thread-safe).

    Args:
        world: the world (default: the process-wide ``default_world()``).
    """

    def __init__(self, world: SimWorld | None = None) -> None:
        self.world = world or default_world()

    def target(self, instruction: str, held: str | None = None) -> str | None:
        """The object an instruction asks to point at, given what the tool holds, or ``None``."""
        w = self.world
        text = instruction if isinstance(instruction, str) else ""
        if held is not None:
            place = w.scene.place_target(text, held)
            return place[1] if place else None
        mentioned = w.scene.mentions(text)
        names = [m for m in mentioned if not w.scene.spec(m).is_container] or mentioned
        return names[0] if names else None

    def points(self, instruction: str, image_rgb) -> list[tuple[float, float]]:
        """The target as pixels ``[(u, v)]`` of ``image_rgb`` (``(H, W, 3)`` uint8, any size: the
        camera image as sent), or ``[]`` when the image is no frame of this world, nothing is named,
        or the target is not visible."""
        img = np.asarray(image_rgb) if image_rgb is not None else None
        if img is None or img.ndim != 3 or img.shape[2] != 3:
            return []
        capture, _ = self.world.frames.match_image(img)
        if capture is None:
            return []
        labels = self.world.frames.labels_of_capture(capture)
        uv = self.point_on_labels(instruction, labels)
        if uv is None:
            return []
        intr = self.world.intrinsics
        sx, sy = img.shape[1] / intr.width, img.shape[0] / intr.height
        return [(float((uv[0] + 0.5) * sx - 0.5), float((uv[1] + 0.5) * sy - 0.5))]  # pixel centres at integers

    def points_on_frame(self, instruction: str, frame) -> list[tuple[float, float]]:
        """As ``points`` for a frame the sim camera produced (``RGBDFrame``), in its own pixels.

        Raises:
            KeyError: not a frame of this world.
        """
        uv = self.point_on_labels(instruction, self.world.frames.labels(frame))
        return [] if uv is None else [(float(uv[0]), float(uv[1]))]

    def mask_of(self, name: str) -> np.ndarray | None:
        """``(H, W)`` bool: the pixels of object ``name`` on the camera image of the current state
        (MuJoCo's segmentation pass; a container's mask includes what lies in it), or ``None`` for
        an unknown name."""
        labels = self.world.frames.labels_of_capture(self.world.capture())
        if name not in labels.names:
            return None
        spec = self.world.scene.spec(name)
        if spec.is_container:
            return self._container_floor(labels, name, spec) | labels.mask(name)
        return labels.mask(name)

    # -- the pixel ----------------------------------------------------------------------------------
    def point_on_labels(self, instruction: str, labels: FrameLabels) -> np.ndarray | None:
        """``(u, v)`` in the camera's native pixels on one segmentation, or ``None``."""
        name = self.target(instruction, labels.capture.held)
        if name is None:
            return None
        spec = self.world.scene.spec(name)
        held = labels.capture.held
        if held is not None and (to := self.world.scene.place_target(instruction or "", held)) and to[0] == "near":
            return self._beside(labels, name, held)
        if spec.shape == "mug" and "handle" in (instruction or "").lower():
            mask = self._part_mask(labels, name, "handle")
            return _middle(mask, mask)
        mask = labels.mask(name)
        if not mask.any():
            return None
        rows, cols = np.nonzero(mask)
        pts = self._base_points(labels.depth_m, rows, cols)
        if spec.is_container:
            region = self._container_floor(labels, name, spec)
        else:
            z = pts[:, 2]
            top = z >= np.percentile(z, 98) - TOP_FACE_TOL_M
            region = np.zeros_like(mask)
            region[rows[top], cols[top]] = True
        return _middle(region, mask)

    def _base_points(self, depth_m: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        intr = self.world.intrinsics
        z = depth_m[rows, cols].astype(np.float64)
        p_cam = np.stack([(cols - intr.ppx) / intr.fx * z, (rows - intr.ppy) / intr.fy * z, z], axis=1)
        return self.world.T_base_camera.apply(p_cam)

    def _container_floor(self, labels: FrameLabels, name: str, spec) -> np.ndarray:
        """Pixels of the container's visible floor, or of anything lying on it."""
        p, R = _pose_in(labels, self.world, name)
        inside = labels.labels >= 0
        rows, cols = np.nonzero(inside)
        pts = self._base_points(labels.depth_m, rows, cols)
        local = (pts - p) @ R
        radius = spec.size_m[0] / 2 - spec.wall_m - 0.005
        keep = (np.hypot(local[:, 0], local[:, 1]) <= radius) & (local[:, 2] < spec.height_m)
        region = np.zeros(labels.labels.shape, bool)
        region[rows[keep], cols[keep]] = True
        return region

    def _beside(self, labels: FrameLabels, name: str, held: str) -> np.ndarray | None:
        """The pixel of a table point beside ``name`` where ``held`` fits: on a circle around the
        reference, ``BESIDE_GAP_M`` beyond both objects' corner circles (a mug's handle included),
        in the arm's workspace, where the frame shows bare table over the held object's whole
        footprint (so nothing stands there and the camera sees it); of those, the one nearest the
        middle of the table the camera looks at. ``None`` when no such place is in view."""
        w = self.world
        p, R = _pose_in(labels, w, name)
        ref = w.scene.spec(name)
        ref = ref.at(p, float(np.degrees(np.arctan2(R[1, 0], R[0, 0]))))
        ref_r = float(np.max(np.hypot(*(ref.corners_m()[:, :2] - p[:2]).T)))
        held_r = float(np.hypot(*w.scene.spec(held).size_m[:2]) / 2)
        angles = np.radians(np.arange(0.0, 360.0, 15.0))
        centres = p[:2] + (ref_r + BESIDE_GAP_M + held_r) * np.stack([np.cos(angles), np.sin(angles)], axis=1)
        ws = Workspace()
        # a 5 mm grid over the held object's corner circle: any object standing there hides table pixels
        g = np.arange(-held_r, held_r + 1e-9, 0.005)
        patch = np.array([(x, y) for x in g for y in g if np.hypot(x, y) <= held_r])
        to_cam = w.T_base_camera.inverse()
        table_z = w.scene.table_z_m
        h, wid = labels.labels.shape
        for c in sorted(centres, key=lambda c: np.hypot(*(c - np.asarray(DEFAULT_CAMERA_TARGET_M[:2])))):
            r = float(np.hypot(*c))
            if not (
                ws.x_m[0] <= c[0] <= ws.x_m[1]
                and ws.y_m[0] <= c[1] <= ws.y_m[1]
                and ws.min_radius_m + held_r <= r <= ws.max_reach_m - held_r
            ):
                continue
            pts = np.column_stack([c + patch, np.full(len(patch), table_z)])
            uv = w.intrinsics.project(to_cam.apply(pts))
            cols, rows = np.floor(uv[:, 0] + 0.5), np.floor(uv[:, 1] + 0.5)
            if not (
                np.all(np.isfinite(uv)) and cols.min() >= 0 and rows.min() >= 0 and cols.max() < wid and rows.max() < h
            ):
                continue
            if np.all(labels.labels[rows.astype(int), cols.astype(int)] == _TABLE_LABEL):
                return w.intrinsics.project(to_cam.apply(np.array([[*c, table_z]])))[0]
        return None

    def _part_mask(self, labels: FrameLabels, name: str, part: str) -> np.ndarray:
        import mujoco

        m = self.world.physics.model
        prefix = f"obj:{name}/{part}"
        ids = [
            g for g in range(m.ngeom) if (mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or "").startswith(prefix)
        ]
        return np.isin(labels.geom_ids, ids) if labels.geom_ids is not None else np.zeros(labels.labels.shape, bool)


def _pose_in(labels: FrameLabels, world: SimWorld, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Pose of an object in the state a segmentation shows (from its capture's free-joint qpos)."""
    from scipy.spatial.transform import Rotation

    ph = world.physics
    a = ph._obj_qadr[name]
    q = labels.capture.qpos
    w, x, y, z = q[a + 3 : a + 7]
    return np.array(q[a : a + 3]), Rotation.from_quat([x, y, z, w]).as_matrix()


def _middle(region: np.ndarray, silhouette: np.ndarray) -> np.ndarray | None:
    """The pixel of ``region`` nearest its median, preferring pixels ``EDGE_MARGIN_PX`` inside
    ``silhouette``."""
    if not region.any():
        return None
    kernel = np.ones((2 * EDGE_MARGIN_PX + 1, 2 * EDGE_MARGIN_PX + 1), np.uint8)
    inner = cv2.erode((silhouette | region).astype(np.uint8), kernel, borderValue=0).astype(bool) & region
    use = inner if inner.any() else region
    rows, cols = np.nonzero(use)
    all_rows, all_cols = np.nonzero(region)
    mid = np.array([np.median(all_cols), np.median(all_rows)])
    i = int(np.argmin((cols - mid[0]) ** 2 + (rows - mid[1]) ** 2))
    return np.array([float(cols[i]), float(rows[i])])
