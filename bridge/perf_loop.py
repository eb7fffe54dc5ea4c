"""``measure_loop`` (``pointlab perf loop``; the command is ``ui.perf_commands``): how fast the ROS loop turns a received point into an arm command, and the
live view's frame rate, in sim.

Measured per trial (sim-oracle over the sim model server; the model call is excluded):

- ``point_to_command``: wall time from the pointing node publishing the answer to the arm node
  receiving the command (answer -> targeting node -> target result -> station -> command);
- ``point_to_target``: the targeting node's share of it.

Baseline, in the same run: ``compute_target`` called directly on a sim frame with the same points
(no ROS, no JSON, no image transport). ``ratio_p50`` is the ROS loop's median over the baseline's:
the cost of the distributed design. The live view's rate is the number of distinct JPEG frames
the live view's ``latest_jpeg()`` returned per second while it was polled at ``poll_hz`` during the run.

Recording (issue 10): the trials run in alternating blocks of ``block`` trials, without a recorder
and with a ``bridge.ros.recorder.TrialRecorder`` attached (its node created for the block, each
trial recorded from before the request to after the result, then the recorder closed), so both
halves share the machine's load of the moment; ``recording`` reports ``point_to_command_ms`` of each
half, their ``ratio_p50``, the CPU of each half (``cpu_cores_without``/``_with``: the whole process's
CPU seconds over the trials' wall seconds; ``cpu_cores_added``), the time ``end`` took to finish the
files, and what the recordings cost (MB per trial and per second, scaled to a 20 s trial; dropped
frames; incomplete ones; ``images``: compressed or raw).
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from pathlib import Path

from pointlab.benchmark.perfstats import summarize

__all__ = ["measure_loop", "percentiles_ms"]


def percentiles_ms(values_s) -> dict:
    """``{"n", "p50", "p90", "p99", "mean"}`` of durations in seconds, reported in milliseconds."""
    return summarize(values_s, ("n", "p50", "p90", "p99", "mean"), scale=1e3, digits=3)


def _poll_live_view(camera, stop: threading.Event, poll_hz: float, seen: list) -> None:
    period = 1.0 / poll_hz
    while not stop.is_set():
        got = camera.latest_jpeg()
        if got is not None and (not seen or seen[-1][1] != got[1]):
            seen.append((time.monotonic(), got[1]))
        stop.wait(period)


def _recording_costs(recs: list, ends_s: list[float]) -> dict:
    """Sizes and counts of the recordings of a run (``bridge.recording.layout.Recording`` list)."""
    secs = sum(r.duration_s for r in recs)
    mcap_mb = sum(r.mcap_bytes for r in recs) / 1e6
    clip_mb = sum(r.clip_bytes for r in recs) / 1e6
    per_s = (lambda mb: round(mb / secs, 4)) if secs > 0 else (lambda mb: None)
    return {
        "recordings": len(recs),
        "incomplete": sum(not r.complete for r in recs),
        "errors": sorted({e for r in recs for e in r.errors})[:5],
        "seconds_recorded": round(secs, 2),
        "dropped_messages": sum(r.dropped for r in recs),
        "color_frames_per_s": round(sum(r.color_frames for r in recs) / secs, 2) if secs else None,
        "clip_frames_per_s": round(sum(r.clip_frames for r in recs) / secs, 2) if secs else None,
        "mcap_mb_per_s": per_s(mcap_mb),
        "clip_mb_per_s": per_s(clip_mb),
        "mcap_mb_per_20s_trial": None if not secs else round(20 * mcap_mb / secs, 2),
        "clip_mb_per_20s_trial": None if not secs else round(20 * clip_mb / secs, 3),
        "end_ms": percentiles_ms(ends_s),
    }


def measure_loop(
    trials: int = 40,
    *,
    time_scale: float = 0.02,
    agent: str = "sim-oracle",
    poll_hz: float = 60.0,
    baseline_repeats: int = 200,
    recording: bool = True,
    block: int = 5,
    recordings_dir: str | Path | None = None,
    recording_config=None,
) -> dict:
    """Run ``trials`` sim trials (the demo script, the scene reset after each pass) and measure.

    Args:
        recording: alternate blocks of ``block`` trials without and with a trial recorder (module
            docstring); ``False``: no recorder at all.
        recordings_dir: keep the recordings there (``None``: a temporary folder, removed after).
        recording_config: a ``bridge.recording.layout.RecordingConfig`` (default settings otherwise).

    Returns:
        ``{"point_to_command_ms", "point_to_target_ms", "baseline_targeting_ms", "ratio_p50",
        "live_view_fps", "camera_frames_published_per_s", "trials", "done", "sim_success", "failures"}``
        (percentile dicts as ``percentiles_ms``), plus ``"recording"`` when ``recording``.

    Raises:
        ValueError: ``trials < 1`` or ``block < 1``.
    """
    from pointlab.bridge.trials.headless import demo_script
    from pointlab.bridge.recording.layout import RecordingConfig
    from pointlab.bridge.ros.recorder import TrialRecorder
    from pointlab.bridge.session import SessionConfig, start_session
    from pointlab.bridge.trials.headless import HEADLESS_SETTINGS
    from pointlab.bridge.trials.targeting import compute_target

    if trials < 1 or block < 1:
        raise ValueError("trials and block must be >= 1")
    script = demo_script("sim", "sim")
    tmp = None
    if recordings_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="pointlab-perf-rec-")
        recordings_dir = tmp.name
    rec_config = (recording_config or RecordingConfig()).model_copy(update={"dir": Path(recordings_dir)})
    session = start_session(SessionConfig(time_scale=time_scale))
    try:
        station, world = session.station, session.world
        stop = threading.Event()
        seen: list[tuple[float, int]] = []  # (monotonic s, frame index) of the live view's new frames
        poller = threading.Thread(target=_poll_live_view, args=(station.ports.camera, stop, poll_hz, seen), daemon=True)
        frames0, t0 = session.camera_node.frames_published, time.monotonic()
        poller.start()
        recorded_flags, recs, ends, cpu = [], [], [], []

        async def run_all():
            out, recorder = [], None
            try:
                for i in range(trials):
                    with_rec = recording and (i // block) % 2 == 1
                    if with_rec and recorder is None:
                        recorder = TrialRecorder(session.host, rec_config)
                        await asyncio.to_thread(recorder.wait_ready, 20.0)
                    elif not with_rec and recorder is not None:
                        await asyncio.to_thread(recorder.close)
                        recorder = None
                    if i and i % len(script) == 0:
                        await station.reset_block()  # the script runs from the initial layout
                        # the sim camera stamps a frame after rendering it, so a frame rendered from the
                        # old layout can carry a stamp later than the reset: let one frame period pass
                        await asyncio.sleep(0.2)
                    item = script[i % len(script)]
                    c0, w0 = time.process_time(), time.monotonic()
                    if recorder is not None:
                        recorder.begin(f"perf-{i:04d}")
                    ran = await station.run_trial(
                        agent,
                        item["instruction"],
                        expected=item["expected"],
                        settings=HEADLESS_SETTINGS,
                        auto_judge=True,
                    )
                    out.append(ran.result)
                    recorded_flags.append(recorder is not None)
                    if recorder is not None:
                        t = time.perf_counter()
                        recs.append(await recorder.end_async(f"perf-{i:04d}"))
                        ends.append(time.perf_counter() - t)
                    # the process's CPU time (every thread) over the trial's wall time, recording included
                    cpu.append((time.process_time() - c0, time.monotonic() - w0))
            finally:
                if recorder is not None:
                    await asyncio.to_thread(recorder.close)
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
        if tmp is not None:
            tmp.cleanup()

    def p2c(rs):
        return percentiles_ms(r.timings_s["point_to_command"] for r in rs if "point_to_command" in r.timings_s)

    loop = p2c(results)
    to_target = percentiles_ms(r.timings_s["point_to_target"] for r in results if "point_to_target" in r.timings_s)
    baseline = percentiles_ms(base)
    live_s = (seen[-1][0] - seen[0][0]) if len(seen) > 1 else 0.0
    out = {
        "point_to_command_ms": loop,
        "point_to_target_ms": to_target,
        "baseline_targeting_ms": baseline,
        "ratio_p50": round(loop["p50"] / baseline["p50"], 2) if loop["n"] and baseline["p50"] else None,
        "live_view_fps": round((len(seen) - 1) / live_s, 2) if live_s > 0 else 0.0,
        "camera_frames_published_per_s": round(frames / elapsed, 2) if elapsed > 0 else 0.0,
        "trials": len(results),
        "done": sum(r.robot_outcome == "done" for r in results),
        "sim_success": sum(bool(r.sim_success) for r in results),
        "physics_real_time_factor": _rtf(world),
        "failures": [
            {
                "trial": i,
                "instruction": r.instruction,
                "action": r.action,
                "robot_outcome": r.robot_outcome,
                "sim_detail": r.sim_detail,
                "reason": str(r.refusal or r.abort or r.robot_error or "") or None,
            }
            for i, r in enumerate(results)
            if not r.sim_success
        ][:10],
    }
    if recording:
        without = p2c([r for r, f in zip(results, recorded_flags) if not f])
        with_ = p2c([r for r, f in zip(results, recorded_flags) if f])
        cores = {flag: _cores([c for c, f in zip(cpu, recorded_flags) if f == flag]) for flag in (False, True)}
        out["recording"] = {
            "block": block,
            "image_fps": rec_config.image_fps,
            "depth_fps": rec_config.depth_fps,
            "clip_fps": rec_config.clip.fps,
            "point_to_command_ms_without": without,
            "point_to_command_ms_with": with_,
            "ratio_p50": round(with_["p50"] / without["p50"], 3)
            if with_["n"] and without["n"] and without["p50"]
            else None,
            "images": rec_config.images,
            "cpu_cores_without": cores[False],
            "cpu_cores_with": cores[True],
            "cpu_cores_added": None
            if (with_cores := cores[True]) is None or (without_cores := cores[False]) is None
            else round(with_cores - without_cores, 3),
            **_recording_costs([r for r in recs if r is not None], ends),
        }
    return out


def _cores(cpu_wall: list[tuple[float, float]]) -> float | None:
    """Cores used on average: summed process CPU seconds over summed wall seconds."""
    wall = sum(w for _c, w in cpu_wall)
    return round(sum(c for c, _w in cpu_wall) / wall, 3) if wall > 0 else None


def _rtf(world) -> float | None:
    """Simulated seconds per wall second spent stepping the sim's physics (whole session), when the
    world reports it (``physics_stats``)."""
    stats = getattr(world, "physics_stats", None)
    return stats()["real_time_factor"] if stats is not None else None
