"""``SimCamera``: a RealSense-like RGB-D view of a ``SimWorld`` (the ``sim`` camera source).

Each frame is the world rendered by ``render.Renderer`` from the world's ``T_base_camera`` with its
intrinsics (D435-like, 640x480), then degraded the way a D4xx degrades depth:

- range noise with standard deviation ``depth_noise_m`` at 0.7 m, growing with the square of the
  range (stereo depth error grows as z^2): about 1.5 mm at 0.7 m;
- holes (0) at depth discontinuities above 2 cm, in a band 1 px wide plus a random part of a 3 px
  band (the invalid band a stereo camera leaves along object silhouettes);
- a few random single-pixel dropouts (``dropout_fraction``);
- a little colour sensor noise.

The clean render is cached and recomputed only when the world changes (``world.version``), so a
static scene costs little more than the noise.

Spec: ``sim`` or ``sim:OPTIONS`` with comma-separated options ``clean`` (no noise, holes or
dropouts) and ``tool`` (draw the gripper as a cylinder).
"""

from __future__ import annotations

import math
import time

import cv2
import numpy as np

from pointlab.perception.camera import Camera
from pointlab.perception.errors import CameraSourceError
from pointlab.perception.frame import RGBDFrame

from .render import Renderer, ToolShape
from .world import SimWorld, default_world

__all__ = ["SimCamera", "DEPTH_SCALE_M", "EDGE_JUMP_M"]

DEPTH_SCALE_M = 0.001
EDGE_JUMP_M = 0.02
_SPEC_OPTIONS = ("clean", "tool")


class SimCamera(Camera):
    """Rendered colour + aligned depth of a ``SimWorld``.

    Args:
        world: the world to view (default: the process-wide ``default_world()``).
        fps: frame rate ``read()`` paces itself to (blocks until the next frame time, as a camera
            does); ``0`` = no pacing.
        seed: seed of the noise generator (frames are reproducible for a given seed and world).
        noise: add depth noise, edge holes, dropouts and colour noise.
        draw_tool: draw the gripper as a dark cylinder above the TCP.
        depth_noise_m: depth noise standard deviation at 0.7 m, metres.
        dropout_fraction: fraction of pixels randomly set to 0 depth.
    """

    def __init__(self, world: SimWorld | None = None, fps: float = 30.0, seed: int = 0, noise: bool = True,
                 draw_tool: bool = False, depth_noise_m: float = 0.0015, dropout_fraction: float = 0.002) -> None:
        super().__init__()
        if fps < 0 or depth_noise_m < 0 or not 0 <= dropout_fraction < 1:
            raise CameraSourceError("sim camera: fps and depth noise must be >= 0, dropout_fraction in [0, 1)")
        self.world = world or default_world()
        self.fps, self.seed, self.noise, self.draw_tool = float(fps), int(seed), bool(noise), bool(draw_tool)
        self.depth_noise_m, self.dropout_fraction = float(depth_noise_m), float(dropout_fraction)
        self._renderer: Renderer | None = None
        self._cache_key = None
        self._clean: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._rng = np.random.default_rng(self.seed)
        self._index = 0
        self._t0 = 0.0
        self._k_last = -1

    @classmethod
    def from_spec(cls, arg: str | None, *, world: SimWorld | None = None, fps: float = 30.0, seed: int = 0,
                  **kw) -> "SimCamera":
        """Build from ``sim`` or ``sim:clean``, ``sim:tool``, ``sim:clean,tool``.

        Raises:
            CameraSourceError: an unknown option.
        """
        opts = [o.strip() for o in (arg or "").split(",") if o.strip()]
        bad = [o for o in opts if o not in _SPEC_OPTIONS]
        if bad:
            raise CameraSourceError(f"sim camera: unknown option(s) {bad}; known: {', '.join(_SPEC_OPTIONS)}")
        if "clean" in opts:
            kw.setdefault("noise", False)
        if "tool" in opts:
            kw.setdefault("draw_tool", True)
        return cls(world=world, fps=fps, seed=seed, **kw)

    @property
    def intrinsics(self):
        return self.world.intrinsics

    # -- Camera --------------------------------------------------------------------------------------
    def _connect(self) -> None:
        w = self.world
        self._renderer = Renderer(w.intrinsics, w.T_base_camera, w.scene.table_z_m, w.scene.table_color_rgb)
        self._cache_key = None
        self._rng = np.random.default_rng(self.seed)
        # a small bank of colour-noise images, reused at random offsets: cheap per frame
        h, wd = w.intrinsics.height, w.intrinsics.width
        cnoise = self._rng.normal(0.0, 2.0, size=(3, h, wd, 3)).round()
        self._color_noise_pos = np.clip(cnoise, 0, 255).astype(np.uint8)
        self._color_noise_neg = np.clip(-cnoise, 0, 255).astype(np.uint8)
        self._depth_noise = self._rng.standard_normal((3, h, wd), dtype=np.float32)
        self._t0 = time.monotonic()
        self._k_last = -1

    def _disconnect(self) -> None:
        self._renderer = None

    def _read(self) -> RGBDFrame:
        if self.fps > 0:
            # Frames "arrive" at t0 + k / fps; read() returns the newest one not yet returned, or
            # waits for the next (a camera with a one-frame queue, like rs2 wait_for_frames).
            period = 1.0 / self.fps
            k_now = math.floor((time.monotonic() - self._t0) / period)
            if k_now > self._k_last:
                self._k_last = k_now
            else:
                self._k_last += 1
                time.sleep(max(self._t0 + self._k_last * period - time.monotonic(), 0.0))
        # the exposure time is when the world state was read, before rendering: a frame stamped after
        # its render could look newer than an arm motion that finished while it was being drawn
        stamp_ns = time.time_ns()
        color, depth_m, edges1, edges3 = self._clean_render()
        if self.noise:
            color, depth_m = self._degrade(color, depth_m, edges1, edges3)
        depth = np.clip(np.rint(depth_m / DEPTH_SCALE_M), 0, 65535).astype(np.uint16)
        self._index += 1
        return RGBDFrame(color=color, depth=depth, depth_scale_m=DEPTH_SCALE_M, intrinsics=self.world.intrinsics,
                         stamp_ns=stamp_ns, index=self._index)

    # -- rendering ------------------------------------------------------------------------------------
    def _clean_render(self):
        """(colour, depth_m, 1-px edge band, 3-px edge band) of the current world, cached by version."""
        w = self.world
        with w.lock:
            key = (w.version, id(w))
            if key == self._cache_key and self._clean is not None:
                return self._clean
            objects = list(w.objects.values())
            tool = ToolShape(tuple(float(c) for c in w.arm.tcp_m)) if self.draw_tool else None
        color, depth = self._renderer.render(objects, tool)
        edges1, edges3 = _edge_bands(depth)
        self._clean = (color, depth, edges1, edges3)
        self._cache_key = key
        return self._clean

    def _degrade(self, color: np.ndarray, depth_m: np.ndarray, edges1: np.ndarray, edges3: np.ndarray):
        rng = self._rng
        h, w = depth_m.shape
        # Noise fields come from a small bank of pre-drawn fields, shifted at random each frame:
        # statistically the same per frame, at a fraction of the cost of drawing 300k normals.
        k = int(rng.integers(0, len(self._depth_noise)))
        shift = int(rng.integers(0, h * w))
        unit = np.roll(self._depth_noise[k].reshape(-1), shift).reshape(h, w)
        sigma_scale = np.float32(self.depth_noise_m / 0.49)  # sigma(z) = sigma_0.7 * (z / 0.7)^2
        noisy = depth_m + sigma_scale * depth_m * depth_m * unit
        holes = edges1.copy()
        # the outer part of the edge band is dropped at random: a ragged 1-3 px hole border
        outer = np.flatnonzero(edges3 & ~edges1)
        holes.reshape(-1)[outer[rng.random(outer.size) < 0.5]] = True
        holes |= depth_m <= 0
        n_drop = int(self.dropout_fraction * h * w)
        if n_drop:
            holes.reshape(-1)[rng.integers(0, h * w, size=n_drop)] = True
        noisy[holes] = 0.0
        j = int(rng.integers(0, len(self._color_noise_pos)))
        color = cv2.subtract(cv2.add(color, self._color_noise_pos[j]), self._color_noise_neg[j])
        return color, noisy


def _edge_bands(depth_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pixels next to a depth jump above ``EDGE_JUMP_M`` (both sides): a 1-2 px band and a 3-4 px band."""
    jump = np.zeros(depth_m.shape, dtype=np.uint8)
    dx = np.abs(np.diff(depth_m, axis=1)) > EDGE_JUMP_M
    dy = np.abs(np.diff(depth_m, axis=0)) > EDGE_JUMP_M
    jump[:, 1:] |= dx
    jump[:, :-1] |= dx
    jump[1:, :] |= dy
    jump[:-1, :] |= dy
    wide = cv2.dilate(jump, np.ones((3, 3), np.uint8))
    return jump.astype(bool), wide.astype(bool)
