"""The live view's delivery to websockets (issue 11: 15 frames/s to 5 pages): one poll of the live view
for all pages, nothing polled while nobody watches, a frame handed out as soon as it changed, and at
most ``frame_rate_hz`` frames a second to one page. No ROS, no browser."""

from __future__ import annotations

import asyncio
import time

from fastapi.testclient import TestClient

from pointlab.bridge.study.store import Store
from pointlab.sim_mock.scripted_station import ScriptedWorld
from pointlab.ui.app import UiSettings, create_app
from pointlab.ui.context import FrameFeed

from .test_api import OP, _invite, _study


class CountingView:
    """A live view whose frame index is set by the test; counts ``latest_jpeg`` calls."""

    def __init__(self) -> None:
        self.index: int | None = None
        self.calls = 0
        self.fail = False

    def latest_jpeg(self):
        self.calls += 1
        if self.fail:
            raise RuntimeError("camera unplugged")
        return None if self.index is None else (b"jpeg%d" % self.index, self.index)


def test_five_watchers_cost_one_poll_and_nobody_watching_costs_none():
    view = CountingView()
    feed = FrameFeed(view, poll_s=0.05)

    async def main():
        await asyncio.sleep(0.2)
        idle_calls = view.calls  # nobody watches: the encoder may go idle

        async def watcher():
            async with feed.watching():
                await asyncio.sleep(0.5)

        await asyncio.gather(*(watcher() for _ in range(5)))
        watched_calls = view.calls - idle_calls
        await asyncio.sleep(0.3)
        return idle_calls, watched_calls, view.calls - idle_calls - watched_calls

    idle, watched, after = asyncio.run(main())
    assert idle == 0
    # 0.5 s at one poll per 0.05 s is 10-11 polls for all five pages; one poller per page would be 50+
    assert 3 <= watched <= 14, watched
    assert after <= 1, after  # the poller ends with the last watcher


def test_a_changed_frame_is_handed_out_at_once_and_an_unchanged_one_waits():
    view = CountingView()
    feed = FrameFeed(view, poll_s=0.01)

    async def main():
        async with feed.watching():
            none_yet = await feed.newer_than(None, 0.1)  # no frame at all: times out
            view.index = 7
            first = await feed.newer_than(None, 2.0)
            t0 = time.monotonic()
            same = await feed.newer_than(7, 0.15)  # nothing newer than 7 within the timeout
            waited = time.monotonic() - t0

            async def later():
                await asyncio.sleep(0.05)
                view.index = 8

            task = asyncio.create_task(later())
            newer = await feed.newer_than(7, 2.0)
            await task
            return none_yet, first, same, waited, newer

    none_yet, first, same, waited, newer = asyncio.run(main())
    assert none_yet is None and same is None
    assert first == (b"jpeg7", 7) and newer == (b"jpeg8", 8)
    assert waited >= 0.14


def test_a_failing_live_view_gives_no_frame_and_recovers():
    view = CountingView()
    view.index, view.fail = 3, True
    feed = FrameFeed(view, poll_s=0.01)

    async def main():
        async with feed.watching():
            broken = await feed.newer_than(None, 0.1)
            view.fail = False
            return broken, await feed.newer_than(None, 2.0)

    assert asyncio.run(main()) == (None, (b"jpeg3", 3))


def test_one_page_gets_at_most_frame_rate_hz_frames_a_second(tmp_path):
    # the scripted world's camera has a new frame 30 times a second; the page's cap is 10
    world = ScriptedWorld({"sim-oracle": (100.0, 80.0)})
    store = Store(tmp_path / "rate.sqlite")
    app = create_app(
        world.parts(store), store, operator_token=OP, settings=UiSettings(frame_rate_hz=10, status_interval_s=0.05)
    )
    try:
        with TestClient(app) as client:
            inv = _invite(client, _study(client, tpa=1, agents=["sim-oracle"]))
            with client.websocket_connect(f"/ws/participant?token={inv['token']}") as ws:
                while "bytes" not in ws.receive():  # the first frame
                    pass
                t0, frames = time.monotonic(), 0
                while time.monotonic() - t0 < 1.5:
                    if "bytes" in ws.receive():
                        frames += 1
                elapsed = time.monotonic() - t0
    finally:
        store.close()
    # absolute 0.1 s periods with one period of credit: at most 10/s over the window plus one;
    # at least a third of it even on a loaded machine
    assert frames <= 10 * elapsed + 1, (frames, elapsed)
    assert frames >= 5, frames


class StalledSocket:
    """A websocket whose client never reads: every send (and the close frame) waits forever."""

    def __init__(self) -> None:
        from starlette.websockets import WebSocketState

        self.application_state = WebSocketState.CONNECTED
        self.close_code = None

    async def send_bytes(self, data):
        await asyncio.Event().wait()

    async def send_text(self, text):
        await asyncio.Event().wait()

    async def close(self, code=1000):
        self.close_code = code
        await asyncio.Event().wait()


def test_a_client_that_never_reads_is_given_up_and_stops_the_poller():
    # a pump stuck in a send used to keep counting as a watcher: the encoder ran for nobody
    from types import SimpleNamespace

    from pointlab.ui.ws import CLOSE_TOO_SLOW, _Conn, _pump

    view = CountingView()
    view.index = 1
    feed = FrameFeed(view, poll_s=0.01)
    ctx = SimpleNamespace(
        settings=UiSettings(frame_rate_hz=20, status_interval_s=0.05, ws_send_timeout_s=0.3), frames=feed
    )
    ws = StalledSocket()
    conn = _Conn(ws, ctx.settings.ws_send_timeout_s)

    async def main():
        t0 = time.monotonic()
        await asyncio.wait_for(_pump(ctx, conn, lambda: {"type": "state"}), 5.0)  # returns: it gave up
        gave_up_after = time.monotonic() - t0
        await asyncio.sleep(0.05)
        calls = view.calls
        await asyncio.sleep(0.3)
        return gave_up_after, view.calls - calls, await conn.send_json({"type": "state"})

    gave_up_after, polls_after, sent_after = asyncio.run(main())
    # the send timeout (0.3 s) plus the one-second try at a close frame
    assert 0.29 <= gave_up_after < 3.0, gave_up_after
    assert conn.dead and ws.close_code == CLOSE_TOO_SLOW
    assert polls_after == 0 and sent_after is False


def test_one_feed_serves_one_event_loop_after_another():
    # an app can be served by one loop and later by another (a test client, then a real server):
    # the feed's wake-up must belong to the loop that is watching now
    view = CountingView()
    feed = FrameFeed(view, poll_s=0.01)

    async def watch(index):
        async with feed.watching():

            async def later():
                await asyncio.sleep(0.05)
                view.index = index

            task = asyncio.create_task(later())
            got = await feed.newer_than(index - 1, 2.0)
            await task
            return got

    view.index = 0
    assert asyncio.run(watch(1)) == (b"jpeg1", 1)
    assert asyncio.run(watch(2)) == (b"jpeg2", 2)
