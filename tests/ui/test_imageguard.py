"""ui.imageguard: bounded decoding of untrusted images (issue 14 #1, #3 and the upload fuzz test).

The bombs are built here byte by byte (PNG chunk = length, type, data, CRC-32 of type + data), so
what each one exercises is visible: a zTXt / iTXt / iCCP chunk of a 200 kB file that inflates past
1 MB (Pillow raises ValueError on it: a 500 before), an IHDR announcing 100,000 x 100,000 pixels,
truncations and random mutations of valid files. Whatever the input, the guard raises
``ImageRejected`` with a 4xx status or returns pixels; nothing else."""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from pointlab.ui.imageguard import ImageLimits, ImageRejected, decode_image

LIMITS = ImageLimits(
    max_bytes=2 * 1024 * 1024,
    max_side_px=4096,
    max_pixels=4096 * 4096,
    max_text_chunk_bytes=256 * 1024,
    max_text_total_bytes=1024 * 1024,
)


def chunk(ctype: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + ctype + data + struct.pack(">I", zlib.crc32(ctype + data) & 0xFFFFFFFF)


def png(w: int = 8, h: int = 8, extra: Sequence[bytes] = (), idat: bytes | None = None) -> bytes:
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)  # 8-bit RGB
    body = zlib.compress(b"".join(b"\x00" + bytes(3 * w) for _ in range(h))) if idat is None else idat
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + b"".join(extra) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


BOMB = zlib.compress(b"A" * (20 * 1024 * 1024), 9)  # 20 MB of text in about 20 kB


def text_bombs() -> dict[str, bytes]:
    return {
        "zTXt": png(extra=[chunk(b"zTXt", b"Comment\x00\x00" + BOMB)]),
        "iTXt": png(extra=[chunk(b"iTXt", b"Comment\x00\x01\x00en\x00\x00" + BOMB)]),
        "iCCP": png(extra=[chunk(b"iCCP", b"icc\x00\x00" + BOMB)]),
        "many tEXt": png(extra=[chunk(b"tEXt", b"k\x00" + b"x" * 200_000)] * 6),
    }


@pytest.mark.parametrize("name", list(text_bombs()))
def test_png_text_bombs_are_a_clear_422(name):
    data = text_bombs()[name]
    assert len(data) < 1.3 * 1024 * 1024
    with pytest.raises(ImageRejected) as e:
        decode_image(data, LIMITS)
    assert e.value.status == 422 and e.value.reason == "text_chunk"
    assert name.split()[-1] in str(e.value) or "in all" in str(e.value)


def test_pillow_itself_fails_on_the_ztxt_bomb():
    # the failure the guard replaces: Pillow's own limit raises a bare ValueError (was a 500)
    with pytest.raises(ValueError, match="Decompressed"):
        Image.open(io.BytesIO(text_bombs()["zTXt"])).load()


def test_small_text_chunks_and_icc_pass():
    data = png(
        4, 3, extra=[chunk(b"tEXt", b"Title\x00hello"), chunk(b"zTXt", b"c\x00\x00" + zlib.compress(b"x" * 1000))]
    )
    img = decode_image(data, LIMITS)
    assert img.rgb.shape == (3, 4, 3) and img.format == "PNG" and len(img.sha256) == 64


def test_pixel_count_bomb_is_refused_before_decoding():
    # IHDR says 100,000 x 100,000 (3e10 bytes of RGB); the IDAT is tiny and never inflated
    data = png(100_000, 100_000, idat=zlib.compress(b"\x00" * 1000))
    with pytest.raises(ImageRejected) as e:
        decode_image(data, LIMITS)
    assert e.value.status == 422 and e.value.reason in ("too_large_side", "too_many_pixels")
    wide = png(4000, 4000, idat=zlib.compress(b"\x00" * 100))
    with pytest.raises(ImageRejected) as e:
        decode_image(wide, ImageLimits(max_pixels=1000 * 1000))
    assert e.value.reason == "too_many_pixels"


def test_bytes_type_and_truncation():
    good = io.BytesIO()
    Image.fromarray(np.full((20, 30, 3), 200, np.uint8)).save(good, format="JPEG")
    jpeg = good.getvalue()
    assert decode_image(jpeg, LIMITS).rgb.shape == (20, 30, 3)
    cases = {
        b"": 400,
        b"x" * (LIMITS.max_bytes + 1): 413,
        b"GIF89a" + b"\x00" * 50: 415,
        jpeg[:60]: 415,
        png()[:40]: 415,
    }
    for data, status in cases.items():
        with pytest.raises(ImageRejected) as e:
            decode_image(data, LIMITS)
        assert e.value.status == status, (data[:10], e.value)
    with pytest.raises(ImageRejected) as e:  # a text file: said for a person, no Python object text
        decode_image(b"hello, this is not an image\n" * 4, LIMITS)
    assert str(e.value) == "not a readable image: not a PNG, JPEG or WEBP file" and e.value.status == 415
    gif = io.BytesIO()
    Image.new("RGB", (4, 4)).save(gif, format="GIF")
    with pytest.raises(ImageRejected) as e:
        decode_image(gif.getvalue(), LIMITS)
    assert e.value.status == 415 and e.value.reason == "format"


def _seeds() -> list[bytes]:
    out = [png(16, 9)] + list(text_bombs().values())
    for fmt in ("PNG", "JPEG", "WEBP"):
        b = io.BytesIO()
        Image.fromarray(np.random.default_rng(1).integers(0, 255, (12, 17, 3), dtype=np.uint8)).save(b, format=fmt)
        out.append(b.getvalue())
    return out


SEEDS = _seeds()


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    seed=st.sampled_from(range(len(SEEDS))),
    edits=st.lists(
        st.tuples(st.integers(min_value=0, max_value=10**7), st.integers(min_value=0, max_value=255)), max_size=8
    ),
    cut=st.one_of(st.none(), st.integers(min_value=0, max_value=10**7)),
)
def test_fuzz_decoder_only_ever_answers_4xx_or_pixels(seed, edits, cut):
    data = bytearray(SEEDS[seed])
    for pos, val in edits:
        data[pos % len(data)] = val
    if cut is not None:
        data = data[: cut % (len(data) + 1)]
    try:
        img = decode_image(bytes(data), LIMITS)
    except ImageRejected as e:
        assert 400 <= e.status < 500
    else:
        assert img.rgb.dtype == np.uint8 and img.rgb.ndim == 3 and img.rgb.shape[2] == 3
        assert img.width * img.height <= LIMITS.max_pixels
