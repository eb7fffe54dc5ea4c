"""The scene port: what a simulator can say about a trial, and who restores a block's starting scene.

Agents in a Latin-square order are only comparable if every block starts from the same scene (issue
10, "matched starting conditions"): before each agent block the arm opens and homes, the belief is
cleared, and the scene itself is put back. A simulator does that exactly (``WorldScene``: its
``reset()``); on real hardware a person does (``ManualScene``): the operator console shows the
study's reference photo over the live view and the block waits for the operator's confirmation.

During a trial a simulated world also reads a typed instruction as an expectation, gives the
intended object's mask (failure attribution) and, after the motion, its own judgement and which
object the tool holds by physics (the belief's evidence, ``bridge.trials.belief``). Real hardware
has none of that: ``ManualScene`` answers ``None``.
"""

from __future__ import annotations

import numpy as np

from pointlab.bridge.trials.ports import SceneEvidence

__all__ = ["WorldScene", "ManualScene"]


class WorldScene:
    """``bridge.trials.ports.ScenePort`` of a simulated world (``bridge.worlds.World``) whose arm the
    trials move.

    Args:
        world: the session's world.
        reads_frames: the camera renders this world too, so an instruction can be read against its
            objects and masks (a recording played with a simulated arm cannot: its frames are of
            another table), and ``restore`` puts back what the camera shows.
    """

    def __init__(self, world, *, reads_frames: bool = True) -> None:
        self.world = world
        self.reads_frames = reads_frames
        self.automatic = reads_frames

    def restore(self) -> None:
        self.world.reset()

    def infer_expected(self, instruction: str, action: str) -> dict | None:
        return self.world.infer_expected(instruction, action) if self.reads_frames else None

    def intended_mask(self, expected: dict) -> np.ndarray | None:
        return self.world.intended_mask(expected) if self.reads_frames else None

    def evidence(self, expected: dict | None) -> SceneEvidence:
        """The world's judgement of ``expected`` (when there is one) and what its tool holds now."""
        ok, detail = (None, None) if expected is None else self.world.judge(expected)
        return SceneEvidence(sim_success=ok, sim_detail=detail, held=self.world.held())


class ManualScene:
    """``bridge.trials.ports.ScenePort`` of real hardware: a person restores the scene (``restore``
    does nothing; the operator's confirmation is what the flow waits for) and nothing is simulated."""

    automatic = False

    def restore(self) -> None:
        return None

    def infer_expected(self, instruction: str, action: str) -> dict | None:
        return None

    def intended_mask(self, expected: dict) -> np.ndarray | None:
        return None

    def evidence(self, expected: dict | None) -> SceneEvidence | None:
        return None
