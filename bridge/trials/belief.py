"""What the arm holds, from evidence: the holding belief that decides whether a trial is a pick or a place.

PointArena sec. 3.4: the robot picks when its gripper is empty and places when it holds something.
The Lite gripper has no sensor, so "holding" is a belief. A belief that follows the motion sequence
("a pick closed the gripper, so it holds") is wrong after every failed grasp, and the next trial then
becomes a *place* that the next agent is charged for. Here the belief follows the world:

1. **Nothing moved** (a refusal, an abort before the motion): the belief is unchanged.
2. **The simulator's contact state** (``Evidence.physics_known``): it holds exactly what the physics
   says the fingers (or the sealed cup) lift. Evidence ``physics``.
3. **The tool's own sensor** (the Lite vacuum gripper's ``get_vacuum_gripper``): what it reports.
   Evidence ``sensor``.
4. **An open tool holds nothing**: after a completed place, or a recovery that opened the gripper,
   it holds nothing. Evidence ``sequence``.
5. **A completed pick on hardware without a sensor**: the automatic depth check after the arm went
   home (``bridge.trials.autocheck.depth_check``: the object's region emptied by at least the check's
   threshold) says it holds; a region that did not empty says it does not. When the check cannot tell
   (too little depth), the belief is *not holding* with evidence ``unknown``: the next trial is a pick,
   so no place is ever charged on a guess, and the console shows the doubt beside *Open gripper*.
6. **A pick interrupted** (fault, e-stop) on hardware without a sensor: not holding, ``unknown``.
7. **A place interrupted** with the tool still closed: what it held before, evidence ``sequence``.

The operator's *Open gripper* and every block start (open, home, scene restored) clear it
(evidence ``operator`` and ``start``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Belief", "Evidence", "BeliefSource", "belief_after", "next_action", "EMPTY"]

BeliefSource = Literal["start", "physics", "sensor", "sequence", "depth", "unknown", "operator"]


@dataclass(frozen=True)
class Belief:
    """What the arm holds.

    Attributes:
        holding: whether the tool holds something (the next trial is a place).
        object: what it holds when that is known (the simulator names it), else ``None``.
        source: the evidence the belief rests on (module docstring).
        detail: what was seen, in words (operator only).
    """

    holding: bool
    object: str | None = None
    source: BeliefSource = "start"
    detail: str = ""

    def to_dict(self) -> dict:
        return {"holding": self.holding, "object": self.object, "source": self.source, "detail": self.detail}


EMPTY = Belief(False, None, "start", "nothing held at the start")


@dataclass(frozen=True)
class Evidence:
    """What the world says after a trial's motion.

    Attributes:
        physics_known: a simulator answered (``physics_held`` is then the truth).
        physics_held: the object the simulator's contacts hold, or ``None``.
        sensor: the tool's holding sensor (``True``/``False``), ``None`` without one.
        depth_pick: the depth check of a completed pick (the object's region emptied), ``None`` when it
            could not tell or did not run.
        tool_open: the tool was left open by the sequence (a completed place, a recovery that opened it).
    """

    physics_known: bool = False
    physics_held: str | None = None
    sensor: bool | None = None
    depth_pick: bool | None = None
    tool_open: bool = False


def belief_after(before: Belief, action: str, *, moved: bool, completed: bool, evidence: Evidence) -> Belief:
    """The belief after a trial (rules 1-7 of the module docstring).

    Args:
        before: the belief the trial started with.
        action: the trial's action, ``pick`` or ``place``.
        moved: a motion was sent to the arm (anything from the first waypoint on).
        completed: the pick or place sequence completed (robot outcome ``done``).
        evidence: what the world says now.
    """
    if not moved:
        return before
    if evidence.physics_known:
        held = evidence.physics_held
        return Belief(
            held is not None,
            held,
            "physics",
            f"the simulator's contacts hold {held}" if held else "the simulator's contacts hold nothing",
        )
    if evidence.sensor is not None:
        return Belief(
            bool(evidence.sensor),
            before.object if evidence.sensor else None,
            "sensor",
            "the tool's sensor reports holding" if evidence.sensor else "the tool's sensor reports nothing",
        )
    if evidence.tool_open:
        return Belief(False, None, "sequence", "the tool was opened")
    if action == "pick":
        if completed and evidence.depth_pick is not None:
            return Belief(
                bool(evidence.depth_pick),
                None,
                "depth",
                "the object's region emptied after the pick"
                if evidence.depth_pick
                else "the object's region did not empty after the pick",
            )
        return Belief(
            False,
            None,
            "unknown",
            "the pick could not be seen to lift anything; treated as empty"
            if completed
            else "the pick was interrupted; treated as empty",
        )
    # a place interrupted with the tool still closed: it holds what it held
    return Belief(before.holding, before.object, "sequence", "the place was interrupted before the tool opened")


def next_action(belief: Belief) -> str:
    """``place`` when the belief says the tool holds something, else ``pick`` (PointArena sec. 3.4)."""
    return "place" if belief.holding else "pick"
