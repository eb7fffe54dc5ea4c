"""The end of a spinning thread: rclpy's ``Executor.shutdown`` destroys its guard condition without
waiting for the spinning thread to leave its wait, so that thread can meet a destroyed handle
(``InvalidHandle``, seen in CI as a traceback on a station's stderr at exit). After a shutdown that
is the normal end of spinning; before one it is a fault and is logged. The race itself cannot be
forced, so the executor here raises what rclpy raises."""

from __future__ import annotations

import logging

from rclpy.exceptions import InvalidHandle

from pointlab.bridge.ros.host import spin_executor


class _Executor:
    def __init__(self, shut_down: bool) -> None:
        self._is_shutdown = shut_down  # rclpy's Executor attribute, set by shutdown()

    def spin(self) -> None:
        raise InvalidHandle("cannot use Destroyable because destruction was requested")


def test_a_destroyed_handle_after_shutdown_ends_spinning_quietly(caplog):
    with caplog.at_level(logging.DEBUG, logger="pointlab.bridge.ros.host"):
        spin_executor(_Executor(shut_down=True), "ROS executor")
    assert caplog.records == []


def test_a_destroyed_handle_while_running_is_logged_as_a_fault(caplog):
    with caplog.at_level(logging.DEBUG, logger="pointlab.bridge.ros.host"):
        spin_executor(_Executor(shut_down=False), "ROS executor")
    assert [r.getMessage() for r in caplog.records] == ["ROS executor stopped"]
    assert caplog.records[0].exc_info[0] is InvalidHandle
