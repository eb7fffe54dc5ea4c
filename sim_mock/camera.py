"""``SimCamera``: a RealSense-like RGB-D view of a ``SimWorld`` (the ``sim`` camera source).

Each frame is the world's MuJoCo model rendered from the world's ``T_base_camera`` with its
intrinsics (D435-like, 640x480; ``mjrender.MjRenderer``: colour and depth from one pass, the arm
included), then degraded the way a D4xx degrades it (``depth_model.DepthModel``: range noise
growing with z^2, holes at depth edges and on dark or shiny surfaces, random dropouts, colour
noise).

- **Frames are reused when nothing moved**: the clean render is cached by ``world.version``; a frame
  of an unchanged world costs only the noise (a camera keeps streaming, so each frame still gets
  fresh noise, a new index and stamp). While the arm is moving, at most ``moving_render_hz`` new
  states are drawn per second (default 15; the live view sends up to 20 frames/s) and the frames between show
  the last one drawn (and record it, so their masks match); once a motion has ended the next frame
  is drawn at once, so no frame stamped after a motion shows the arm before its end.
- **Depth only when a consumer needs it**: with ``want_depth`` false (``CameraNode`` sets it from the
  depth topic's subscriber count) the depth buffer is not read back or degraded and the frame's
  depth is all zeros (no data).
- **Every frame is recorded** in ``world.frames`` (stamp -> the physics state it shows), so its
  segmentation masks can be asked for later: ``world.masks(frame)``.

Spec: ``sim`` or ``sim:clean`` (no noise, holes or dropouts).
"""

from __future__ import annotations

import math
import time

import numpy as np

from pointlab.perception.camera import Camera
from pointlab.perception.errors import CameraSourceError
from pointlab.perception.frame import RGBDFrame

from .depth_model import BLOCK_PX, DARK_LUMA, CleanView, DepthModel, albedo_luma, to_depth_units
from .world import SimWorld, default_world

__all__ = ["SimCamera", "DEPTH_SCALE_M"]

DEPTH_SCALE_M = 0.001
_SPEC_OPTIONS = ("clean",)


class SimCamera(Camera):
    """Rendered colour + aligned depth of a ``SimWorld``.

    Args:
        world: the world to view (default: the process-wide ``default_world()``).
        fps: frame rate ``read()`` paces itself to (blocks until the next frame time, as a camera
            does); ``0`` = no pacing.
        seed: seed of the noise generator (frames are reproducible for a given seed and world).
        noise: add depth noise, holes, dropouts and colour noise.
        depth_noise_m: depth noise standard deviation at 0.7 m, metres.
        dropout_fraction: fraction of pixels randomly set to 0 depth.
        moving_render_hz: most new renders per second while the arm moves (0: every frame).

    Attributes:
        want_depth: produce depth (default ``True``); see the module docstring.
        renders: how many clean renders were made (frames minus reuses).
        render_s: wall seconds spent rendering (for ``pointlab perf``).
    """

    def __init__(
        self,
        world: SimWorld | None = None,
        fps: float = 30.0,
        seed: int = 0,
        noise: bool = True,
        depth_noise_m: float = 0.0015,
        dropout_fraction: float = 0.002,
        moving_render_hz: float = 15.0,
    ) -> None:
        super().__init__()
        if fps < 0 or depth_noise_m < 0 or not 0 <= dropout_fraction < 1:
            raise CameraSourceError("sim camera: fps and depth noise must be >= 0, dropout_fraction in [0, 1)")
        self.world = world or default_world()
        self.fps, self.seed, self.noise = float(fps), int(seed), bool(noise)
        self.depth_noise_m, self.dropout_fraction = float(depth_noise_m), float(dropout_fraction)
        self.want_depth = True
        self.moving_render_hz = float(moving_render_hz)
        self._last_render_t = -1e9
        self.renders = 0
        self.render_s = 0.0
        self._view: CleanView | None = None
        self._view_key: tuple[int, int] | None = None  # (capture version, id of the world)
        self._model: DepthModel | None = None
        self._index = 0
        self._t0 = 0.0
        self._k_last = -1

    @classmethod
    def from_spec(
        cls, arg: str | None, *, world: SimWorld | None = None, fps: float = 30.0, seed: int = 0, **kw
    ) -> "SimCamera":
        """Build from ``sim`` or ``sim:clean``.

        Raises:
            CameraSourceError: an unknown option.
        """
        opts = [o.strip() for o in (arg or "").split(",") if o.strip()]
        bad = [o for o in opts if o not in _SPEC_OPTIONS]
        if bad:
            raise CameraSourceError(f"sim camera: unknown option(s) {bad}; known: {', '.join(_SPEC_OPTIONS)}")
        if "clean" in opts:
            kw.setdefault("noise", False)
        return cls(world=world, fps=fps, seed=seed, **kw)

    @property
    def intrinsics(self):
        return self.world.intrinsics

    # -- Camera --------------------------------------------------------------------------------------
    def _connect(self) -> None:
        intr = self.world.intrinsics
        try:
            self.world.renderer()
        except RuntimeError as e:
            raise CameraSourceError(f"sim camera: {e}") from e
        self._model = DepthModel(intr.height, intr.width, self.seed, self.depth_noise_m, self.dropout_fraction)
        self._view, self._view_key = None, None
        self._zeros = np.zeros((intr.height, intr.width), np.uint16)
        self._t0 = time.monotonic()
        self._k_last = -1

    def _disconnect(self) -> None:
        self._view = None

    def _pace(self) -> None:
        # Frames "arrive" at t0 + k / fps; read() returns the newest one not yet returned, or
        # waits for the next (a camera with a one-frame queue, like rs2 wait_for_frames).
        period = 1.0 / self.fps
        k_now = math.floor((time.monotonic() - self._t0) / period)
        if k_now > self._k_last:
            self._k_last = k_now
        else:
            self._k_last += 1
            time.sleep(max(self._t0 + self._k_last * period - time.monotonic(), 0.0))

    def _read(self) -> RGBDFrame:
        if self.fps > 0:
            self._pace()
        # the exposure time is when the state was captured, before rendering: a frame stamped after
        # its render could look newer than an arm motion that finished while it was being drawn
        stamp_ns = time.time_ns()
        capture = self.world.capture()
        want_depth = bool(self.want_depth)
        if self._throttled(capture, want_depth):
            capture = self._view_capture  # still drawing the last state: the frame shows (and records) it
        view = self._clean_view(capture, want_depth)
        self.world.frames.record(stamp_ns, capture, view.color)
        if self.noise:
            model = self._model
            assert model is not None  # made by _connect
            color = model.color(view)
            depth_m = model.depth(view) if want_depth else None
        else:
            color, depth_m = view.color, view.depth_m if want_depth else None
        depth = to_depth_units(depth_m, DEPTH_SCALE_M) if depth_m is not None else self._zeros
        self._index += 1
        return RGBDFrame(
            color=color,
            depth=depth,
            depth_scale_m=DEPTH_SCALE_M,
            intrinsics=self.world.intrinsics,
            stamp_ns=stamp_ns,
            index=self._index,
        )

    def _throttled(self, capture, want_depth: bool) -> bool:
        if (
            self._view is None
            or self.moving_render_hz <= 0
            or not self.world.arm.moving
            or (want_depth and self._view.depth_m is None)
        ):
            return False
        return time.monotonic() - self._last_render_t < 1.0 / self.moving_render_hz

    def _clean_view(self, capture, want_depth: bool) -> CleanView:
        key = (capture.version, id(self.world))
        if self._view is not None and self._view_key == key and (self._view.depth_m is not None or not want_depth):
            return self._view
        t0 = time.perf_counter()
        r = self.world.renderer().render(capture.qpos, depth=want_depth, coarse_segmentation=BLOCK_PX)
        assert r.color is not None and r.coarse_geom_ids is not None  # asked for (colour is by default)
        labels = np.where(r.coarse_geom_ids >= 0, self.world.physics.geom_label[np.maximum(r.coarse_geom_ids, 0)], -1)
        shiny, dark = self._surface_labels()
        self._view = CleanView.build(r.color, r.depth_m, np.isin(labels, shiny), np.isin(labels, dark))
        self._view_key, self._view_capture, self._last_render_t = key, capture, time.monotonic()
        self.renders += 1
        self.render_s += time.perf_counter() - t0
        return self._view

    def _surface_labels(self) -> tuple[list[int], list[int]]:
        objects = self.world.scene.objects
        return (
            [k for k, o in enumerate(objects) if o.surface == "shiny"],
            [k for k, o in enumerate(objects) if albedo_luma(o.color_rgb) < DARK_LUMA],
        )
