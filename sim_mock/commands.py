"""``pointlab sim model-server`` (the OpenAI-compatible sim model server as a standalone process)
and ``pointlab sim snapshot`` (one sim camera frame with its masks)."""

from __future__ import annotations

import math
from pathlib import Path

import typer

from pointlab.benchmark.clikit import SEED_MAX, fail, print_json, wait_until_stopped

from .cli import sub

sim_app = sub.group("sim")


@sim_app.command("model-server")
def model_server_cmd(
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="TCP port on 127.0.0.1 (0: any free port)"),
    host: str = typer.Option("127.0.0.1", "--host", help="bind address (keep it local)"),
    script: Path | None = typer.Option(
        None, "--script", help='JSONL of {"answer"} / {"match", "answer"} lines, served as model "scripted"'
    ),
    noise_px: float = typer.Option(28.0, "--noise-px", help="pixel noise (sigma) of the sim-noisy model"),
    latency_s: float = typer.Option(
        0.0, "--latency-s", help="every answer waits this long, seconds (a remote model's time; not CPU)"
    ),
) -> None:
    """Serve sim-oracle, sim-noisy, oracle-<format> (from the default sim scene) and, with --script, "scripted".

    Prints {"base_url", "models"} and serves until interrupted. Exit 2: bad script or port taken.
    """
    import uvicorn

    from .model_server import ScriptedModel, bind_socket, create_model_server, default_sim_models

    if not (math.isfinite(noise_px) and noise_px >= 0):
        fail(f"--noise-px must be a finite number >= 0, got {noise_px}")
    if not (math.isfinite(latency_s) and 0 <= latency_s <= 600):
        fail(f"--latency-s must be a number from 0 to 600, got {latency_s}")
    from .oracle import SceneOracle
    from .world import default_world

    models = default_sim_models(SceneOracle(default_world()), noise_px=noise_px)
    if script is not None:
        try:
            models["scripted"] = ScriptedModel(script)
        except ValueError as e:
            fail(str(e))
    try:
        sock = bind_socket(host, port)
        sock.listen(128)  # connections queue from now on: a client may connect as soon as the URL is printed
    except OSError as e:
        fail(f"cannot bind {host}:{port}: {e}")
    print_json({"base_url": f"http://{host}:{sock.getsockname()[1]}/v1", "models": sorted(models)})
    app = create_model_server(models, latency_s=latency_s)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


@sim_app.command("snapshot")
def snapshot_cmd(
    out: Path = typer.Option(..., "--out", help="folder for color.png, depth.png, masks/<name>.png, robot.png"),
    scene: Path | None = typer.Option(None, "--scene", help="scene TOML (default: the packaged default scene)"),
    clean: bool = typer.Option(False, "--clean", help="no depth noise, holes or colour noise"),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX, help="noise seed"),
) -> None:
    """Render the sim camera once and write colour, uint16 depth and a mask per object and for the
    arm; print {"depth_scale_m", "intrinsics", "files", "mask_pixels", ...}. Exit 2: a bad scene
    file or an unwritable folder."""
    from .scene import load_scene
    from .snapshot import write_snapshot
    from .world import SimWorld

    world = None
    if scene is not None:
        try:
            world = SimWorld(load_scene(scene))
        except ValueError as e:
            fail(str(e))
    try:
        result = write_snapshot(out, world, noise=not clean, seed=seed)
    except OSError as e:
        fail(str(e))
    finally:
        if world is not None:
            world.close()
    print_json(result)


@sim_app.command("timing-check")
def timing_check_cmd(
    rounds: int = typer.Option(30, "--rounds", min=1, max=1000, help="trials per agent"),
    time_scale: float = typer.Option(0.1, "--time-scale", help="study time multiplier (reveal range, human delays)"),
    arm_time_scale: float = typer.Option(0.05, "--arm-time-scale", help="sim arm motion-time multiplier"),
    reveal_low: float = typer.Option(10.0, "--reveal-low", help="reveal range start, study seconds"),
    reveal_high: float = typer.Option(26.0, "--reveal-high", help="reveal range end, study seconds"),
    human_median: float = typer.Option(9.0, "--human-median", help="the scripted person's median click time, s"),
    human_sigma: float = typer.Option(0.35, "--human-sigma", help="log-normal sigma of the click times"),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX),
) -> None:
    """Run sim-oracle, sim-noisy and a scripted human reference through the sim session under one reveal
    rule and print per-agent instruction-to-motion times and the two-sample KS test (human vs each
    model; p > 0.05: the times cannot tell them apart). One progress line per trial on stderr."""
    import sys

    from .timing_check import run_timing_check

    for name, v in (
        ("--time-scale", time_scale),
        ("--arm-time-scale", arm_time_scale),
        ("--reveal-low", reveal_low),
        ("--reveal-high", reveal_high),
        ("--human-median", human_median),
        ("--human-sigma", human_sigma),
    ):
        if not math.isfinite(v) or v < 0:
            fail(f"{name} must be a finite number >= 0, got {v}")
    try:
        out = run_timing_check(
            rounds=rounds,
            time_scale=time_scale,
            arm_time_scale=arm_time_scale,
            reveal_low_s=reveal_low,
            reveal_high_s=reveal_high,
            human_median_s=human_median,
            human_sigma=human_sigma,
            seed=seed,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    except ValueError as e:
        fail(str(e))
    print_json(out)


@sim_app.command("fleet")
def fleet_cmd(
    connect: str = typer.Option(..., "--connect", help="the study server's Zenoh endpoint, e.g. tcp/127.0.0.1:7447"),
    stations: int = typer.Option(100, "--stations", min=1, max=1000, help="simulated stations"),
    prefix: str = typer.Option("sim", "--prefix", help="station names are PREFIX000, PREFIX001, ..."),
    trial_s: float = typer.Option(25.0, "--trial-s", min=0.0, max=600.0, help="median trial time, seconds"),
    reset_s: float = typer.Option(12.0, "--reset-s", min=0.0, max=600.0, help="a block's reset time, seconds"),
    time_scale: float = typer.Option(1.0, "--time-scale", min=0.0, max=10.0, help="multiplies every time"),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX),
) -> None:
    """Run lightweight simulated stations (no rendering, no ROS) for ``pointlab perf stations --fleet``
    until SIGTERM or Ctrl-C (sim_mock/fleet.py)."""
    from .fleet import SimFleet

    fleet = SimFleet(
        stations,
        connect=[connect],
        prefix=prefix,
        trial_s=trial_s,
        reset_s=reset_s,
        time_scale=time_scale,
        seed=seed,
    )
    print(f"{stations} simulated stations connected to {connect}", flush=True)
    try:
        wait_until_stopped()
    finally:
        fleet.close()
