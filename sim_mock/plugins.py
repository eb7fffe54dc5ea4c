"""What sim_mock registers with product code, and nothing else: the entry points named in
``pyproject.toml`` point here or at the factories they name.

- ``pointlab.worlds``: ``sim`` -> ``SimWorldPlugin`` (``bridge.worlds.World``), the world a
  session's sim camera and sim arm share;
- ``pointlab.sim_model_servers``: ``dataset`` -> ``serve_dataset_models``, ``qa`` -> ``serve_qa_models``, ``scene`` ->
  ``serve_scene_models``, ``arena`` -> ``serve_arena_models`` (``benchmark.sim_models``);
- ``pointlab.arena_demo_sets``: ``sim`` -> ``write_arena_demo`` (``ui.arena.curated``): the demo
  arena's images of the sim tabletop with a mask per object;
- ``pointlab.camera_sources`` (``sim``, ``sim-board``) and ``pointlab.arm_drivers`` (``sim``) name the
  factories in ``camera.py``, ``board_camera.py`` and ``arm.py`` directly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from .oracle import SceneOracle

__all__ = [
    "SimWorldPlugin",
    "serve_dataset_models",
    "serve_qa_models",
    "serve_scene_models",
    "serve_arena_models",
    "write_arena_demo",
]


def serve_dataset_models(items: Sequence[Any], latency_s: float = 0.0) -> tuple[str, Callable[[], None]]:
    """The sim model server answering from the masks of Point-Bench ``items``: ``(base_url, stop)``;
    each answer waits ``latency_s`` (a remote model's time)."""
    from .mask_oracle import mask_sim_models
    from .model_server import create_model_server, serve_in_thread

    return serve_in_thread(create_model_server(mask_sim_models(items), latency_s=latency_s))


def serve_qa_models(records: Sequence[dict]) -> tuple[str, Callable[[], None]]:
    """The sim model server answering questions from their answer key ``records`` (``qa_oracle``)."""
    from .model_server import create_model_server, serve_in_thread
    from .qa_oracle import qa_sim_models

    return serve_in_thread(create_model_server(qa_sim_models(records)))


def serve_scene_models(world: Any = None) -> tuple[str, Callable[[], None]]:
    """The sim model server answering for ``world`` (a new default ``SimWorld`` when ``None``)."""
    from .model_server import create_model_server, default_sim_models, serve_in_thread
    from .oracle import SceneOracle

    return serve_in_thread(create_model_server(default_sim_models(SceneOracle(world))))


def serve_arena_models(entries: Sequence[dict]) -> tuple[str, Callable[[], None]]:
    """The sim model server of the four arena agents (``arena_models``), each keyed by the image it
    is sent: ``entries`` = ``[{"image": path, "targets": [{"names": [...], "mask": path}]}]``."""
    from .arena_models import arena_sim_models
    from .model_server import create_model_server, serve_in_thread

    return serve_in_thread(create_model_server(arena_sim_models(entries)))


def write_arena_demo(out_dir: Any) -> Any:
    """Render the demo arena's sim tabletop images and masks into ``out_dir``; returns the manifest path."""
    from .arena_demo import write_demo_set

    return write_demo_set(out_dir)


class SimWorldPlugin:
    """``bridge.worlds.World`` over one ``SimWorld`` (the default scene), for the ``sim`` camera and arm."""

    camera_kinds: ClassVar[frozenset[str]] = frozenset({"sim"})
    # xarm-sim: the real xArm driver and SDK through the controller emulator, moving this world's arm
    robot_kinds: ClassVar[frozenset[str]] = frozenset({"sim", "xarm-sim"})

    def __init__(self) -> None:
        from .world import SimWorld

        self.sim = SimWorld()
        self._oracle: SceneOracle | None = None

    @staticmethod
    def demo_script() -> list[dict]:
        from .demo import demo_script

        return demo_script()

    def camera(self, spec: str, *, fps: float):
        from pointlab.perception.camera import make_camera

        return make_camera(spec, world=self.sim, fps=fps)

    def arm_driver(self, spec: str, *, time_scale: float):
        from .arm import SimArmDriver

        kind, _, arg = spec.partition(":")
        if kind == "xarm-sim":
            if arg:
                raise ValueError(f"xarm-sim takes no argument, got {spec!r}")
            from .xarm_emulated import EmulatedXArmDriver

            return EmulatedXArmDriver(self.sim, time_scale=time_scale)
        return SimArmDriver.from_spec(arg or None, world=self.sim, time_scale=time_scale)

    def calibration(self):
        return self.sim.calibration()

    def judge(self, expected: dict) -> tuple[bool, str]:
        return self.sim.judge(expected)

    def infer_expected(self, instruction: str, action: str) -> dict | None:
        return self.sim.infer_expected(instruction, action)

    def serve_models(self) -> tuple[str, Callable[[], None]]:
        return serve_scene_models(self.sim)

    def intended_mask(self, expected: dict):
        """The mask of what ``expected`` asks the agent to point at, on the current camera image: the
        object of a pick, the container of a place "in" it, the object a place puts something "on";
        ``None`` for a place "near" something (the right point is beside the object, which no
        object mask says)."""
        from .oracle import SceneOracle

        if expected.get("action") == "pick":
            name = expected.get("object")
        elif expected.get("action") == "place" and (expected.get("container") or expected.get("on")):
            name = expected.get("container") or expected["on"]
        else:
            return None
        if not isinstance(name, str):  # {"action": "pick"} with no object (was AttributeError on None)
            return None
        if self._oracle is None:
            self._oracle = SceneOracle(self.sim)
        return self._oracle.mask_of(self.sim.scene.resolve(name) or name)

    def reset(self) -> None:
        self.sim.reset()

    def held(self) -> str | None:
        return self.sim.held()

    def physics_stats(self) -> dict:
        """Physics time of this world so far (beyond the ``World`` protocol, for ``pointlab perf``):
        ``{"simulated_s", "stepping_wall_s", "real_time_factor"}`` (simulated seconds per wall second
        spent in ``mj_step``)."""
        ph = self.sim.physics
        sim_s = ph.steps_total * ph.model.opt.timestep
        return {
            "simulated_s": round(sim_s, 3),
            "stepping_wall_s": round(ph.step_wall_s, 3),
            "real_time_factor": round(sim_s / ph.step_wall_s, 1) if ph.step_wall_s > 0 else None,
        }
