"""Prompt builders: format instructions, PointArena Table 1 styles, image data URLs."""

from __future__ import annotations

import numpy as np
import pytest

from pointlab.benchmark.points import POINT_FORMATS, parse_points
from pointlab.benchmark.prompts import (
    PROMPT_STYLES,
    build_messages,
    build_prompt,
    data_url_to_image,
    extract_instruction,
    image_to_data_url,
)

FORMATS = [f for f in POINT_FORMATS if f != "auto"]
INSTR = "Pick up the red mug"


def test_format_instructions_name_their_coordinate_system():
    assert build_prompt(INSTR, "molmo", "default", width=640, height=480) == "Pick up the red mug\nPoint to the answer."
    g = build_prompt(INSTR, "gemini", "default", width=640, height=480)
    assert '[{"point": <point>, "label": <label1>}, ...]' in g and "[y, x] format normalized to 0-1000" in g
    assert '"point_2d": [x, y]' in build_prompt(INSTR, "qwen", "default", width=640, height=480)
    assert "[(x1, y1), (x2, y2), ...]" in build_prompt(INSTR, "robopoint", "default", width=640, height=480)
    xy = build_prompt(INSTR, "xy_pixels", "default", width=640, height=480)
    assert "640 pixels wide and 480 pixels high" in xy and "[x, y]" in xy


def test_unparsed_is_the_raw_instruction_and_cot_asks_for_reasoning():
    assert build_prompt(f"  {INSTR} ", "gemini", "unparsed", width=1, height=1) == INSTR
    cot = build_prompt(INSTR, "gemini", "cot", width=640, height=480)
    assert cot.startswith(INSTR) and "think step by step" in cot and "last line" in cot


@pytest.mark.parametrize("fmt", FORMATS)
def test_two_shot_examples_are_answers_in_the_format(fmt):
    msgs = build_messages(INSTR, np.zeros((480, 640, 3), np.uint8), fmt, "two_shot", width=640, height=480)
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user"]
    # example 1: apple at (0.25, 0.60) of 640x480 = (160, 288); example 2: cups at (396.8, 144), (512, 153.6)
    one = parse_points(msgs[1]["content"], fmt, 640, 480)
    two = parse_points(msgs[3]["content"], fmt, 640, 480)
    assert np.allclose(one.points_px, [[160.0, 288.0]], atol=0.5)
    assert np.allclose(two.points_px, [[396.8, 144.0], [512.0, 153.6]], atol=0.5)
    last = msgs[-1]["content"]
    assert last[0]["type"] == "image_url" and last[1]["text"] == build_prompt(
        INSTR, fmt, "default", width=640, height=480
    )


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("style", PROMPT_STYLES)
def test_extract_instruction_inverts_every_template(fmt, style):
    text = build_prompt(INSTR, fmt, style, width=64, height=48)
    assert extract_instruction(text) == INSTR


def test_extract_instruction_of_foreign_text_is_the_text():
    assert extract_instruction("  where is the cup?\n") == "where is the cup?"


def test_bad_format_or_style():
    with pytest.raises(ValueError):
        build_prompt(INSTR, "auto", "default", width=1, height=1)
    with pytest.raises(ValueError):
        build_prompt(INSTR, "molmo", "three_shot", width=1, height=1)
    assert build_prompt(INSTR, "auto", "unparsed", width=1, height=1) == INSTR


def test_data_url_round_trip_png_exact_jpeg_close():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, size=(30, 50, 3), dtype=np.uint8)
    png = image_to_data_url(img, "png")
    assert png.startswith("data:image/png;base64,")
    assert np.array_equal(data_url_to_image(png), img)  # lossless, and RGB order kept
    red = np.zeros((16, 16, 3), np.uint8)
    red[..., 0] = 255
    jpg = image_to_data_url(red)
    assert jpg.startswith("data:image/jpeg;base64,")
    back = data_url_to_image(jpg)
    assert back.shape == (16, 16, 3) and back[..., 0].min() > 240 and back[..., 2].max() < 15


@pytest.mark.parametrize("url", ["", "http://x/y.png", "data:image/png;base64,AAAA", "data:text/plain,hello"])
def test_bad_data_urls(url):
    with pytest.raises(ValueError):
        data_url_to_image(url)


def test_bad_image_array():
    with pytest.raises(ValueError):
        image_to_data_url(np.zeros((4, 4), np.uint8))


@pytest.mark.parametrize("url", ["data:image/png;base64,", "data:image/png;base64,!!!!", "data:image/jpeg;base64,===="])
def test_data_url_without_bytes_is_a_value_error(url):
    # an empty buffer made cv2.imdecode raise cv2.error (not ValueError): a 500 in the sim server
    with pytest.raises(ValueError, match="no bytes"):
        data_url_to_image(url)


def test_data_url_image_over_the_pixel_limit_is_refused_from_its_header():
    import base64
    import struct
    import zlib

    from pointlab.benchmark.prompts import MAX_DATA_URL_PIXELS

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    # a header claiming 10000 x 7000 = 70 Mpx > 64 Mpx and one short data chunk: refused from the
    # header, before any decoding is tried
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 10000, 7000, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )
    assert 10000 * 7000 > MAX_DATA_URL_PIXELS
    with pytest.raises(ValueError, match="10000x7000 pixels"):
        data_url_to_image("data:image/png;base64," + base64.b64encode(png).decode())
