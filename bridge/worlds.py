"""Simulated worlds: what a simulated camera and a simulated arm share, found through a registry.

A session whose camera or robot is simulated needs one world that both render and move (the arm
lifts the cube the camera then shows), the sim's own judgement of a trial, its exact camera pose,
its model server and its demo script. Product code never imports the simulator: an implementation
(``sim_mock``) registers a class under the ``pointlab.worlds`` entry-point group in its
``pyproject.toml``, and ``world_class_for(camera_spec, robot_spec)`` finds the one that claims the
camera's or the robot's type. The class implements ``World``.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, ClassVar, Protocol, runtime_checkable

__all__ = ["ENTRY_POINT_GROUP", "World", "world_class_for", "spec_kind"]

ENTRY_POINT_GROUP = "pointlab.worlds"


@runtime_checkable
class World(Protocol):
    """One simulated world of a session (built with no arguments: its default scene).

    Class attributes:
        camera_kinds: camera spec types this world renders (e.g. ``{"sim"}``).
        robot_kinds: robot spec types this world moves (e.g. ``{"sim"}``).
    """

    camera_kinds: ClassVar[frozenset[str]]
    robot_kinds: ClassVar[frozenset[str]]

    @staticmethod
    def demo_script() -> list[dict]:
        """The default scene's scripted trials ``[{"instruction", "expected"}]`` (no world needed)."""
        ...

    def camera(self, spec: str, *, fps: float) -> Any:
        """A ``perception.Camera`` for ``spec`` (one of ``camera_kinds``) that renders this world."""
        ...

    def arm_driver(self, spec: str, *, time_scale: float) -> Any:
        """A ``robot.ArmDriver`` for ``spec`` (one of ``robot_kinds``) that moves this world's arm;
        ``time_scale`` multiplies every motion's duration (tests: ~0.02)."""
        ...

    def calibration(self) -> Any:
        """The exact ``perception.Calibration`` (``T_base_camera``) of this world's camera."""
        ...

    def judge(self, expected: dict) -> tuple[bool, str]:
        """The world's own judgement of a finished trial against ``expected``: ``(success, detail)``."""
        ...

    def infer_expected(self, instruction: str, action: str) -> dict | None:
        """What a typed ``instruction`` asks for (``{"action", "object", ...}``), or ``None``."""
        ...

    def intended_mask(self, expected: dict) -> Any:
        """``(H, W)`` bool mask, on the current camera image, of what ``expected`` asks the agent to
        point at (failure attribution), or ``None`` when no object mask says it."""
        ...

    def serve_models(self) -> tuple[str, Callable[[], None]]:
        """Start the sim model server answering for this world: ``(base_url ending in /v1, stop)``."""
        ...

    def reset(self) -> None:
        """Restore the starting scene exactly (objects, arm home, tool open)."""
        ...

    def held(self) -> str | None:
        """The object the arm's tool holds by physics now, or ``None`` (the belief's evidence)."""
        ...


def spec_kind(spec: str) -> str:
    """The type of a camera or robot spec: the text before the first ``:``."""
    return spec.partition(":")[0]


def world_class_for(camera_spec: str, robot_spec: str) -> type[World] | None:
    """The registered world class that claims the camera's or the robot's type, or ``None`` (a real
    camera with a real robot)."""
    camera_kind, robot_kind = spec_kind(camera_spec), spec_kind(robot_spec)
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        cls = ep.load()
        if camera_kind in cls.camera_kinds or robot_kind in cls.robot_kinds:
            return cls
    return None
