"""image_transport's compressed and compressedDepth payloads, on real RGB-D frames.

The expected bytes are from the plugins' ROS 2 sources (compressed_depth_image_transport
``codec.cpp`` / ``compression_common.hpp``: a 12-byte ConfigHeader, format INV_DEPTH = 0, then the
PNG; format string ``"<encoding>; compressedDepth png"``), not from this module's output.
"""

from __future__ import annotations

import struct
from types import SimpleNamespace

import numpy as np
import pytest

from pointlab.perception.image_codecs import decode_color, decode_depth, encode_color, encode_depth
from pointlab.perception.image_msgs import image_to_depth, image_to_rgb
from pointlab.perception.replay import load_rgbd_frame

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def msg(fmt: str, data: bytes):
    return SimpleNamespace(format=fmt, data=data, header=None)


def test_depth_is_lossless_in_the_image_transport_layout(uoc_tabletop):
    depth = load_rgbd_frame(uoc_tabletop, 4).depth
    assert depth.dtype == np.uint16 and (depth == 0).any() and depth.max() > 500  # holes and real depths
    fmt, data = encode_depth(depth)
    assert fmt == "16UC1; compressedDepth png"
    assert data[:12] == b"\x00" * 12  # format INV_DEPTH (0) and depthParam 0, 0 for 16-bit depth
    assert data[12:20] == PNG_SIGNATURE
    assert np.array_equal(decode_depth(msg(fmt, data)), depth)
    # a real RealSense depth frame compresses about 3-4x with PNG (raw: 2 bytes per pixel)
    assert len(data) < depth.nbytes / 2


def test_float_depth_is_decoded_as_codec_cpp_quantised_it():
    # codec.cpp, 32FC1: A = z0 (z0 + 1), B = 1 - A / depth_max with the plugin's defaults
    # depth_quantization z0 = 100 and depth_max = 10 m: A = 10100, B = -1009; a depth d metres is
    # stored as v = A / d + B: 1 m -> 9091, 2 m -> 4041, none -> 0
    import cv2

    inv = np.array([[9091, 4041, 0]], dtype=np.uint16)
    ok, png = cv2.imencode(".png", inv)
    assert ok
    data = struct.pack("<iff", 0, 10100.0, -1009.0) + png.tobytes()
    assert decode_depth(msg("32FC1; compressedDepth png", data)).tolist() == [[1000, 2000, 0]]
    # ROS 1's older form has no codec name after compressedDepth: png
    assert decode_depth(msg("16UC1; compressedDepth", struct.pack("<iff", 0, 0, 0) + png.tobytes())).tolist() == [
        [9091, 4041, 0]
    ]


def test_colour_jpeg_decodes_to_the_frame_within_a_few_levels(uoc_tabletop):
    rgb = load_rgbd_frame(uoc_tabletop, 4).color
    fmt, data = encode_color(rgb, quality=90)
    assert fmt == "rgb8; jpeg compressed bgr8" and data[:3] == b"\xff\xd8\xff"
    back = decode_color(msg(fmt, data))
    assert back.shape == rgb.shape and back.dtype == np.uint8
    # JPEG at quality 90 (4:2:0 chroma): a PSNR above 30 dB, the usual bar of "visually lossless"
    mse = np.mean((back.astype(float) - rgb.astype(float)) ** 2)
    assert 10 * np.log10(255**2 / mse) > 30.0
    # channel order: the file is BGR-coded, the array RGB; a pure red patch stays red
    red = np.zeros((16, 16, 3), np.uint8)
    red[..., 0] = 255
    assert decode_color(msg(*encode_color(red))).mean(axis=(0, 1)).tolist()[0] > 250
    assert len(data) < rgb.nbytes / 4  # sizes per trial are measured by pointlab perf, docs/recording.md


def test_the_image_readers_take_compressed_messages_as_they_take_raw_ones(uoc_tabletop):
    f = load_rgbd_frame(uoc_tabletop, 4)
    assert np.array_equal(image_to_depth(msg(*encode_depth(f.depth)))[0], f.depth)
    assert image_to_depth(msg(*encode_depth(f.depth)))[1] == 0.001
    assert image_to_rgb(msg(*encode_color(f.color))).shape == f.color.shape


@pytest.mark.parametrize(
    "fmt,data,why",
    [
        ("16UC1; compressedDepth png", b"\x00" * 12, "no image after its header"),
        ("16UC1; compressedDepth png", b"\x00" * 12 + b"not a png at all", "16-bit single-channel PNG"),
        ("16UC1; compressedDepth rvl", b"\x00" * 40, "not a compressedDepth png"),
        ("rgb8; jpeg compressed bgr8", b"\x00" * 40, "not a compressedDepth png"),
    ],
)
def test_bad_depth_payloads_are_refused_with_a_reason(fmt, data, why):
    with pytest.raises(ValueError, match=why):
        decode_depth(msg(fmt, data))


def test_bad_colour_payloads_and_inputs_are_refused():
    with pytest.raises(ValueError, match="does not decode"):
        decode_color(msg("rgb8; jpeg compressed bgr8", b"\xff\xd8\xff garbage"))
    with pytest.raises(ValueError, match="uint8"):
        encode_color(np.zeros((4, 4), np.uint8))
    with pytest.raises(ValueError, match="uint16"):
        encode_depth(np.zeros((4, 4), np.float32))
    # an 8-bit PNG is not depth
    import cv2

    png = cv2.imencode(".png", np.zeros((4, 4), np.uint8))[1].tobytes()
    with pytest.raises(ValueError, match="16-bit"):
        decode_depth(msg("16UC1; compressedDepth png", b"\x00" * 12 + png))
