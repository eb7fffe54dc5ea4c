"""The Lite 6's two end effectors in the physics: what closing the gripper or switching the vacuum
on does, and when an object counts as held.

- **Lite gripper**: closing drives the coupled fingers inwards with ``mjcf.FINGER_FORCE_N`` until
  they stop on something or at the end of their travel; opening drives them out. An object is held
  when both finger pads (or plates) touch it and it touches neither the table nor rests on anything
  but other held things: physics, not a tolerance, decides (fingers that land on a corner or close
  off-centre can push the object away or slip off it).
- **Lite vacuum**: the suction cup holds only while it is sealed: ``SEAL_RAYS`` rays from a ring
  inside the cup's rim, along the cup's axis, must all hit the same object within
  ``SEAL_GAP_M`` of the cup face (a flat face at least as big as the cup, squarely under it). While
  sealed the cup's adhesion actuator pulls (``mjcf.SUCTION_FORCE_N``); a cup tilted on an edge, half
  over a border or on a curved surface leaks and holds nothing. The seal is re-checked every
  control tick, so an object knocked off the cup is let go. ``get_vacuum_gripper`` on the real
  controller reports whether something is held: ``holding_sensor`` reads the seal.
"""

from __future__ import annotations

import math

import numpy as np

from .mjcf import CUP_RADIUS_M
from .physics import TABLE_LABEL, Physics

__all__ = ["ToolPhysics", "SEAL_RAYS", "SEAL_GAP_M", "GRIP_CLOSE_S", "SUCTION_ON_S"]

SEAL_RAYS = 8
SEAL_GAP_M = 0.003
GRIP_CLOSE_S = 0.35  # simulated time given to the fingers to close or open
SUCTION_ON_S = 0.15


class ToolPhysics:
    """The tool's command state and its effect (run under the world's lock).

    Attributes:
        closed: the gripper is commanded closed / the vacuum is on.
        sealed_on: the object the sealed cup is on, or ``None``.
    """

    def __init__(self, physics: Physics) -> None:
        self.physics = physics
        self.closed = False
        self.sealed_on: str | None = None

    @property
    def is_vacuum(self) -> bool:
        return self.physics.tool == "lite_vacuum"

    def command(self, closed: bool) -> None:
        """Close/open the gripper or switch the vacuum on/off (takes effect on the next steps)."""
        self.closed = bool(closed)
        if self.is_vacuum:
            self.update()
        else:
            self.physics.set_gripper_ctrl(1.0 if closed else -1.0)

    def reset(self) -> None:
        self.closed, self.sealed_on = False, None

    def update(self) -> None:
        """Re-check the suction seal (call every control tick; nothing to do for the gripper)."""
        if not self.is_vacuum:
            return
        self.sealed_on = self._seal() if self.closed else None
        self.physics.set_suction_ctrl(1.0 if self.sealed_on is not None else 0.0)

    def _seal(self) -> str | None:
        p, R = self.physics.tcp()
        axis = R[:, 2]  # the tool's z: out of the cup
        back = p - 0.004 * axis  # start inside the cup so a touching surface is hit
        hit_name = None
        for k in range(SEAL_RAYS):
            a = 2 * math.pi * k / SEAL_RAYS
            rim = back + 0.8 * CUP_RADIUS_M * (math.cos(a) * R[:, 0] + math.sin(a) * R[:, 1])
            name, d = self.physics.ray_object(rim, axis, 0.004 + SEAL_GAP_M)
            if name is None or (hit_name is not None and name != hit_name):
                return None
            hit_name = name
        return hit_name

    def held(self) -> str | None:
        """The object the tool holds now, by the rules of the module docstring, or ``None``."""
        if not self.closed:
            return None
        touching = self.physics.touching()
        if self.is_vacuum:
            name = self.sealed_on
            return name if name is not None and TABLE_LABEL not in touching[name] else None
        for name, what in touching.items():
            if {"pad_left", "pad_right"} <= what and TABLE_LABEL not in what:
                return name
        return None

    def holding_sensor(self) -> bool | None:
        """The vacuum reports a seal (``get_vacuum_gripper``); the Lite gripper has no sensor."""
        if not self.is_vacuum:
            return None
        return self.sealed_on is not None and self.closed


def finger_tip_points(physics: Physics) -> np.ndarray:
    """Base-frame centres of the two finger pads, ``(2, 3)`` metres (for tests and docs)."""
    import mujoco

    m, d = physics.model, physics.data
    ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"pad_{s}") for s in ("left", "right")]
    return np.array([d.geom_xpos[i] for i in ids])
