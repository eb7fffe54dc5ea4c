"""Run pieces: steerable reference (describe / draw), the mask oracle, aggregation over runs, the
report table and Fig. 3 chart, error retries and resumption against the sim model server."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from pointlab.benchmark.agents_config import AgentConfig, build_agent
from pointlab.benchmark.pointbench import BenchItem
from pointlab.benchmark.pointbench.report import plot_fig3, results_table
from pointlab.benchmark.pointbench.run import RunOptions, aggregate_runs, run_pointing
from pointlab.benchmark.pointbench.steer import apply_steer
from pointlab.sim_mock.mask_oracle import MaskOracle
from pointlab.sim_mock.model_server import ScriptedModel, create_model_server, serve_in_thread


def _xy_agent(url: str, model: str = "m", **kw):
    """An agent of the sim server's ``model`` answering in ``xy_pixels``, images sent as PNG."""
    cfg = dict(name=model, kind="openai", base_url=url, model=model, point_format="xy_pixels", image_encoding="png")
    return build_agent(AgentConfig(**{**cfg, **kw}))


def test_steer_modes():
    rgb = np.zeros((50, 80, 3), np.uint8)
    img, text = apply_steer(rgb, "Point near the dot.", [(20.0, 30.0)], "describe")
    assert img is rgb
    assert text.endswith("pixel coordinates: [20.0, 30.0]. The query refers to this point.")
    img, text = apply_steer(rgb, "Point near the dot.", [(20.0, 30.0)], "draw")
    assert text == "Point near the dot."
    assert tuple(img[30, 20]) == (255, 0, 0) and tuple(img[0, 0]) == (0, 0, 0)
    assert rgb.sum() == 0  # the original is untouched
    img, text = apply_steer(rgb, "q", [(20.0, 30.0)], "both")
    assert tuple(img[30, 20]) == (255, 0, 0) and "[20.0, 30.0]" in text
    assert apply_steer(rgb, "q", [], "both") == (rgb, "q")
    with pytest.raises(ValueError):
        apply_steer(rgb, "q", [(1, 1)], "shout")


def test_a_described_reference_is_in_the_pixels_of_the_image_sent():
    # a 640 x 480 original sent at 320 x 240: pixel centre (101.5, 51.5) -> ((101.5 + 0.5) / 2 - 0.5,
    # (51.5 + 0.5) / 2 - 0.5) = (50.5, 25.5); a drawn marker stays on the original (scaled with it)
    rgb = np.zeros((480, 640, 3), np.uint8)
    img, text = apply_steer(rgb, "q", [(101.5, 51.5)], "both", sent_size=(320, 240))
    assert "pixel coordinates: [50.5, 25.5]." in text and tuple(img[52, 102]) == (255, 0, 0)
    assert "[101.5, 51.5]" in apply_steer(rgb, "q", [(101.5, 51.5)], "describe")[1]  # no downscale: as given


def test_a_downscaling_agent_is_told_the_reference_in_the_pixels_it_is_sent(tmp_path):
    """The model answers only when its prompt holds the reference in the pixels of the 320-px image it
    gets (the scripted server matches on that text); before, the prompt held original pixels."""
    Image.fromarray(np.zeros((480, 640, 3), np.uint8)).save(tmp_path / "img.png")
    mask = np.zeros((480, 640), np.uint8)
    mask[40:60, 90:110] = 255
    Image.fromarray(mask).save(tmp_path / "m.png")
    item = BenchItem(
        "st",
        tmp_path / "img.png",
        "Point left of the dot.",
        "steerable",
        640,
        480,
        tmp_path / "m.png",
        reference_points_px=[(101.5, 51.5)],
    )
    script = tmp_path / "s.jsonl"
    script.write_text(json.dumps({"match": "pixel coordinates: [50.5, 25.5].", "answer": "[50, 25]"}) + "\n")
    url, stop = serve_in_thread(create_model_server({"m": ScriptedModel(script)}))
    try:
        opts = RunOptions(runs=1, concurrency=1, progress=False, max_error_rate=1.0)
        res = run_pointing([item], _xy_agent(url, max_image_side_px=320, max_retries=0), tmp_path / "run", options=opts)
    finally:
        stop()
    assert res["errors"] == 0
    (rec,) = [json.loads(x) for x in (tmp_path / "run" / "run_1.jsonl").read_text().splitlines()]
    # the answer [50, 25] on the 320-px image is the original pixel ((50 + 0.5) * 2 - 0.5, (25 + 0.5) * 2 - 0.5)
    assert rec["points_px"] == [[100.5, 50.5]]


def _item(tmp_path, name, mask, category="spatial", query="q", count=None, image=None):
    h, w = mask.shape
    img = tmp_path / (f"{name}-img.png" if image is not None else "img.png")
    if image is not None:
        Image.fromarray(image).save(img)
    elif not img.exists():
        Image.fromarray(np.zeros((h, w, 3), np.uint8)).save(img)
    mp = tmp_path / f"{name}.png"
    Image.fromarray(mask.astype(np.uint8) * 255).save(mp)
    return BenchItem(name, img, query, category, w, h, mp, count=count)


def _black(h, w):
    return np.zeros((h, w, 3), np.uint8)


def test_mask_oracle_interior_vs_centroid_on_a_ring(tmp_path):
    yy, xx = np.mgrid[0:101, 0:101]
    r = np.hypot(xx - 50, yy - 50)
    ring = (r >= 30) & (r <= 45)  # centroid (50, 50) is in the hole
    it = _item(tmp_path, "ring", ring, query="Point to the ring.")
    ((u, v),) = MaskOracle([it], "interior").points("Point to the ring.", _black(101, 101))
    assert ring[round(v), round(u)]
    assert 36 <= np.hypot(u - 50, v - 50) <= 39  # the middle of the band (radius 37.5)
    ((u, v),) = MaskOracle([it], "centroid").points("Point to the ring.", _black(101, 101))
    assert (u, v) == pytest.approx((50.0, 50.0)) and not ring[50, 50]
    # scaled to the sent image about pixel centres: (u + .5) * 2 - .5
    ((u2, v2),) = MaskOracle([it], "centroid").points("Point to the ring.", _black(202, 202))
    assert (u2, v2) == pytest.approx((100.5, 100.5))
    # no query matches: the image alone finds the item; an image that is no item's: nothing
    assert MaskOracle([it], "centroid").points("Point to the moon.", _black(101, 101)) == [(50.0, 50.0)]
    assert MaskOracle([it]).points("Point to the ring.", np.full((101, 101, 3), 200, np.uint8)) == []


def test_mask_oracle_counting_components_and_longest_query(tmp_path):
    m = np.zeros((40, 100), bool)
    m[5:15, 5:15] = True  # 100 px
    m[20:36, 60:76] = True  # 256 px, largest -> first
    m[5:8, 80:83] = True  # 9 px
    a = _item(tmp_path, "a", m, "counting", "Point to the boxes", count=2)
    b = _item(tmp_path, "b", m, "spatial", "Point to the boxes on the right")
    o = MaskOracle([a, b])
    pts = o.points("Point to the boxes", _black(40, 100))
    assert len(pts) == 2 and m[round(pts[0][1]), round(pts[0][0])] and 60 <= pts[0][0] < 76 and 5 <= pts[1][0] < 15
    assert o.item_for("Point to the boxes on the right, please", _black(40, 100)) is b


def test_mask_oracle_same_query_on_two_images_answers_from_each_image(tmp_path):
    """Issue 11: two items with one query on different images get different points, each inside
    its own item's mask, also after JPEG compression and resizing on the way."""
    import cv2

    h, w = 60, 80
    left, right = np.zeros((h, w), bool), np.zeros((h, w), bool)
    left[20:40, 5:25] = True
    right[20:40, 55:75] = True
    img_l, img_r = np.full((h, w, 3), 40, np.uint8), np.full((h, w, 3), 40, np.uint8)
    img_l[left], img_r[right] = (220, 30, 30), (220, 30, 30)  # a red cup, left or right
    a = _item(tmp_path, "l", left, query="Point to the red cup.", image=img_l)
    b = _item(tmp_path, "r", right, query="Point to the red cup.", image=img_r)
    o = MaskOracle([a, b], "centroid")
    jpeg = lambda im: cv2.imdecode(cv2.imencode(".jpg", im[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, 60])[1], 1)[
        :, :, ::-1
    ]  # noqa: E731
    ((ul, vl),) = o.points("Point to the red cup.", jpeg(img_l))
    ((ur, vr),) = o.points("Point to the red cup.", jpeg(img_r))
    assert (ul, vl) == pytest.approx((14.5, 29.5)) and (ur, vr) == pytest.approx((64.5, 29.5))
    big = cv2.resize(img_r, (160, 120), interpolation=cv2.INTER_NEAREST)
    ((u2, v2),) = o.points("Point to the red cup.", big)
    assert (u2, v2) == pytest.approx(((64.5 + 0.5) * 2 - 0.5, (29.5 + 0.5) * 2 - 0.5))


def test_aggregate_runs_by_hand():
    def summ(sp, co):
        return {
            "categories": {
                "spatial": {"n": 4, "success": 0, "accuracy": sp},
                "counting": {"n": 2, "success": 0, "accuracy": co},
                "steerable": {"n": 0, "success": 0, "accuracy": None},
            },
            "average": (sp + co) / 2,
            "overall": 0.0,
        }

    agg = aggregate_runs([summ(0.5, 1.0), summ(1.0, 1.0), summ(0.75, 0.5)])
    # spatial: mean .75, sample sd sqrt(((-.25)^2 + .25^2 + 0) / 2) = .25
    assert agg["spatial"] == {"mean": pytest.approx(0.75), "std": pytest.approx(0.25), "runs": 3}
    assert agg["counting"]["mean"] == pytest.approx(2.5 / 3)
    assert "steerable" not in agg
    assert agg["average"]["mean"] == pytest.approx((0.75 + 1.0 + 0.625) / 3)


def test_table_and_chart_with_human(tmp_path):
    aggs = {
        "m": {"spatial": {"mean": 0.5, "std": 0.1, "runs": 3}, "average": {"mean": 0.5, "std": 0.1, "runs": 3}},
        "Human": {"spatial": {"mean": 0.9, "std": 0.0, "runs": 1}, "average": {"mean": 0.9, "std": 0.0, "runs": 1}},
    }
    t = results_table(aggs)
    assert "| m | 50.0 ± 10.0 | – | – | – | – | 50.0 ± 10.0 |" in t
    png, svg = plot_fig3(aggs, tmp_path / "fig")
    assert Image.open(png).size[0] > 500 and "Human" in svg.read_text()


@pytest.mark.slow  # the openai client's own backoff between the two retries of the 500 (0.5 s, 1 s)
def test_errors_are_recorded_with_the_clients_attempts_and_asked_again(tmp_path):
    m = np.zeros((20, 20), bool)
    m[5:15, 5:15] = True
    items = [_item(tmp_path, f"i{k}", m, query=f"Point to thing {k}.") for k in range(2)]
    script = tmp_path / "s.jsonl"
    script.write_text(json.dumps({"answer": "[10, 10]"}) + "\n")  # one answer, then HTTP 500
    app = create_model_server({"one-shot": ScriptedModel(script)})
    url, stop = serve_in_thread(app)
    try:
        agent = _xy_agent(url, "one-shot", max_retries=2)
        opts = RunOptions(runs=1, concurrency=1, progress=False, max_error_rate=1.0)
        res = run_pointing(items, agent, tmp_path / "run", options=opts)
        assert (res["asked"], res["errors"]) == (2, 1)
        recs = [json.loads(x) for x in (tmp_path / "run" / "run_1.jsonl").read_text().splitlines()]
        failed = [r for r in recs if r["error"]]
        # the client's own retries only (1 + 2), no loop on top: 1 + 3 requests in all
        assert len(failed) == 1 and failed[0]["attempts"] == 3 and "HTTP 500" in failed[0]["error"]
        assert failed[0]["status"] == 500 and len(app.state.requests) == 4
        ok = [r for r in recs if not r["error"]][0]
        assert ok["version"] == 2 and ok["raw_text"] == "[10, 10]" and "Point to thing" in ok["prompt"]
        assert ok["parser"].endswith("parse_points") and ok["entries"][0]["valid"] is True
        assert res["runs"][0]["categories"]["spatial"] == {"n": 2, "success": 1, "accuracy": 0.5}
        again = run_pointing(items, agent, tmp_path / "run", options=opts)
        assert (again["asked"], again["cached"]) == (1, 1)  # only the failed item is asked again
        with pytest.raises(ValueError, match="another setting"):
            run_pointing(items, agent, tmp_path / "run", options=RunOptions(runs=1, steer_mode="draw", progress=False))
    finally:
        stop()


def test_a_resumed_run_keeps_one_line_per_item_and_re_scoring_its_file_gives_its_score(tmp_path):
    """i0 is answered, i1 gets a 500; the resumed run (another server: the same model setting) asks i1
    again and its miss replaces the error. The file holds one line per item and scoring the file gives
    the run's own accuracy, 1 of 2; before, i1 had two lines and the scorer counted neither."""
    from pointlab.benchmark.pointbench import load_pred_jsonl, score_predictions

    m = np.zeros((20, 20), bool)
    m[5:15, 5:15] = True
    items = [_item(tmp_path, f"i{k}", m, query=f"Point to thing {k}.") for k in range(2)]
    opts = RunOptions(runs=1, concurrency=1, progress=False, max_error_rate=1.0)
    results = []
    for answer in ("[10, 10]", "[1, 1]"):  # a hit inside the square, then a miss outside it
        script = tmp_path / "s.jsonl"
        script.write_text(json.dumps({"answer": answer}) + "\n")  # one answer, then HTTP 500
        url, stop = serve_in_thread(create_model_server({"m": ScriptedModel(script)}))
        try:
            results.append(run_pointing(items, _xy_agent(url, max_retries=0), tmp_path / "run", options=opts))
        finally:
            stop()
    assert [(r["asked"], r["errors"]) for r in results] == [(2, 1), (1, 0)]
    lines = [json.loads(x) for x in (tmp_path / "run" / "run_1.jsonl").read_text().splitlines()]
    assert sorted((x["id"], x["raw_text"], x["error"]) for x in lines) == [
        ("i0", "[10, 10]", None),
        ("i1", "[1, 1]", None),
    ]
    assert results[1]["runs"][0]["categories"]["spatial"]["accuracy"] == 0.5
    rescored = score_predictions(items, load_pred_jsonl(tmp_path / "run" / "run_1.jsonl"))
    assert rescored["summary"]["categories"]["spatial"]["accuracy"] == 0.5
    # a run cut before it compacted its file (both lines of i1 still there): the later line counts
    i1 = next(x for x in lines if x["id"] == "i1")
    with (tmp_path / "run" / "run_1.jsonl").open("a") as f:
        f.write(json.dumps({**i1, "raw_text": "[9, 9]"}) + "\n")
    again = score_predictions(items, load_pred_jsonl(tmp_path / "run" / "run_1.jsonl"))
    assert again["summary"]["categories"]["spatial"]["accuracy"] == 1.0 and not again["summary"].get(
        "prediction_problems"
    )


def test_reasoning_is_stored_and_never_read_for_the_point(tmp_path):
    """Two shapes reasoning models answer in: vLLM with a reasoning parser (``reasoning_content`` beside
    the content) and no parser (``<think>`` in the content). Each reasoning names a decoy inside the
    square; the answer is outside it. The run stores each reasoning and scores the answer: two misses."""
    from pointlab.benchmark.pointbench import load_pred_jsonl, score_predictions

    m = np.zeros((20, 20), bool)
    m[5:15, 5:15] = True
    items = [_item(tmp_path, f"i{k}", m, query=f"Point to thing {k}.") for k in range(2)]
    script = tmp_path / "s.jsonl"
    script.write_text(
        json.dumps({"match": "thing 0", "answer": "[1, 1]", "reasoning_content": "Maybe [10, 10]? No, the corner."})
        + "\n"
        + json.dumps({"match": "thing 1", "answer": "<think>Maybe [10, 10]?\nNo, the corner.</think>\n[2, 2]"})
        + "\n"
    )
    url, stop = serve_in_thread(create_model_server({"m": ScriptedModel(script)}))
    try:
        res = run_pointing(items, _xy_agent(url), tmp_path / "run", options=RunOptions(runs=1, progress=False))
    finally:
        stop()
    recs = {x["id"]: x for x in map(json.loads, (tmp_path / "run" / "run_1.jsonl").read_text().splitlines())}
    assert recs["i0"]["reasoning"] == "Maybe [10, 10]? No, the corner." and recs["i0"]["raw_text"] == "[1, 1]"
    assert recs["i1"]["reasoning"] == "Maybe [10, 10]?\nNo, the corner."
    assert recs["i1"]["raw_text"].startswith("<think>")  # the raw answer is kept whole
    assert [recs[i]["points_px"] for i in ("i0", "i1")] == [[[1.0, 1.0]], [[2.0, 2.0]]]
    assert recs["i0"]["usage"]["completion_tokens"] == 2  # the sim server counts words: "[1," "1]"
    assert res["runs"][0]["categories"]["spatial"]["accuracy"] == 0.0
    rescored = score_predictions(items, load_pred_jsonl(tmp_path / "run" / "run_1.jsonl"))
    assert rescored["summary"]["categories"]["spatial"]["accuracy"] == 0.0


def test_saved_runs_are_rescored_from_raw_text_not_stored_points(tmp_path):
    from pointlab.benchmark.pointbench.run import answers_to_scores

    m = np.zeros((20, 20), bool)
    m[:, :10] = True  # columns 0..9
    it = _item(tmp_path, "r", m)
    # a record written by an older parser: its stored point (10.0, 5.0) is column 10, a miss; its raw text,
    # read again, is 49.9 % of 20 px = 9.98 from the left edge: column 9, a hit
    rec = {
        "id": "r",
        "raw_text": '<point x="49.9" y="25">a</point>',
        "point_format": "molmo",
        "points_px": [[10.0, 5.0]],
    }
    (score,) = answers_to_scores([it], {"r": rec})
    assert score.value == 1.0 and score.reason == "hit"


def test_concurrency_is_bounded(tmp_path):
    import asyncio

    m = np.zeros((20, 20), bool)
    m[5:15, 5:15] = True
    items = [_item(tmp_path, f"c{k}", m, query=f"Point to thing {k}.") for k in range(6)]
    script = tmp_path / "s.jsonl"
    script.write_text(json.dumps({"match": "Point", "answer": "[10, 10]"}) + "\n")
    url, stop = serve_in_thread(create_model_server({"m": ScriptedModel(script)}))

    class Counting:
        """Delegates to the real agent and records how many calls were in flight at once."""

        def __init__(self, agent):
            self.agent, self.name, self.now, self.peak = agent, agent.name, 0, 0

        async def point(self, image_rgb, instruction):
            self.now += 1
            self.peak = max(self.peak, self.now)
            try:
                await asyncio.sleep(0.05)  # hold the slot so calls overlap
                return await self.agent.point(image_rgb, instruction)
            finally:
                self.now -= 1

    try:
        agent = Counting(_xy_agent(url))
        res = run_pointing(items, agent, tmp_path / "run", options=RunOptions(runs=2, concurrency=3, progress=False))
        assert res["asked"] == 12 and res["errors"] == 0
        assert agent.peak == 3
    finally:
        stop()
