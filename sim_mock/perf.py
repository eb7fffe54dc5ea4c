"""``pointlab perf sim``: how fast the MuJoCo sim renders frames, steps its physics and solves IK.

Camera frame times (``SimCamera.read``, noise on, no pacing) for:

- ``static``: nothing moves (the clean render is reused, only the noise is new);
- ``arm_moving``: the arm moves between frames, so every frame is a new render (colour + depth
  from one pass, the coarse surface segmentation for the depth model, the noise);
- ``arm_moving_no_depth``: the same without depth (``want_depth = False``: nothing reads it);
- ``masks``: one full-resolution segmentation pass per frame (``world.masks(frame)`` uncached).

The baseline, in the same run, is ``arm_moving`` (a full render on every frame); each case reports
percentiles in milliseconds, frames per second at the median, whether the 90th percentile stays
within the 33 ms of a 30 fps frame, and its speed-up over the baseline. Physics: the real-time
factor of a pick-and-place (simulated seconds per wall second spent stepping), with ``time_scale``
0. IK: per-call percentiles of seeded solutions along a 20 cm line and of unseeded solutions.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from pointlab.benchmark.perfstats import summarize

from .camera import SimCamera
from .world import SimWorld

__all__ = ["measure_sim_perf", "percentiles_ms", "physics_rtf"]

_FRAME_BUDGET_MS = 1000.0 / 30.0


def percentiles_ms(seconds: list[float]) -> dict[str, float]:
    """``{"p50", "p90", "p99", "min", "max", "n"}`` in milliseconds of a sample given in seconds."""
    return summarize(seconds, ("p50", "p90", "p99", "min", "max", "n"), scale=1e3, digits=3)


def _sweep(world: SimWorld, i: int) -> None:
    """Pose the arm servos at step ``i`` of a slow joint-1 sweep and step the physics a little."""
    with world.lock:
        q = world.physics.arm_targets()
        q[0] = 0.3 * np.sin(i / 15.0)
        world.physics.set_arm_targets(q)
        world.physics.step(8)
        world.bump()


def _frame_times(
    world: SimWorld, frames: int, seed: int, *, moving: bool, depth: bool = True, masks: bool = False
) -> list[float]:
    world.reset()
    cam = SimCamera(world=world, fps=0, seed=seed).connect()
    cam.want_depth = depth
    cam.read()  # warm up
    out = []
    for i in range(frames):
        if moving:
            _sweep(world, i)
        t0 = time.perf_counter()
        frame = cam.read()
        if masks:
            world.masks(frame)
        out.append(time.perf_counter() - t0)
    cam.disconnect()
    return out


def _case(times: list[float], baseline_p50_ms: float) -> dict[str, Any]:
    p = percentiles_ms(times)
    return {
        "frame_ms": p,
        "fps_at_p50": round(1000.0 / p["p50"], 1) if p["p50"] > 0 else None,
        "p90_under_30fps_budget": p["p90"] < _FRAME_BUDGET_MS,
        "speedup_vs_baseline_p50": round(baseline_p50_ms / p["p50"], 2) if p["p50"] > 0 else None,
    }


def physics_rtf(world: SimWorld) -> dict[str, Any]:
    """Real-time factor of one pick-and-place of the red cube into the bowl (``time_scale`` 0)."""
    from pointlab.robot.arm import Arm, MotionConfig

    from .arm import SimArmDriver

    world.reset()
    arm = Arm(SimArmDriver(world=world, time_scale=0.0), motion=MotionConfig(grip_settle_s=0.0)).connect()
    ph = world.physics
    steps0, wall0 = ph.steps_total, ph.step_wall_s
    t0 = time.perf_counter()
    arm.pick(world.object("red cube").top_center_m)
    arm.place(world.object("blue bowl").top_center_m)
    total_wall = time.perf_counter() - t0
    sim_s = (ph.steps_total - steps0) * ph.model.opt.timestep
    step_wall = ph.step_wall_s - wall0
    ok, _ = world.judge({"action": "place", "object": "red cube", "container": "blue bowl"})
    world.reset()
    return {
        "simulated_s": round(sim_s, 3),
        "stepping_wall_s": round(step_wall, 3),
        "total_wall_s": round(total_wall, 3),
        "real_time_factor": round(sim_s / step_wall, 1) if step_wall > 0 else None,
        "real_time_factor_with_ik": round(sim_s / total_wall, 1) if total_wall > 0 else None,
        "placed_in_bowl": ok,
    }


def _ik_times(world: SimWorld, calls: int) -> dict[str, Any]:
    kin, tool = world.kinematics, world.tool.name
    seed = world.physics.arm_joints()
    seeded, unseeded = [], []
    for i in range(calls):
        f = (i % 10) / 10.0
        p = np.array([0.25, -0.10 + 0.20 * f, 0.10])
        t0 = time.perf_counter()
        q = kin.ik(p, (180.0, 0.0, 0.0), seed_rad=seed, tool=tool)
        seeded.append(time.perf_counter() - t0)
        seed = q if q is not None else seed
        t0 = time.perf_counter()
        kin.ik(p + [0.05, 0.0, 0.0], (180.0, 0.0, 0.0), tool=tool)
        unseeded.append(time.perf_counter() - t0)
    return {"seeded_ms": percentiles_ms(seeded), "unseeded_ms": percentiles_ms(unseeded)}


def measure_sim_perf(frames: int = 150, ik_calls: int = 50, seed: int = 0) -> dict[str, Any]:
    """Measure the sim camera, physics and IK (see the module docstring).

    Raises:
        ValueError: ``frames`` or ``ik_calls`` below 1.
    """
    if frames < 1 or ik_calls < 1:
        raise ValueError("frames and ik_calls must be at least 1")
    world = SimWorld()
    try:
        baseline = _frame_times(world, frames, seed, moving=True)
        base_p50 = percentiles_ms(baseline)["p50"]
        cases = {
            "static": _frame_times(world, frames, seed, moving=False),
            "arm_moving_no_depth": _frame_times(world, frames, seed, moving=True, depth=False),
            "masks": _frame_times(world, frames, seed, moving=True, masks=True),
        }
        return {
            "camera": {
                "size": [world.intrinsics.width, world.intrinsics.height],
                "frames_per_case": frames,
                "baseline_full_render": {
                    "what": "arm moving: a new render every frame (colour + depth)",
                    "frame_ms": percentiles_ms(baseline),
                },
                **{name: _case(t, base_p50) for name, t in cases.items()},
            },
            "physics": physics_rtf(world),
            "ik": _ik_times(world, ik_calls),
        }
    finally:
        world.close()
