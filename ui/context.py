"""The web app's runtime state: the station, the store, the arm queue, the trial in progress.

One :class:`AppContext` per app (``app.state.ctx``), built by :func:`pointlab.ui.app.create_app`;
nothing here is global, so tests can run several apps side by side.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pointlab.bridge.recording.layout import RecordingLayout, default_recordings_dir
from pointlab.bridge.study.store import Store
from pointlab.bridge.study.design import ArmQueue
from pointlab.bridge.trials.ports import CameraPort
from pointlab.bridge.trials.station import PointActParts

__all__ = ["UiSettings", "AppContext", "CurrentTrial", "FrameFeed", "FRAME_POLL_S"]

# Twice the camera's 30 frames/s: a new frame waits at most ~17 ms for its websockets.
FRAME_POLL_S = 1.0 / 60


@dataclass(frozen=True)
class UiSettings:
    """Settings of one app (passed to ``create_app``; nothing is read from the environment).

    Attributes:
        frame_rate_hz: most live-view frames pushed per second per websocket (each new frame goes out
            as soon as it is encoded, up to this rate; the camera gives 30). Above the 15 frames/s
            the live view must reach (issue 11), so that a page's share is not cut by its cap.
        status_interval_s: how often queue/step state is re-checked and pushed when changed.
        ws_send_timeout_s: a websocket that takes no message for this long is given up (``ui.ws``).
        max_message_bytes: a websocket text message longer than this is refused with an error.
        max_instruction_chars: longest instruction accepted.
        public_url: base URL put in invite links (``None``: the URL the operator's request came in on).
        recordings_dir: the trials' recordings folder (``None``: ``recordings/`` beside the store's
            SQLite file, the recorder's default).
        clip_url_ttl_s: how long a signed clip URL of the results page stays valid.
    """

    frame_rate_hz: float = 20.0
    status_interval_s: float = 0.5
    ws_send_timeout_s: float = 10.0
    max_message_bytes: int = 4096
    max_instruction_chars: int = 500
    public_url: str | None = None
    recordings_dir: Path | None = None
    clip_url_ttl_s: float = 6 * 3600.0

    def __post_init__(self) -> None:
        if not self.frame_rate_hz > 0:
            raise ValueError(f"frame_rate_hz must be > 0, got {self.frame_rate_hz}")
        if not self.status_interval_s > 0:
            raise ValueError(f"status_interval_s must be > 0, got {self.status_interval_s}")
        if not self.ws_send_timeout_s > 0:
            raise ValueError(f"ws_send_timeout_s must be > 0, got {self.ws_send_timeout_s}")
        if self.max_message_bytes < 64 or self.max_instruction_chars < 1:
            raise ValueError("max_message_bytes must be >= 64 and max_instruction_chars >= 1")


@dataclass
class CurrentTrial:
    """The trial the arm is executing (operator view: names the agent)."""

    participant_id: int
    participant_label: str
    study_id: int
    block: int
    alias: str
    agent: str
    instruction: str
    action: str
    started_unix_s: float = field(default_factory=time.time)
    pair: tuple[str, str] | None = None  # a pairwise episode's (agent A, agent B), in the order they act

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class PendingHalf:
    """A pairwise episode's half waiting for the operator to put the start scene back (real hardware):
    the console's Reset scene resolves ``confirmed`` (``ui.pairwise_flow``); Abort fails it."""

    participant_id: int
    participant_label: str
    episode: int
    half: str  # "A" | "B"
    confirmed: asyncio.Future

    def to_dict(self) -> dict[str, Any]:
        return {
            "participant_id": self.participant_id,
            "label": self.participant_label,
            "episode": self.episode,
            "half": self.half,
        }


class FrameFeed:
    """The newest live-view frame for every websocket of the app.

    One task polls ``live_view.latest_jpeg()`` every ``poll_s`` while at least one connection is
    watching (``watching()``), and wakes the watchers when the frame index changes, so that a page
    gets a frame as soon as the camera has sent it instead of at its own next tick, and five pages
    cost one poll, not five. With nobody watching nothing polls. The JPEG is the camera node's own
    (``bridge.ros.live_view``): nothing is encoded in the web app. Used from the event loop only.

    Args:
        live_view: the station's camera port (``latest_jpeg``).
        poll_s: seconds between polls (a frame waits at most this long after it was encoded).
    """

    def __init__(self, live_view: CameraPort, poll_s: float) -> None:
        self._live_view = live_view
        self._poll_s = poll_s
        self._value: tuple[bytes, int] | None = None
        self._watchers = 0
        self._changed = asyncio.Condition()
        self._task: asyncio.Task | None = None

    @contextlib.asynccontextmanager
    async def watching(self):
        """Keep the poller running while the ``async with`` body runs."""
        self._watchers += 1
        if self._task is None or self._task.done():
            # A new poller, maybe on another loop than the last one (an app served by a test client,
            # then by uvicorn): nobody waits on the old condition, and it may belong to the old loop.
            self._changed = asyncio.Condition()
            self._take(self._read())  # a page that just connected has its first frame at once
            self._task = asyncio.get_running_loop().create_task(self._poll())
        try:
            yield self
        finally:
            self._watchers -= 1

    def _read(self) -> tuple[bytes, int] | None:
        try:
            return self._live_view.latest_jpeg()
        except Exception:  # a camera hiccup must not kill every live view
            return None

    def _take(self, value: tuple[bytes, int] | None) -> bool:
        if value is None or (self._value is not None and value[1] == self._value[1]):
            return False
        self._value = value
        return True

    async def _poll(self) -> None:
        while self._watchers > 0:
            if self._take(self._read()):
                async with self._changed:
                    self._changed.notify_all()
            await asyncio.sleep(self._poll_s)

    def fresh(self, index: int | None) -> tuple[bytes, int] | None:
        """``(jpeg, frame index)`` of the newest frame when its index is not ``index``, else ``None``
        (never waits)."""
        return self._value if self._value is not None and self._value[1] != index else None

    async def newer_than(self, index: int | None, timeout_s: float) -> tuple[bytes, int] | None:
        """``(jpeg, frame index)`` of the newest frame once its index is not ``index``, waiting up to
        ``timeout_s`` for one (call inside ``watching()``); ``None`` when none came in time."""
        if self.fresh(index) is None:
            try:
                async with self._changed:
                    await asyncio.wait_for(
                        self._changed.wait_for(lambda: self.fresh(index) is not None), max(0.0, timeout_s)
                    )
            except asyncio.TimeoutError:  # TimeoutError itself only from 3.11
                return None
        return self.fresh(index)


class AppContext:
    """Everything the routes and websockets share. Used from the event loop only.

    The trial rules (who may move the arm, the stop, the belief) are the station's
    (``parts.station``); the app keeps only who is in the queue and whose trial runs (``current``)."""

    def __init__(self, parts: PointActParts, store: Store, operator_token: str, settings: UiSettings) -> None:
        if not operator_token or len(operator_token) < 8:
            raise ValueError("operator_token must be at least 8 characters")
        self.parts = parts
        self.store = store
        self.operator_token = operator_token
        self.settings = settings
        self.recordings = RecordingLayout(settings.recordings_dir or default_recordings_dir(store.path))
        self.queue = ArmQueue()
        self.current: CurrentTrial | None = None
        # (participant id, block) waiting for the operator's "scene reset" (real hardware only)
        self.pending_block: tuple[int, int] | None = None
        self.pending_half: PendingHalf | None = None  # a pairwise half waiting for the scene (real hardware)
        self.frames = FrameFeed(parts.live_view, FRAME_POLL_S)
        self.tasks: set[asyncio.Task] = set()  # running trials (kept referenced until done)

    @property
    def station(self):
        """The station (``bridge.trials.station.Station``): trials, the arm, the stop, the belief."""
        return self.parts.station

    @property
    def stopped(self) -> bool:
        """The emergency stop is engaged (no trial starts until the operator resets the arm)."""
        return self.parts.station.stopped

    def busy(self) -> bool:
        """A trial, a block reset or an arm action is running or claimed."""
        return self.current is not None or self.parts.station.busy
