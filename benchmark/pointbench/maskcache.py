"""Decoded Point-Bench masks kept on disk, bit-packed, so a re-score does not decode PNGs again.

Decoding a 1000 x 1000 PNG mask takes about 3 ms (PIL), which bounds re-scoring at ~300 items/s; the
same mask bit-packed (``numpy.packbits``, 1 bit a pixel, 125 kB, as COCO tools keep masks compact with
RLE) is read and unpacked in about 0.06 ms. A file holds one mask under one mask rule:

    b"PLMK" | version u8 | height u32 LE | width u32 LE | ceil(H * W / 8) bytes, row-major, MSB first

Its name is the SHA-1 of ``(source key, source modification time in ns, rule, version)``, so an edited
mask (a new mtime), another rule or another layout version never meets an old entry. Where:
``$POINTLAB_CACHE_DIR/masks``, else ``$XDG_CACHE_HOME/pointlab/masks``, else ``~/.cache/pointlab/masks``;
``POINTLAB_CACHE_DIR=off`` turns the disk cache off. Writes go to a temporary name renamed into place
(two scorers at once never see half a file); a file that is short, foreign or unreadable is a miss and
is written again. Nothing here raises on a bad cache: the PNG is the source of truth.
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
from pathlib import Path

import numpy as np

from ..records import replaced_on_success

__all__ = ["PackedMask", "cache_dir", "read_packed", "write_packed", "VERSION"]

log = logging.getLogger(__name__)

VERSION = 1
_MAGIC = b"PLMK"
_HEADER = struct.Struct("<4sBII")


class PackedMask:
    """A ``(H, W)`` bool mask kept bit-packed (``numpy.packbits``: row-major, MSB first), 1/8 of the
    memory of a bool array. ``mask[r, c]`` reads one pixel without unpacking (what scoring a point
    needs); ``unpack()`` / ``numpy.asarray(mask)`` give the ``(H, W)`` bool array.

    Args:
        bits: ``ceil(H * W / 8)`` uint8 (kept read-only); shape: ``(H, W)``.
    Raises: ValueError when ``bits`` has the wrong length.
    """

    __slots__ = ("bits", "shape")

    def __init__(self, bits: np.ndarray, shape: tuple[int, int]) -> None:
        h, w = int(shape[0]), int(shape[1])
        bits = np.asarray(bits, dtype=np.uint8).reshape(-1)
        if h < 0 or w < 0 or bits.size != (h * w + 7) // 8:
            raise ValueError(f"{bits.size} bytes do not hold a {h}x{w} mask")
        bits.setflags(write=False)
        self.bits, self.shape = bits, (h, w)

    @classmethod
    def from_array(cls, mask: np.ndarray) -> PackedMask:
        m = np.asarray(mask, dtype=bool)
        if m.ndim != 2:
            raise ValueError(f"a mask is (H, W), got shape {m.shape}")
        return cls(np.packbits(m, axis=None), (m.shape[0], m.shape[1]))

    def __getitem__(self, rc: tuple[int, int]) -> bool:
        r, c = rc
        h, w = self.shape
        if not (0 <= r < h and 0 <= c < w):
            raise IndexError(f"pixel ({r}, {c}) is outside the {w}x{h} mask")
        i = int(r) * w + int(c)
        return bool((int(self.bits[i >> 3]) >> (7 - (i & 7))) & 1)

    def unpack(self) -> np.ndarray:
        """The ``(H, W)`` bool array (a new, writable one)."""
        h, w = self.shape
        return np.unpackbits(self.bits, count=h * w).reshape(h, w).view(bool)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        a = self.unpack()
        return a if dtype is None else a.astype(dtype)

    def __or__(self, other: PackedMask) -> PackedMask:
        if other.shape != self.shape:
            raise ValueError(f"masks of different sizes: {self.shape} and {other.shape}")
        return PackedMask(self.bits | other.bits, self.shape)


def cache_dir() -> Path | None:
    """The mask cache folder (module docstring), ``None`` when turned off."""
    own = os.environ.get("POINTLAB_CACHE_DIR")
    if own is not None:
        return None if own.strip().lower() in ("", "off", "0", "none") else Path(own) / "masks"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "pointlab" / "masks"


def _path(folder: Path, key: str, mtime_ns: int, rule: str) -> Path:
    h = hashlib.sha1(f"{key}\0{mtime_ns}\0{rule}\0{VERSION}".encode("utf-8", "surrogatepass")).hexdigest()
    return folder / h[:2] / f"{h}.plmk"


def read_packed(key: str, mtime_ns: int, rule: str) -> PackedMask | None:
    """The cached mask of source ``key`` at ``mtime_ns`` under ``rule``, or ``None`` (off, absent, or
    not a whole file of this layout)."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        raw = _path(folder, key, mtime_ns, rule).read_bytes()
    except OSError:
        return None
    if len(raw) < _HEADER.size:
        return None
    magic, version, h, w = _HEADER.unpack_from(raw)
    n = h * w
    if magic != _MAGIC or version != VERSION or len(raw) != _HEADER.size + (n + 7) // 8:
        return None
    return PackedMask(np.frombuffer(raw, dtype=np.uint8, offset=_HEADER.size), (h, w))


def write_packed(key: str, mtime_ns: int, rule: str, mask: PackedMask) -> None:
    """Keep ``mask`` for :func:`read_packed`; a failure to write is logged, never raised."""
    folder = cache_dir()
    if folder is None:
        return
    path = _path(folder, key, mtime_ns, rule)
    h, w = mask.shape
    data = _HEADER.pack(_MAGIC, VERSION, h, w) + mask.bits.tobytes()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with replaced_on_success(path) as tmp:
            tmp.write_bytes(data)
    except OSError as e:  # a read-only or full disk: scoring goes on without the cache
        log.debug("mask cache: cannot write %s: %s", path, e)
