"""``MaskOracle``: where a perfect pointing model would point on a Point-Bench item, from its masks.

A test double for the sim model server (``model_server.OracleModel`` takes any object with
``points(instruction, image_rgb)``). The item is found from the **image** it was sent: among the
items whose query the instruction contains (the longest such query wins, so a steerable
instruction with the reference sentence appended still matches; every item when none does), the
one whose own image is nearest to the sent image by a small area-averaged thumbnail
(``frames.thumbnail``: robust to JPEG, resizing and a drawn steering dot), and only if it shows
the same picture by ``frames.thumb_difference`` (mean rule only: items are different photos). Two items with the same query on different images get their own
masks' points. The answer is, per target:

- ``interior`` (default): the mask pixel farthest from the mask border (OpenCV distance transform),
  robust for non-convex masks where the centroid can fall outside;
- ``centroid``: the mask centroid (may miss for a non-convex mask: a realistic near-miss);
- ``random``: a uniformly random mask pixel (seeded).

Counting items get one point per target: per instance mask when given, else per connected
component of the union mask (largest first), ``count`` of them. Points are in pixels of the image
as sent (``width`` x ``height``), scaled from the item's original size.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

import cv2
import numpy as np

__all__ = ["MaskOracle", "ORACLE_MODES", "mask_sim_models"]

ORACLE_MODES = ("interior", "centroid", "random")


class MaskOracle:
    """Ground-truth pointing from Point-Bench items' masks.

    Args:
        items: ``pointlab.benchmark.pointbench.BenchItem`` objects.
        mode: one of ``ORACLE_MODES``.
        seed: seed for ``random``.

    Raises: ValueError for an unknown mode.
    """

    def __init__(self, items: Sequence[Any], mode: str = "interior", seed: int = 0) -> None:
        if mode not in ORACLE_MODES:
            raise ValueError(f"mode must be one of {', '.join(ORACLE_MODES)}, got {mode!r}")
        self.items = list(items)
        self.mode = mode
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self._thumbs: dict[int, np.ndarray] = {}

    def candidates(self, instruction: str) -> list[Any]:
        """Items whose query is the longest one contained in ``instruction`` (case-insensitive);
        every item when no query is contained."""
        text = (instruction or "").lower()
        lengths = {
            id(it): len(it.query.strip()) for it in self.items if it.query.strip() and it.query.strip().lower() in text
        }
        if not lengths:
            return list(self.items)
        longest = max(lengths.values())
        return [it for it in self.items if lengths.get(id(it)) == longest]

    def _thumb(self, item: Any) -> np.ndarray:
        from .frames import thumbnail

        key = id(item)
        with self._lock:
            hit = self._thumbs.get(key)
        if hit is None:
            hit = thumbnail(item.load_image_rgb())
            with self._lock:
                self._thumbs[key] = hit
        return hit

    def item_for(self, instruction: str, image_rgb: np.ndarray) -> Any | None:
        """The item the image shows among ``candidates(instruction)``, or ``None`` (no item's image
        is the same picture by ``frames.thumb_difference``)."""
        from .frames import thumb_difference, thumbnail

        img = np.asarray(image_rgb)
        if img.ndim != 3 or img.shape[2] != 3:
            return None
        t = thumbnail(img.astype(np.uint8, copy=False))
        best, best_d, best_ok = None, float("inf"), False
        for it in self.candidates(instruction):
            try:
                # not strict: a steerable item's image arrives with its reference point drawn on it
                d, ok = thumb_difference(self._thumb(it), t, strict=False)
            except ValueError:  # an unreadable item image (DatasetError) cannot be the one sent
                continue
            if d < best_d:
                best, best_d, best_ok = it, d, ok
        return best if best_ok else None

    def _one(self, mask: np.ndarray) -> tuple[float, float] | None:
        if not mask.any():
            return None
        if self.mode == "centroid":
            rows, cols = np.nonzero(mask)
            return float(cols.mean()), float(rows.mean())
        if self.mode == "random":
            rows, cols = np.nonzero(mask)
            with self._lock:
                k = int(self._rng.integers(len(rows)))
            return float(cols[k]), float(rows[k])
        dist = cv2.distanceTransform(np.pad(mask, 1).astype(np.uint8), cv2.DIST_L2, 5)[1:-1, 1:-1]
        r, c = np.unravel_index(int(np.argmax(dist)), dist.shape)
        return float(c), float(r)

    def points_px(self, item: Any) -> list[tuple[float, float]]:
        """Answer points in the item's original pixels."""
        if item.category != "counting":
            p = self._one(item.target_mask())
            return [] if p is None else [p]
        if item.instance_masks:
            masks = item.load_instance_masks()
        else:
            n, labels, stats, _ = cv2.connectedComponentsWithStats(item.target_mask().astype(np.uint8), connectivity=8)
            order = sorted(range(1, n), key=lambda k: -stats[k, cv2.CC_STAT_AREA])
            masks = [labels == k for k in order]
        if item.count is not None:
            masks = masks[: item.count]
        return [p for p in (self._one(m) for m in masks) if p is not None]

    def points(self, instruction: str, image_rgb: np.ndarray) -> list[tuple[float, float]]:
        """Pixels ``[(u, v)]`` in the sent image (any size); ``[]`` when no item matches it."""
        it = self.item_for(instruction, image_rgb)
        if it is None:
            return []
        height, width = np.asarray(image_rgb).shape[:2]
        sx, sy = width / it.width, height / it.height
        # scale about pixel centres: u_sent + 0.5 = (u + 0.5) * sx
        return [((u + 0.5) * sx - 0.5, (v + 0.5) * sy - 0.5) for u, v in self.points_px(it)]


def mask_sim_models(items: Sequence[Any], *, noise_px: float | None = None, seed: int = 0) -> dict:
    """The default sim model ids (``sim-oracle``, ``sim-noisy``, ``oracle-<format>``) answering from
    ``items``' masks, plus ``oracle-centroid`` and ``oracle-random`` (Molmo tags)."""
    from .model_server import SIM_NOISE_PX, OracleModel, default_sim_models

    oracle = MaskOracle(items)
    models = default_sim_models(oracle, noise_px=SIM_NOISE_PX if noise_px is None else noise_px, seed=seed)
    models["oracle-centroid"] = OracleModel(MaskOracle(items, "centroid"), "molmo")
    models["oracle-random"] = OracleModel(MaskOracle(items, "random", seed), "molmo")
    return models
