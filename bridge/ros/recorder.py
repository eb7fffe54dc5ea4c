"""``TrialRecorder``: records every topic of the node set, per trial, to an MCAP bag and a clip.

Its own rclpy node (``pointlab_recorder``) subscribes to ``bridge.recording.recorder.input_topics`` (the
realsense-ros colour, aligned depth and camera_info, ``/joint_states``, the TCP pose and every
pointlab topic; the colour as the camera's ``compressed`` JPEG when recordings store compressed
images, so no frame is encoded twice) with **raw** subscriptions: each callback gets the CDR bytes as they arrived and
hands them to the ``bridge.recording.recorder.Recorder`` engine (a dict store or a queue put), which
decodes, thins and writes on its own thread. The node is spun by an executor of its own on a thread
of its own, so the session's executor (the trial loop's callbacks) never waits for it. Only
subscribers: the session's graph guard does not count it as a second session.

Wiring (a session, or a test)::

    recorder = TrialRecorder(host, RecordingConfig(), db_path=config.db_path)
    recorder.begin(trial_id)                        # when the trial starts
    rec = await recorder.end_async(trial_id)        # when it is judged: a bridge.recording.layout.Recording
    recorder.close()                                # before host.close()
"""

from __future__ import annotations

import time
from pathlib import Path

from pointlab.bridge.recording.recorder import Recorder, input_topics
from pointlab.bridge.recording.layout import Recording, RecordingConfig
from pointlab.bridge.ros.msgs import TOPICS
from pointlab.bridge.ros.raw_tap import RawTap

__all__ = ["TrialRecorder"]


class TrialRecorder:
    """Per-trial recordings from the ROS graph of ``host``'s context.

    Args:
        host: a ``RosHost`` (only its ``context`` is used: the node has its own executor).
        config: ``RecordingConfig`` (rates, clip settings, limits, folder).
        db_path: the session's SQLite file; the recordings folder defaults to ``recordings/`` beside it.
        image_depth: history depth of the image subscriptions (reliable, keep last).
        static_transforms: ``bridge.recording.static_tf.StaticTransform`` s written on ``/tf_static``
            in every recording (the session's calibration).

    Attributes:
        root: the recordings folder (``Recording`` paths are relative to it).
        engine: the ``bridge.recording.recorder.Recorder`` doing the work.
    """

    def __init__(
        self,
        host,
        config: RecordingConfig = RecordingConfig(),
        *,
        db_path: str | Path | None = None,
        image_depth: int = 5,
        static_transforms=(),
    ) -> None:
        self.engine = Recorder(config.resolved_dir(db_path), config, static_transforms=static_transforms)
        self._inputs = input_topics(config)
        # its own executor: the session's (the trial loop's callbacks) never waits for the recorder's
        self._tap = RawTap(host, "pointlab_recorder", self._inputs, self._callback, image_depth=image_depth)
        self.node = self._tap.node
        self._subs = self._tap.subs

    @property
    def root(self) -> Path:
        return self.engine.root

    def _callback(self, topic: str):
        offer = self.engine.offer

        def on_message(cdr: bytes) -> None:
            offer(topic, time.time_ns(), cdr)

        return on_message

    def wait_ready(self, timeout_s: float = 10.0) -> bool:
        """Wait until the camera's three topics have a matched publisher and a camera_info and an
        arm state have arrived (a recording begun now has the camera from its first frame);
        ``False`` on timeout."""
        deadline = time.monotonic() + timeout_s
        color = TOPICS["color_compressed"] if TOPICS["color_compressed"] in self._inputs else TOPICS["color"]
        cams = [self._subs[t] for t in (color, TOPICS["depth"], TOPICS["camera_info"])]
        while time.monotonic() < deadline:
            if (
                all(s.get_publisher_count() > 0 for s in cams)
                and self.engine.has_state(TOPICS["camera_info"])
                and self.engine.has_state(TOPICS["arm_state"])
            ):
                return True
            time.sleep(0.02)
        return False

    def begin(self, trial_id: str, *, request_id: str | None = None) -> None:
        """Start recording ``trial_id`` (``bridge.recording.recorder.Recorder.begin``). Returns at once.

        Raises:
            ValueError: ``trial_id`` is not a usable file name, or was recorded before.
        """
        self.engine.begin(trial_id, request_id=request_id)

    def end(self, trial_id: str, timeout_s: float = 30.0) -> Recording | None:
        """Stop recording ``trial_id`` and return its ``Recording`` (blocks until the files are done)."""
        return self.engine.end(trial_id, timeout_s)

    async def end_async(self, trial_id: str, timeout_s: float = 30.0) -> Recording | None:
        """``end`` from an event loop, without blocking it."""
        return await self.engine.end_async(trial_id, timeout_s)

    def close(self) -> None:
        """End running recordings, stop the node's executor and destroy the node. Idempotent; call
        before the host's context shuts down."""
        self._tap.close()
        self.engine.close()
