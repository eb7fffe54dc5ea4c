"""One rclpy ``Context`` and a ``MultiThreadedExecutor`` spinning in a background thread.

``pointlab act`` runs the whole node set in one process through this: each session has its own
context (so tests and several sessions in one interpreter never share global ROS state), its nodes
are added to one executor, and ``close()`` takes everything down in order. DDS discovery follows the
environment (``ROS_DOMAIN_ID``, ``ROS_AUTOMATIC_DISCOVERY_RANGE``).
"""

from __future__ import annotations

import logging
import threading

__all__ = ["RosHost", "spin_alone", "spin_executor"]

log = logging.getLogger(__name__)


def spin_executor(executor, what: str) -> None:
    """Spin ``executor`` until it is shut down (the body of a spinning thread); a callback's bug is
    logged as ``what`` stopping, never silently ending the thread."""
    from rclpy.exceptions import InvalidHandle
    from rclpy.executors import ExternalShutdownException

    try:
        executor.spin()
    except ExternalShutdownException:
        pass
    except InvalidHandle:
        # rclpy's Executor.shutdown destroys its guard condition without waiting for the spinning
        # thread to leave its wait (rclpy/executors.py): the thread then meets a destroyed handle.
        # After a shutdown that is the end of spinning, not a fault; before one it is.
        if not getattr(executor, "_is_shutdown", False):
            log.exception("%s stopped", what)
    except Exception:
        log.exception("%s stopped", what)


class RosHost:
    """Owns a context, an executor and the spinning thread.

    Args:
        num_threads: executor threads (callbacks of different nodes run in parallel).
        domain_id: ROS domain id; ``None`` takes ``ROS_DOMAIN_ID`` from the environment.
    """

    def __init__(self, num_threads: int = 4, domain_id: int | None = None) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import MultiThreadedExecutor

        self.context = Context()
        if domain_id is None:
            rclpy.init(context=self.context)
        else:
            rclpy.init(context=self.context, domain_id=domain_id)
        self.executor = MultiThreadedExecutor(num_threads=num_threads, context=self.context)
        self.nodes: list = []
        self._thread: threading.Thread | None = None

    def add(self, node):
        """Add a node (created with ``context=host.context``) to the executor; returns it."""
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def start(self) -> "RosHost":
        if self._thread is None:
            self._thread = threading.Thread(target=self._spin, name="pointlab-ros", daemon=True)
            self._thread.start()
        return self

    def _spin(self) -> None:
        spin_executor(self.executor, "ROS executor")

    def close(self) -> None:
        """Stop spinning, destroy every node (last added first) and shut the context down."""
        import rclpy

        try:
            self.executor.shutdown(timeout_sec=5.0)
        except Exception:
            log.exception("executor shutdown failed")
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        for node in reversed(self.nodes):
            try:
                node.destroy_node()
            except Exception:
                log.exception("destroying node %s failed", getattr(node, "get_name", lambda: "?")())
        self.nodes.clear()
        rclpy.try_shutdown(context=self.context)


def spin_alone(make_node) -> None:
    """Run one node in its own process until Ctrl-C (``pointlab act node ...``): init rclpy, build the
    node with ``make_node()`` (after init: nodes need a context), ``start()`` it when it has a
    start method, spin, and always ``stop()``, destroy and shut down."""
    import rclpy

    rclpy.init()
    node = None
    try:
        node = make_node()
        if hasattr(node, "start"):
            node.start()
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        if node is not None:
            if hasattr(node, "stop"):
                node.stop()
            node.destroy_node()
        rclpy.try_shutdown()
