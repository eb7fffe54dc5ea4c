"""The recent camera frames a runner keeps: the live view's source, and the frames of each trial
(the one the agent saw, the one after the arm stopped) for the judgement and the automatic check.

Subscribes (on the runner's node) to the colour topic, the aligned depth topic and ``frame_meta``;
keeps the last ``keep`` colour and depth messages (about one second at 30 fps; 0.9 + 0.6 MB each at
640x480) and the camera's frame index per header stamp (counting frames when no ``frame_meta``
comes, e.g. realsense-ros).
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque

from pointlab.bridge.ros.msgs import TOPICS, image_qos, stamp_to_ns
from pointlab.bridge.ros.payloads import FrameMeta, from_msg

__all__ = ["RecentFrames"]


class RecentFrames:
    """Recent colour and depth ``sensor_msgs/Image`` messages by stamp.

    Args:
        node: the rclpy node to subscribe on.
        keep: how many recent messages to hold.
        watch_camera_qos: log a camera publisher whose QoS or type does not match (``camera_events``).
    """

    def __init__(self, node, keep: int = 30, *, watch_camera_qos: bool = True) -> None:
        from sensor_msgs.msg import Image
        from std_msgs.msg import String

        from pointlab.bridge.ros.lean_node import camera_events

        self._lock = threading.Lock()
        self._frames: deque = deque(maxlen=keep)  # (stamp_ns, msg)
        self._depth: deque = deque(maxlen=keep)  # (stamp_ns, msg)
        self._index_by_stamp: OrderedDict[int, int] = OrderedDict()
        self.count = 0
        self.new_frame = threading.Event()  # set on every frame; a consumer clears it
        self._arrived = threading.Condition(self._lock)
        events = camera_events(watch_camera_qos)
        node.create_subscription(Image, TOPICS["color"], self._on_color, image_qos(2), event_callbacks=events)
        node.create_subscription(Image, TOPICS["depth"], self._on_depth, image_qos(2), event_callbacks=events)
        node.create_subscription(String, TOPICS["frame_meta"], self._on_meta, 50)

    def _on_color(self, msg) -> None:
        stamp = stamp_to_ns(msg.header.stamp)
        with self._lock:
            self._frames.append((stamp, msg))
            self.count += 1
            if stamp not in self._index_by_stamp:  # no frame_meta (e.g. realsense-ros): count frames
                self._index_by_stamp[stamp] = self.count - 1
            while len(self._index_by_stamp) > 600:
                self._index_by_stamp.popitem(last=False)
            self._arrived.notify_all()
        self.new_frame.set()

    def _on_depth(self, msg) -> None:
        with self._lock:
            self._depth.append((stamp_to_ns(msg.header.stamp), msg))

    def _on_meta(self, msg) -> None:
        meta = from_msg(FrameMeta, msg)
        if meta is not None:
            with self._lock:
                self._index_by_stamp[meta.stamp_ns] = meta.index

    def latest(self) -> tuple[int, object, int] | None:
        """``(stamp_ns, Image msg, frame index)`` of the newest frame, or ``None`` before any."""
        with self._lock:
            if not self._frames:
                return None
            stamp, msg = self._frames[-1]
            return stamp, msg, self._index_by_stamp.get(stamp, self.count - 1)

    def by_stamp(self, stamp_ns: int):
        """The kept message stamped ``stamp_ns``, or ``None`` (too old, or never seen)."""
        with self._lock:
            for stamp, msg in reversed(self._frames):
                if stamp == stamp_ns:
                    return msg
        return None

    def wait_by_stamp(self, stamp_ns: int, timeout_s: float):
        """The kept message stamped ``stamp_ns``, waiting up to ``timeout_s`` while it has not arrived
        yet (every kept frame is older); ``None`` at once when it is gone or was skipped."""

        def found():
            for stamp, msg in reversed(self._frames):
                if stamp == stamp_ns:
                    return msg
            return None

        def settled() -> bool:
            return found() is not None or (bool(self._frames) and self._frames[-1][0] >= stamp_ns)

        with self._lock:
            self._arrived.wait_for(settled, timeout_s)
            return found()

    def depth_by_stamp(self, stamp_ns: int, max_skew_ns: int = 20_000_000):
        """The kept depth message of ``stamp_ns`` (exact, else the nearest within ``max_skew_ns``)."""
        with self._lock:
            best = min(self._depth, key=lambda sm: abs(sm[0] - stamp_ns), default=None)
        return best[1] if best is not None and abs(best[0] - stamp_ns) <= max_skew_ns else None

    def wait_newer(self, count: int, timeout_s: float) -> bool:
        """Block until more than ``count`` colour frames have arrived (``False`` on timeout)."""
        with self._lock:
            return self._arrived.wait_for(lambda: self.count > count, timeout_s)

    def index_of(self, stamp_ns: int) -> int | None:
        """The camera's frame index of ``stamp_ns``, or ``None``."""
        with self._lock:
            return self._index_by_stamp.get(stamp_ns)
