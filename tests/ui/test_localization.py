"""The PinpointQA localization study page in real Chromium, on the released demo samples; the saved
answers are scored with App. D's rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from pointlab.benchmark.pinpoint.localization import score_localization
from pointlab.ui.localization import create_localization_app


@pytest.fixture
def samples_path(shared_data: Path) -> Path:
    p = shared_data / "video" / "pinpointqa_human_assist" / "demo_samples.json"
    if not p.exists():
        pytest.skip(f"{p} is absent")
    return p


def test_api_hides_ground_truth_and_validates(samples_path, tmp_path):
    client = TestClient(create_localization_app(samples_path, tmp_path / "r.jsonl", setting="gt"))
    data = client.get("/api/samples").json()
    # sample3's frames are not in the shared data: left out, and said so
    assert [s["id"] for s in data["samples"]] == ["sample1", "sample2"] and data["unavailable"] == ["sample3"]
    assert "ground_truth" not in json.dumps(data) and data["samples"][0]["guidance"].startswith("The scissors")
    assert client.get("/api/samples?setting=unguided").json()["samples"][0]["guidance"] == ""
    assert client.get("/api/samples?setting=bogus").status_code == 400
    assert client.get("/frames/sample1/0").headers["content-type"] == "image/png"
    assert client.get("/frames/sample1/9").status_code == 404
    ok = {"id": "sample1", "setting": "gt", "frame_index": 2, "x": 0.5, "y": 0.5, "elapsed_s": 3.0}
    assert client.post("/api/responses", json={**ok, "x": 1.5}).status_code == 422
    assert client.post("/api/responses", json={**ok, "frame_index": 7}).status_code == 422
    assert client.post("/api/responses", json={**ok, "id": "nope"}).status_code == 404
    assert client.post("/api/responses", json=ok).json() == {"saved": True}
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 1


@pytest.mark.browser
def test_participant_localizes_in_chromium(samples_path, tmp_path, chromium):
    from pointlab.sim_mock.model_server import serve_in_thread  # a generic uvicorn-in-a-thread runner

    responses = tmp_path / "responses.jsonl"
    base, stop = serve_in_thread(create_localization_app(samples_path, responses, setting="gt"))
    root = base.removesuffix("/v1")
    truth = {s["id"]: s["ground_truth"] for s in json.loads(samples_path.read_text())}
    page = chromium.new_page(viewport={"width": 1200, "height": 1400})
    try:
        page.goto(f"{root}/?participant=p1")
        page.wait_for_selector("text=Example 1")
        assert "dish drying rack" in page.inner_text("#guidance")
        for sid, frame_offset in (("sample1", 0), ("sample2", 1)):
            page.click("#start")
            gt = truth[sid]
            k = gt["frame_index"] + frame_offset  # sample2: the participant picks the wrong frame
            page.click(f"#thumb-{k}")
            img = page.wait_for_selector("#frame[src]")
            page.wait_for_function(
                "document.getElementById('frame').complete && document.getElementById('frame').naturalWidth > 0"
            )
            box = img.bounding_box()
            # click 0.03 of the width to the right of the annotated point
            page.mouse.click(box["x"] + (gt["x"] + 0.03) * box["width"], box["y"] + gt["y"] * box["height"])
            with page.expect_response("**/api/responses") as resp:
                page.click("#save")
            assert resp.value.ok
        page.wait_for_selector("text=Thank you!")
    finally:
        page.close()
        stop()
    rows = [json.loads(line) for line in responses.read_text().splitlines()]
    assert [(r["id"], r["participant"], r["setting"]) for r in rows] == [
        ("sample1", "p1", "gt"),
        ("sample2", "p1", "gt"),
    ]
    assert rows[0]["frame_index"] == truth["sample1"]["frame_index"]
    assert rows[0]["x"] == pytest.approx(truth["sample1"]["x"] + 0.03, abs=0.003)
    assert rows[0]["y"] == pytest.approx(truth["sample1"]["y"], abs=0.003)
    assert rows[0]["elapsed_s"] > 0
    out = score_localization([{"id": k, **v} for k, v in truth.items() if k != "sample3"], rows)
    # d = 0.03 -> 1 - (0.03 / 0.12)^2 = 0.9375 (within the click's pixel rounding); wrong frame -> 0
    assert out["items"][0]["score"] == pytest.approx(0.9375, abs=0.02)
    assert out["items"][1]["score"] == 0.0
