"""``pointlab perf sim``: how fast the sim camera renders frames and the sim arm solves IK.

Frame times (``SimCamera.read`` with noise, no pacing) are measured for three cases against the
in-run baseline of rendering every object from scratch each frame (the per-object patch cache
cleared before every frame, which is what a renderer without the cache does):

- ``static``: nothing moves (the clean render is reused, only the noise is new);
- ``moving_object``: a held object moves every frame (one object is ray-cast per frame);
- ``moving_object_and_tool``: the same with the gripper cylinder drawn.

Reported per case: percentiles in milliseconds, frames per second at the median, whether the 90th
percentile stays under 1/30 s, and the speed-up over the baseline. IK: per-call percentiles of
seeded solutions along a 20 cm line (what ``move_linear`` does at every 2 cm step) and of unseeded
solutions.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from pointlab.benchmark.perfstats import summarize

from .camera import SimCamera
from .world import SimWorld

__all__ = ["measure_sim_perf", "percentiles_ms"]

_FRAME_BUDGET_MS = 1000.0 / 30.0


def percentiles_ms(seconds: list[float]) -> dict[str, float]:
    """``{"p50", "p90", "p99", "min", "max", "n"}`` in milliseconds of a sample given in seconds."""
    return summarize(seconds, ("p50", "p90", "p99", "min", "max", "n"), scale=1e3, digits=3)


def _frame_times(frames: int, seed: int, *, moving: bool, tool: bool, uncached: bool) -> list[float]:
    world = SimWorld()
    cam = SimCamera(world=world, fps=0, seed=seed, draw_tool=tool).connect()
    cam.read()  # warm up: first render builds the per-object patches
    x, y, _ = world.object("red cube").position_m
    if moving:
        world.set_tcp([x, y, 0.025], (180.0, 0.0, 0.0), world.arm.joints_rad)
        world.attach("red cube")
    out = []
    for i in range(frames):
        if moving:  # a slow sweep across the table, 1 mm per frame
            world.set_tcp([x - 0.001 * (i % 150), y - 0.001 * (i % 150), 0.10], (180.0, 0.0, 0.0),
                          world.arm.joints_rad)
        if uncached:
            cam._renderer._patches.clear()
            world.bump()
        t0 = time.perf_counter()
        cam.read()
        out.append(time.perf_counter() - t0)
    cam.disconnect()
    return out


def _case(times: list[float], baseline_p50_ms: float) -> dict[str, Any]:
    p = percentiles_ms(times)
    return {"frame_ms": p, "fps_at_p50": round(1000.0 / p["p50"], 1) if p["p50"] > 0 else None,
            "p90_under_30fps_budget": p["p90"] < _FRAME_BUDGET_MS,
            "speedup_vs_baseline_p50": round(baseline_p50_ms / p["p50"], 2) if p["p50"] > 0 else None}


def _ik_times(calls: int) -> dict[str, Any]:
    world = SimWorld()
    kin, tool = world.kinematics, world.tool.name
    seed = world.arm.joints_rad
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
    """Measure the sim camera and IK (see the module docstring).

    Raises:
        ValueError: ``frames`` or ``ik_calls`` below 1.
    """
    if frames < 1 or ik_calls < 1:
        raise ValueError("frames and ik_calls must be at least 1")
    baseline = _frame_times(frames, seed, moving=True, tool=True, uncached=True)
    base_p50 = percentiles_ms(baseline)["p50"]
    cases = {
        "static": _frame_times(frames, seed, moving=False, tool=False, uncached=False),
        "moving_object": _frame_times(frames, seed, moving=True, tool=False, uncached=False),
        "moving_object_and_tool": _frame_times(frames, seed, moving=True, tool=True, uncached=False),
    }
    return {
        "camera": {"size": [640, 480], "frames_per_case": frames,
                   "baseline_full_render": {"what": "every object ray-cast every frame (patch cache cleared)",
                                            "frame_ms": percentiles_ms(baseline)},
                   **{name: _case(t, base_p50) for name, t in cases.items()}},
        "ik": _ik_times(ik_calls),
    }
