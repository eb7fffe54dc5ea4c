"""``pointlab deproject``: one pixel of a recorded RGB-D frame to a camera-frame point."""

from __future__ import annotations

from pathlib import Path

import typer

from pointlab.benchmark.clikit import fail, print_json

from pointlab.bridge.commands import sub

app = sub.root


@app.command("deproject")
def deproject_cmd(
    rgbd: Path = typer.Option(
        ..., "--rgbd", help="replay folder (NNNNNN-color.png, NNNNNN-depth.png, camera_params.json)"
    ),
    frame: str = typer.Option(..., "--frame", help="frame id, e.g. 000003 or 3"),
    pixel: tuple[float, float] = typer.Option(..., "--pixel", help="U V in colour-image pixels"),
    window: int = typer.Option(5, "--window-radius", help="half-size of the depth window, pixels"),
) -> None:
    """Print {"valid", "point_m", "depth_m", "reason", ...} for pixel U V (camera optical frame, metres).

    A refusal (pixel outside the image, no valid depth nearby) is a normal result: valid=false,
    exit code 0. A missing or corrupt frame is an error: exit code 2.
    """
    from pointlab.perception.deproject import DepthRule, deproject_pixel
    from pointlab.perception.errors import CameraSourceError
    from pointlab.perception.replay import load_rgbd_frame

    try:
        rule = DepthRule(window_radius_px=window)
    except ValueError as e:
        fail(f"--window-radius: {e}")
    try:
        f = load_rgbd_frame(rgbd, frame, stamp_ns=0)
    except CameraSourceError as e:
        fail(str(e))
    print_json(deproject_pixel(f, pixel[0], pixel[1], rule).to_dict())
