"""``pointlab perf loop --browsers N`` (``ui.perf_commands``): the live view's frame rate in N real Chromium pages at once,
while the sim arm runs trials, and the sim physics' real-time factor.

A sim session (``start_session("sim", "sim")``) serves the web app on 127.0.0.1; N participants are
invited to one study and N pages of Debian's Chromium (Playwright) open their invite links. While
the demo script runs through the station (the arm moving at ``time_scale``), each page counts the
binary (JPEG) websocket messages it receives (``window.__pl.frames`` of ``participant.js``). The
result per page is frames received per second over the measurement window; the server side adds
the camera node's published frames per second, the sim camera's renders (distinct states drawn)
and their mean render time, and the physics real-time factor (simulated seconds per wall second
spent in ``mj_step``) and the achieved simulated/wall ratio of the window.
"""

from __future__ import annotations

import asyncio
import secrets
import tempfile
import threading
import time
from pathlib import Path

__all__ = ["measure_live_view", "CHROMIUM_ARGS"]

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def _run_trials(station, stop: threading.Event, agent: str, out: list) -> None:
    from pointlab.bridge.trials.headless import HEADLESS_SETTINGS, demo_script

    script = demo_script("sim", "sim")

    async def loop():
        i = 0
        while not stop.is_set():
            if i and i % len(script) == 0:
                await station.reset_block()
                await asyncio.sleep(0.2)
            item = script[i % len(script)]
            ran = await station.run_trial(
                agent, item["instruction"], expected=item["expected"], settings=HEADLESS_SETTINGS, auto_judge=True
            )
            out.append(ran.result)
            i += 1

    asyncio.run(loop())


def _renders(cam) -> tuple[int, float]:
    """(renders made, seconds spent rendering) of a camera that counts them (the sim camera)."""
    return int(getattr(cam, "renders", 0)), float(getattr(cam, "render_s", 0.0))


def measure_live_view(
    browsers: int = 5,
    seconds: float = 20.0,
    *,
    time_scale: float = 1.0,
    agent: str = "sim-oracle",
    chromium: str = "/usr/bin/chromium",
    frame_rate_hz: float | None = None,
    recording: bool = True,
) -> dict:
    """Open ``browsers`` participant pages and measure for ``seconds`` (module docstring).

    ``recording``: every trial recorded (MCAP + clip, the session's default); ``False``: none.

    Returns:
        ``{"browsers", "seconds", "page_fps": [...], "page_fps_min", "camera_frames_published_per_s",
        "renders_per_s", "render_ms_mean", "physics": {...}, "trials_run", "trial_successes"}``.

    Raises:
        ValueError: ``browsers < 1`` or ``seconds <= 0``.
        RuntimeError: Chromium could not be started or a page got no frame.
    """
    from playwright.sync_api import sync_playwright

    from pointlab.bridge.trials.headless import demo_script  # noqa: F401 - the world's script, below
    from pointlab.bridge.session import SessionConfig, start_session
    from pointlab.bridge.study.design import invite_participant

    from .app import UiSettings, create_app
    from pointlab.benchmark.serving import serve_in_thread

    if browsers < 1 or not seconds > 0:
        raise ValueError("browsers must be >= 1 and seconds > 0")
    tmp = tempfile.TemporaryDirectory(prefix="pointlab-perf-live-")
    cfg = SessionConfig(db_path=Path(tmp.name) / "perf.sqlite", time_scale=time_scale)
    session = start_session(cfg if recording else cfg.model_copy(update={"recording": None}))
    stop_server = None
    stop = threading.Event()
    trials: list = []
    try:
        token = secrets.token_urlsafe(16)
        settings = UiSettings() if frame_rate_hz is None else UiSettings(frame_rate_hz=frame_rate_hz)
        url, stop_server = serve_in_thread(
            create_app(session.parts, session.store, operator_token=token, settings=settings)
        )
        base = url.removesuffix("/v1")
        study = session.store.create_study(agents=[agent], trials_per_agent=1, scene="perf")
        invites = [invite_participant(session.store, study, label=f"page {k}")[1] for k in range(browsers)]
        world, cam = session.world, session.camera_node.camera
        stats = getattr(world, "physics_stats", None)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
            try:
                pages = []
                for tok in invites:
                    page = browser.new_context(viewport={"width": 980, "height": 720}).new_page()
                    page.goto(f"{base}/p/{tok}")
                    pages.append(page)
                for page in pages:
                    page.wait_for_function("window.__pl && window.__pl.frames > 0", timeout=30_000)
                worker = threading.Thread(target=_run_trials, args=(session.station, stop, agent, trials), daemon=True)
                worker.start()
                time.sleep(min(2.0, seconds / 4))  # the first trial under way
                f0 = [page.evaluate("window.__pl.frames") for page in pages]
                pub0, (rend0, rs0) = session.camera_node.frames_published, _renders(cam)
                ph0, t0 = stats() if stats else None, time.monotonic()
                time.sleep(seconds)
                f1 = [page.evaluate("window.__pl.frames") for page in pages]
                elapsed = time.monotonic() - t0
                pub1, (rend1, rs1) = session.camera_node.frames_published, _renders(cam)
                ph1 = stats() if stats else None
            finally:
                stop.set()
                browser.close()
        worker.join(timeout=120)
    finally:
        stop.set()
        if stop_server is not None:
            stop_server()
        session.close()
        tmp.cleanup()
    fps = [round((b - a) / elapsed, 2) for a, b in zip(f0, f1)]
    renders = rend1 - rend0
    physics = None
    if ph0 is not None and ph1 is not None:  # (both or neither: stats() or none)
        sim_s, wall_s = ph1["simulated_s"] - ph0["simulated_s"], ph1["stepping_wall_s"] - ph0["stepping_wall_s"]
        physics = {
            "simulated_s": round(sim_s, 3),
            "stepping_wall_s": round(wall_s, 3),
            "real_time_factor": round(sim_s / wall_s, 1) if wall_s > 0 else None,
            "simulated_per_wall": round(sim_s / elapsed, 3),
        }
    return {
        "browsers": browsers,
        "seconds": round(elapsed, 2),
        "time_scale": time_scale,
        "recording": recording,
        "push_rate_hz": settings.frame_rate_hz,
        "page_fps": fps,
        "page_fps_min": min(fps),
        "camera_frames_published_per_s": round((pub1 - pub0) / elapsed, 2),
        "renders_per_s": round(renders / elapsed, 2),
        "render_ms_mean": round(1e3 * (rs1 - rs0) / renders, 2) if renders else None,
        "physics": physics,
        "trials_run": len(trials),
        "trial_successes": sum(bool(t.sim_success) for t in trials),
    }
