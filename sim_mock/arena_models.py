"""Four sim arena agents of distinct behaviour, each keyed by the image it is sent (a test double).

The arena shows arbitrary images, so a sim model must know *which* image it was sent: the
``ImageKeyedOracle`` keeps a small grey thumbnail (32 x 24, area-averaged) of every known image
and matches the image in a request to the nearest one (mean absolute difference below
``match_tol`` grey levels, same aspect ratio within 2 %), which survives JPEG re-encoding and
down-scaling by the agent. Each known image carries targets ``{"names": [...], "mask": path}``; the
instruction picks the target whose name it contains (whole words, longest name wins). The answer
points at the mask pixel farthest from the mask border (OpenCV distance transform).

Models (registered under ``arena`` in the ``pointlab.sim_model_servers`` group through
``plugins.serve_arena_models``):

- ``arena-exact`` (Molmo tags): the target's interior point; nothing for an unknown image or
  target (``NOT_FOUND_TEXT``).
- ``arena-noisy`` (Gemini JSON): the same plus Gaussian noise of ``noise_frac`` (6 %) of the
  image's longer side per axis, seeded by the image key and the instruction, so the same request
  always gets the same answer.
- ``arena-center`` (``[x, y]`` pixels): biased to the image centre: the point ``bias`` (60 %) of
  the way from the target to the centre; the centre itself when it knows no target.
- ``arena-wrongfmt`` (configured ``[x, y]``): ignores the requested format for about half the
  requests (seeded as above): answers in prose with no coordinates; otherwise like ``arena-exact``
  but in ``[x, y]`` pixels.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from typing import Any, Sequence

import cv2
import numpy as np
from PIL import Image

from pointlab.benchmark.points import format_points

from .model_server import NOT_FOUND_TEXT, ChatRequest, ModelInputError

__all__ = ["ImageKeyedOracle", "arena_sim_models", "ARENA_MODEL_IDS"]

ARENA_MODEL_IDS = ("arena-exact", "arena-noisy", "arena-center", "arena-wrongfmt")
_THUMB = (32, 24)


def _thumb(rgb: np.ndarray) -> np.ndarray:
    grey = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2GRAY)
    return cv2.resize(grey, _THUMB, interpolation=cv2.INTER_AREA).astype(np.float32)


def _interior(mask: np.ndarray) -> tuple[float, float] | None:
    if not mask.any():
        return None
    dist = cv2.distanceTransform(np.pad(mask, 1).astype(np.uint8), cv2.DIST_L2, 5)[1:-1, 1:-1]
    r, c = np.unravel_index(int(np.argmax(dist)), dist.shape)
    return float(c), float(r)


class ImageKeyedOracle:
    """Known images and their targets (see the module docstring).

    Args:
        entries: ``[{"image": path, "targets": [{"names": [str, ...], "mask": path}]}]``.
        match_tol: largest mean absolute thumbnail difference (grey levels) for a match.

    Raises: ValueError for an unreadable image or mask, or a mask of another size than its image.
    """

    def __init__(self, entries: Sequence[dict], match_tol: float = 6.0) -> None:
        self.match_tol = float(match_tol)
        self._images: list[dict[str, Any]] = []
        for e in entries:
            try:
                with Image.open(e["image"]) as im:
                    rgb = np.asarray(im.convert("RGB"))
            except (OSError, KeyError) as err:
                raise ValueError(f"arena sim models: cannot read image {e.get('image')}: {err}") from None
            h, w = rgb.shape[:2]
            targets = []
            for t in e.get("targets") or []:
                with Image.open(t["mask"]) as m:
                    mask = np.asarray(m.convert("L")) > 127
                if mask.shape != (h, w):
                    raise ValueError(f"mask {t['mask']} is {mask.shape[::-1]}, image {e['image']} is {(w, h)}")
                names = [str(n).lower() for n in t["names"]]
                targets.append({"names": names, "point": _interior(mask)})
            self._images.append(
                {
                    "key": hashlib.sha256(rgb.tobytes()).hexdigest()[:16],
                    "thumb": _thumb(rgb),
                    "size": (w, h),
                    "targets": targets,
                }
            )
        self._lock = threading.Lock()
        self._cache: dict[bytes, dict | None] = {}
        self._by_object: dict[int, tuple[np.ndarray, dict | None]] = {}

    def lookup(self, rgb: np.ndarray) -> dict | None:
        """The known image nearest to ``rgb`` or ``None``."""
        with self._lock:
            held = self._by_object.get(id(rgb))
        if held is not None and held[0] is rgb:
            # the model server hands the same read-only array for a repeated data URL: no hashing
            return held[1]
        digest = hashlib.blake2b(np.ascontiguousarray(rgb).data, digest_size=16).digest()
        with self._lock:
            if digest in self._cache:
                found = self._cache[digest]
                self._hold(rgb, found)
                return found
        h, w = rgb.shape[:2]
        t = _thumb(rgb)
        best, best_d = None, float("inf")
        for im in self._images:
            iw, ih = im["size"]
            if abs(iw / ih - w / h) > 0.02 * (iw / ih):
                continue
            d = float(np.mean(np.abs(im["thumb"] - t)))
            if d < best_d:
                best, best_d = im, d
        found = best if best_d <= self.match_tol else None
        with self._lock:
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[digest] = found
            self._hold(rgb, found)
        return found

    def _hold(self, rgb: np.ndarray, found: dict | None) -> None:
        # only read-only arrays: one that can change under its id must be hashed again. The entry
        # keeps the array alive, so its id is not reused while it is here.
        if not rgb.flags.writeable:
            if len(self._by_object) >= 64:
                self._by_object.clear()
            self._by_object[id(rgb)] = (rgb, found)

    @staticmethod
    def target(image: dict | None, instruction: str) -> dict | None:
        """The target named in ``instruction`` (whole words, longest name first) or ``None``."""
        if image is None:
            return None
        text = " " + re.sub(r"[^a-z0-9']+", " ", (instruction or "").lower()) + " "
        best, best_len = None, 0
        for t in image["targets"]:
            for n in t["names"]:
                if f" {n} " in text and len(n) > best_len:
                    best, best_len = t, len(n)
        return best

    def point(self, rgb: np.ndarray, instruction: str) -> tuple[dict | None, tuple[float, float] | None]:
        """``(known image or None, target point in pixels of ``rgb`` or None)``."""
        image = self.lookup(rgb)
        t = self.target(image, instruction)
        if image is None or t is None or t["point"] is None:
            return image, None
        iw, ih = image["size"]
        h, w = rgb.shape[:2]
        u, v = t["point"]
        return image, ((u + 0.5) * w / iw - 0.5, (v + 0.5) * h / ih - 0.5)  # pixel centres at integers


def _seed(image: dict | None, instruction: str) -> int:
    key = (image["key"] if image else "unknown") + "\n" + (instruction or "")
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little")


class _ArenaModel:
    def __init__(self, oracle: ImageKeyedOracle, behaviour: str, *, noise_frac: float = 0.06, bias: float = 0.6):
        self.oracle, self.behaviour, self.noise_frac, self.bias = oracle, behaviour, noise_frac, bias

    def answer(self, request: ChatRequest) -> str:
        rgb = request.image_rgb
        if rgb is None:
            raise ModelInputError("the arena sim models need an image (an image_url data URL part)")
        h, w = rgb.shape[:2]
        image, p = self.oracle.point(rgb, request.instruction)
        rng = np.random.default_rng(_seed(image, request.instruction))
        label = " ".join(request.instruction.split()[:8]) or "target"
        b = self.behaviour
        if b == "center":
            c = ((w - 1) / 2.0, (h - 1) / 2.0)
            q = c if p is None else (p[0] + self.bias * (c[0] - p[0]), p[1] + self.bias * (c[1] - p[1]))
            return format_points([q], "xy_pixels", w, h, label=label)
        if b == "wrongfmt" and (p is None or rng.random() < 0.5):
            return json.dumps({"answer": "The target is towards the middle of the picture, a little to the left."})
        if p is None:
            return NOT_FOUND_TEXT
        if b == "noisy":
            p = tuple(np.asarray(p) + rng.normal(0.0, self.noise_frac * max(w, h), 2))
            return format_points([p], "gemini", w, h, label=label)
        return format_points([p], "molmo" if b == "exact" else "xy_pixels", w, h, label=label)


def arena_sim_models(entries: Sequence[dict], **kw: Any) -> dict:
    """``{model id: model}`` of the four arena agents over ``entries`` (see ``ImageKeyedOracle``)."""
    oracle = ImageKeyedOracle(entries)
    return {f"arena-{b}": _ArenaModel(oracle, b, **kw) for b in ("exact", "noisy", "center", "wrongfmt")}
