"""A segmentation service over HTTP that plays SAM for the annotation app (a test double).

Protocol (``benchmark.pointbench.masks.HttpSegmenter``): ``POST /segment`` JSON ``{"image": data
URL, "points": [[u, v]], "point_labels": [1], "box": [x0, y0, x1, y1] | null}`` ->
``{"mask": "data:image/png;base64,..."}``. The "model" is an OpenCV flood fill from the first
point (colour tolerance ``tol`` per channel, 8-connected, limited to the box when one is given), so
a test knows the answer exactly for a flat-coloured object. A malformed request gets 400.
"""

from __future__ import annotations

import base64

import cv2
import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from pointlab.benchmark.prompts import data_url_to_image

__all__ = ["create_segment_server", "flood_mask"]


def flood_mask(rgb: np.ndarray, u: float, v: float, tol: int = 12, box=None) -> np.ndarray:
    """The 8-connected region of colours within ``tol`` of pixel ``(u, v)``: ``(H, W)`` bool."""
    h, w = rgb.shape[:2]
    img = np.ascontiguousarray(rgb).copy()
    ff = np.zeros((h + 2, w + 2), np.uint8)
    if box is not None:  # outside the box is a wall
        x0, y0, x1, y1 = (int(b) for b in box)
        ff[:, :] = 1
        ff[y0 + 1 : y1 + 1, x0 + 1 : x1 + 1] = 0
    cv2.floodFill(
        img,
        ff,
        (int(round(u)), int(round(v))),
        (0, 0, 0),
        (tol,) * 3,
        (tol,) * 3,
        8 | cv2.FLOODFILL_MASK_ONLY | (255 << 8),
    )
    return ff[1:-1, 1:-1] == 255


def create_segment_server(tol: int = 12) -> FastAPI:
    app = FastAPI(title="pointlab sim segmentation service")

    @app.post("/segment")
    async def segment(request: Request):
        try:
            body = await request.json()
            rgb = data_url_to_image(body["image"])
            u, v = (float(x) for x in body["points"][0])
            h, w = rgb.shape[:2]
            if not (0 <= u < w and 0 <= v < h):
                raise ValueError("point outside the image")
            mask = flood_mask(rgb, u, v, tol, body.get("box"))
        except (KeyError, IndexError, TypeError, ValueError) as e:
            return JSONResponse({"error": f"bad request: {e}"}, status_code=400)
        ok, buf = cv2.imencode(".png", mask.astype(np.uint8) * 255)
        return {"mask": "data:image/png;base64," + base64.b64encode(buf.tobytes()).decode("ascii")}

    return app
