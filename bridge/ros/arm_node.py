"""The arm ROS 2 node: executes pick/place commands one at a time and publishes the arm's state.

Topics:

- in ``/pointlab/arm/command`` (``std_msgs/String`` JSON ``{"request_id", "action", "target_base_m"}``;
  ``action`` is ``pick``, ``place``, ``home`` or ``release`` (open the tool where the arm is, forget
  what it held); ``target_base_m`` ``[x, y, z]`` metres in ``link_base``, for pick and place only);
- in ``/pointlab/arm/estop`` (``std_msgs/Empty``): stop now, drop queued commands, refuse motion
  until a reset;
- in ``/pointlab/arm/reset`` (``std_msgs/Empty``): leave the emergency-stopped state (once the
  command that was running has ended: a reset right after a stop must not let the stopped motion go on;
  a stop after a pending reset cancels it);
- out ``/pointlab/arm/result`` (String JSON ``{"request_id", "action", "outcome", "error",
  "error_type", "motion", "holding", "motions_done", "command_rx_ns", "finished_ns"}``; ``outcome``
  is ``done``, ``refused`` (bad command or unsafe target: nothing sent), ``robot_failure`` (the
  driver raised; the arm was stopped) or ``stopped`` (emergency stop));
- out ``/joint_states`` (``sensor_msgs/JointState``, ``joint1``..``joint6`` in radians, as xarm_ros2),
  ``/pointlab/arm/tcp_pose`` (``geometry_msgs/PoseStamped`` in ``link_base``, metres) and
  ``/pointlab/arm/state`` (String JSON ``ArmState.to_dict()`` + ``motions_done``), at ``state_rate_hz``.

Commands run on one worker thread in arrival order (one motion at a time); the ROS callbacks only
queue them, so an e-stop is handled while a motion runs. A command is validated before the arm is
asked: a malformed one is ``refused`` and no motion is sent; ``Arm`` itself checks every waypoint
against the workspace before its first command.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time

import numpy as np
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from scipy.spatial.transform import Rotation

from .msgs import TOPICS, json_msg, ns_to_stamp, parse_json_msg

from pointlab.robot.arm import Arm
from pointlab.robot.errors import EmergencyStopError, RobotError, UnsafeTargetError

__all__ = ["ArmNode", "JOINT_NAMES", "STATE_QOS", "main"]

log = logging.getLogger(__name__)

JOINT_NAMES = tuple(f"joint{i}" for i in range(1, 7))  # xarm_ros2 names
ACTIONS = ("pick", "place", "home", "release")
NO_TARGET_ACTIONS = ("home", "release")
# the latest state is latched for late subscribers
STATE_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class ArmNode(Node):
    """Serialises pick/place commands onto ``arm`` and publishes its state.

    Args:
        arm: a ``robot.Arm`` (connected on ``start()``).
        context: the rclpy ``Context``.
        state_rate_hz: rate of ``/joint_states``, the TCP pose and the state JSON.
        base_frame: frame id of the published poses.
    """

    def __init__(self, arm: Arm, *, context=None, state_rate_hz: float = 10.0, base_frame: str = "link_base",
                 node_name: str = "pointlab_arm") -> None:
        super().__init__(node_name, context=context)
        from geometry_msgs.msg import PoseStamped
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Empty, String

        self.arm = arm
        self.base_frame = base_frame
        self.commands_received: list[dict] = []  # every command as parsed, in order (diagnostics, tests)
        self.motions_done = 0
        self._queue: queue.Queue = queue.Queue()
        self._seen: set[str] = set()
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        # Held by the worker while a command runs. A reset is applied only without it: Arm.reset (the
        # driver's bring-up) clears the stop flags, and the moving thread may not have seen them yet.
        self._exec_lock = threading.Lock()
        self._reset_pending = False
        self._pub_result = self.create_publisher(String, TOPICS["arm_result"], 50)
        self._pub_state = self.create_publisher(String, TOPICS["arm_state"], STATE_QOS)
        self._pub_joints = self.create_publisher(JointState, TOPICS["joint_states"], 10)
        self._pub_pose = self.create_publisher(PoseStamped, TOPICS["tcp_pose"], 10)
        self.create_subscription(String, TOPICS["arm_command"], self._on_command, 50)
        # e-stop and reset in their own group: never queued behind a slow state read
        urgent = MutuallyExclusiveCallbackGroup()
        self.create_subscription(Empty, TOPICS["arm_estop"], self._on_estop, 10, callback_group=urgent)
        self.create_subscription(Empty, TOPICS["arm_reset"], self._on_reset, 10, callback_group=urgent)
        self._timer = self.create_timer(1.0 / state_rate_hz, self.publish_state) if state_rate_hz > 0 else None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> "ArmNode":
        """Connect the arm (raises the driver's ``RobotError``) and start the worker."""
        self.arm.connect()
        if self._worker is None:
            self._stop.clear()
            self._worker = threading.Thread(target=self._work, name="pointlab-arm", daemon=True)
            self._worker.start()
        self.publish_state()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._queue.put(None)
        if self._worker is not None:
            self._worker.join(timeout=10.0)
            self._worker = None
        try:
            self.arm.disconnect()
        except RobotError as e:
            log.warning("arm disconnect failed: %s", e)

    # -- callbacks ------------------------------------------------------------------------------
    def _on_command(self, msg) -> None:
        rx_ns = time.time_ns()
        cmd = parse_json_msg(msg)
        if cmd is None:
            log.warning("ignoring a command that is not a JSON object: %r", msg.data[:200])
            return
        self.commands_received.append(cmd)
        rid = str(cmd.get("request_id") or "")
        problem = _validate(cmd)
        if not problem and rid in self._seen:
            problem = "duplicate request_id"
        if problem:
            self._publish_result(rid, cmd.get("action"), "refused", error=f"bad_command: {problem}",
                                 error_type="BadCommand", rx_ns=rx_ns)
            return
        self._seen.add(rid)
        self._queue.put((rid, cmd["action"], cmd.get("target_base_m"), rx_ns))

    def _on_estop(self, _msg) -> None:
        log.warning("emergency stop requested")
        self._reset_pending = False  # a stop after a reset request wins
        self.arm.stop()
        while True:  # queued commands are dropped, each with its result
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                self._publish_result(item[0], item[1], "stopped", error="emergency stop before execution",
                                     error_type="EmergencyStopError", rx_ns=item[3])
        self.publish_state()

    def _on_reset(self, _msg) -> None:
        # Never blocks: the e-stop shares this callback group. With a command running the reset is
        # left pending and the worker applies it when the command has ended.
        self._reset_pending = True
        self._apply_pending_reset(blocking=False)

    def _apply_pending_reset(self, *, blocking: bool) -> None:
        if not self._reset_pending or not self._exec_lock.acquire(blocking=blocking):
            return
        try:
            if not self._reset_pending:
                return
            self._reset_pending = False
            try:
                self.arm.reset()
            except RobotError as e:
                log.error("arm reset failed: %s", e)
        finally:
            self._exec_lock.release()
        self.publish_state()

    # -- execution ------------------------------------------------------------------------------
    def _work(self) -> None:
        while not self._stop.is_set():
            item = self._queue.get()
            if item is None:
                break
            rid, action, target, rx_ns = item
            self._apply_pending_reset(blocking=True)
            with self._exec_lock:
                self._execute(rid, action, target, rx_ns)
            self._apply_pending_reset(blocking=True)

    def _execute(self, rid: str, action: str, target, rx_ns: int) -> None:
        try:
            if action == "home":
                report = self.arm.home()
            elif action == "release":
                report = self.arm.release()
            elif action == "pick":
                report = self.arm.pick(np.asarray(target, dtype=np.float64))
            else:
                report = self.arm.place(np.asarray(target, dtype=np.float64))
        except UnsafeTargetError as e:
            self._publish_result(rid, action, "refused", error=f"unsafe_target: {e.reason}",
                                 error_type=type(e).__name__, rx_ns=rx_ns)
        except EmergencyStopError as e:
            self._publish_result(rid, action, "stopped", error=str(e), error_type=type(e).__name__, rx_ns=rx_ns)
        except RobotError as e:
            self._publish_result(rid, action, "robot_failure", error=str(e), error_type=type(e).__name__, rx_ns=rx_ns)
        except Exception as e:  # a driver bug must not kill the worker; stop the arm to be safe
            log.exception("arm command failed unexpectedly")
            self.arm.stop()
            self._publish_result(rid, action, "robot_failure", error=f"{type(e).__name__}: {e}",
                                 error_type=type(e).__name__, rx_ns=rx_ns)
        else:
            self.motions_done += 1
            self._publish_result(rid, action, "done", motion=report.to_dict(), rx_ns=rx_ns)
        self.publish_state()

    def _publish_result(self, rid, action, outcome, *, error=None, error_type=None, motion=None, rx_ns=None) -> None:
        self._pub_result.publish(json_msg({
            "request_id": rid, "action": action, "outcome": outcome, "error": error, "error_type": error_type,
            "motion": motion, "holding": self.arm.holding, "motions_done": self.motions_done,
            "command_rx_ns": rx_ns, "finished_ns": time.time_ns()}))

    # -- state ----------------------------------------------------------------------------------
    def publish_state(self) -> None:
        """Publish joint states, the TCP pose and the state JSON once."""
        from geometry_msgs.msg import PoseStamped
        from sensor_msgs.msg import JointState

        done = self.motions_done  # read before the state: a newer state with an older count is harmless
        try:
            st = self.arm.state()
        except Exception:  # a state read must never take the node down
            log.exception("reading the arm state failed")
            return
        now = ns_to_stamp(time.time_ns())
        if st.joints_rad is not None:
            js = JointState()
            js.header.stamp = now
            js.name = list(JOINT_NAMES[: len(st.joints_rad)])
            js.position = [float(q) for q in st.joints_rad]
            self._pub_joints.publish(js)
        if st.tcp is not None:
            ps = PoseStamped()
            ps.header.stamp, ps.header.frame_id = now, self.base_frame
            ps.pose.position.x, ps.pose.position.y, ps.pose.position.z = st.tcp.position_m
            qx, qy, qz, qw = Rotation.from_euler("xyz", st.tcp.rpy_deg, degrees=True).as_quat()
            ps.pose.orientation.x, ps.pose.orientation.y, ps.pose.orientation.z, ps.pose.orientation.w = qx, qy, qz, qw
            self._pub_pose.publish(ps)
        self._pub_state.publish(json_msg({**st.to_dict(), "motions_done": done}))


def _validate(cmd: dict) -> str | None:
    """Why a command must not run, or ``None``."""
    if not cmd.get("request_id"):
        return "missing request_id"
    action = cmd.get("action")
    if action not in ACTIONS:
        return f"action must be one of {', '.join(ACTIONS)}"
    if action in NO_TARGET_ACTIONS:
        return None
    t = cmd.get("target_base_m")
    if not isinstance(t, (list, tuple)) or len(t) != 3:
        return "target_base_m must be [x, y, z] metres"
    try:
        vals = [float(c) for c in t]
    except (TypeError, ValueError):
        return "target_base_m must hold numbers"
    if not all(math.isfinite(c) for c in vals) or any(isinstance(c, bool) for c in t):
        return "target_base_m must be finite numbers"
    return None


def main(robot_spec: str = "sim") -> None:
    """Run the arm node alone (``pointlab act node arm --robot SPEC``) until Ctrl-C."""
    from .host import spin_alone

    from pointlab.robot.arm import make_arm

    arm = make_arm(robot_spec)  # a bad spec fails before ROS starts
    spin_alone(lambda: ArmNode(arm))
