"""``pointlab calibrate``: hand-eye calibration of the camera against the arm, and ``pointlab
calibrate-check``: hover over a table board's corners through a calibration file (docs/calibration.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from pointlab.benchmark.clikit import fail, print_json

from pointlab.bridge.commands import sub

app = sub.root


@app.command("calibrate")
def calibrate_cmd(
    robot: str = typer.Option(..., "--robot", help="sim or xarm:IP[:PORT]"),
    camera: str = typer.Option(..., "--camera", help="sim (the sim tabletop with the board) or realsense[:SERIAL]"),
    out: Path = typer.Option(..., "--out", help="calibration file to write (JSON, metres)"),
    poses: Optional[Path] = typer.Option(
        None,
        "--poses",
        help="poses file: JSON list of position_m/rpy_deg objects, or calibrate/verify lists (docs/calibration.md)",
    ),
    setup: str = typer.Option("eye_to_hand", "--setup", help="eye_to_hand (board on the tool) or eye_in_hand"),
    method: str = typer.Option("PARK", "--method", help="TSAI, PARK, HORAUD, ANDREFF or DANIILIDIS"),
    board: str = typer.Option(
        "5x7:0.04:0.03:DICT_5X5_100",
        "--board",
        help="SXxSY:SQUARE_M:MARKER_M:DICT, sizes as measured on the print, metres",
    ),
    verify: bool = typer.Option(False, "--verify", help="check the result at poses not used in the solve"),
    centre: Optional[tuple[float, float, float]] = typer.Option(
        None, "--centre", help="X Y Z (m, base frame): centre of the generated pose set"
    ),
    settle_s: float = typer.Option(0.5, "--settle-s", help="wait after each motion before reading frames, s"),
    min_poses: int = typer.Option(6, "--min-poses", help="detected poses needed for a solve"),
    max_residual_mm: float = typer.Option(15.0, "--max-residual-mm", help="fail when the mean residual is above"),
    time_scale: float = typer.Option(1.0, "--time-scale", help="sim arm motion-time multiplier (real arm: ignored)"),
) -> None:
    """Move the arm through a pose set, detect the ChArUco board, solve hand-eye and write the file.

    Prints JSON: method, setup, transform, residual_mm and residual_deg (mean, max, per pose),
    skipped poses, verify (error_mm mean and max) and the file written.

    Exit 2: bad input (board, poses file, setup, method, a pose outside the workspace); nothing moved.

    Exit 1: the run failed (too few detections, residuals too large, robot or camera error); no
    file is written unless the solve succeeded.
    """
    from pointlab.robot.errors import RobotError, UnsafeTargetError

    from pointlab.bridge.calibration.procedure import (
        CalibrateOptions,
        CalibrationFailedError,
        CalibrationInputError,
        calibrate,
        parse_board_spec,
    )
    from pointlab.perception.errors import CameraSourceError, PerceptionError

    if settle_s < 0 or time_scale < 0:
        fail("--settle-s and --time-scale must be >= 0")
    try:
        options = CalibrateOptions(
            setup=setup,
            method=method.upper(),
            board=parse_board_spec(board),
            settle_s=settle_s,
            min_poses=min_poses,
            max_residual_mm=max_residual_mm,
            verify=verify,
        )
    except CalibrationInputError as e:
        fail(str(e))
    if out.parent and not out.parent.is_dir():
        fail(f"--out: folder {out.parent} does not exist")
    try:
        run = calibrate(robot, camera, out, options, poses_path=poses, centre_m=centre, time_scale=time_scale)
    except (CalibrationInputError, UnsafeTargetError) as e:
        fail(str(e), 2)
    except CalibrationFailedError as e:
        fail(str(e), 1)
    except (RobotError, CameraSourceError, PerceptionError, ConnectionError, TimeoutError) as e:
        fail(f"{type(e).__name__}: {e}", 1)
    print_json(run.to_dict())


@app.command("calibrate-check")
def calibrate_check_cmd(
    robot: str = typer.Option(..., "--robot", help="sim or xarm:IP[:PORT]"),
    camera: str = typer.Option(..., "--camera", help="sim (the sim camera over a board on the table) or realsense"),
    calibration: Path = typer.Option(..., "--calibration", help="eye_to_hand calibration file to check"),
    board: str = typer.Option("5x7:0.04:0.03:DICT_5X5_100", "--board", help="SXxSY:SQUARE_M:MARKER_M:DICT"),
    hover_mm: float = typer.Option(10.0, "--hover-mm", help="TCP height above each corner, mm"),
    settle_s: float = typer.Option(0.5, "--settle-s", help="wait at each corner, s"),
    time_scale: float = typer.Option(1.0, "--time-scale", help="sim arm motion-time multiplier (real arm: ignored)"),
) -> None:
    """With the board flat on the table, hover the TCP --hover-mm above its four outer corners as the
    calibration maps them; check the gap under the TCP by eye or with a gauge.

    Prints JSON: hover_mm, board_tilt_deg, and per corner the base-frame corner, the hover target
    and the TCP pose the arm reported. Exit 2: bad input (file, board, a waypoint outside the
    workspace; nothing moved). Exit 1: board not detected, robot or camera error.
    """
    from pointlab.robot.errors import RobotError, UnsafeTargetError

    from pointlab.bridge.calibration.procedure import (
        CalibrationFailedError,
        CalibrationInputError,
        check_calibration,
        parse_board_spec,
    )
    from pointlab.perception.errors import CalibrationFileError, CameraSourceError, PerceptionError

    if not 0 < hover_mm < 100 or settle_s < 0 or time_scale < 0:
        fail("need 0 < --hover-mm < 100, --settle-s >= 0, --time-scale >= 0")
    try:
        spec = parse_board_spec(board)
        result = check_calibration(robot, camera, calibration, spec, hover_mm / 1000.0, settle_s, time_scale)
    except (CalibrationInputError, CalibrationFileError, UnsafeTargetError) as e:
        fail(str(e), 2)
    except CalibrationFailedError as e:
        fail(str(e), 1)
    except (RobotError, CameraSourceError, PerceptionError, ConnectionError, TimeoutError) as e:
        fail(f"{type(e).__name__}: {e}", 1)
    print_json(result)
