"""MuJoCo rendering of the sim camera: colour, depth and segmentation, headless (``MUJOCO_GL=egl``).

One ``MjRenderer`` owns an OpenGL context (EGL: Mesa's software renderer on a machine without a GPU),
which is current in one thread only; every render runs on the renderer's own worker thread, and
callers in any thread (the camera, the oracle behind the model server, ``pointlab sim snapshot``)
submit work to it and wait. A render takes a joint-state vector ``qpos`` (``SimWorld.capture()``),
not the live physics data, so any frame the camera produced can be rendered again later (its
segmentation, on demand) and rendering never holds the world's lock.

- Colour and depth come from **one** pass (``mjr_readPixels`` reads both buffers): depth is the
  z-distance along the optical axis in metres, what a RealSense reports; 0 where nothing was hit.
- Segmentation is a second pass with ``mjRND_SEGMENT | mjRND_IDCOLOR`` (flat colours that encode
  each geom's index), mapped to the model's geom ids; it reads its own depth buffer too.

Shadows and multisampling are off in the model (``quality shadowsize=0 offsamples=0``): with them a
640x480 frame took 700 ms in software rendering, without about 30 ms (measured on this project's
2-core machine; docs/simulation.md).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import cv2
import numpy as np

__all__ = ["MjRenderer", "RenderResult", "ensure_gl_backend"]


def ensure_gl_backend() -> None:
    """Select EGL (headless) unless the user chose a backend; must run before ``import mujoco``
    creates a context."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])


@dataclass(frozen=True)
class RenderResult:
    """One render of the camera.

    Attributes:
        color: ``(H, W, 3)`` uint8 RGB, or ``None`` (segmentation-only render).
        depth_m: ``(H, W)`` float32 optical-axis depth in metres, 0 = nothing hit; ``None`` when
            not asked for.
        geom_ids: ``(H, W)`` int32 model geom id of each pixel, -1 = background; or ``None``.
        coarse_geom_ids: the same at ``(H/s, W/s)`` for a coarse segmentation, or ``None``.
    """

    color: np.ndarray | None
    depth_m: np.ndarray | None
    geom_ids: np.ndarray | None
    coarse_geom_ids: np.ndarray | None = None


class MjRenderer:
    """Renders a MuJoCo model's fixed camera ``camera`` at ``width`` x ``height``.

    Args:
        model: the compiled ``mujoco.MjModel``.
        camera: the camera's name.
        width, height: image size, pixels (the model's offscreen buffer must be at least as big).

    Raises:
        RuntimeError: no OpenGL context could be created (no EGL: install Debian ``libegl1
            libgl1-mesa-dri``).
    """

    _lut: np.ndarray | None = None  # segid -> geom id, built by _segid_lut

    def __init__(self, model, camera: str, width: int, height: int) -> None:
        ensure_gl_backend()
        self.model, self.width, self.height = model, int(width), int(height)
        self._camera_name = camera
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pointlab-mjrender")
        self._closed = False
        self._lock = threading.Lock()
        try:
            self._pool.submit(self._init_gl).result()
        except Exception as e:
            self._pool.shutdown(wait=False)
            raise RuntimeError(
                f"MuJoCo could not create an OpenGL context (MUJOCO_GL={os.environ.get('MUJOCO_GL')}): {e}"
            ) from e

    # -- worker-thread side -----------------------------------------------------------------------
    def _init_gl(self) -> None:
        import mujoco

        m = self.model
        self._gl = mujoco.GLContext(self.width, self.height)
        self._gl.make_current()
        self._ctx = mujoco.MjrContext(m, mujoco.mjtFontScale.mjFONTSCALE_150)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._ctx)
        self._ctx.readDepthMap = mujoco.mjtDepthMap.mjDEPTH_ZEROFAR  # as mujoco.Renderer reads it
        self._scene = mujoco.MjvScene(m, maxgeom=max(1000, 4 * m.ngeom))
        self._opt = mujoco.MjvOption()
        self._cam = mujoco.MjvCamera()
        self._cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self._cam.fixedcamid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_CAMERA, self._camera_name)
        if self._cam.fixedcamid < 0:
            raise ValueError(f"the model has no camera {self._camera_name!r}")
        self._data = mujoco.MjData(m)
        self._rect = mujoco.MjrRect(0, 0, self.width, self.height)
        extent = m.stat.extent
        self._znear, self._zfar = m.vis.map.znear * extent, m.vis.map.zfar * extent
        self._rgb = np.empty((self.height, self.width, 3), np.uint8)
        self._zbuf = np.empty((self.height, self.width), np.float32)

    def _pose(self, qpos: np.ndarray) -> None:
        import mujoco

        self._data.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, self._data)
        mujoco.mj_camlight(self.model, self._data)
        mujoco.mjv_updateScene(
            self.model, self._data, self._opt, None, self._cam, mujoco.mjtCatBit.mjCAT_ALL, self._scene
        )

    def _linear_depth(self, z: np.ndarray) -> np.ndarray:
        # MuJoCo renders with reversed z into a float buffer: undo its perspective mapping (the
        # formula of mujoco.Renderer). The coefficients are computed in float64; the per-pixel
        # division in float32 keeps better than 0.01 mm at the table's 0.5-1.5 m.
        zf, zn = float(self._zfar), float(self._znear)
        c = -0.5 * (-(zf + zn) / (zf - zn)) - 0.5
        d = -0.5 * (-(2.0 * zf * zn) / (zf - zn))
        with np.errstate(divide="ignore"):
            depth = np.float32(d) / (z + np.float32(c))
        depth[depth >= 0.99 * zf] = 0.0  # the far plane: nothing there
        return depth

    def _segment(self, scale: int) -> tuple[np.ndarray, np.ndarray]:
        """Segmentation pass at 1/``scale`` of the resolution (a smaller viewport): geom ids, depth."""
        import mujoco

        w, h = self.width // scale, self.height // scale
        rect = mujoco.MjrRect(0, 0, w, h)
        rgb, zbuf = np.empty((h, w, 3), np.uint8), np.empty((h, w), np.float32)
        flags = self._scene.flags
        flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = 1
        flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = 1
        try:
            mujoco.mjr_render(rect, self._scene, self._ctx)
            mujoco.mjr_readPixels(rgb, zbuf, rect, self._ctx)
        finally:
            flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = 0
            flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = 0
        rgb = np.flipud(rgb)
        segid = (
            rgb[..., 0].astype(np.int32) | (rgb[..., 1].astype(np.int32) << 8) | (rgb[..., 2].astype(np.int32) << 16)
        )
        lut = self._segid_lut()  # segid 0 = background, else scene geom index + 1
        return lut[np.minimum(segid, len(lut) - 1)], np.flipud(zbuf)

    def _render(self, qpos: np.ndarray, color: bool, segmentation: bool, depth: bool, coarse: int) -> RenderResult:
        import mujoco

        self._gl.make_current()
        self._pose(qpos)
        rgb_out = depth_out = ids = coarse_ids = None
        if color:
            mujoco.mjr_render(self._rect, self._scene, self._ctx)
            mujoco.mjr_readPixels(self._rgb, self._zbuf if depth else None, self._rect, self._ctx)
            rgb_out = cv2.flip(self._rgb, 0)  # OpenGL rows run bottom-up
            if depth:
                depth_out = self._linear_depth(cv2.flip(self._zbuf, 0))
        if segmentation:
            ids, zbuf = self._segment(1)
            if depth_out is None:
                depth_out = self._linear_depth(zbuf)
        if coarse:
            coarse_ids = self._segment(coarse)[0]
        return RenderResult(rgb_out, depth_out, ids, coarse_ids)

    def _segid_lut(self) -> np.ndarray:
        """Scene geom index + 1 -> model geom id (-1: background or a decoration). The scene's geom
        list is the same for every pose of one model, so it is built once per geom count."""
        import mujoco

        n = self._scene.ngeom
        if self._lut is None or len(self._lut) != n + 2:
            lut = np.full(n + 2, -1, np.int32)
            geoms = self._scene.geoms
            for i in range(n):
                g = geoms[i]
                if g.segid >= 0 and g.objtype == mujoco.mjtObj.mjOBJ_GEOM:
                    lut[g.segid + 1] = g.objid
            self._lut = lut
        return self._lut

    def _free(self) -> None:
        self._ctx.free()
        self._gl.free()

    # -- any thread ---------------------------------------------------------------------------------
    def render(
        self, qpos, *, color: bool = True, segmentation: bool = False, depth: bool = True, coarse_segmentation: int = 0
    ) -> RenderResult:
        """Render the model posed at ``qpos`` (``(model.nq,)``): colour (+ depth unless ``depth`` is
        false), and/or a full-resolution segmentation (with its own depth), and/or a segmentation
        at 1/``coarse_segmentation`` of the resolution (cheap: for the depth model's surface classes).

        Raises:
            RuntimeError: the renderer is closed. ValueError: ``qpos`` of the wrong size.
        """
        q = np.asarray(qpos, dtype=np.float64).reshape(-1)
        if q.shape != (self.model.nq,):
            raise ValueError(f"qpos must have {self.model.nq} values, got {q.shape[0]}")
        if not (color or segmentation):
            raise ValueError("render needs color or segmentation")
        with self._lock:
            if self._closed:
                raise RuntimeError("the renderer is closed")
            fut = self._pool.submit(self._render, q, color, segmentation, depth, int(coarse_segmentation))
        return fut.result()

    def close(self) -> None:
        """Free the GL context and stop the worker thread (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._pool.submit(self._free).result(timeout=10)
            except Exception:  # a context that never came up has nothing to free
                pass
            self._pool.shutdown(wait=True)
