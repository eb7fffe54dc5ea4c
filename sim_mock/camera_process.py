"""The sim camera node in a process of its own, as realsense-ros is on hardware.

In one process the camera thread competes for the GIL with the ROS executor, the sim arm and the web
app (measured with five live-view pages: the GIL held 60 % of the time, the camera's share 9 %, and the
camera published 15-21 frames/s instead of 30). Here a child process builds its own ``SimWorld`` (the
same default scene, camera and tool), renders the state the parent's physics is in, and runs the same
``CameraNode`` on the same ROS domain; the parent keeps the physics, the arm and everything else.

- **State to the child**: a writer thread in the parent copies ``world.capture()`` (version, simulated
  time, qpos, the tool, whether the arm moves) into a shared-memory block every ``poll_s`` when it
  changed, under a sequence counter (odd while writing: a reader retries; a seqlock). The child's
  world returns that capture instead of its own physics state, so it renders exactly the parent's.
- **Frames back to the parent**: for every frame, the child sends (stamp, capture version, clean-render
  thumbnail) through a pipe; a parent thread records it in the parent world's ``FrameLog`` with the
  parent's own capture of that version (kept by the writer), so the sim oracle's image matching and the
  per-frame masks work as with the in-process camera.
- The child ends when the parent's ``close()`` says so, or by itself when its parent process is gone.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import OrderedDict

import numpy as np

__all__ = ["CameraProcess"]

log = logging.getLogger(__name__)

_HEADER = struct.Struct("<qqqqqd")  # seq, version, moving, nq, tool index, sim time
_MAX_NQ = 256
_TOOLS = ("lite_gripper", "lite_vacuum")


class _Shared:
    """The seqlocked state block (module docstring)."""

    def __init__(self, name: str | None = None) -> None:
        from multiprocessing import shared_memory

        size = _HEADER.size + 8 * _MAX_NQ
        self.shm = shared_memory.SharedMemory(name=name, create=name is None, size=size)
        if name is not None:
            # Python < 3.13 registers an attached block with this process's resource tracker, which
            # unlinks it when the child exits: the creator (the parent) owns it
            from multiprocessing import resource_tracker

            resource_tracker.unregister(self.shm._name, "shared_memory")
        self.buf = self.shm.buf

    def write(self, seq: int, capture, moving: bool, tool: str) -> None:
        q = np.asarray(capture.qpos, dtype=np.float64)
        head = _HEADER.pack(seq | 1, capture.version, int(moving), q.size, _TOOLS.index(tool), capture.sim_time_s)
        self.buf[:8] = head[:8]  # odd: a reader now retries
        self.buf[8:_HEADER.size] = head[8:]
        self.buf[_HEADER.size:_HEADER.size + 8 * q.size] = q.tobytes()
        self.buf[:8] = struct.pack("<q", seq + 2 & ~1)

    def read(self):
        while True:
            seq, version, moving, nq, tool, sim_t = _HEADER.unpack_from(self.buf, 0)
            qpos = np.frombuffer(bytes(self.buf[_HEADER.size:_HEADER.size + 8 * nq]), dtype=np.float64)
            if not seq & 1 and struct.unpack_from("<q", self.buf, 0)[0] == seq:
                return seq, version, bool(moving), qpos, _TOOLS[tool], sim_t
            time.sleep(0.0002)

    def close(self, unlink: bool = False) -> None:
        self.buf = None
        self.shm.close()
        if unlink:
            try:
                self.shm.unlink()
            except FileNotFoundError:
                pass


def _child(shm_name: str, conn, domain_id: int | None, fps: float, seed: int) -> None:
    """The child process: its own SimWorld showing the parent's state, and a CameraNode."""
    import rclpy

    from pointlab.bridge.ros.camera_node import CameraNode
    from pointlab.sim_mock.camera import SimCamera
    from pointlab.sim_mock.frames import thumbnail
    from pointlab.sim_mock.physics import Capture
    from pointlab.sim_mock.world import SimWorld

    shared = _Shared(shm_name)
    parent = os.getppid()
    world = SimWorld()

    def capture() -> Capture:
        _seq, version, moving, qpos, tool, sim_t = shared.read()
        if tool != world.tool.name:
            world.set_tool(tool)  # the parent changed tools: the model (and qpos size) changes too
        world.arm.moving = moving
        return Capture(version, sim_t, qpos, None)

    send_lock = threading.Lock()

    def record(stamp_ns, cap, clean_color=None, **_kw) -> None:
        if clean_color is None:
            return
        with send_lock:
            try:
                conn.send((int(stamp_ns), int(cap.version), thumbnail(clean_color)))
            except (BrokenPipeError, OSError):
                pass

    world.capture = capture
    world.frames.record = record
    context = rclpy.context.Context()
    rclpy.init(context=context, **({} if domain_id is None else {"domain_id": domain_id}))
    node = CameraNode(SimCamera(world=world, fps=fps, seed=seed), context=context, max_fps=fps)
    node.start()
    conn.send(("ready", os.getpid()))
    try:
        while os.getppid() == parent and not conn.poll(0.5):
            pass
    finally:
        node.stop()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        shared.close()


class CameraProcess:
    """The sim camera node of ``world`` (a ``SimWorld``) running in a child process (module docstring).

    Args:
        world: the parent's ``SimWorld`` (its physics is the truth; its ``frames`` get the child's frames).
        fps: the camera's frame rate ceiling.
        domain_id: ROS domain (``None``: ``ROS_DOMAIN_ID`` of the environment).
        seed: the child camera's noise seed.
        poll_s: how often the parent's state is copied to the child.

    Attributes:
        frames_received: frames the child reported (what it published).

    Raises:
        RuntimeError: the child did not report ready within ``start_timeout_s``.
    """

    def __init__(self, world, *, fps: float = 30.0, domain_id: int | None = None, seed: int = 0,
                 poll_s: float = 0.002, start_timeout_s: float = 60.0) -> None:
        self.world, self.poll_s = world, poll_s
        self.frames_received = 0
        self._shared = _Shared()
        self._captures: OrderedDict[int, object] = OrderedDict()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._seq = 0
        self._write()
        from multiprocessing.connection import Connection

        # a fresh interpreter (never a fork of a process running rclpy and MuJoCo threads, and no
        # re-import of the caller's main module as multiprocessing's spawn does), joined by a socket pair
        mine, theirs = socket.socketpair()
        self._conn = Connection(mine.detach())
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pointlab.sim_mock.camera_process", self._shared.shm.name, str(theirs.fileno()),
             "" if domain_id is None else str(domain_id), repr(float(fps)), str(int(seed))],
            pass_fds=(theirs.fileno(),))
        theirs.close()
        self._writer = threading.Thread(target=self._write_loop, name="pointlab-camproc-state", daemon=True)
        self._writer.start()
        if not self._conn.poll(start_timeout_s):
            self.close()
            raise RuntimeError(f"the sim camera process did not start within {start_timeout_s:.0f} s")
        self._conn.recv()  # ("ready", pid)
        self._reader = threading.Thread(target=self._read_loop, name="pointlab-camproc-frames", daemon=True)
        self._reader.start()

    def _write(self) -> None:
        cap = self.world.capture()
        with self._lock:
            if cap.version not in self._captures:
                self._captures[cap.version] = cap
                while len(self._captures) > 400:
                    self._captures.popitem(last=False)
            self._last = (cap.version, self.world.arm.moving, self.world.tool.name)
        self._shared.write(self._seq, cap, self.world.arm.moving, self.world.tool.name)
        self._seq += 2

    def _write_loop(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                if (self.world.version, self.world.arm.moving, self.world.tool.name) != self._last:
                    self._write()
            except Exception:  # a bad state must not end the writer (the child then shows the last one)
                log.exception("copying the sim state to the camera process failed")

    def _read_loop(self) -> None:
        while not self._stop.is_set():
            try:
                if not self._conn.poll(0.2):
                    continue
                stamp, version, thumb = self._conn.recv()
            except (EOFError, OSError):
                return
            with self._lock:
                cap = self._captures.get(version)
            if cap is not None:
                self.world.frames.record(stamp, cap, thumb=thumb)
            self.frames_received += 1

    def close(self) -> None:
        """Stop the child (a few seconds at most) and free the shared block. Idempotent."""
        if self._stop.is_set():
            return
        self._stop.set()
        try:
            self._conn.send("stop")
        except (OSError, ValueError, AttributeError):
            pass
        proc = getattr(self, "process", None)
        if proc is not None:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        self._conn.close()
        self._shared.close(unlink=True)


if __name__ == "__main__":  # the child (CameraProcess starts it): shm name, fd, domain, fps, seed
    from multiprocessing.connection import Connection

    _name, _fd, _domain, _fps, _seed = sys.argv[1:6]
    _child(_name, Connection(int(_fd)), int(_domain) if _domain else None, float(_fps), int(_seed))
