"""``pointlab perf sim``: frame times of the sim camera and IK times of the sim arm."""

from __future__ import annotations

import typer

from pointlab.benchmark.clikit import SEED_MAX, fail, print_json

from .cli import sub

perf_app = sub.group("perf")


@perf_app.command("sim")
def perf_sim_cmd(
    frames: int = typer.Option(150, "--frames", help="frames rendered per case"),
    ik_calls: int = typer.Option(50, "--ik-calls", help="IK solutions timed per kind"),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX),
) -> None:
    """Sim camera frame-time percentiles (static, arm moving without depth, with masks) against
    the in-run baseline of a full render per frame, the physics real-time factor, IK times."""
    from .perf import measure_sim_perf

    try:
        result = measure_sim_perf(frames, ik_calls, seed)
    except ValueError as e:
        fail(str(e))
    print_json(result)
