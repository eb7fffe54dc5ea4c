"""Restoring a block's starting scene (issue 10, "matched starting conditions").

Agents in a Latin-square order are only comparable if every block starts from the same scene:
before each agent block the arm homes, the gripper opens and the holding belief is cleared
(``ArmControl``), and the scene itself is put back. A simulator does that exactly
(``WorldScene``: its ``reset()``); on real hardware a person does (``ManualScene``): the operator
console shows the study's reference photo over the live view and the block waits for the
operator's confirmation. Either way the block's starting frame is stored.
"""

from __future__ import annotations

__all__ = ["WorldScene", "ManualScene"]


class WorldScene:
    """``bridge.trials.record.SceneControl`` of a simulated world: ``restore`` puts every object, the arm and
    the tool back exactly as the world started."""

    automatic = True

    def __init__(self, world) -> None:
        self.world = world

    def restore(self) -> None:
        self.world.reset()


class ManualScene:
    """``bridge.trials.record.SceneControl`` of real hardware: a person restores the scene (``restore`` does
    nothing; the operator's confirmation is what the flow waits for)."""

    automatic = False

    def restore(self) -> None:
        return None
