"""Point-Bench authoring in Chromium (issue 13 must-show): two images annotated (one counting item
with two instances), verified with a second token, giving a dataset ``pointlab bench pointing`` runs
on. The images are sim tabletop renders, so the drawn masks are checked against the renderer's own
object masks (IoU), and the sim oracle then scores 100 % on the exported dataset."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pointlab.benchmark.agents_config import load_agents
from pointlab.benchmark.pointbench import load_dataset
from pointlab.benchmark.pointbench.annotation import AnnotationStore
from pointlab.sim_mock.model_server import serve_in_thread
from pointlab.sim_mock.plugins import serve_arena_models, write_arena_demo
from pointlab.ui.annotate import create_annotate_app
from pointlab.ui.arena.launch import DEFAULT_ARENA_AGENTS

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ALICE, BOB = "alice-token-123", "bob-token-4567"


def _gt(demo: Path, k: int, obj: str) -> np.ndarray:
    return np.asarray(Image.open(demo / "masks" / f"tabletop_{k}__{obj}.png").convert("L")) > 127


def _iou(a, b) -> float:
    return float((a & b).sum() / (a | b).sum())


@pytest.fixture
def annotate_url(tmp_path):
    demo = tmp_path / "demo"
    write_arena_demo(demo)
    images = tmp_path / "images"
    images.mkdir()
    for k in (0, 1):
        (images / f"tabletop_{k}.png").write_bytes((demo / f"tabletop_{k}.png").read_bytes())
    store = AnnotationStore(tmp_path / "bench")
    store.add_folder(images)
    # the three anonymous models: the sim arena agents, which know none of these images (so the
    # filter keeps the queries: at most one model is right)
    sim_url, stop_models = serve_arena_models([])
    agents = dict(list(load_agents(DEFAULT_ARENA_AGENTS, sim_base_url=sim_url).items())[:3])
    app = create_annotate_app(store, agents, {ALICE: "alice", BOB: "bob"})
    url, stop = serve_in_thread(app)
    yield url.removesuffix("/v1"), store, demo, tmp_path
    stop()
    stop_models()


def test_annotate_two_images_verify_and_run_pointing(chromium, annotate_url, shots):
    base, store, demo, tmp = annotate_url
    ctx = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = ctx.new_page()
    page.goto(f"{base}/#token={ALICE}")
    page.wait_for_function("document.getElementById('canvas').width === 640")

    def css(u, v):
        box = page.locator("#canvas").bounding_box()
        s = box["width"] / 640
        return box["x"] + (u + 0.5) * s, box["y"] + (v + 0.5) * s

    def centre(mask):
        ys, xs = np.nonzero(mask)
        return float(np.median(xs)), float(np.median(ys))

    def seed(mask):
        page.mouse.click(*css(*centre(mask)))
        page.wait_for_function("document.getElementById('status').textContent.startsWith('Seeded')")

    def ask(query):
        page.fill("#query", query)
        page.click("#ask")
        page.wait_for_function("document.querySelectorAll('#models li').length === 3")

    def submit():
        page.click("#submit")
        page.wait_for_function("document.getElementById('status').textContent.startsWith('Submitted')")

    # image 1, spatial: seed on the red cube, a stray brush stroke undone, a polygon erase undone
    page.select_option("#category", "spatial")
    ask("Point to the red cube")
    red = _gt(demo, 0, "red_cube")
    seed(red)
    page.click('#tools button[data-tool="brush"]')
    page.mouse.move(*css(20, 20))
    page.mouse.down()
    page.mouse.move(*css(60, 40), steps=5)
    page.mouse.up()
    page.click("#undo")
    page.click('#tools button[data-tool="polyerase"]')
    ys, xs = np.nonzero(red)
    for u, v in ((xs.min() - 2, ys.min() - 2), (xs.max() + 2, ys.min() - 2), (xs.max() + 2, ys.max() + 2)):
        page.mouse.click(*css(u, v))
    page.click("#close-poly")
    page.click("#undo")
    page.screenshot(path=str(shots / "annotate_1280.png"))
    submit()

    # image 2, counting: two instances (the red cube seeded, the green cube as a polygon)
    page.wait_for_function("document.getElementById('progress').textContent.startsWith('image 1 of 1')")
    page.wait_for_function("document.getElementById('canvas').width === 640")
    page.select_option("#category", "counting")
    page.click('#tools button[data-tool="seed"]')
    ask("Point to the red cube and the green cube")
    seed(_gt(demo, 1, "red_cube"))
    page.click("#new-instance")
    page.click('#tools button[data-tool="poly"]')
    green = _gt(demo, 1, "green_cube")
    import cv2

    cnt = max(cv2.findContours(green.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)[0], key=len)
    hull = cv2.approxPolyDP(cv2.convexHull(cnt), 1.0, True).reshape(-1, 2)
    for u, v in hull:
        page.mouse.click(*css(float(u), float(v)))
    page.click("#close-poly")
    assert page.locator("#instances button").count() == 2
    submit()
    assert len(store.items("drawn")) == 2

    # the annotator cannot verify their own items; the second person can
    assert "Nothing to verify" in _verify_page(chromium, base, ALICE).inner_text("#status")
    vpage = _verify_page(chromium, base, BOB)
    vpage.wait_for_selector("#verify-list section >> nth=1")
    vpage.screenshot(path=str(shots / "annotate_verify_1280.png"), full_page=True)
    vpage.click("#verify-list section >> nth=0 >> button.accept")
    vpage.wait_for_function("document.querySelectorAll('#verify-list section').length === 1")
    vpage.click("#verify-list section >> nth=0 >> button.accept")
    vpage.wait_for_function("document.getElementById('status').textContent === 'Nothing to verify.'")

    items = load_dataset(tmp / "bench")
    assert sorted(i.category for i in items) == ["counting", "spatial"]
    spatial = next(i for i in items if i.category == "spatial")
    counting = next(i for i in items if i.category == "counting")
    assert _iou(spatial.target_mask(), red) > 0.95
    inst = counting.load_instance_masks()
    assert counting.count == 2 and len(inst) == 2
    assert _iou(inst[0], _gt(demo, 1, "red_cube")) > 0.95 and _iou(inst[1], green) > 0.85
    data = json.loads((tmp / "bench" / "data.json").read_text())
    assert {(d["drawn_by"], d["verified_by"]) for d in data} == {("alice", "bob")}
    assert all(d["filter_passed"] and len(d["model_results"]) == 3 for d in data)

    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "from pointlab.bridge.cli import main; main()",
            "bench",
            "pointing",
            "--data",
            str(tmp / "bench"),
            "--model",
            "sim-oracle",
            "--runs",
            "1",
            "--out",
            str(tmp / "run"),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    res = json.loads(run.stdout)
    assert res["aggregate"]["overall"]["mean"] == 1.0
    ctx.close()


def _verify_page(chromium, base, token):
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{base}/verify#token={token}")
    page.wait_for_function("document.getElementById('status').textContent.length > 0")
    return page
