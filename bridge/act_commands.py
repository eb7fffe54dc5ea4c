"""``pointlab act``: the Point-Act session (web app + node set), headless trials, single nodes.

- ``pointlab act [--camera ...] [--robot ...] [--agents FILE] [--db FILE] [--host H] [--port P]``
  starts the session and the web app and prints the operator URL;
- ``pointlab act trials --agent NAME [--instructions FILE.jsonl] --db FILE.sqlite`` runs scripted
  instructions without a browser and prints ``{"trials": [...], "success_rate": float}``;
- ``pointlab act node camera|pointing|targeting|arm`` runs one ROS 2 node alone (a lab can use
  realsense-ros or xarm_ros2 for the others; see docs/ros.md).
"""

from __future__ import annotations

import logging
import secrets
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from .cligroups import act_app, fail, print_json

log = logging.getLogger(__name__)

_CAMERA_HELP = "camera source: sim, replay:DIR (e.g. replay:../shared/data/rgbd/uoc_tabletop) or realsense[:SERIAL]"
_ROBOT_HELP = "robot: sim or xarm:IP[:PORT]"
_CAL_HELP = ("calibration file (T_base_camera), or 'table' (the recorded table becomes the sim table); default: "
             "'table' for replay/bag with the sim arm, the sim camera's exact pose for --camera sim")


def _start(camera: str, robot: str, agents: Optional[Path], db: Optional[Path], calibration: Optional[str],
           time_scale: float):
    from pointlab.benchmark.agents_config import AgentsConfigError
    from pointlab.perception.errors import PerceptionError

    from .session import SessionError, start_session

    try:
        return start_session(camera, robot, agents, db, calibration, time_scale)
    except (AgentsConfigError, PerceptionError, ValueError) as e:
        fail(str(e), 2)
    except SessionError as e:
        fail(str(e), 1)


@act_app.callback(invoke_without_command=True)
def act(
    ctx: typer.Context,
    camera: str = typer.Option("sim", "--camera", help=_CAMERA_HELP),
    robot: str = typer.Option("sim", "--robot", help=_ROBOT_HELP),
    agents: Optional[Path] = typer.Option(None, "--agents", help="agents TOML (default: sim-oracle, sim-noisy, human)"),
    db: Path = typer.Option(Path("pointlab-act.sqlite"), "--db", help="SQLite file of studies, trials and surveys"),
    host: str = typer.Option("127.0.0.1", "--host", help="address the web app binds to"),
    port: int = typer.Option(8000, "--port", help="port of the web app"),
    calibration: Optional[str] = typer.Option(None, "--calibration", help=_CAL_HELP),
    time_scale: float = typer.Option(1.0, "--time-scale", help="sim arm motion-time multiplier"),
    operator_token: Optional[str] = typer.Option(None, "--operator-token", envvar="POINTLAB_OPERATOR_TOKEN",
                                                 help="secret of the operator console (default: random)"),
    public_url: Optional[str] = typer.Option(None, "--public-url",
                                             help="base URL participants reach this server at (invite links), e.g. "
                                                  "https://robot.lab.example; default: the URL the operator uses"),
) -> None:
    """Start a Point-Act session (camera, agents, arm, web app) and print the operator URL.

    With no subcommand this is the default session: sim camera, sim arm, sim-oracle, sim-noisy and
    the human reference. Stop it with Ctrl-C.
    """
    if ctx.invoked_subcommand is not None:
        return
    from pointlab.ui.app import UiSettings, create_app

    from .serve import check_port, public_url as url_of, serve

    if operator_token is not None and len(operator_token) < 8:
        fail("--operator-token must be at least 8 characters (it is the operator console's password)")
    check_port(host, port)
    token = operator_token or secrets.token_urlsafe(16)
    session = _start(camera, robot, agents, db, calibration, time_scale)
    try:
        app = create_app(session.runner, session.store, operator_token=token,
                         settings=UiSettings(public_url=public_url))
        serve(app, host, port, [
            f"Point-Act session: camera={camera} robot={robot} agents={', '.join(session.agents)} db={db}",
            f"Operator console: {url_of(host, port)}/operator#token={token}",
            "Invite participants from the console: create a study, then 'Invite participant' gives a link to send.",
            "Stop with Ctrl-C."])
    finally:
        session.close()


@act_app.command("trials")
def trials_cmd(
    agent: str = typer.Option(..., "--agent", help="agent name from the agents config, e.g. sim-oracle"),
    camera: str = typer.Option("sim", "--camera", help=_CAMERA_HELP),
    robot: str = typer.Option("sim", "--robot", help=_ROBOT_HELP),
    instructions: Optional[Path] = typer.Option(None, "--instructions",
                                                help='JSONL of {"instruction", "expected"?} (default: the sim demo script)'),
    db: Path = typer.Option(..., "--db", help="SQLite file the trials are saved in"),
    agents: Optional[Path] = typer.Option(None, "--agents", help="agents TOML (default: sim-oracle, sim-noisy, human)"),
    calibration: Optional[str] = typer.Option(None, "--calibration", help=_CAL_HELP),
    time_scale: float = typer.Option(1.0, "--time-scale", help="sim arm motion-time multiplier (0.05: 20x faster)"),
) -> None:
    """Run scripted instructions through the ROS node set without a browser; print
    {"trials": [...], "success_rate": float} (success: the sim's judgement when known, else the
    robot outcome "done")."""
    from .headless import InstructionsError, demo_script, load_instructions, run_scripted_trials

    from pointlab.benchmark.agents_config import AgentsConfigError, load_agents_config

    try:
        script = load_instructions(instructions) if instructions is not None else demo_script()
        names = [a.name for a in load_agents_config(agents).agents]
    except (InstructionsError, AgentsConfigError) as e:
        fail(str(e), 2)
    if agent not in names:  # checked before anything starts
        fail(f"unknown agent {agent!r}; known: {', '.join(names)}", 2)
    session = _start(camera, robot, agents, db, calibration, time_scale)
    try:
        print_json(run_scripted_trials(session, agent, script))
    finally:
        session.close()


class NodeKind(str, Enum):
    camera = "camera"
    pointing = "pointing"
    targeting = "targeting"
    arm = "arm"


@act_app.command("node")
def node_cmd(
    which: NodeKind = typer.Argument(..., help="camera, pointing, targeting or arm"),
    camera: str = typer.Option("sim", "--camera", help=_CAMERA_HELP + " (camera node)"),
    robot: str = typer.Option("sim", "--robot", help=_ROBOT_HELP + " (arm node)"),
    agents: Optional[Path] = typer.Option(None, "--agents", help="agents TOML (pointing node; no sim agents alone)"),
    calibration: Optional[Path] = typer.Option(None, "--calibration", help="calibration file (targeting node; required)"),
    fps: float = typer.Option(30.0, "--fps", help="camera node: upper bound of the frame rate"),
) -> None:
    """Run one ROS 2 node alone until Ctrl-C (the others may be realsense-ros, xarm_ros2 or ours).

    In simulation each process has its own sim world: run the whole set with `pointlab act` instead."""
    from pointlab.benchmark.agents_config import AgentsConfigError
    from pointlab.perception.errors import PerceptionError
    from pointlab.robot.errors import RobotError

    try:
        if which is NodeKind.camera:
            from pointlab.perception.camera_node import main
            main(camera, fps)
        elif which is NodeKind.pointing:
            from .pointing_node import main
            main(str(agents) if agents else None)
        elif which is NodeKind.targeting:
            if calibration is None:
                fail("the targeting node needs --calibration FILE", 2)
            from .targeting_node import main
            main(str(calibration))
        else:
            from pointlab.robot.arm_node import main
            main(robot)
    except (AgentsConfigError, PerceptionError, ValueError) as e:
        fail(str(e), 2)
    except RobotError as e:
        fail(str(e), 1)
