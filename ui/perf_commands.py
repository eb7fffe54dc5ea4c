"""``pointlab perf loop``: the Point-Act loop's latency in sim, with and without the trial recorder
(``bridge.perf_loop.measure_loop``), or, with ``--browsers N``, the live view's frame rate in N
Chromium pages and the sim physics' real-time factor (``ui.perf_live.measure_live_view``: it
serves the web app, hence this package)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from pointlab.benchmark.clikit import fail, print_json

from .cli import sub

perf_app = sub.group("perf")


@perf_app.command("loop")
def perf_loop_cmd(
    trials: int = typer.Option(40, "--trials", min=1, help="sim trials to run"),
    time_scale: Optional[float] = typer.Option(
        None,
        "--time-scale",
        min=0.0,
        help="sim motion-time multiplier (0: instant; default 0.02, 1 with --browsers: the arm at real speed)",
    ),
    agent: str = typer.Option("sim-oracle", "--agent", help="agent of the default config"),
    recording: bool = typer.Option(
        True, "--recording/--no-recording", help="alternate blocks without and with the trial recorder (same run)"
    ),
    block: int = typer.Option(5, "--block", min=1, help="trials per block of the recording comparison"),
    image_fps: Optional[float] = typer.Option(
        None, "--image-fps", min=0.1, help="recorder: colour/depth frames per second in the MCAP"
    ),
    depth_fps: Optional[float] = typer.Option(
        None, "--depth-fps", min=0.1, help="recorder: aligned-depth frames per second (default 1, at most --image-fps)"
    ),
    images: str = typer.Option(
        "compressed", "--images", help="recorded images: compressed (JPEG + depth PNG) or raw (sensor_msgs/Image)"
    ),
    keep_recordings: Optional[Path] = typer.Option(
        None, "--keep-recordings", help="keep the recordings in this folder (default: removed)"
    ),
    browsers: int = typer.Option(
        0,
        "--browsers",
        min=0,
        help="Chromium participant pages watching the live "
        "view while trials run; prints the fps each "
        "page received and the physics real-time factor",
    ),
    seconds: float = typer.Option(20.0, "--seconds", min=1.0, help="measurement window with --browsers"),
) -> None:
    """Latency percentiles from a received point to the arm command (model call excluded) and the
    live view's frame rate, in sim, with the in-process targeting time as the baseline; with and
    without the trial recorder attached, and what the recordings cost. With --browsers N: the live
    view's frames per second in each of N Chromium pages while trials run, and the physics
    real-time factor."""
    from pointlab.bridge.commands.act import recording_config

    config = recording_config(images=images, image_fps=image_fps, depth_fps=depth_fps)  # exits 2 on bad values
    try:
        if browsers:
            from .perf_live import measure_live_view

            print_json(
                measure_live_view(
                    browsers,
                    seconds,
                    time_scale=1.0 if time_scale is None else time_scale,
                    agent=agent,
                    recording=recording,
                )
            )
            return
        from pointlab.bridge.perf_loop import measure_loop

        print_json(
            measure_loop(
                trials,
                time_scale=0.02 if time_scale is None else time_scale,
                agent=agent,
                recording=recording,
                block=block,
                recordings_dir=keep_recordings,
                recording_config=config,
            )
        )
    except ValueError as e:
        fail(str(e), 2)
    except RuntimeError as e:
        fail(str(e), 1)
