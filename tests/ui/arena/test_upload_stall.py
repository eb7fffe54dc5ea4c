"""Issue 14 #1: one upload must not stall the arena for everyone. A 5 MB, 4096 x 4096 JPEG upload is
decoded, written and sent to both models off the event loop, so ``GET /api/images`` answers within
200 ms while it is in flight; measured on loopback against the same request with no upload in
flight (the ratio is printed). Also: the per-address limit holds when the cookie is dropped, and
X-Forwarded-For is ignored unless the proxy is trusted."""

from __future__ import annotations

import asyncio
import io
import time

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from pointlab.sim_mock.model_server import serve_in_thread
from pointlab.ui.arena import ArenaSettings, create_arena_app

from .helpers import curated, start_models

pytestmark = pytest.mark.slow


def big_jpeg() -> bytes:
    rng = np.random.default_rng(0)
    # smooth noise compresses to about 5 MB at 4096 x 4096
    small = rng.integers(0, 255, (1024, 1024, 3), dtype=np.uint8)
    img = np.asarray(Image.fromarray(small).resize((4096, 4096), Image.Resampling.BILINEAR))
    img = np.clip(img.astype(np.int16) + rng.integers(-12, 12, img.shape), 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=80)
    return buf.getvalue()


@pytest.mark.xdist_group("arena_load")  # not beside the other arena load tests: tests/ui/arena/conftest.py
def test_upload_does_not_stall_other_requests(uoc_tabletop, tmp_path):
    data = big_jpeg()
    assert 4e6 < len(data) < 7.5e6, len(data)
    agents, stop_models = start_models(tmp_path)
    app = create_arena_app(
        agents,
        db_path=tmp_path / "arena.db",
        curated_dir=curated(uoc_tabletop, tmp_path),
        settings=ArenaSettings(max_upload_bytes=8 * 1024 * 1024),
    )
    base, stop = serve_in_thread(app)
    base = base.removesuffix("/v1")

    async def run() -> tuple[list[float], list[float], int]:
        async with httpx.AsyncClient(base_url=base, timeout=60) as c:

            async def timed() -> float:
                t0 = time.perf_counter()
                r = await c.get("/api/images")
                assert r.status_code == 200
                return time.perf_counter() - t0

            quiet = [await timed() for _ in range(20)]
            async with httpx.AsyncClient(base_url=base, timeout=120) as up:
                task = asyncio.create_task(
                    up.post(
                        "/api/battles",
                        data={"instruction": "Point to the bowl"},
                        files={"upload": ("big.jpg", data, "image/jpeg")},
                    )
                )
                busy = []
                while not task.done():
                    busy.append(await timed())
                    await asyncio.sleep(0.01)
                status = (await task).status_code
                # the models still work on the 4096 x 4096 image after the battle was created
                for _ in range(20):
                    busy.append(await timed())
                    await asyncio.sleep(0.02)
            return quiet, busy, status

    try:
        quiet, busy, status = asyncio.run(run())
    finally:
        stop()
        stop_models()
    assert status == 200
    q50, q90 = (float(x) for x in np.percentile(quiet, [50, 90]))
    b50, b90, b_max = (float(x) for x in np.percentile(busy, [50, 90, 100]))
    print(
        f"GET /api/images: quiet p50 {1e3 * q50:.1f} / p90 {1e3 * q90:.1f} ms; during upload p50 {1e3 * b50:.1f} / "
        f"p90 {1e3 * b90:.1f} / max {1e3 * b_max:.1f} ms over {len(busy)} requests; ratio p50 {b50 / q50:.2f}, "
        f"p90 {b90 / q90:.2f}"
    )
    assert len(busy) >= 10
    # before: the upload held the loop for its whole decode (12 s). Now requests keep being answered
    # during it: 9 in 10 within 200 ms and within 3x of the same request without an upload (an
    # isolated stall of a thread descheduled on a loaded 2-core machine happens without uploads too)
    assert b90 < 0.200
    assert b90 <= 3 * q90 + 0.020


def test_rate_limit_per_address_survives_dropping_the_cookie(uoc_tabletop, tmp_path):
    agents, stop_models = start_models(tmp_path)
    try:
        app = create_arena_app(
            agents,
            db_path=tmp_path / "arena.db",
            curated_dir=curated(uoc_tabletop, tmp_path),
            settings=ArenaSettings(max_battles_per_minute=2, max_battles_per_minute_per_address=3),
        )
        form = {"instruction": "Point to the bowl", "image_name": "000000-color.png"}
        codes = []
        with TestClient(app) as first:
            for _ in range(2):
                codes.append(first.post("/api/battles", data=form).status_code)
            codes.append(first.post("/api/battles", data=form).status_code)  # session limit
            fresh = TestClient(app)  # no cookie: new session
            codes.append(fresh.post("/api/battles", data=form).status_code)  # 3rd from this address
            spoof = TestClient(app)
            codes.append(spoof.post("/api/battles", data=form, headers={"X-Forwarded-For": "10.9.8.7"}).status_code)
        assert codes == [200, 200, 429, 200, 429]
        # behind a trusted proxy the forwarded address is the client's
        app2 = create_arena_app(
            agents,
            db_path=tmp_path / "arena2.db",
            curated_dir=curated(uoc_tabletop, tmp_path),
            settings=ArenaSettings(max_battles_per_minute_per_address=1, trusted_proxies=("testclient",)),
        )
        with TestClient(app2) as c:
            h = lambda a: {"X-Forwarded-For": a}  # noqa: E731
            assert c.post("/api/battles", data=form, headers=h("10.0.0.1")).status_code == 200
            assert TestClient(app2).post("/api/battles", data=form, headers=h("10.0.0.1")).status_code == 429
            assert TestClient(app2).post("/api/battles", data=form, headers=h("10.0.0.2")).status_code == 200
    finally:
        stop_models()
