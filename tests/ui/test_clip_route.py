"""``GET /api/trials/{id}/clip``: the trial's MP4 for the operator, with range requests, by bearer
token or by the signed URL the results give; and a real Chromium ``<video>`` playing and seeking it."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from pointlab.bridge.recording.clip import ClipWriter
from pointlab.bridge.recording.layout import Recording, RecordingLayout, default_recordings_dir
from pointlab.bridge.study.store import Store
from pointlab.bridge.trials.record import TrialResult
from pointlab.sim_mock.scripted_station import ScriptedWorld
from pointlab.ui.app import UiSettings, create_app
from pointlab.ui.routes_results import clip_url

OP = "operator-secret-token"
H = {"Authorization": f"Bearer {OP}"}


def make_clip(layout: RecordingLayout, trial_id: str, seconds: float = 3.0) -> Recording:
    layout.root.mkdir(parents=True, exist_ok=True)
    w = ClipWriter(layout.clip(trial_id))
    rng = np.random.default_rng(1)
    for k in range(int(seconds * 10)):
        w.add(rng.integers(0, 255, (480, 640, 3), dtype=np.uint8), k * 100_000_000)  # noise: a clip of some size
    n = w.close()
    rec = Recording(
        trial_id=trial_id,
        clip=layout.relative(layout.clip(trial_id)),
        started_unix_ns=0,
        clip_frames=n,
        clip_bytes=layout.clip(trial_id).stat().st_size,
        duration_s=seconds,
        complete=True,
    )
    layout.save(rec)
    return rec


@pytest.fixture
def env(tmp_path):
    store = Store(tmp_path / "ui.sqlite")
    sid = store.create_study(agents=["sim-oracle"], trials_per_agent=2, reveal_low_s=0, reveal_high_s=0)
    layout = RecordingLayout(default_recordings_dir(store.path))
    make_clip(layout, "withclip")
    with_clip = store.save_trial(
        TrialResult(trial_id="withclip", agent="sim-oracle", instruction="a", action="pick"), study_id=sid
    )
    without = store.save_trial(
        TrialResult(trial_id="noclip", agent="sim-oracle", instruction="b", action="pick"), study_id=sid
    )
    pid = store.add_participant(sid, token="participant-token-1", agent_order=["sim-oracle"])
    world = ScriptedWorld({"sim-oracle": (100.0, 80.0)})
    app = create_app(world.parts(store), store, operator_token=OP, settings=UiSettings())
    with TestClient(app) as client:
        yield client, app, store, sid, with_clip, without, layout.clip("withclip").read_bytes(), pid
    store.close()


def test_the_operator_gets_the_clip_whole_and_by_ranges(env):
    client, _app, _store, _sid, tid, _none, data, _pid = env
    r = client.get(f"/api/trials/{tid}/clip", headers=H)
    assert r.status_code == 200 and r.headers["content-type"] == "video/mp4" and r.content == data
    assert r.headers["accept-ranges"] == "bytes" and r.headers["content-disposition"].startswith("inline")
    r = client.get(f"/api/trials/{tid}/clip", headers={**H, "Range": "bytes=0-99"})
    assert r.status_code == 206 and r.content == data[:100]
    assert r.headers["content-range"] == f"bytes 0-99/{len(data)}"
    r = client.get(f"/api/trials/{tid}/clip", headers={**H, "Range": f"bytes={len(data) - 10}-"})
    assert r.status_code == 206 and r.content == data[-10:]
    assert data[4:8] == b"ftyp"  # an MP4


def test_the_results_give_signed_urls_that_open_one_clip_until_they_expire(env):
    client, app, _store, sid, tid, none, data, _pid = env
    res = client.get("/api/results", params={"study_id": sid}, headers=H).json()
    urls = {t["id"]: t["clip_url"] for t in res["trials"]}
    assert urls[none] is None and urls[tid].startswith(f"/api/trials/{tid}/clip?exp=")
    assert OP not in urls[tid]
    r = client.get(urls[tid])  # no header: what a <video src> sends
    assert r.status_code == 200 and r.content == data
    # the signature is for that trial only, and it expires
    assert client.get(urls[tid].replace(f"/trials/{tid}/", f"/trials/{none}/")).status_code == 403
    assert client.get(urls[tid][:-4] + "0000").status_code == 403
    stale = clip_url(app.state.ctx, tid, now_s=0.0)  # expired in 1970
    assert client.get(stale).status_code == 403 and "expired" in client.get(stale).text


def test_everyone_else_is_refused_and_missing_clips_are_404(env, tmp_path):
    client, _app, _store, _sid, tid, none, _data, _pid = env
    assert client.get(f"/api/trials/{tid}/clip").status_code == 401
    assert (
        client.get(f"/api/trials/{tid}/clip", headers={"Authorization": "Bearer participant-token-1"}).status_code
        == 403
    )
    assert client.get(f"/api/trials/{none}/clip", headers=H).status_code == 404
    assert client.get("/api/trials/999/clip", headers=H).status_code == 404


def test_a_stored_clip_path_outside_the_recordings_folder_is_not_served(env):
    client, app, _store, _sid, tid, _none, _data, _pid = env
    layout = app.state.ctx.recordings
    (layout.root.parent / "private.mp4").write_bytes(b"secret")
    rec = layout.load("withclip")
    layout.save(rec.model_copy(update={"clip": "../private.mp4"}))
    assert client.get(f"/api/trials/{tid}/clip", headers=H).status_code == 404


def test_chromium_plays_and_seeks_the_clip_from_its_signed_url(env, chromium):
    from pointlab.sim_mock.model_server import serve_in_thread

    _client, app, _store, sid, tid, _none, _data, _pid = env
    url, stop = serve_in_thread(app)
    base = url.removesuffix("/v1")
    try:
        page = chromium.new_page()
        page.goto(f"{base}/static/")  # same origin as the API (any page of the app)
        src = base + clip_url(app.state.ctx, tid)
        got = page.evaluate(
            """async (src) => {
            const v = document.createElement('video');
            v.muted = true; v.preload = 'auto'; v.src = src;
            document.body.appendChild(v);
            await new Promise((ok, no) => { v.onloadedmetadata = ok; v.onerror = () => no(String(v.error && v.error.code)); });
            const seeked = new Promise(ok => { v.onseeked = ok; });
            v.currentTime = 2.0;
            await seeked;
            return {duration: v.duration, time: v.currentTime, w: v.videoWidth, h: v.videoHeight,
                    seekable: v.seekable.length ? v.seekable.end(0) : 0};
        }""",
            src,
        )
        page.close()
    finally:
        stop()
    assert (got["w"], got["h"]) == (640, 480)
    assert got["duration"] == pytest.approx(3.0, abs=0.15) and got["time"] == pytest.approx(2.0, abs=0.15)
    assert got["seekable"] == pytest.approx(got["duration"], abs=0.01)
