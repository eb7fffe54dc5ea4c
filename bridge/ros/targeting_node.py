"""The targeting ROS 2 node: an agent's pixel -> a base-frame target (or a refusal), on the depth
of the very frame the agent saw.

Topics:

- in ``/camera/camera/aligned_depth_to_color/image_raw`` (``16UC1`` mm or ``32FC1`` m) and
  ``/camera/camera/color/camera_info``: kept in a short buffer keyed by header stamp;
- in ``/pointlab/point_frame`` (String JSON ``{"request_id", "stamp_ns"}``): pins the depth of that
  stamp until the answer comes (models may take many seconds; the buffer only holds a few);
- in ``/pointlab/point_answer`` (String JSON, see ``pointing_node``);
- out ``/pointlab/target`` (``geometry_msgs/PointStamped`` in the calibration's parent frame,
  ``link_base``, stamped with the frame's stamp) for valid targets only;
- out ``/pointlab/target_result`` (``payloads.TargetResult``: ``target`` is a
  ``bridge.trials.targeting.Target``, a refusal carries ``valid: false`` and its ``refusal`` code and
  detail; an answer with an ``error`` is refused ``no_point``).

The rule itself is ``bridge.trials.targeting.compute_target`` (first point only, robust depth, calibration,
workspace envelope). The depth of the same frame is found by exact stamp, else the nearest stamp
within ``max_stamp_skew_s`` (realsense-ros may stamp aligned depth a little apart from colour); no
such frame is the refusal ``no_depth``.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict

import numpy as np

from pointlab.benchmark.points import PointEntry
from pointlab.perception.deproject import DepthRule
from pointlab.perception.extrinsics import Calibration
from pointlab.perception.frame import RGBDFrame
from pointlab.robot.workspace import Workspace

from pointlab.bridge.trials.targeting import Target, compute_target, first_point
from pointlab.bridge.ros.lean_node import LeanNode, camera_events
from pointlab.bridge.ros.msgs import (
    TOPICS,
    camera_info_to_intrinsics,
    image_qos,
    image_to_depth,
    ns_to_stamp,
    stamp_to_ns,
)
from pointlab.bridge.ros.payloads import PointAnswer, PointFrame, TargetResult, from_msg, to_msg

__all__ = ["TargetingNode", "main"]

log = logging.getLogger(__name__)

_NO_COLOR = np.zeros((1, 1, 3), dtype=np.uint8)


class TargetingNode(LeanNode):
    """Wraps ``compute_target`` over ROS topics.

    Args:
        calibration: ``T_base_camera`` and the frame names.
        workspace: the envelope targets must be in (should be the arm's).
        rule: the depth rule of ``perception.deproject``.
        buffer_s: how much recent depth to keep, seconds of stamps.
        max_stamp_skew_s: largest stamp difference accepted between the agent's colour frame and a depth frame.
        pin_ttl_s: how long a pinned depth frame waits for its answer.
        watch_camera_qos: log a camera publisher whose QoS or type does not match (``camera_events``).
    """

    def __init__(
        self,
        calibration: Calibration,
        workspace: Workspace = Workspace(),
        rule: DepthRule = DepthRule(),
        *,
        context=None,
        buffer_s: float = 2.0,
        max_stamp_skew_s: float = 0.02,
        pin_ttl_s: float = 900.0,
        node_name: str = "pointlab_targeting",
        watch_camera_qos: bool = True,
    ) -> None:
        super().__init__(node_name, context=context)
        from geometry_msgs.msg import PointStamped
        from sensor_msgs.msg import CameraInfo, Image
        from std_msgs.msg import String

        self.calibration, self.workspace, self.rule = calibration, workspace, rule
        self.buffer_s, self.max_stamp_skew_s, self.pin_ttl_s = buffer_s, max_stamp_skew_s, pin_ttl_s
        self._depth: OrderedDict[int, object] = OrderedDict()  # stamp_ns -> Image msg, oldest first
        self._info = None  # latest CameraInfo
        self._pins: dict[str, tuple[int, object, float]] = {}  # request_id -> (stamp_ns, Image, monotonic)
        self._wanted: dict[str, tuple[int, float]] = {}  # pins whose depth has not arrived yet
        self._pub_target = self.create_publisher(PointStamped, TOPICS["target"], 20)
        self._pub_result = self.create_publisher(String, TOPICS["target_result"], 50)
        self.create_subscription(
            Image, TOPICS["depth"], self._on_depth, image_qos(5), event_callbacks=camera_events(watch_camera_qos)
        )
        self.create_subscription(
            CameraInfo,
            TOPICS["camera_info"],
            self._on_info,
            image_qos(5),
            event_callbacks=camera_events(watch_camera_qos),
        )
        self.create_subscription(String, TOPICS["point_frame"], self._on_point_frame, 50)
        self.create_subscription(String, TOPICS["point_answer"], self._on_answer, 50)

    # -- buffers --------------------------------------------------------------------------------
    def _on_depth(self, msg) -> None:
        stamp = stamp_to_ns(msg.header.stamp)
        newest = max(stamp, max(self._depth, default=stamp))
        # prune first, then insert: a reader never sees the buffer longer than it should be
        while self._depth and (next(iter(self._depth)) < newest - self.buffer_s * 1e9 or len(self._depth) >= 300):
            self._depth.popitem(last=False)
        self._depth[stamp] = msg
        for rid, (want, t) in list(self._wanted.items()):  # a pin asked for before its depth came
            if abs(want - stamp) <= self.max_stamp_skew_s * 1e9:
                self._pins[rid] = (want, msg, t)
                del self._wanted[rid]

    def _on_info(self, msg) -> None:
        self._info = msg

    def _find_depth(self, stamp_ns: int):
        if stamp_ns in self._depth:
            return self._depth[stamp_ns]
        if not self._depth:
            return None
        best = min(self._depth, key=lambda s: abs(s - stamp_ns))
        return self._depth[best] if abs(best - stamp_ns) <= self.max_stamp_skew_s * 1e9 else None

    def _on_point_frame(self, msg) -> None:
        pf = from_msg(PointFrame, msg)
        if pf is None:
            return
        depth = self._find_depth(pf.stamp_ns)
        now = time.monotonic()
        if depth is not None:
            self._pins[pf.request_id] = (pf.stamp_ns, depth, now)
        else:  # the depth of that frame is still on its way (it travels on another topic)
            self._wanted[pf.request_id] = (pf.stamp_ns, now)
        for rid in [r for r, (_, _, t) in self._pins.items() if now - t > self.pin_ttl_s]:
            del self._pins[rid]
        for rid in [r for r, (_, t) in self._wanted.items() if now - t > 10.0]:
            del self._wanted[rid]

    # -- targeting ------------------------------------------------------------------------------
    def _on_answer(self, msg) -> None:
        rx_ns = time.time_ns()
        ans = from_msg(PointAnswer, msg)
        if ans is None:
            return
        pinned = self._pins.pop(ans.request_id, None)
        self._wanted.pop(ans.request_id, None)
        if ans.error:
            # a failed agent call carries no point; say so rather than look for one
            target = Target.refused("no_point", "the agent call failed")
        else:
            target = self.target_for(ans.points, ans.stamp_ns, pinned)
        self.publish_target(ans.request_id, ans.stamp_ns, target, rx_ns)

    def target_for(self, points: list[PointEntry], stamp_ns: int | None, pinned=None) -> Target:
        """The target of the first of ``points`` on the depth frame of ``stamp_ns`` (refusal when none)."""
        pixel, refusal = first_point(points)
        if refusal is not None:
            return Target(valid=False, refusal=refusal)
        depth_msg = pinned[1] if pinned is not None else (self._find_depth(stamp_ns) if stamp_ns is not None else None)
        if depth_msg is None:
            return Target.refused("no_depth", "no depth frame for the frame the agent saw", pixel=pixel)
        if self._info is None:
            return Target.refused("no_depth", "no camera_info received", pixel=pixel)
        try:
            intr = camera_info_to_intrinsics(self._info)
            depth, scale = image_to_depth(depth_msg)
            color = np.broadcast_to(_NO_COLOR, (intr.height, intr.width, 3))  # targeting reads depth only
            frame = RGBDFrame(color, depth, scale, intr, stamp_to_ns(depth_msg.header.stamp))
        except ValueError as e:
            return Target.refused("no_depth", f"bad depth frame ({e})", pixel=pixel)
        return compute_target(frame, points, self.calibration, self.workspace, self.rule)

    def publish_target(self, rid: str, stamp_ns: int | None, target: Target, rx_ns: int) -> None:
        if target.valid:
            from geometry_msgs.msg import PointStamped

            assert target.point_base_m is not None  # a valid target has its point
            p = PointStamped()
            p.header.frame_id = self.calibration.parent_frame
            p.header.stamp = ns_to_stamp(stamp_ns if stamp_ns is not None else time.time_ns())
            p.point.x, p.point.y, p.point.z = (float(c) for c in target.point_base_m)
            self._pub_target.publish(p)
        self._pub_result.publish(
            to_msg(
                TargetResult(
                    request_id=rid, stamp_ns=stamp_ns, target=target, answer_rx_ns=rx_ns, published_ns=time.time_ns()
                )
            )
        )


def main(calibration_file: str) -> None:
    """Run the targeting node alone (``pointlab act node targeting --calibration FILE``) until Ctrl-C."""
    from pointlab.bridge.ros.host import spin_alone
    from pointlab.perception.extrinsics import load_camera_to_base

    cal = load_camera_to_base(calibration_file)
    spin_alone(lambda: TargetingNode(cal))
