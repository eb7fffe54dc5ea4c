"""The four sim arena agents: each keyed by the image it is sent (found again after JPEG
re-encoding and down-scaling), each with its behaviour, on the sim tabletop demo set."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from pointlab.benchmark.points import parse_points
from pointlab.sim_mock.arena_models import ImageKeyedOracle, arena_sim_models
from pointlab.sim_mock.model_server import NOT_FOUND_TEXT, ChatRequest
from pointlab.sim_mock.plugins import write_arena_demo
from pointlab.ui.arena.curated import CuratedSet

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    d = tmp_path_factory.mktemp("demo")
    write_arena_demo(d)
    return CuratedSet.from_manifest(d / "arena_images.json"), d


def _req(rgb, text):
    return ChatRequest(model="m", messages=[], prompt_text=text, all_text=text, instruction=text, image_rgb=rgb)


def _jpeg_half(rgb):
    buf = io.BytesIO()
    Image.fromarray(rgb).resize((rgb.shape[1] // 2, rgb.shape[0] // 2)).save(buf, format="JPEG", quality=80)
    return np.asarray(Image.open(buf).convert("RGB"))


def _inside(mask, u, v, scale=1.0):
    r, c = int(np.floor((v + 0.5) * scale)), int(np.floor((u + 0.5) * scale))
    return 0 <= r < mask.shape[0] and 0 <= c < mask.shape[1] and bool(mask[r, c])


def test_image_keyed_answers(demo):
    cur, d = demo
    models = arena_sim_models(cur.sim_entries())
    rgb = np.asarray(Image.open(d / "tabletop_2.png").convert("RGB"))
    mask = np.asarray(Image.open(d / "masks" / "tabletop_2__orange_can.png")) > 127
    small = _jpeg_half(rgb)
    for img, scale in ((rgb, 1.0), (small, 2.0)):
        h, w = img.shape[:2]
        exact = parse_points(models["arena-exact"].answer(_req(img, "Point to the orange can")), "molmo", w, h)
        ((u, v),) = exact.points_px
        assert _inside(mask, u, v, scale)
        centre = parse_points(models["arena-center"].answer(_req(img, "Point to the orange can")), "xy_pixels", w, h)
        ((cu, cv),) = centre.points_px
        # 60 % of the way from the target to the image centre
        assert cu == pytest.approx(u + 0.6 * ((w - 1) / 2 - u), abs=1.0)
        assert cv == pytest.approx(v + 0.6 * ((h - 1) / 2 - v), abs=1.0)
    # the same request gets the same noisy answer; other instructions other noise
    a1 = models["arena-noisy"].answer(_req(rgb, "Point to the orange can"))
    assert a1 == models["arena-noisy"].answer(_req(rgb, "Point to the orange can"))
    assert a1 != models["arena-noisy"].answer(_req(rgb, "Point to the can"))
    # wrong format about half the time over many instructions
    wrong = [
        parse_points(
            models["arena-wrongfmt"].answer(_req(rgb, f"Point to the orange can #{k}")), "xy_pixels", 640, 480
        ).ok
        for k in range(40)
    ]
    assert 10 <= wrong.count(False) <= 30
    # an unknown image or target: nothing found (exact), the centre (biased)
    noise = np.random.default_rng(0).integers(0, 255, (480, 640, 3), dtype=np.uint8)
    assert models["arena-exact"].answer(_req(noise, "Point to the orange can")) == NOT_FOUND_TEXT
    assert models["arena-exact"].answer(_req(rgb, "Point to the giraffe")) == NOT_FOUND_TEXT
    c = parse_points(models["arena-center"].answer(_req(noise, "Point to it")), "xy_pixels", 640, 480).points_px
    assert c.tolist() == [[319.5, 239.5]]


def test_oracle_refuses_a_mask_of_another_size(tmp_path, demo):
    _, d = demo
    Image.fromarray(np.zeros((10, 10), np.uint8)).save(tmp_path / "m.png")
    with pytest.raises(ValueError, match="mask"):
        ImageKeyedOracle(
            [{"image": str(d / "tabletop_0.png"), "targets": [{"names": ["x"], "mask": str(tmp_path / "m.png")}]}]
        )
