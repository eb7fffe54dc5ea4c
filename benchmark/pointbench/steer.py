"""Steerable items: give the model the reference point in words, on the image, or both.

PointArena sec. 3.2 (Steerable: PixMo images with a reference point; queries relative to it). The
paper's evaluator describes the point in the prompt (pixel coordinates); drawing it on the image is
the other option the issue asks for, because how the reference is shown changes scores a lot.
``STEER_MODES``: ``describe`` (text only), ``draw`` (a marker on the image only), ``both``, ``none``.
"""

from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

__all__ = ["STEER_MODES", "draw_reference", "describe_reference", "apply_steer", "to_sent_pixels"]

STEER_MODES = ("describe", "draw", "both", "none")
MARKER_RGB = (255, 0, 0)


def draw_reference(
    rgb: np.ndarray, points_px: Sequence[Sequence[float]], *, radius_px: int | None = None
) -> np.ndarray:
    """A copy of ``rgb`` ``(H, W, 3)`` uint8 with a red filled dot (white ring) at each reference point.

    ``radius_px`` defaults to ``max(4, min(H, W) // 80)``.
    """
    out = np.ascontiguousarray(rgb.copy())
    h, w = out.shape[:2]
    r = radius_px if radius_px is not None else max(4, min(h, w) // 80)
    for u, v in points_px:
        c = (int(round(u)), int(round(v)))
        cv2.circle(out, c, r + 2, (255, 255, 255), -1, lineType=cv2.LINE_AA)
        cv2.circle(out, c, r, MARKER_RGB, -1, lineType=cv2.LINE_AA)
    return out


def describe_reference(instruction: str, points_px: Sequence[Sequence[float]]) -> str:
    """``instruction`` plus a sentence giving the reference point(s) in pixels (the paper's wording)."""
    if not len(points_px):
        return instruction
    pts = ", ".join(f"[{u:.1f}, {v:.1f}]" for u, v in points_px)
    return (
        f"{instruction}\nThe image contains an existing reference point at pixel coordinates: {pts}. "
        "The query refers to this point."
    )


def to_sent_pixels(
    points_px: Sequence[Sequence[float]], size: tuple[int, int], sent_size: tuple[int, int]
) -> list[tuple[float, float]]:
    """Pixel centres ``(u, v)`` of a ``size = (W, H)`` image as pixel centres of the same image resized
    to ``sent_size = (w, h)``: ``u' = (u + 0.5) * w / W - 0.5`` (pixel edges at -0.5 and W - 0.5 map onto
    each other; docs/models.md "Pixel conventions")."""
    (w0, h0), (w1, h1) = size, sent_size
    return [((u + 0.5) * w1 / w0 - 0.5, (v + 0.5) * h1 / h0 - 0.5) for u, v in points_px]


def apply_steer(
    rgb: np.ndarray,
    instruction: str,
    points_px: Sequence[Sequence[float]],
    mode: str,
    *,
    sent_size: tuple[int, int] | None = None,
) -> tuple[np.ndarray, str]:
    """``(image, instruction)`` as the model should see them under ``mode``.

    Args:
        rgb: the original image ``(H, W, 3)`` uint8; ``points_px``: reference points in its pixels.
        sent_size: ``(w, h)`` of the image the model will be sent when the agent downscales it
            (``max_image_side_px``): the description then gives the points in THOSE pixels, the only
            ones the model sees (a drawn marker is drawn on the original and scales with it).

    Raises: ValueError for an unknown mode.
    """
    if mode not in STEER_MODES:
        raise ValueError(f"steer mode must be one of {', '.join(STEER_MODES)}, got {mode!r}")
    if not len(points_px) or mode == "none":
        return rgb, instruction
    img = draw_reference(rgb, points_px) if mode in ("draw", "both") else rgb
    h, w = rgb.shape[:2]
    said = points_px if sent_size is None else to_sent_pixels(points_px, (w, h), sent_size)
    text = describe_reference(instruction, said) if mode in ("describe", "both") else instruction
    return img, text
