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


@perf_app.command("stations")
def perf_stations_cmd(
    stations: str = typer.Option(
        "1,2,4", "--stations", help="sim station counts to run, comma-separated ('' for none)"
    ),
    participants_per_station: int = typer.Option(2, "--participants-per-station", min=1, max=20),
    trials_per_agent: int = typer.Option(2, "--trials-per-agent", min=1, max=50),
    camera_fps: float = typer.Option(5.0, "--camera-fps", min=0.5, max=30.0, help="each sim station's camera rate"),
    time_scale: float = typer.Option(0.05, "--time-scale", min=0.0, max=1.0, help="sim arm motion-time multiplier"),
    fleet: int = typer.Option(0, "--fleet", min=0, max=1000, help="also run this many lightweight simulated stations"),
    fleet_participants: int = typer.Option(500, "--fleet-participants", min=1, max=5000),
    fleet_time_scale: float = typer.Option(0.02, "--fleet-time-scale", min=0.001, max=1.0),
    db: Optional[str] = typer.Option(
        None, "--db", help="store URL (postgresql+psycopg://...); default: SQLite per run"
    ),
) -> None:
    """Judged trials per hour with N sim stations (separate processes) against one in the same run,
    dispatch latency and what the server adds per trial; with --fleet, the server's dispatch and store
    with many lightweight simulated stations (docs/stations.md)."""
    from .stations_perf import measure_stations

    try:
        counts = [int(x) for x in stations.split(",") if x.strip()]
    except ValueError:
        fail(f"--stations {stations!r}: comma-separated counts, e.g. 1,2,4")
    if any(not 1 <= n <= 16 for n in counts):
        fail("--stations: each count must be 1-16 (sim stations on this machine)")
    try:
        print_json(
            measure_stations(
                counts,
                participants_per_station=participants_per_station,
                trials_per_agent=trials_per_agent,
                camera_fps=camera_fps,
                time_scale=time_scale,
                fleet=fleet,
                fleet_participants=fleet_participants,
                fleet_time_scale=fleet_time_scale,
                db_url=db,
            )
        )
    except RuntimeError as e:
        fail(str(e), 1)
