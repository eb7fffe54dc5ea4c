"""Point-Bench authoring without a browser: seeded masks against the sim renderer's own object masks,
the at-most-one-correct filter (PointArena sec. 3.2), verification rules, the export, promotion of
arena battles."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from pointlab.benchmark.pointbench import load_dataset
from pointlab.benchmark.pointbench.annotation import AnnotationError, AnnotationStore, filter_passes, model_results
from pointlab.benchmark.pointbench.masks import SegmenterError, seed_mask
from pointlab.sim_mock.plugins import write_arena_demo

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    d = tmp_path_factory.mktemp("demo")
    write_arena_demo(d)
    return d


def _gt(demo, obj, k=0):
    return np.asarray(Image.open(demo / "masks" / f"tabletop_{k}__{obj}.png").convert("L")) > 127


@pytest.mark.parametrize(
    "obj,method,min_iou",
    [
        ("red_cube", "grabcut", 0.95),
        ("orange_can", "grabcut", 0.95),
        ("blue_bowl", "grabcut", 0.9),
        ("red_cube", "watershed", 0.85),
    ],
)
def test_seed_mask_matches_the_rendered_object(demo, obj, method, min_iou):
    rgb = np.asarray(Image.open(demo / "tabletop_0.png").convert("RGB"))
    gt = _gt(demo, obj)
    ys, xs = np.nonzero(gt)
    m = seed_mask(rgb, (float(np.median(xs)), float(np.median(ys))), method=method)
    assert m.shape == gt.shape and m.dtype == bool
    assert (m & gt).sum() / (m | gt).sum() >= min_iou
    with pytest.raises(SegmenterError):
        seed_mask(rgb, (-5, 10))


def test_filter_counts_correct_models_with_the_scoring_rules():
    mask = np.zeros((100, 100), bool)
    mask[40:60, 40:60] = True
    answers = [
        {"alias": "Model 1", "model": "a", "points_px": [[50, 50]]},  # inside: correct
        {"alias": "Model 2", "model": "b", "points_px": [[5, 5], [50, 50]]},  # first point counts: miss
        {"alias": "Model 3", "model": "c", "points_px": [], "parse_error": "unparseable: x"},
    ]
    res = model_results(answers, "spatial", [mask], None)
    assert [r["correct"] for r in res] == [True, False, False]
    assert [r["reason"] for r in res] == ["hit", "miss", "unparseable"]
    assert filter_passes(res)  # one correct: hard enough
    assert not filter_passes(res + [dict(res[0], alias="Model 4")])


def test_submit_verify_export_and_promotion(demo, tmp_path):
    store = AnnotationStore(tmp_path / "bench")
    cids = store.add_folder(demo)
    assert len(cids) == 4 and store.add_folder(demo) == cids  # idempotent
    red = _gt(demo, "red_cube")
    ys, xs = np.nonzero(red)
    inside = [[float(np.median(xs)), float(np.median(ys))]]
    easy = store.record_ask(
        cids[0],
        "Point to the red cube",
        [
            {"alias": "Model 1", "model": "a", "points_px": inside},
            {"alias": "Model 2", "model": "b", "points_px": inside},
            {"alias": "Model 3", "model": "c", "points_px": []},
        ],
        "alice",
    )
    with pytest.raises(AnnotationError) as e:
        store.submit(cid=cids[0], ask_id=easy, category="spatial", instance_masks=[red], drawn_by="alice")
    assert e.value.status == 409 and sum(r["correct"] for r in e.value.detail) == 2
    kept = store.submit(
        cid=cids[0], ask_id=easy, category="spatial", instance_masks=[red], drawn_by="alice", keep_anyway=True
    )
    assert kept["filter_passed"] is False
    with pytest.raises(AnnotationError) as e:
        store.submit(cid=cids[1], ask_id=easy, category="spatial", instance_masks=[red], drawn_by="alice")
    assert e.value.status == 400  # the ask belongs to another candidate
    hard = store.record_ask(
        cids[1], "Point to every cube", [{"alias": "Model 1", "model": "a", "points_px": inside}], "alice"
    )
    cubes = [_gt(demo, o, 1) for o in ("red_cube", "green_cube")]
    drawn = store.submit(cid=cids[1], ask_id=hard, category="counting", instance_masks=cubes, drawn_by="alice")
    assert drawn["filter_passed"] is True
    with pytest.raises(AnnotationError) as e:
        store.verify(drawn["item_id"], "alice", True)
    assert e.value.status == 403  # not by its annotator
    with pytest.raises(AnnotationError) as e:
        store.verify(drawn["item_id"], "bob", False, "")
    assert e.value.status == 400  # a rejection needs a reason
    assert store.export() == []  # nothing verified yet: no dataset files
    store.verify(kept["item_id"], "bob", False, "query names the object: too easy")
    store.verify(drawn["item_id"], "bob", True)
    with pytest.raises(AnnotationError) as e:
        store.verify(drawn["item_id"], "carol", True)
    assert e.value.status == 409
    items = load_dataset(tmp_path / "bench")
    assert [(i.category, i.count, len(i.instance_masks)) for i in items] == [("counting", 2, 2)]
    assert [m.sum() for m in items[0].load_instance_masks()] == [c.sum() for c in cubes]
    data = json.loads((tmp_path / "bench" / "data.json").read_text())
    assert data[0]["drawn_by"] == "alice" and data[0]["verified_by"] == "bob"
    # the rejected candidate is open again
    assert cids[0] in [c["id"] for c in store.candidates()]

    battle = {
        "id": "b1",
        "vote": "model_a",
        "image_path": str(demo / "tabletop_2.png"),
        "image_sha256": "ab" * 32,
        "instruction": "Point to the orange can",
        "model_a": "x",
        "model_b": "y",
        "answer_a": {"points_px": [[1, 2]]},
        "answer_b": {"points_px": []},
    }
    new = store.promote_battles([battle, dict(battle, id="b2", vote=None)], copy_to=tmp_path / "copies")
    assert len(new) == 1
    c = store.candidate(new[0])
    assert c["source"] == "arena:b1" and c["suggested_query"] == "Point to the orange can"
    assert c["arena"]["answers"] == {"x": [[1, 2]], "y": []} and c["arena"]["vote"] == "model_a"


def test_http_segmenter_against_a_served_model(demo):
    from pointlab.benchmark.pointbench.masks import HttpSegmenter
    from pointlab.sim_mock.model_server import serve_in_thread
    from pointlab.sim_mock.segment_server import create_segment_server, flood_mask

    url, stop = serve_in_thread(create_segment_server())
    try:
        seg = HttpSegmenter(url.removesuffix("/v1") + "/segment")
        rgb = np.asarray(Image.open(demo / "tabletop_0.png").convert("RGB"))
        gt = _gt(demo, "purple_cube")
        ys, xs = np.nonzero(gt)
        p = (float(np.median(xs)), float(np.median(ys)))
        m = seg(rgb, p)
        assert m.shape == gt.shape and m.dtype == bool
        assert np.array_equal(m, flood_mask(rgb, *p))  # what the service computed, unchanged in transit
        assert m[int(p[1]), int(p[0])] and (m & gt).sum() / m.sum() > 0.9
        with pytest.raises(SegmenterError):
            seg(rgb, (-10.0, 5.0))  # the service's 400 is a SegmenterError
        with pytest.raises(SegmenterError):
            HttpSegmenter("http://127.0.0.1:9/segment", timeout_s=2)(rgb, p)
    finally:
        stop()


@pytest.mark.parametrize("box", [[1, 2, 3], [1, 2, 3, 4, 5]])
def test_a_seed_box_of_other_than_four_numbers_is_a_422(tmp_path, box):
    from fastapi.testclient import TestClient

    from pointlab.ui.annotate import create_annotate_app

    images = tmp_path / "images"
    images.mkdir()
    Image.fromarray(np.zeros((20, 30, 3), np.uint8)).save(images / "a.png")
    store = AnnotationStore(tmp_path / "bench")
    (cid,) = store.add_folder(images)
    client = TestClient(create_annotate_app(store, {}, {"alice-token-123": "alice"}))
    auth = {"Authorization": "Bearer alice-token-123"}
    r = client.post(f"/api/candidates/{cid}/seed", json={"u": 5, "v": 5, "box": box}, headers=auth)
    assert r.status_code == 422, r.text  # was a 500: seed_mask unpacked the box into four
    ok = client.post(f"/api/candidates/{cid}/seed", json={"u": 5, "v": 5, "box": [0, 0, 20, 15]}, headers=auth)
    assert ok.status_code in (200, 400), ok.text  # a four-number box reaches the segmenter
