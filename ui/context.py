"""The web app's runtime state: the runner, the store, the arm queue, the trial in progress.

One :class:`AppContext` per app (``app.state.ctx``), built by :func:`pointlab.ui.app.create_app`;
nothing here is global, so tests can run several apps side by side.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pointlab.bridge.recording import RecordingLayout, default_recordings_dir
from pointlab.bridge.store import Store
from pointlab.bridge.study import ArmQueue
from pointlab.bridge.trial import LiveView, PointActParts

__all__ = ["UiSettings", "AppContext", "CurrentTrial"]


@dataclass(frozen=True)
class UiSettings:
    """Settings of one app (passed to ``create_app``; nothing is read from the environment).

    Attributes:
        frame_rate_hz: live-view frames pushed per second per websocket (issue 2: at least 10).
        status_interval_s: how often queue/step state is re-checked and pushed when changed.
        max_message_bytes: a websocket text message longer than this is refused with an error.
        max_instruction_chars: longest instruction accepted.
        public_url: base URL put in invite links (``None``: the URL the operator's request came in on).
        recordings_dir: the trials' recordings folder (``None``: ``recordings/`` beside the store's
            SQLite file, the recorder's default).
        clip_url_ttl_s: how long a signed clip URL of the results page stays valid.
    """

    frame_rate_hz: float = 15.0
    status_interval_s: float = 0.5
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

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class FrameCache:
    """Calls ``live_view.latest_jpeg()`` at most once per ``min_interval_s`` for all connections."""

    def __init__(self, live_view: LiveView, min_interval_s: float) -> None:
        self._live_view = live_view
        self._min_interval_s = min_interval_s
        self._last_call_s = 0.0
        self._value: tuple[bytes, int] | None = None

    def get(self) -> tuple[bytes, int] | None:
        now = time.monotonic()
        if now - self._last_call_s >= self._min_interval_s:
            self._last_call_s = now
            try:
                self._value = self._live_view.latest_jpeg()
            except Exception:  # a camera hiccup must not kill every live view
                self._value = None
        return self._value


class AppContext:
    """Everything the routes and websockets share. Used from the event loop only."""

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
        self.stopped = False  # set by the emergency stop, cleared by reset: no trial starts meanwhile
        # (participant id, block) waiting for the operator's "scene reset" (real hardware only)
        self.pending_block: tuple[int, int] | None = None
        self.frames = FrameCache(parts.live_view, 0.5 / settings.frame_rate_hz)
        self.arm_lock = asyncio.Lock()
        self.tasks: set[asyncio.Task] = set()  # running trials (kept referenced until done)
