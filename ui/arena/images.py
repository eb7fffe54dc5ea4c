"""Image intake for the arena: curated files and checked uploads, decoded to RGB."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from .store import ArenaError

__all__ = ["decode_upload", "load_curated", "save_png"]


def decode_upload(data: bytes, *, max_bytes: int, formats: tuple[str, ...], max_side_px: int) -> tuple[np.ndarray, str]:
    """Check and decode an uploaded image: ``((H, W, 3) uint8 RGB, sha256 hex of the bytes)``.

    Raises: ArenaError 413 (too large), 415 (not an image / format not accepted), 400 (empty or too
    many pixels).
    """
    if not data:
        raise ArenaError("empty upload", 400)
    if len(data) > max_bytes:
        raise ArenaError(f"upload is {len(data)} bytes, limit {max_bytes}", 413)
    try:
        with Image.open(io.BytesIO(data)) as im:
            if im.format not in formats:
                raise ArenaError(f"image type {im.format} not accepted (use {', '.join(formats)})", 415)
            if max(im.size) > max_side_px:
                raise ArenaError(f"image is {im.size[0]}x{im.size[1]}, largest side allowed {max_side_px}", 400)
            rgb = np.asarray(im.convert("RGB"))
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as e:
        raise ArenaError(f"not a readable image: {e}", 415) from None
    return rgb, hashlib.sha256(data).hexdigest()


def load_curated(path: Path) -> tuple[np.ndarray, str]:
    """A curated image as RGB and the sha256 of its file. Raises: ArenaError 404 when unreadable."""
    try:
        data = path.read_bytes()
        with Image.open(io.BytesIO(data)) as im:
            return np.asarray(im.convert("RGB")), hashlib.sha256(data).hexdigest()
    except (OSError, UnidentifiedImageError) as e:
        raise ArenaError(f"curated image unreadable: {e}", 404) from None


def save_png(rgb: np.ndarray, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        Image.fromarray(rgb).save(path, format="PNG")
    return path
