"""``pointlab act station``: one robot station joined to a study server (docs/stations.md).

``pointlab act server`` (the study server with its web app) is the ``ui`` package's.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Optional

import typer

from pointlab.benchmark.clikit import fail, require_writable_file, unwritable, wait_until_stopped

from pointlab.bridge.commands import sub

act_app = sub.group("act")


@act_app.command("station")
def act_station(
    connect: str = typer.Option(..., "--connect", help="the study server's Zenoh endpoint, e.g. tcp/10.0.0.5:7447"),
    name: str = typer.Option(..., "--name", help="this station's name (letters, digits, - and _; one per robot)"),
    camera: str = typer.Option("sim", "--camera", help="sim, replay:DIR, realsense[:SERIAL], bag:PATH"),
    robot: str = typer.Option("sim", "--robot", help="sim or xarm:IP[:PORT]"),
    agents: Optional[Path] = typer.Option(None, "--agents", help="agents TOML (default: sim-oracle, sim-noisy, human)"),
    scene: str = typer.Option("tabletop", "--scene", help="the scene this station sets up (a study's scene)"),
    journal: Path = typer.Option(
        Path("pointlab-station.sqlite"),
        "--journal",
        help="SQLite file of this station's trials until the server has them",
    ),
    recordings: Optional[Path] = typer.Option(
        None,
        "--recordings",
        help="folder of this station's per-trial MCAP recordings (default: recordings/NAME beside --journal)",
    ),
    record: bool = typer.Option(True, "--record/--no-record", help="record each trial (MCAP + clip)"),
    calibration: Optional[str] = typer.Option(None, "--calibration", help="T_base_camera file (default: sim exact)"),
    time_scale: float = typer.Option(1.0, "--time-scale", min=0.0, help="sim arm motion-time multiplier"),
    camera_fps: float = typer.Option(10.0, "--camera-fps", min=0.1, max=90.0, help="camera node rate, frames/s"),
    live_hz: float = typer.Option(
        5.0, "--live-hz", min=0.0, max=30.0, help="live-view frames sent to the server per second"
    ),
    user: Optional[str] = typer.Option(
        None, "--user", envvar="POINTLAB_STATION_USER", help="Zenoh user name (default with a password: --name)"
    ),
    password: Optional[str] = typer.Option(
        None, "--password", envvar="POINTLAB_STATION_PASSWORD", help="Zenoh password (prefer the environment variable)"
    ),
    tls_ca: Optional[Path] = typer.Option(None, "--tls-ca", help="CA certificate of the server (a tls/ endpoint)"),
    domain_id: Optional[int] = typer.Option(
        None, "--domain-id", min=0, max=232, help="ROS domain of this station: 0-101 or 215-232"
    ),
    connect_timeout: float = typer.Option(
        20.0, "--connect-timeout", min=1.0, max=3600.0, help="seconds to reach the server at start (then exit 1)"
    ),
) -> None:
    """Run one robot station (camera, targeting, arm on its own ROS domain) for a study server.

    The station connects out to --connect (no open port needed here), announces itself and takes
    trials until Ctrl-C; its trials are kept in --journal until the server acknowledges them."""
    from pointlab.bridge.commands.act import start_or_fail
    from pointlab.bridge.recording.layout import default_recordings_dir
    from pointlab.bridge.stations.journal import Journal
    from pointlab.bridge.stations.station_node import StationNode
    from pointlab.bridge.stations.wire import ENDPOINT_RE, Offer, StationsError, check_name
    from pointlab.bridge.worlds import spec_kind

    try:
        check_name(name)
    except StationsError as e:
        fail(str(e), 2)
    if domain_id is not None and 101 < domain_id < 215:
        # ROS 2 on Linux: ids 0-101 and 215-232 keep DDS's ports out of the ephemeral range
        # (docs.ros.org, "The ROS_DOMAIN_ID")
        fail(f"--domain-id {domain_id}: ROS 2 domain ids on Linux are 0-101 or 215-232", 2)
    if not ENDPOINT_RE.match(connect):
        fail(f"--connect {connect!r}: a Zenoh endpoint with its port, such as tcp/HOST:7447", 2)
    if user is None and password is not None:
        user = name  # the server's access control knows a station by its name: they are one
    elif user is not None and user != name:
        fail(f"--user {user!r} is not the station's name {name!r}: a station logs in under its own name", 2)
    require_writable_file(journal, "--journal", sqlite=True)
    rec_dir = None
    if record:
        rec_dir = recordings if recordings is not None else default_recordings_dir(journal) / name
        if (why := unwritable(rec_dir)) is not None or rec_dir.is_file():
            fail(f"--recordings {rec_dir}: {why or 'is a file, not a folder'}", 2)
    session = start_or_fail(
        camera,
        robot,
        agents,
        None,
        calibration,
        time_scale,
        recordings_dir=rec_dir,
        camera_fps=camera_fps,
        domain_id=domain_id,
    )
    try:
        cal = "sim-exact" if calibration is None else hashlib.sha256(Path(calibration).read_bytes()).hexdigest()
        offer = Offer(
            name=name,
            scene=scene,
            arm=spec_kind(robot),
            camera=spec_kind(camera),
            sim=session.world_drives_scene,
            agents=list(session.agents),
            calibration=cal,
            automatic_reset=bool(session.station.ports.scene and session.station.ports.scene.automatic),
        )
        tls = {"root_ca_certificate": str(tls_ca)} if tls_ca else None
        try:
            node = StationNode(
                session.station,
                offer,
                Journal(journal, name, recordings_dir=rec_dir),
                connect=[connect],
                user=user,
                password=password,
                tls=tls,
                live_hz=live_hz,
                connect_timeout_s=connect_timeout,
                human=session.ports.human,
            )
        except StationsError as e:
            fail(str(e), 1)
        typer.echo(f"Station {name}: camera={camera} robot={robot} scene={scene} -> {connect} (pid {os.getpid()})")
        try:
            wait_until_stopped()
        finally:
            node.close()
    finally:
        session.close()
