"""``pointlab perf loop``: how fast the ROS loop turns a received point into an arm command, and the
live view's frame rate, in sim.

Measured per trial (sim-oracle over the sim model server; the model call is excluded):

- ``point_to_command``: wall time from the pointing node publishing the answer to the arm node
  receiving the command (answer -> targeting node -> target result -> runner -> command);
- ``point_to_target``: the targeting node's share of it.

Baseline, in the same run: ``compute_target`` called directly on a sim frame with the same points
(no ROS, no JSON, no image transport). ``ratio_p50`` is the ROS loop's median over the baseline's:
the cost of the distributed design. The live view's rate is the number of distinct JPEG frames
``RosTrialRunner.latest_jpeg()`` returned per second while it was polled at ``poll_hz`` during the run.
"""

from __future__ import annotations

import asyncio
import threading
import time

import typer

from pointlab.benchmark.clikit import fail, print_json

from .commands import sub

perf_app = sub.group("perf")
from pointlab.benchmark.perfstats import summarize

__all__ = ["measure_loop", "percentiles_ms"]


def percentiles_ms(values_s) -> dict:
    """``{"n", "p50", "p90", "p99", "mean"}`` of durations in seconds, reported in milliseconds."""
    return summarize(values_s, ("n", "p50", "p90", "p99", "mean"), scale=1e3, digits=3)


def _poll_live_view(runner, stop: threading.Event, poll_hz: float, seen: list) -> None:
    period = 1.0 / poll_hz
    while not stop.is_set():
        got = runner.live_view.latest_jpeg()
        if got is not None and (not seen or seen[-1][1] != got[1]):
            seen.append((time.monotonic(), got[1]))
        stop.wait(period)


def measure_loop(trials: int = 40, *, time_scale: float = 0.02, agent: str = "sim-oracle", poll_hz: float = 60.0,
                 baseline_repeats: int = 200) -> dict:
    """Run ``trials`` sim trials (the demo script, the scene reset after each pass) and measure.

    Returns:
        ``{"point_to_command_ms", "point_to_target_ms", "baseline_targeting_ms", "ratio_p50",
        "live_view_fps", "camera_frames_published_per_s", "trials", "done"}`` (percentile dicts as
        ``percentiles_ms``).

    Raises:
        ValueError: ``trials < 1``.
    """
    from .headless import demo_script
    from .session import SessionConfig, start_session
    from .targeting import compute_target

    if trials < 1:
        raise ValueError("trials must be >= 1")
    script = demo_script("sim", "sim")
    session = start_session(SessionConfig(time_scale=time_scale))
    try:
        runner, world = session.runner, session.world
        stop, seen = threading.Event(), []
        poller = threading.Thread(target=_poll_live_view, args=(runner, stop, poll_hz, seen), daemon=True)
        frames0, t0 = session.camera_node.frames_published, time.monotonic()
        poller.start()

        async def run_all():
            out = []
            for i in range(trials):
                if i and i % len(script) == 0:
                    world.reset()  # the script runs from the initial layout
                    # the sim camera stamps a frame after rendering it, so a frame rendered from the
                    # old layout can carry a stamp later than the reset: let one frame period pass
                    await asyncio.sleep(0.2)
                item = script[i % len(script)]
                out.append(await runner.run_trial(agent, item["instruction"], expected=item["expected"]))
            return out

        results = asyncio.run(run_all())
        elapsed = time.monotonic() - t0
        stop.set()
        poller.join(timeout=2.0)
        frames = session.camera_node.frames_published - frames0
        # baseline: the same targeting, in-process, on one sim frame with the trials' own points
        with world.camera("sim", fps=0) as cam:  # its own camera: the node's keeps running
            frame = cam.read()
        points = [r.points_px for r in results if r.points_px] or [[[320.0, 240.0]]]
        base = []
        for i in range(baseline_repeats):
            p = points[i % len(points)]
            t = time.perf_counter()
            compute_target(frame, p, session.calibration, session.arm_node.arm.workspace)
            base.append(time.perf_counter() - t)
    finally:
        session.close()

    loop = percentiles_ms(r.timings_s["point_to_command"] for r in results if "point_to_command" in r.timings_s)
    to_target = percentiles_ms(r.timings_s["point_to_target"] for r in results if "point_to_target" in r.timings_s)
    baseline = percentiles_ms(base)
    live_s = (seen[-1][0] - seen[0][0]) if len(seen) > 1 else 0.0
    return {
        "point_to_command_ms": loop,
        "point_to_target_ms": to_target,
        "baseline_targeting_ms": baseline,
        "ratio_p50": round(loop["p50"] / baseline["p50"], 2) if loop["n"] and baseline["p50"] else None,
        "live_view_fps": round((len(seen) - 1) / live_s, 2) if live_s > 0 else 0.0,
        "camera_frames_published_per_s": round(frames / elapsed, 2) if elapsed > 0 else 0.0,
        "trials": len(results),
        "done": sum(r.robot_outcome == "done" for r in results),
        "sim_success": sum(bool(r.sim_success) for r in results),
        "failures": [{"trial": i, "instruction": r.instruction, "action": r.action, "robot_outcome": r.robot_outcome,
                      "sim_detail": r.sim_detail, "reason": (r.target or {}).get("reason") or r.robot_error}
                     for i, r in enumerate(results) if not r.sim_success][:10],
    }


@perf_app.command("loop")
def perf_loop_cmd(
    trials: int = typer.Option(40, "--trials", min=1, help="sim trials to run"),
    time_scale: float = typer.Option(0.02, "--time-scale", min=0.0, help="sim motion-time multiplier (0: instant)"),
    agent: str = typer.Option("sim-oracle", "--agent", help="agent of the default config"),
) -> None:
    """Latency percentiles from a received point to the arm command (model call excluded) and the
    live view's frame rate, in sim, with the in-process targeting time as the baseline."""
    try:
        print_json(measure_loop(trials, time_scale=time_scale, agent=agent))
    except ValueError as e:
        fail(str(e), 2)
