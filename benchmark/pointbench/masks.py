"""Seeded target masks for annotation (PointArena sec. 3.2: "a SAM model was used to generate
initial masks based on the selected point"); the annotator then refines them by hand.

- ``seed_mask(rgb, point, box=None, method="grabcut")``: OpenCV GrabCut (Rother et al. 2004)
  initialised with the box (default: a square around the click, 1/4 of the shorter image side)
  and the click marked definite foreground, 5 iterations; the connected component under the click
  is kept. ``method="watershed"``: OpenCV watershed with markers = the click (foreground) and the
  box border (background), on the image's gradient.
- ``HttpSegmenter(url)``: a segmentation model served over HTTP (SAM-like), protocol:
  ``POST url`` JSON ``{"image": "data:image/png;base64,...", "points": [[u, v]], "point_labels":
  [1], "box": [x0, y0, x1, y1] | null}`` -> JSON ``{"mask": "data:image/png;base64,..."}`` (a grey or
  binary PNG of the image's size, value > 127 = target). Any failure raises ``SegmenterError``.

All masks are ``(H, W)`` bool at the image's full resolution; points are pixels ``(u, v)`` with
centres at integers.
"""

from __future__ import annotations

import base64
import io

import cv2
import numpy as np
from PIL import Image

from pointlab.benchmark.errors import BenchmarkError

__all__ = ["SEED_METHODS", "SegmenterError", "seed_mask", "default_box", "HttpSegmenter", "mask_png", "png_mask"]

SEED_METHODS = ("grabcut", "watershed")


class SegmenterError(BenchmarkError, RuntimeError):
    """The seed could not be computed (bad point, a segmentation service that failed or answered badly)."""


def default_box(width: int, height: int, u: float, v: float) -> tuple[int, int, int, int]:
    """A square ``(x0, y0, x1, y1)`` (exclusive ends) around ``(u, v)``, side 1/4 of the shorter side, clipped."""
    r = max(8, min(width, height) // 8)
    c, rr = int(round(u)), int(round(v))
    return max(0, c - r), max(0, rr - r), min(width, c + r + 1), min(height, rr + r + 1)


def _component_at(mask: np.ndarray, u: int, v: int) -> np.ndarray:
    n, labels = cv2.connectedComponents(mask.astype(np.uint8), connectivity=8)
    lab = labels[v, u]
    if lab == 0:  # the click itself fell outside: keep the largest component
        if n <= 1:
            return mask.astype(bool)
        sizes = np.bincount(labels.ravel())[1:]
        lab = int(np.argmax(sizes)) + 1
    return labels == lab


def seed_mask(
    rgb: np.ndarray, point: tuple[float, float], box: tuple[int, int, int, int] | None = None, method: str = "grabcut"
) -> np.ndarray:
    """An initial mask around the clicked ``point`` (see the module docstring).

    Raises: SegmenterError for a point outside the image or an unknown method.
    """
    if method not in SEED_METHODS:
        raise SegmenterError(f"seed method must be one of {', '.join(SEED_METHODS)}, got {method!r}")
    h, w = rgb.shape[:2]
    u, v = int(np.floor(point[0] + 0.5)), int(np.floor(point[1] + 0.5))
    if not (0 <= u < w and 0 <= v < h):
        raise SegmenterError(f"point {point} is outside the {w}x{h} image")
    x0, y0, x1, y1 = box if box is not None else default_box(w, h, u, v)
    x0, y0, x1, y1 = max(0, int(x0)), max(0, int(y0)), min(w, int(x1)), min(h, int(y1))
    if x1 - x0 < 3 or y1 - y0 < 3 or not (x0 <= u < x1 and y0 <= v < y1):
        raise SegmenterError("the box must contain the point and be at least 3 x 3 pixels")
    bgr = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR)
    if method == "grabcut":
        # GrabCut only needs the box and a margin of background around it (its colour model):
        # run it on that crop, full resolution, and paste back
        mx, my = max(8, (x1 - x0) // 2), max(8, (y1 - y0) // 2)
        cx0, cy0, cx1, cy1 = max(0, x0 - mx), max(0, y0 - my), min(w, x1 + mx), min(h, y1 + my)
        m = np.full((cy1 - cy0, cx1 - cx0), cv2.GC_BGD, np.uint8)
        m[y0 - cy0 : y1 - cy0, x0 - cx0 : x1 - cx0] = cv2.GC_PR_FGD
        cv2.circle(m, (u - cx0, v - cy0), 2, cv2.GC_FGD, -1)
        bgd, fgd = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
        cv2.grabCut(np.ascontiguousarray(bgr[cy0:cy1, cx0:cx1]), m, None, bgd, fgd, 5, cv2.GC_INIT_WITH_MASK)  # type: ignore[call-overload]  # cv2 stubs: rect may be None (unused with a mask)
        fg = np.zeros((h, w), bool)
        fg[cy0:cy1, cx0:cx1] = (m == cv2.GC_FGD) | (m == cv2.GC_PR_FGD)
    else:
        markers = np.zeros((h, w), np.int32)
        markers[:, :] = 0
        cv2.rectangle(markers, (x0, y0), (x1 - 1, y1 - 1), 1, 1)  # background: the box border
        cv2.circle(markers, (u, v), 2, 2, -1)  # foreground: the click
        outside = np.ones((h, w), bool)
        outside[y0:y1, x0:x1] = False
        markers[outside] = 1
        cv2.watershed(bgr, markers)
        fg = markers == 2
    return _component_at(fg, u, v)


def mask_png(mask: np.ndarray) -> bytes:
    """``(H, W)`` bool -> PNG bytes (255 = target, 0 = not: the Point-Bench mask convention)."""
    ok, buf = cv2.imencode(".png", mask.astype(np.uint8) * 255)
    if not ok:
        raise ValueError("PNG encoding failed")
    return buf.tobytes()


def png_mask(data: bytes, width: int, height: int) -> np.ndarray:
    """PNG (or any image) bytes -> ``(H, W)`` bool (grey value > 127; an alpha channel multiplies
    the grey value). Raises: ValueError for unreadable data or another size."""
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            if im.mode in ("RGBA", "LA"):
                grey = np.asarray(im.convert("LA")).astype(np.uint16)
                a = grey[..., 0] * grey[..., 1] // 255
            else:
                a = np.asarray(im.convert("L"))
    except Exception as e:  # noqa: BLE001 - any decoder failure is "not a mask"
        raise ValueError(f"not a readable mask image: {type(e).__name__}: {e}") from None
    if a.shape != (height, width):
        raise ValueError(f"mask is {a.shape[1]}x{a.shape[0]}, image is {width}x{height}")
    return a > 127


class HttpSegmenter:
    """A segmentation model over HTTP (protocol in the module docstring).

    Args:
        url: the endpoint.
        timeout_s: request timeout.
    """

    def __init__(self, url: str, timeout_s: float = 30.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"segmenter URL must be http(s)://..., got {url!r}")
        self.url, self.timeout_s = url, float(timeout_s)

    def __call__(self, rgb: np.ndarray, point: tuple[float, float], box=None) -> np.ndarray:
        import httpx

        h, w = rgb.shape[:2]
        ok, buf = cv2.imencode(".png", cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR))
        body = {
            "image": "data:image/png;base64," + base64.b64encode(buf.tobytes()).decode("ascii"),
            "points": [[float(point[0]), float(point[1])]],
            "point_labels": [1],
            "box": None if box is None else [int(x) for x in box],
        }
        try:
            r = httpx.post(self.url, json=body, timeout=self.timeout_s)
            r.raise_for_status()
            url = r.json()["mask"]
            data = base64.b64decode(url.split(",", 1)[1], validate=True)
            return png_mask(data, w, h)
        except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as e:
            raise SegmenterError(f"segmentation service {self.url} failed: {type(e).__name__}: {e}") from None
