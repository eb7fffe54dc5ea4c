"""Untrusted image intake for every web app of pointlab: bounded decoding, off the event loop.

An uploaded file is hostile until decoded. ``decode_image(data, limits)`` checks, in this order,
before Pillow decodes any pixel:

1. size in bytes (``max_bytes``: 413);
2. for PNG, every ancillary text-like chunk (``tEXt``, ``zTXt``, ``iTXt``, ``iCCP``) by walking
   the chunk list: each chunk's *inflated* size is bounded with ``zlib.decompressobj(max_length)``
   (never more than ``max_text_chunk_bytes + 1`` bytes are produced), and so is their sum
   (``max_text_total_bytes``): 422. This is the "PNG text bomb" of issue 14 (#3): a 204 kB file
   whose zTXt inflates past 1 MB made Pillow raise ``ValueError`` (a 500); here it is a 422
   that names the chunk;
3. the format from Pillow's header sniffing (``formats``: 415);
4. width, height (``max_side_px``) and pixel count (``max_pixels``) from the header, before the
   pixel data is decompressed (a decompression bomb: 422);
5. the decode itself; anything Pillow or zlib raises on a corrupt file (``OSError``,
   ``SyntaxError``, ``ValueError``, ``EOFError``, ``struct.error``, ``zlib.error``,
   ``Image.DecompressionBombError``) is a 415 "not a readable image".

Every failure is an ``ImageRejected`` (a ``ValueError``) with ``status`` (the HTTP status to
answer) and ``reason`` (a short machine-readable tag); nothing else escapes ``decode_image``
(a fuzz test over bombs and random mutations holds it to that).

Decoding costs CPU (a 4096 x 4096 JPEG is hundreds of milliseconds): inside an ``async`` route call
``await decode_image_async(data, limits)`` (and ``await write_png_async(rgb, path)``), which run
in a worker thread, so one upload never stalls other requests. Pillow and OpenCV release the GIL
while they decode and encode.

Used by the Point-Battle arena (``ui/arena``) and the annotation app; the Point-Act app takes
images too and can use the same guard.
"""

from __future__ import annotations

import hashlib
import io
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from pointlab.benchmark.records import replaced_on_success
from pointlab.ui.errors import UiError

__all__ = [
    "ImageLimits",
    "ImageRejected",
    "DecodedImage",
    "decode_image",
    "decode_image_async",
    "encode_png",
    "write_png",
    "write_png_async",
    "check_png_text_chunks",
]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_TEXT_CHUNKS = (b"tEXt", b"zTXt", b"iTXt", b"iCCP")


class ImageRejected(UiError, ValueError):
    """An image refused by the guard. ``status``: HTTP status (413, 415, 422); ``reason``: a tag
    (``too_many_bytes``, ``empty``, ``format``, ``unreadable``, ``too_large_side``,
    ``too_many_pixels``, ``text_chunk``)."""

    def __init__(self, message: str, status: int, reason: str):
        super().__init__(message)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class ImageLimits:
    """Bounds on one untrusted image.

    Attributes:
        max_bytes: largest file, bytes.
        max_side_px: largest width or height, pixels.
        max_pixels: largest width * height (decompression bombs), pixels.
        formats: Pillow format names accepted (``im.format``).
        max_text_chunk_bytes: largest inflated PNG text/ICC chunk, bytes.
        max_text_total_bytes: largest sum of inflated PNG text/ICC chunks, bytes.
    """

    max_bytes: int = 8 * 1024 * 1024
    max_side_px: int = 4096
    max_pixels: int = 4096 * 4096
    formats: tuple[str, ...] = ("PNG", "JPEG", "WEBP")
    max_text_chunk_bytes: int = 256 * 1024
    max_text_total_bytes: int = 1024 * 1024

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.max_side_px < 1 or self.max_pixels < 1:
            raise ValueError("image limits must be positive")
        if self.max_text_chunk_bytes < 0 or self.max_text_total_bytes < 0:
            raise ValueError("text chunk limits must be >= 0")


@dataclass(frozen=True)
class DecodedImage:
    """``rgb``: ``(H, W, 3)`` uint8 RGB; ``sha256``: hex digest of the file bytes; ``format``: Pillow's name."""

    rgb: np.ndarray
    sha256: str
    format: str

    @property
    def width(self) -> int:
        return int(self.rgb.shape[1])

    @property
    def height(self) -> int:
        return int(self.rgb.shape[0])


def _inflated_size(data: bytes, limit: int) -> int:
    """Bytes ``data`` (a zlib stream) inflates to, counting at most ``limit + 1``.
    Raises ``zlib.error`` on a corrupt stream."""
    d = zlib.decompressobj()
    out = len(d.decompress(data, limit + 1))
    return out


def check_png_text_chunks(data: bytes, limits: ImageLimits) -> None:
    """Walk a PNG's chunks and bound its text and ICC chunks (see the module docstring).

    A file that is not a PNG is left alone. Raises: ImageRejected (422 ``text_chunk``; 415
    ``unreadable`` for a chunk list that runs past the end of the file).
    """
    if not data.startswith(_PNG_SIGNATURE):
        return
    pos, total, n = len(_PNG_SIGNATURE), 0, len(data)
    while pos + 8 <= n:
        length, ctype = struct.unpack(">I4s", data[pos : pos + 8])
        body_start, body_end = pos + 8, pos + 8 + length
        if body_end + 4 > n:
            raise ImageRejected(f"PNG chunk {ctype!r} runs past the end of the file", 415, "unreadable")
        if ctype in _TEXT_CHUNKS:
            body = data[body_start:body_end]
            size = _text_chunk_size(ctype, body, limits.max_text_chunk_bytes)
            total += size
            if size > limits.max_text_chunk_bytes:
                raise ImageRejected(
                    f"PNG {ctype.decode('latin-1')} chunk inflates past {limits.max_text_chunk_bytes} bytes",
                    422,
                    "text_chunk",
                )
            if total > limits.max_text_total_bytes:
                raise ImageRejected(
                    f"PNG text chunks inflate past {limits.max_text_total_bytes} bytes in all", 422, "text_chunk"
                )
        if ctype == b"IEND":
            return
        pos = body_end + 4  # skip the CRC


def _text_chunk_size(ctype: bytes, body: bytes, limit: int) -> int:
    """Inflated size of one text-like chunk body (PNG spec 11.3.4: tEXt, zTXt, iTXt; 11.3.3.3 iCCP)."""
    try:
        if ctype == b"tEXt":
            return len(body)
        keyword_end = body.index(b"\x00")
        if ctype in (b"zTXt", b"iCCP"):  # keyword \0 method(1) zlib-stream
            return keyword_end + 1 + _inflated_size(body[keyword_end + 2 :], limit)
        # iTXt: keyword \0 flag(1) method(1) language \0 translated keyword \0 text
        flag = body[keyword_end + 1]
        lang_end = body.index(b"\x00", keyword_end + 3)
        tk_end = body.index(b"\x00", lang_end + 1)
        text = body[tk_end + 1 :]
        return tk_end + 1 + (_inflated_size(text, limit) if flag else len(text))
    except (ValueError, IndexError, zlib.error):
        raise ImageRejected(f"PNG {ctype.decode('latin-1')} chunk is malformed", 415, "unreadable") from None


def decode_image(data: bytes, limits: ImageLimits = ImageLimits()) -> DecodedImage:
    """Check and decode an untrusted image (see the module docstring). Blocking: from an ``async``
    function use ``decode_image_async``.

    Raises: ImageRejected only.
    """
    if not data:
        raise ImageRejected("empty upload", 400, "empty")
    if len(data) > limits.max_bytes:
        raise ImageRejected(f"image is {len(data)} bytes, limit {limits.max_bytes}", 413, "too_many_bytes")
    check_png_text_chunks(data, limits)
    try:
        with Image.open(io.BytesIO(data)) as im:
            if im.format not in limits.formats:
                raise ImageRejected(
                    f"image type {im.format} not accepted (use {', '.join(limits.formats)})", 415, "format"
                )
            w, h = im.size
            if max(w, h) > limits.max_side_px:
                raise ImageRejected(
                    f"image is {w}x{h}, largest side allowed {limits.max_side_px}", 422, "too_large_side"
                )
            if w * h > limits.max_pixels:
                raise ImageRejected(
                    f"image is {w}x{h} = {w * h} pixels, limit {limits.max_pixels}", 422, "too_many_pixels"
                )
            fmt = im.format
            rgb = np.asarray(im.convert("RGB"))
    except ImageRejected:
        raise
    except Image.DecompressionBombError as e:  # Pillow's own pixel limit fired before ours
        raise ImageRejected(f"image has too many pixels: {str(e)[:160]}", 422, "too_many_pixels") from None
    except (OSError, SyntaxError, ValueError, EOFError, struct.error, zlib.error, IndexError, TypeError, KeyError) as e:
        # Pillow's decoders raise all of these on corrupt input (SyntaxError for broken PNG chunks)
        if isinstance(e, UnidentifiedImageError):  # its text names a BytesIO object: nothing for a person
            f = list(limits.formats)
            why = f"not a {' or '.join([', '.join(f[:-1]), f[-1]] if len(f) > 1 else f)} file"
        else:
            why = f"{type(e).__name__}: {str(e)[:200]}"
        raise ImageRejected(f"not a readable image: {why}", 415, "unreadable") from None
    except MemoryError:
        raise ImageRejected("image too large to decode", 422, "too_many_pixels") from None
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.size == 0:
        raise ImageRejected("image has no pixels", 415, "unreadable")
    return DecodedImage(rgb=rgb, sha256=hashlib.sha256(data).hexdigest(), format=str(fmt))


async def decode_image_async(data: bytes, limits: ImageLimits = ImageLimits()) -> DecodedImage:
    """``decode_image`` in a worker thread (the event loop keeps serving). Raises: ImageRejected."""
    import anyio

    return await anyio.to_thread.run_sync(decode_image, data, limits)


def encode_png(rgb: np.ndarray) -> bytes:
    """``(H, W, 3)`` or ``(H, W)`` uint8 -> PNG bytes (OpenCV, fast compression level)."""
    import cv2

    a = np.ascontiguousarray(rgb)
    if a.ndim == 3:
        a = cv2.cvtColor(a, cv2.COLOR_RGB2BGR)
    ok, buf = cv2.imencode(".png", a, [cv2.IMWRITE_PNG_COMPRESSION, 3])
    if not ok:
        raise ValueError("PNG encoding failed")
    return buf.tobytes()


def write_png(rgb: np.ndarray, path: str | Path) -> Path:
    """Write ``rgb`` as PNG atomically (temp file + rename in the same folder); an existing file of
    that name is kept (files are named by content hash). Returns the path."""
    p = Path(path)
    if p.exists():
        return p
    p.parent.mkdir(parents=True, exist_ok=True)
    data = encode_png(rgb)
    with replaced_on_success(p) as tmp:
        tmp.write_bytes(data)
    return p


async def write_png_async(rgb: np.ndarray, path: str | Path) -> Path:
    """``write_png`` in a worker thread."""
    import anyio

    return await anyio.to_thread.run_sync(write_png, rgb, path)
