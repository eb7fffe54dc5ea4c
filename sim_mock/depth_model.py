"""A RealSense-like degradation of a clean rendered depth and colour frame (the D4xx's defects).

What a D435 does to depth, and how the sim reproduces it (Intel's depth-quality notes: RMS error
grows with the square of the range for a stereo camera; invalid bands along silhouettes where one
imager sees what the other cannot; holes where the IR pattern is absorbed or reflected away):

- **range noise**: Gaussian, standard deviation ``sigma_0.7 * (z / 0.7 m)^2`` (``sigma_0.7`` =
  1.5 mm by default), **spatially correlated** as a stereo matcher's is (each depth comes from a
  window of pixels matched along the horizontal epipolar line): white noise blurred by a Gaussian of
  ``NOISE_CORR_PX`` = (3, 1.5) px (x, y), rescaled to unit variance. Measured on the 9 real RGB-D
  tabletop frames of UnseenObjectClustering (NVlabs, a RealSense-class camera): in 987 flat
  32 x 32 px patches (quadratic surface removed) the residual is 1.75 mm RMS and its correlation at
  1/2/4/8 px lag is 0.92/0.85/0.69/0.36 along a row and 0.71/0.62/0.32/-0.03 down a column; this
  field gives 0.97/0.89/0.64/0.17 and 0.89/0.64/0.17/0.00. Uncorrelated noise (as before) made
  neighbouring depths equal for 16 % of pixels against 65-81 % in the real frames, and a depth
  frame that PNG-compresses to 247 kB against 85-123 kB for the real ones (about 150 kB now);
- **edge holes**: 0 at depth discontinuities above ``EDGE_JUMP_M``, in a 1-2 px band plus a random
  half of a 3-4 px band (a ragged border, on both sides of the edge);
- **dark surfaces** (objects whose albedo's luminance is below ``DARK_LUMA``: black plastic, dark
  fabric): holes with probability ``DARK_DROPOUT`` in 4 x 4 px blocks (little IR comes back);
- **shiny surfaces** (objects with ``surface = "shiny"``): holes with probability
  ``SHINY_DROPOUT`` in 4 x 4 px blocks, and every pixel of a specular highlight (colour within
  ``HIGHLIGHT_FRACTION`` of the object's brightest) is a hole (the pattern is mirrored away);
- a few random single-pixel dropouts (``dropout_fraction``);
- colour: sensor noise of standard deviation ``COLOR_NOISE`` grey levels.

Noise fields come from a small bank of pre-drawn fields shifted at random each frame: statistically
the same per frame, at a fraction of the cost of drawing 300k normals. Output depth is uint16 in
units of ``depth_scale_m`` (0.001 m, a D435's default), 0 = no data.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

__all__ = [
    "DepthModel",
    "CleanView",
    "albedo_luma",
    "EDGE_JUMP_M",
    "DARK_LUMA",
    "DARK_DROPOUT",
    "SHINY_DROPOUT",
    "COLOR_NOISE",
    "NOISE_CORR_PX",
    "edge_bands",
    "to_depth_units",
]

EDGE_JUMP_M = 0.02
DARK_LUMA = 60.0
DARK_DROPOUT = 0.5
SHINY_DROPOUT = 0.2
HIGHLIGHT_FRACTION = 0.985
COLOR_NOISE = 2.0
NOISE_CORR_PX = (3.0, 1.5)
BLOCK_PX = 4


def edge_bands(depth_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def albedo_luma(rgb) -> float:
    """Rec. 601 luminance of an 0-255 RGB albedo."""
    r, g, b = rgb
    return 0.299 * r + 0.587 * g + 0.114 * b


def to_depth_units(depth_m: np.ndarray, depth_scale_m: float) -> np.ndarray:
    """Metres -> uint16 depth units (rounded, clipped to 0..65535; 0 stays 0)."""
    return np.clip(np.rint(depth_m / depth_scale_m), 0, 65535).astype(np.uint16)


@dataclass(frozen=True)
class CleanView:
    """One clean render and what the degradation needs from it (computed once per render).

    Attributes:
        color: ``(H, W, 3)`` uint8 RGB. depth_m: ``(H, W)`` float32 metres (0 = nothing).
        edges1, edges3: the edge bands of ``edge_bands``.
        shiny: ``(H/4, W/4)`` bool blocks on shiny objects. highlight: ``(H, W)`` bool highlight pixels.
        dark: ``(H/4, W/4)`` bool blocks of dark colour.
    """

    color: np.ndarray
    depth_m: np.ndarray | None
    edges1: np.ndarray | None
    edges3: np.ndarray | None
    shiny: np.ndarray
    highlight: np.ndarray
    dark: np.ndarray

    @classmethod
    def build(
        cls, color: np.ndarray, depth_m: np.ndarray | None, shiny_blocks: np.ndarray, dark_blocks: np.ndarray
    ) -> "CleanView":
        """From a clean render and block masks (``(H/4, W/4)`` bool) of shiny and of dark objects."""
        h, w = color.shape[:2]
        luma = cv2.cvtColor(color, cv2.COLOR_RGB2GRAY)
        dark = dark_blocks
        shiny_full = _upsample(shiny_blocks, h, w)
        highlight = np.zeros((h, w), bool)
        if shiny_full.any():
            peak = float(luma[shiny_full].max())
            highlight = shiny_full & (luma >= HIGHLIGHT_FRACTION * peak) & (luma > 200)
        e1 = e3 = None
        if depth_m is not None:
            e1, e3 = edge_bands(depth_m)
        return cls(color, depth_m, e1, e3, shiny_blocks, highlight, dark)


def _correlated(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A ``(h, w)`` float32 Gaussian field of unit variance correlated over ``NOISE_CORR_PX``."""
    sx, sy = NOISE_CORR_PX
    pad = int(4 * max(sx, sy)) + 1
    # blurred with wrap-around padding: the field is periodic, so a rolled copy has no seam
    white = np.pad(rng.standard_normal((h, w), dtype=np.float32), pad, mode="wrap")
    field = cv2.GaussianBlur(white, (0, 0), sigmaX=sx, sigmaY=sy)[pad : pad + h, pad : pad + w]
    return field / np.float32(field.std())


def _upsample(blocks: np.ndarray, h: int, w: int) -> np.ndarray:
    out = np.repeat(np.repeat(blocks, BLOCK_PX, axis=0), BLOCK_PX, axis=1)
    return np.pad(out, ((0, max(0, h - out.shape[0])), (0, max(0, w - out.shape[1]))))[:h, :w]


class DepthModel:
    """Applies the module's defects to clean views; one per camera (holds its RNG and noise bank).

    Args:
        height, width: image size, pixels.
        seed: RNG seed (frames are reproducible for a given seed and sequence of views).
        depth_noise_m: depth noise standard deviation at 0.7 m, metres.
        dropout_fraction: fraction of pixels randomly set to 0 depth.
    """

    def __init__(
        self, height: int, width: int, seed: int = 0, depth_noise_m: float = 0.0015, dropout_fraction: float = 0.002
    ) -> None:
        self.rng = np.random.default_rng(seed)
        self.depth_noise_m, self.dropout_fraction = float(depth_noise_m), float(dropout_fraction)
        cnoise = self.rng.normal(0.0, COLOR_NOISE, size=(3, height, width, 3)).round()
        self._color_pos = np.clip(cnoise, 0, 255).astype(np.uint8)
        self._color_neg = np.clip(-cnoise, 0, 255).astype(np.uint8)
        # each field tiled 2 x 2: a window of the tiling is the periodic field rolled, without
        # np.roll's two full copies per frame
        self._depth_noise = np.stack([np.tile(_correlated(self.rng, height, width), (2, 2)) for _ in range(3)])

    def color(self, view: CleanView) -> np.ndarray:
        """The colour with sensor noise, ``(H, W, 3)`` uint8."""
        j = int(self.rng.integers(0, len(self._color_pos)))
        return cv2.subtract(cv2.add(view.color, self._color_pos[j]), self._color_neg[j])

    def depth(self, view: CleanView) -> np.ndarray:
        """The depth with noise and holes, ``(H, W)`` float32 metres (0 = hole)."""
        rng, depth_m, edges1, edges3 = self.rng, view.depth_m, view.edges1, view.edges3
        if depth_m is None or edges1 is None or edges3 is None:
            raise ValueError("the view was built without a depth image")
        h, w = depth_m.shape
        k = int(rng.integers(0, len(self._depth_noise)))
        # a 2-D shift keeps the field's correlation (a flat one would put a seam in every row):
        # the field rolled by (dy, dx) is the window of its 2 x 2 tiling at (h - dy, w - dx)
        dy, dx = int(rng.integers(0, h)), int(rng.integers(0, w))
        unit = self._depth_noise[k, h - dy : 2 * h - dy, w - dx : 2 * w - dx]
        sigma_scale = np.float32(self.depth_noise_m / 0.49)  # sigma(z) = sigma_0.7 * (z / 0.7)^2
        noisy = sigma_scale * depth_m  # depth + sigma_scale * depth^2 * unit, in place, same order
        noisy *= depth_m
        noisy *= unit
        noisy += depth_m
        holes = edges1.copy()
        outer = np.flatnonzero(edges3 & ~edges1)
        holes.reshape(-1)[outer[rng.random(outer.size) < 0.5]] = True
        holes |= depth_m <= 0
        blocks = rng.random(view.dark.shape)
        bad = (view.dark & (blocks < DARK_DROPOUT)) | (view.shiny & (blocks < SHINY_DROPOUT))
        if bad.any():
            holes |= _upsample(bad, h, w)
        holes |= view.highlight
        n_drop = int(self.dropout_fraction * h * w)
        if n_drop:
            holes.reshape(-1)[rng.integers(0, h * w, size=n_drop)] = True
        noisy[holes] = 0.0
        return noisy
