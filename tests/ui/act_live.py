"""A real Point-Act session (``bridge.session.start_session`` in sim) with the web app served on
127.0.0.1, for the browser tests of this folder."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class LiveAct:
    base_url: str
    operator_token: str
    session: Any
    store: Any


@contextlib.contextmanager
def live_act(db_path: Path, domain_id: int, time_scale: float = 0.02) -> Iterator[LiveAct]:
    from pointlab.bridge.session import SessionConfig, start_session
    from pointlab.sim_mock.model_server import serve_in_thread
    from pointlab.ui.app import UiSettings, create_app

    session = start_session(
        SessionConfig(camera="sim", robot="sim", db_path=db_path, time_scale=time_scale, domain_id=domain_id)
    )
    stop = None
    try:
        token = secrets.token_urlsafe(16)
        app = create_app(session.parts, session.store, operator_token=token, settings=UiSettings())
        url, stop = serve_in_thread(app)
        yield LiveAct(url.removesuffix("/v1"), token, session, session.store)
    finally:
        if stop is not None:
            stop()
        session.close()


def decode_jpeg(data: bytes):
    """JPEG bytes -> (H, W, 3) uint8 RGB."""
    import cv2
    import numpy as np

    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    assert decoded is not None, "not a JPEG"
    return decoded[:, :, ::-1]


def oracle_points_on_live_view(live: LiveAct, text: str, timeout_s: float = 10.0) -> list:
    """The sim oracle's points for ``text`` on the live view's latest frame (the image a page shows).

    Polls until the oracle has a point (or ``timeout_s``): under load the newest encoded frame can be
    older than the frames the sim's frame log still keeps, and the oracle then knows no point on it."""
    import time

    from pointlab.sim_mock.oracle import SceneOracle

    oracle = SceneOracle(live.session.world.sim)
    deadline = time.monotonic() + timeout_s
    while True:
        latest = live.session.ports.live_view.latest_jpeg()
        pts = oracle.points(text, decode_jpeg(latest[0])) if latest is not None else []
        if pts or time.monotonic() > deadline:
            return pts
        time.sleep(0.05)
