"""The arm ROS 2 node: executes pick/place commands one at a time and publishes the arm's state.

Topics:

- in ``/pointlab/arm/command`` (``payloads.ArmCommand``: ``action`` is ``pick``, ``place``, ``home`` or
  ``release`` (open the tool where the arm is, forget what it held); ``target_base_m`` ``[x, y, z]``
  metres in ``link_base``, for pick and place only; ``session``: a node started with a session
  nonce refuses commands carrying any other);
- in ``/pointlab/arm/estop`` (``std_msgs/Empty``): stop now, drop queued commands, refuse motion
  until a reset;
- in ``/pointlab/arm/halt`` (``std_msgs/Empty``): the controlled stop (the operator's abort,
  ``Arm.halt``): the running command ends ``halted`` with the motion it sent and no error, queued
  commands are dropped, each answered ``halted``; no fault, no e-stop, the next command runs at once;
- in ``/pointlab/arm/reset`` (``std_msgs/Empty``): leave the emergency-stopped state (once the
  command that was running has ended: a reset right after a stop must not let the stopped motion go on;
  a stop after a pending reset cancels it);
- out ``/pointlab/arm/result`` (``payloads.ArmResult``; ``outcome`` is ``done``, ``refused`` (nothing
  sent: a bad command (``bad_command``), a target outside the envelope (``workspace``), a path the
  reach check refuses or a reach check that did not answer (``unreachable``)), ``robot_failure``
  (the driver raised; the arm was stopped; ``error`` is the typed error), ``stopped``
  (emergency stop) or ``halted`` (the controlled stop));
- out ``/joint_states`` (``sensor_msgs/JointState``, ``joint1``..``joint6`` in radians, as xarm_ros2),
  ``/pointlab/arm/tcp_pose`` (``geometry_msgs/PoseStamped`` in ``link_base``, metres) and
  ``/pointlab/arm/state`` (``robot.arm.ArmState``: ``Arm.state()`` as it is, latched), at ``state_rate_hz``.

Commands run on one worker thread in arrival order (one motion at a time); the ROS callbacks only
queue them, so an e-stop or a halt is handled while a motion runs. A command is validated before the arm is
asked: a malformed one is ``refused`` and no motion is sent; ``Arm`` itself checks every waypoint
against the workspace before its first command.
"""

from __future__ import annotations

import json
import logging
import math
import queue
import threading
import time

import numpy as np
from pydantic import ValidationError
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from scipy.spatial.transform import Rotation

from pointlab.robot.arm import Arm
from pointlab.robot.errors import (
    EmergencyStopError,
    MotionHaltedError,
    ReachRefusedError,
    RobotError,
    UnsafeTargetError,
)

from pointlab.bridge.trials.outcomes import Refusal, RobotErrorInfo
from pointlab.bridge.ros.lean_node import LeanNode
from pointlab.bridge.ros.msgs import TOPICS, ns_to_stamp, state_qos
from pointlab.bridge.ros.payloads import ArmCommand, ArmResult, to_msg

__all__ = ["ArmNode", "JOINT_NAMES", "main", "robot_error_info"]

log = logging.getLogger(__name__)

JOINT_NAMES = tuple(f"joint{i}" for i in range(1, 7))  # xarm_ros2 names
NO_TARGET_ACTIONS = ("home", "release")


def robot_error_info(e: BaseException) -> RobotErrorInfo:
    """The typed record of a robot error (its class, message and controller code when it has one)."""
    code = getattr(e, "code", None)
    return RobotErrorInfo(type=type(e).__name__, detail=str(e), code=code if isinstance(code, int) else None)


class ArmNode(LeanNode):
    """Serialises pick/place commands onto ``arm`` and publishes its state.

    Args:
        arm: a ``robot.Arm`` (connected on ``start()``).
        context: the rclpy ``Context``.
        state_rate_hz: rate of ``/joint_states``, the TCP pose and the state JSON.
        base_frame: frame id of the published poses.
        session: the nonce of the session that started this node; commands with another are refused
            (``""``: a node run alone accepts any).
    """

    def __init__(
        self,
        arm: Arm,
        *,
        context=None,
        state_rate_hz: float = 10.0,
        base_frame: str = "link_base",
        node_name: str = "pointlab_arm",
        session: str = "",
    ) -> None:
        super().__init__(node_name, context=context)
        from geometry_msgs.msg import PoseStamped
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Empty, String

        self.arm = arm
        self.base_frame = base_frame
        self.session = session
        self.commands_received: list[dict] = []  # every command as parsed, in order (diagnostics, tests)
        self._queue: queue.Queue = queue.Queue()
        self._seen: set[str] = set()
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        # Held by the worker while a command runs. A reset is applied only without it: Arm.reset (the
        # driver's bring-up) clears the stop flags, and the moving thread may not have seen them yet.
        self._exec_lock = threading.Lock()
        self._reset_pending = False
        # Counts halts; each queued command carries the count at its arrival, so a command the worker
        # took off the queue just before a halt (not yet running in the arm) is still answered halted.
        self._halts = 0
        self._pub_result = self.create_publisher(String, TOPICS["arm_result"], 50)
        self._pub_state = self.create_publisher(String, TOPICS["arm_state"], state_qos())
        self._pub_joints = self.create_publisher(JointState, TOPICS["joint_states"], 10)
        self._pub_pose = self.create_publisher(PoseStamped, TOPICS["tcp_pose"], 10)
        self.create_subscription(String, TOPICS["arm_command"], self._on_command, 50)
        # e-stop, halt and reset in their own group: never queued behind a slow state read
        urgent = MutuallyExclusiveCallbackGroup()
        self.create_subscription(Empty, TOPICS["arm_estop"], self._on_estop, 10, callback_group=urgent)
        self.create_subscription(Empty, TOPICS["arm_halt"], self._on_halt, 10, callback_group=urgent)
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
        try:
            raw = json.loads(msg.data)
        except (ValueError, TypeError, RecursionError):
            raw = None
        if not isinstance(raw, dict):
            log.warning("ignoring a command that is not a JSON object: %r", str(msg.data)[:200])
            return
        self.commands_received.append(raw)
        rid = r if isinstance(r := raw.get("request_id"), str) else ""
        cmd, problem = _validate(raw)
        if cmd is not None and self.session and cmd.session != self.session:
            cmd, problem = None, "not from the session that started this arm node"
        if cmd is not None and rid in self._seen:
            cmd, problem = None, "duplicate request_id"
        if cmd is None:
            self._publish_result(
                rid,
                raw.get("action") if isinstance(raw.get("action"), str) else None,
                "refused",
                refusal=Refusal(code="bad_command", detail=problem),
                rx_ns=rx_ns,
            )
            return
        self._seen.add(rid)
        self._queue.put((rid, cmd.action, cmd.target_base_m, rx_ns, self._halts))

    def _on_estop(self, _msg) -> None:
        log.warning("emergency stop requested")
        self._reset_pending = False  # a stop after a reset request wins
        self.arm.stop()
        self._drop_queued(
            "stopped", RobotErrorInfo(type="EmergencyStopError", detail="emergency stop before execution")
        )
        self.publish_state()

    def _on_halt(self, _msg) -> None:
        self._halts += 1  # before the arm's halt: the worker compares it before running a command
        running = self.arm.halt()
        log.info("halt requested (%s)", "a motion was running" if running else "no motion was running")
        self._drop_queued("halted")
        self.publish_state()

    def _drop_queued(self, outcome: str, error: RobotErrorInfo | None = None) -> None:
        while True:  # queued commands are dropped, each with its result
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                self._publish_result(item[0], item[1], outcome, rx_ns=item[3], error=error)

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
            rid, action, target, rx_ns, halts = item
            self._apply_pending_reset(blocking=True)
            with self._exec_lock:
                if halts != self._halts:  # a halt came after it arrived: it must not start
                    self._publish_result(rid, action, "halted", rx_ns=rx_ns)
                else:
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
            self._publish_result(
                rid, action, "refused", refusal=Refusal(code="workspace", detail=e.reason), rx_ns=rx_ns
            )
        except ReachRefusedError as e:  # the reach pre-check said no (or nothing): nothing was sent
            self._publish_result(
                rid, action, "refused", refusal=Refusal(code="unreachable", detail=str(e)), rx_ns=rx_ns
            )
        except EmergencyStopError as e:
            self._publish_result(rid, action, "stopped", error=robot_error_info(e), rx_ns=rx_ns)
        except MotionHaltedError as e:  # the controlled stop: not an error, the arm is ready
            motion = e.report.to_dict() if e.report is not None else None
            self._publish_result(rid, action, "halted", motion=motion, rx_ns=rx_ns)
        except RobotError as e:
            self._publish_result(rid, action, "robot_failure", error=robot_error_info(e), rx_ns=rx_ns)
        except Exception as e:  # a driver bug must not kill the worker; stop the arm to be safe
            log.exception("arm command failed unexpectedly")
            self.arm.stop()
            self._publish_result(rid, action, "robot_failure", error=robot_error_info(e), rx_ns=rx_ns)
        else:
            self._publish_result(rid, action, "done", motion=report.to_dict(), rx_ns=rx_ns)
        self.publish_state()

    def _publish_result(
        self,
        rid: str,
        action: str | None,
        outcome: str,
        *,
        refusal: Refusal | None = None,
        error: RobotErrorInfo | None = None,
        motion: dict | None = None,
        rx_ns: int | None = None,
    ) -> None:
        self._pub_result.publish(
            to_msg(
                ArmResult(
                    request_id=rid,
                    action=action,
                    outcome=outcome,
                    refusal=refusal,
                    error=error,
                    motion=motion,
                    holding=self.arm.holding,
                    motions_done=self.arm.motions_done,
                    command_rx_ns=rx_ns,
                    finished_ns=time.time_ns(),
                )
            )
        )

    # -- state ----------------------------------------------------------------------------------
    def publish_state(self) -> None:
        """Publish joint states, the TCP pose and the state JSON once."""
        from geometry_msgs.msg import PoseStamped
        from sensor_msgs.msg import JointState

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
        self._pub_state.publish(to_msg(st))


def _validate(raw: dict) -> tuple[ArmCommand | None, str]:
    """The command, or ``None`` and why it must not run."""
    if not raw.get("request_id") or not isinstance(raw.get("request_id"), str):
        return None, "missing request_id"
    t = raw.get("target_base_m")
    if isinstance(t, (list, tuple)) and any(isinstance(c, bool) for c in t):
        return None, "target_base_m must hold numbers"  # JSON true would validate as 1.0
    try:
        cmd = ArmCommand.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        return None, f"{'.'.join(str(x) for x in first['loc']) or 'command'}: {first['msg']}"
    if cmd.action in NO_TARGET_ACTIONS:
        return cmd, ""
    if cmd.target_base_m is None:
        return None, "target_base_m must be [x, y, z] metres"
    if not all(math.isfinite(c) for c in cmd.target_base_m):
        return None, "target_base_m must be finite numbers"
    return cmd, ""


def main(robot_spec: str = "sim") -> None:
    """Run the arm node alone (``pointlab act node arm --robot SPEC``) until Ctrl-C."""
    from pointlab.bridge.ros.host import spin_alone

    from pointlab.robot.arm import make_arm

    arm = make_arm(robot_spec)  # a bad spec fails before ROS starts
    spin_alone(lambda: ArmNode(arm))
