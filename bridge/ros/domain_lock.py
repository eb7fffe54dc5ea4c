"""One Point-Act session per ROS domain on this machine, by construction.

The graph guard (``graph_guard``) watches DDS discovery, which depends on timing: under load a
second session was once not seen in time and drove the first one's arm. This lock does not depend
on discovery: a session holds an exclusive ``flock`` on ``pointlab-ros-domain-<id>.lock`` in the lock
folder (``$POINTLAB_LOCK_DIR``, default the system temp folder) for as long as it runs, and a second
session on the same domain is refused at once, before anything of ROS starts. The kernel releases
the lock when the holding process exits, however it exits (a ``kill -9`` included), so a crash never
leaves a stale lock. Sessions on other machines of the same domain are still the graph guard's (and
the arm node's session nonce's) to catch.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

from pointlab.bridge.errors import BridgeError

__all__ = ["DomainLock", "DomainBusy", "lock_path"]


class DomainBusy(BridgeError, RuntimeError):
    """Another session on this machine holds the ROS domain."""


def lock_path(domain_id: int) -> Path:
    """The lock file of ``domain_id``."""
    return Path(os.environ.get("POINTLAB_LOCK_DIR", tempfile.gettempdir())) / f"pointlab-ros-domain-{domain_id}.lock"


class DomainLock:
    """Hold ROS domain ``domain_id`` (``None``: ``$ROS_DOMAIN_ID``, default 0) until ``release()``.

    Raises:
        DomainBusy: another process holds it; the message names its pid.
    """

    def __init__(self, domain_id: int | None = None) -> None:
        self.domain_id = int(os.environ.get("ROS_DOMAIN_ID", "0") or 0) if domain_id is None else int(domain_id)
        self.path = lock_path(self.domain_id)
        self._fd: int | None = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self._fd, 64, 0).decode("ascii", "replace").strip() or "?"
            os.close(self._fd)
            self._fd = None
            raise DomainBusy(
                f"another Point-Act session (pid {holder}) runs on ROS_DOMAIN_ID={self.domain_id} on "
                f"this machine; stop it, or give this one its own ROS_DOMAIN_ID "
                f"(e.g. ROS_DOMAIN_ID=42 pointlab act ...)"
            ) from None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        """Let the domain go (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None
