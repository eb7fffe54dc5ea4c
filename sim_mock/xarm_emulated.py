"""``--robot xarm-sim``: the real ``robot.xarm.XArmDriver`` (the unmodified xarm-python-sdk) driving the
controller emulator, whose arm is the session's own MuJoCo Lite 6.

The two-process path (``pointlab sim xarm-controller`` in one shell, ``--robot xarm:127.0.0.1:5020``
in another) drives an arm in the emulator's process: the session's sim camera renders a world whose
arm never moves, so no trial can succeed. Here the session's world plugin starts the emulator in
the session's process over ``arm_backend.world_backend(world)``: every SDK command goes through the
wire protocol and the controller model, and moves the arm the camera sees and the physics judges.
"""

from __future__ import annotations

import logging

from pointlab.robot.xarm import XArmDriver

__all__ = ["EmulatedXArmDriver"]

log = logging.getLogger(__name__)


class EmulatedXArmDriver(XArmDriver):
    """An ``XArmDriver`` that owns a controller emulator over ``world``'s Lite 6: the emulator starts
    on a free loopback address (the SDK's report ports are fixed, so each emulator gets its own
    ``127.x.y.z``) when the driver is built and stops when it disconnects.

    Args:
        world: the ``SimWorld`` whose arm the emulator moves.
        time_scale: wall seconds per simulated second of the arm's motions (as ``--time-scale``).
        kw: further ``Lite6Config`` fields.

    Raises:
        RuntimeError: no free loopback address was found.
    """

    def __init__(self, world, *, time_scale: float = 1.0, **kw) -> None:
        from .arm_backend import world_backend
        from .xarm_controller import XArmControllerEmulator

        self.emulator = XArmControllerEmulator.start_on_free_loopback(
            time_scale=time_scale, tool=world.tool.name, backend=world_backend(world, time_scale=time_scale)
        )
        spec = XArmDriver.from_spec(f"{self.emulator.host}:{self.emulator.port}", tool=world.tool.name, **kw)
        super().__init__(spec.config)
        log.info("xarm-sim: the SDK drives the emulator on %s:%d", self.emulator.host, self.emulator.port)

    def _open(self) -> None:
        # opening a new SDK session closes the old one through disconnect(): the emulator stays
        self._reopening = True
        try:
            super()._open()
        finally:
            self._reopening = False

    def disconnect(self) -> None:
        super().disconnect()
        if not getattr(self, "_reopening", False):
            self.emulator.stop()
