"""The participant page on a phone (390 x 844, an iPhone 12/13/14 viewport) in Chromium: a whole
session against the scripted world, measured in the browser at each state (queue, block start,
typing, live view during a trial, judgement, aborted trial, SUS, finished): the page does not scroll
sideways, nothing sticks out of the viewport or overflows its box, every button, radio and the
instruction box is reachable and at least 40 px each way; on the judgement the before and after
frames are stacked, each at least 340 px wide and fully on screen, and the agent's point is drawn
where it belongs on the displayed before frame. ``POINTLAB_SCREENSHOTS=docs/img`` writes
``participant-390-judge.png`` and ``participant-390-sus.png`` there."""

from __future__ import annotations

import io
import os
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import expect

from pointlab.bridge.study.store import Store
from pointlab.sim_mock.model_server import serve_in_thread
from pointlab.sim_mock.scripted_station import ScriptedWorld
from pointlab.ui.app import UiSettings, create_app

from .test_api import H, NO_WAIT, OP, _answer_human

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PHONE = {"width": 390, "height": 844}
MIN_TARGET_PX = 40
MIN_FRAME_W = 340
# the oracle's point is on the scripted frame's plain green background (the red disc is at (100, 80)),
# so the red marker is the only red there and its centroid is the drawn centre
ORACLE_PX = (220.0, 150.0)
HUMAN_PX = (60.0, 50.0)

# Measured in the page: the page's scroll width, every visible element that sticks out of the viewport
# or whose content overflows its box (overflow: visible), and the tap targets (buttons, the text box,
# a radio through its label) with their size and whether a tap on their centre, once scrolled into
# view, lands on them. The scroll position is put back.
MEASURE = """() => {
  const vw = window.innerWidth, x0 = window.scrollX, y0 = window.scrollY;
  const shown = (e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0
                         && getComputedStyle(e).visibility !== "hidden"; };
  const name = (e) => e.id ? "#" + e.id : e.tagName.toLowerCase() + (e.className ? "." + e.className : "")
                     + (e.name ? `[name=${e.name}][value=${e.value}]` : "");
  const overflow = [];
  for (const e of document.querySelectorAll("body *")) {
    if (!shown(e) || ["SCRIPT", "INPUT", "CANVAS", "IMG"].includes(e.tagName)) continue;
    const r = e.getBoundingClientRect(), cs = getComputedStyle(e);
    if (r.left + x0 < -0.5 || r.right + x0 > vw + 0.5) overflow.push(`${name(e)} spans x ${r.left}..${r.right}`);
    if (e.clientWidth > 0 && cs.overflowX === "visible" && e.scrollWidth > e.clientWidth + 1)
      overflow.push(`${name(e)} content ${e.scrollWidth} wide in ${e.clientWidth}`);
    if (e.clientHeight > 0 && cs.overflowY === "visible" && e.scrollHeight > e.clientHeight + 1)
      overflow.push(`${name(e)} content ${e.scrollHeight} tall in ${e.clientHeight}`);
  }
  const targets = [];
  for (const e of document.querySelectorAll("button, input")) {
    const t = e.type === "radio" ? e.closest("label") : e;  // a radio is tapped through its label
    if (!shown(e) || !shown(t)) continue;
    t.scrollIntoView({ block: "center", inline: "center" });
    const r = t.getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    targets.push({ name: name(e), w: r.width, h: r.height, reachable: !!hit && t.contains(hit),
                   inside: r.left >= 0 && r.right <= vw });
  }
  window.scrollTo(x0, y0);
  return { scrollWidth: document.documentElement.scrollWidth, innerWidth: vw, overflow, targets };
}"""


def _check_layout(page, state: str, log: dict) -> dict:
    """The measurements every state must pass; the result is kept in ``log`` under ``state``."""
    m = page.evaluate(MEASURE)
    assert m["innerWidth"] == PHONE["width"], m
    assert m["scrollWidth"] <= m["innerWidth"], (state, m["scrollWidth"])
    assert not m["overflow"], (state, m["overflow"])
    for t in m["targets"]:
        assert t["reachable"] and t["inside"], (state, t)
        assert t["w"] >= MIN_TARGET_PX and t["h"] >= MIN_TARGET_PX, (state, t)
    log[state] = m
    return m


def _box(page, selector: str) -> dict:
    return page.eval_on_selector(
        selector,
        """e => { const r = e.getBoundingClientRect();
        return { x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height,
                 nw: e.naturalWidth || e.width, nh: e.naturalHeight || e.height }; }""",
    )


def _marker_centre_css(page, box: dict) -> tuple[float, float]:
    """Centre of the red marker on the displayed before frame, in CSS pixels from the frame's top-left
    corner: the centroid of the marker-red pixels of a full-page screenshot (document pixels times the
    device scale, so no rounding of an element's clip) inside the frame's box (ring and cross are
    symmetric about the point)."""
    shot = np.asarray(Image.open(io.BytesIO(page.screenshot(full_page=True))).convert("RGB")).astype(int)
    scale = shot.shape[1] / PHONE["width"]  # device pixels per CSS pixel
    x0, y0 = int(box["x"] * scale), int(box["y"] * scale)
    crop = shot[y0 : int((box["y"] + box["h"]) * scale), x0 : int((box["x"] + box["w"]) * scale)]
    r, g, b = crop[..., 0], crop[..., 1], crop[..., 2]
    # #ff2d55 (255, 45, 85) and its edges scaled into the white halo; not the green ground, nor the
    # scene's red disc (230, 40, 40)
    red = (r > 200) & (g < 110) & (b >= 60) & (b < 140)
    assert red.sum() > 50, red.sum()
    ys, xs = np.nonzero(red)
    return (x0 + xs.mean() + 0.5) / scale - box["x"], (y0 + ys.mean() + 0.5) / scale - box["y"]


def _judge(page, log: dict, state: str, shots: Path | None) -> None:
    """The judgement: frames loaded and stacked, each at least 340 px wide and fully on screen, the
    point drawn where the agent's pixel is displayed, the Yes/No buttons finger-sized."""
    page.wait_for_selector("#judge-box:not(.hidden)", timeout=20000)
    page.wait_for_function("document.querySelector('#after').naturalWidth === 320", timeout=10000)
    # the before frame is drawn once its JPEG is fetched and decoded: its marker red appears
    page.wait_for_function(
        """(() => { const c = document.querySelector('#before'); if (c.width !== 320) return false;
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        for (let i = 0; i < d.length; i += 4) if (d[i] > 240 && d[i + 1] < 70 && d[i + 2] > 70) return true;
        return false; })()""",
        timeout=10000,
    )
    # the question was brought up on the screen without the participant scrolling: with its frames
    # loaded (waited for above: the box has its full height), the whole box, Yes and No included, is
    # inside the viewport when it fits (a long instruction can make it taller than the screen: then
    # its top is at the top)
    page.wait_for_function(
        """(() => { const r = document.querySelector('#judge-box').getBoundingClientRect();
        return r.height <= innerHeight ? r.top >= -0.5 && r.bottom <= innerHeight + 0.5
                                       : Math.abs(r.top) <= 0.5; })()""",
        timeout=10000,
    )
    if _box(page, "#judge-box")["h"] <= PHONE["height"]:
        for sel in ("#judge-succeeded", "#judge-failed"):
            r = page.eval_on_selector(sel, "e => { const r = e.getBoundingClientRect(); return [r.top, r.bottom]; }")
            assert -0.5 <= r[0] and r[1] <= PHONE["height"] + 0.5, (sel, r)
    _check_layout(page, state, log)
    before, after = _box(page, "#before"), _box(page, "#after")
    for b in (before, after):
        assert (b["nw"], b["nh"]) == (320, 240)
        assert b["w"] >= MIN_FRAME_W and b["x"] >= 0 and b["x"] + b["w"] <= PHONE["width"], b
        assert b["h"] == pytest.approx(b["w"] * 240 / 320, abs=1), b  # not squashed
        assert b["h"] <= PHONE["height"], b  # can be seen whole
    assert after["y"] >= before["y"] + before["h"], (before, after)  # stacked: after under before
    # each frame, scrolled into view, is on screen whole and on top (nothing covers its centre)
    for sel in ("#before", "#after"):
        assert page.eval_on_selector(
            sel,
            """e => { e.scrollIntoView({ block: "nearest" });
            const r = e.getBoundingClientRect(); const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
            return r.top >= -0.5 && r.bottom <= innerHeight + 0.5 && hit === e; }""",
        ), sel
    log[state]["frames"] = {"before": before, "after": after, "judge_box": _box(page, "#judge-box")}
    trial = page.evaluate("state.pending_trial")
    (u, v), (fw, fh) = trial["points_px"][0], trial["frame_size"]
    want = ((u + 0.5) * before["w"] / fw, (v + 0.5) * before["h"] / fh)  # pixel centre u sits at u + 0.5
    got = _marker_centre_css(page, before)
    assert got == pytest.approx(want, abs=1.0), (got, want)
    log[state]["marker"] = {"want": [round(x, 2) for x in want], "got": [round(float(x), 2) for x in got]}
    if shots is not None:
        page.locator("#judge-box").scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "participant-390-judge.png"))


def _sus(page, log: dict, responses: list[int], shots: Path | None) -> None:
    page.wait_for_selector("#sus-box:not(.hidden)")
    page.wait_for_function("document.querySelectorAll('#sus-items input[type=radio]').length === 50")
    m = _check_layout(page, "sus", log)
    assert sum(t["name"].startswith("input") for t in m["targets"]) == 50  # every radio measured
    for i, r in enumerate(responses, start=1):  # a finger on each answer's label
        page.tap(f"label:has(> input[name=sus{i}][value='{r}'])")
        expect(page.locator(f"input[name=sus{i}][value='{r}']")).to_be_checked()
    if shots is not None:
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(shots / "participant-390-sus.png"), full_page=True)
    page.tap("#sus-submit")


def test_participant_session_at_phone_width(chromium, tmp_path):
    shots = Path(os.environ["POINTLAB_SCREENSHOTS"]) if os.environ.get("POINTLAB_SCREENSHOTS") else None
    world = ScriptedWorld({"sim-oracle": ORACLE_PX})
    store = Store(tmp_path / "phone.sqlite")
    app = create_app(
        world.parts(store), store, operator_token=OP, settings=UiSettings(frame_rate_hz=20, status_interval_s=0.1)
    )
    url, stop = serve_in_thread(app)
    base = url.removesuffix("/v1")
    op = httpx.Client(base_url=base, headers=H)
    ctx = chromium.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)
    log: dict = {}
    try:
        sid = op.post(
            "/api/studies",
            json={"agents": ["sim-oracle", "human"], "trials_per_agent": 1, "scene": "tabletop", **NO_WAIT},
        ).json()["id"]
        first, second = (op.post(f"/api/studies/{sid}/participants", json={}).json() for _ in range(2))
        assert first["agent_order"] == ["sim-oracle", "human"]
        page = ctx.new_page()
        page.goto(first["url"])
        page.wait_for_selector("#setup-box:not(.hidden)")
        page.wait_for_function("window.__pl.frames > 2", timeout=10000)  # the live view is drawn
        assert page.inner_text("#start-block") == "Start Agent 1"
        _check_layout(page, "block start", log)

        # a second participant waits in the queue behind the first
        waiting = ctx.new_page()
        waiting.goto(second["url"])
        waiting.wait_for_function("document.getElementById('queue').textContent.includes('number 2')", timeout=10000)
        _check_layout(waiting, "queue", log)
        waiting.close()

        page.tap("#start-block")
        page.wait_for_selector("#trial-box:not(.hidden)")
        page.fill("#instruction", "pick up the small red ball next to the green block on the left of the table")
        _check_layout(page, "typing", log)
        page.tap("#send")
        _judge(page, log, "judgement", shots)
        page.tap("#judge-succeeded")
        _sus(page, log, [4, 2, 4, 2, 4, 2, 4, 2, 4, 2], shots)

        # block 2, the human reference: the trial waits for the operator, so it is measured running
        page.wait_for_selector("#setup-box:not(.hidden)")
        assert page.inner_text("#start-block") == "Start Agent 2"
        page.tap("#start-block")
        page.wait_for_selector("#trial-box:not(.hidden)")
        page.fill("#instruction", "put it in the blue bowl")
        page.tap("#send")
        page.wait_for_function("document.getElementById('trial-status').textContent.includes('pointing')")
        frames = page.evaluate("window.__pl.frames")
        page.wait_for_function(f"window.__pl.frames > {frames + 5}", timeout=10000)  # the view moves on
        _check_layout(page, "trial running", log)
        live = _box(page, "#live")
        assert live["x"] >= 0 and live["x"] + live["w"] <= PHONE["width"] and live["w"] >= MIN_FRAME_W, live
        assert op.post("/api/trials/abort").json() == {"aborted": True}  # the operator stops it
        page.wait_for_selector("#notice-box:not(.hidden)")
        assert "does not count" in page.inner_text("#notice")
        page.wait_for_selector("#send:not([disabled])")  # the same slot is offered again
        _check_layout(page, "aborted", log)
        # the notice says why the same trial comes again: on the first screen, above the trial
        page.evaluate("window.scrollTo(0, 0)")
        notice, trial_box = _box(page, "#notice-box"), _box(page, "#trial-box")
        assert notice["y"] + notice["h"] <= PHONE["height"] and notice["y"] < trial_box["y"], (notice, trial_box)

        # one unbroken 360-character word (the limit is 500): it wraps, the page does not widen
        page.fill("#instruction", "put it in the blue bowl " + "unbrokenword" * 30)
        page.tap("#send")
        _answer_human(op, world, *HUMAN_PX)  # the operator clicks the human reference's point
        _judge(page, log, "judgement 2", None)
        page.tap("#judge-failed")
        _sus(page, log, [3] * 10, None)
        page.wait_for_selector("#done-box:not(.hidden)")
        _check_layout(page, "finished", log)

        assert [
            (t["agent"], t["judgement"])
            for t in op.get(f"/api/results?study_id={sid}").json()["trials"]
            if t["judgement"]
        ] == [("sim-oracle", "succeeded"), ("human", "failed")]
        for state, m in log.items():
            sizes = [min(t["w"], t["h"]) for t in m["targets"]]
            print(
                f"{state}: scrollWidth {m['scrollWidth']}, smallest target {min(sizes, default=None)} px"
                + (
                    f", frames {m['frames']['before']['w']:.0f} x {m['frames']['before']['h']:.0f},"
                    f" judge box {m['frames']['judge_box']['h']:.0f} tall, marker {m['marker']}"
                    if "frames" in m
                    else ""
                )
            )
    finally:
        ctx.close()
        op.close()
        stop()
        store.close()
