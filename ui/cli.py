"""The ui package's commands, registered as the ``ui`` entry point of the ``pointlab.cli`` group
(see ``pointlab.benchmark.clikit``): the commands that serve a web app.

- ``pointlab act [--camera ...] [--robot ...] [--agents FILE] [--db FILE] [--host H] [--port P]``
  starts the Point-Act session and its web app and prints the operator URL;
- ``pointlab bench arena``: Point-Battle (battle page, leaderboard, human baseline);
- ``pointlab pinpoint study``: the PinpointQA human localization study page (App. D).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Optional

import typer

from pointlab.benchmark.clikit import SubApp, fail
from pointlab.bridge.act_commands import CAL_HELP, CAMERA_HELP, ROBOT_HELP

__all__ = ["sub", "app"]

sub = SubApp("ui")
act_app, bench_app, pinpoint_app = sub.group("act"), sub.group("bench"), sub.group("pinpoint")


def app() -> SubApp:
    """This package's sub-app (its commands are defined in this module and ``perf_commands``)."""
    from . import perf_commands  # noqa: F401 - registers ``pointlab perf loop``

    return sub


@act_app.callback(invoke_without_command=True)
def act(
    ctx: typer.Context,
    camera: str = typer.Option("sim", "--camera", help=CAMERA_HELP),
    robot: str = typer.Option("sim", "--robot", help=ROBOT_HELP),
    agents: Optional[Path] = typer.Option(None, "--agents", help="agents TOML (default: sim-oracle, sim-noisy, human)"),
    db: Path = typer.Option(Path("pointlab-act.sqlite"), "--db", help="SQLite file of studies, trials and surveys"),
    host: str = typer.Option("127.0.0.1", "--host", help="address the web app binds to"),
    port: int = typer.Option(8000, "--port", help="port of the web app"),
    calibration: Optional[str] = typer.Option(None, "--calibration", help=CAL_HELP),
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
    from pointlab.bridge.act_commands import start_or_fail

    from .app import UiSettings, create_app
    from .serve import check_port, public_url as url_of, serve

    if operator_token is not None and len(operator_token) < 8:
        fail("--operator-token must be at least 8 characters (it is the operator console's password)")
    check_port(host, port)
    token = operator_token or secrets.token_urlsafe(16)
    session = start_or_fail(camera, robot, agents, db, calibration, time_scale)
    try:
        app = create_app(session.parts, session.store, operator_token=token,
                         settings=UiSettings(public_url=public_url))
        serve(app, host, port, [
            f"Point-Act session: camera={camera} robot={robot} agents={', '.join(session.agents)} db={db}",
            f"Operator console: {url_of(host, port)}/operator#token={token}",
            "Invite participants from the console: create a study, then 'Invite participant' gives a link to send.",
            "Stop with Ctrl-C."])
    finally:
        session.close()


@bench_app.command("arena")
def bench_arena_cmd(
    agents: Optional[Path] = typer.Option(None, "--agents", help="agents TOML (default: embedded sim agents)"),
    db: Path = typer.Option(Path("arena.db"), "--db", help="SQLite file for battles and votes"),
    images: Optional[Path] = typer.Option(None, "--images", help="folder of curated images"),
    data: Optional[Path] = typer.Option(None, "--data", help="Point-Bench dataset for the human baseline page"),
    sampler: str = typer.Option("uniform", "--sampler", help="uniform | adaptive"),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8010, "--port"),
) -> None:
    """Serve Point-Battle (battle page /, /leaderboard, /human)."""
    from .serve import check_port, public_url, serve

    check_port(host, port)
    if images is not None and not images.is_dir():
        fail(f"--images {images} is not a folder of curated images")
    from pointlab.benchmark.agents_config import SIM_BASE_URL, AgentsConfigError, load_agents, load_agents_config
    from pointlab.benchmark.pointbench import DatasetError, load_dataset

    from .arena import ArenaSettings, create_arena_app

    stop = None
    try:
        items = load_dataset(data) if data else []
        settings = ArenaSettings(sampler=sampler)
        sim_url = None
        if any(a.base_url == SIM_BASE_URL for a in load_agents_config(agents).agents):
            # sim agents (a test double reached through the agents config and the sim_models
            # registry): answer from the dataset's masks when one is given, else from a sim scene
            from pointlab.benchmark.sim_models import SimModelsUnavailable, serve_sim_models

            try:
                sim_url, stop = serve_sim_models("dataset", items) if items else serve_sim_models("scene")
            except SimModelsUnavailable as e:
                fail(str(e), 1)
        ags = {n: a for n, a in load_agents(agents, sim_base_url=sim_url).items() if hasattr(a, "point_format")}
        arena = create_arena_app(ags, db_path=db, curated_dir=images, settings=settings, bench_items=items)
    except (AgentsConfigError, DatasetError, ValueError) as e:
        if stop:
            stop()
        fail(str(e))
    try:
        base = public_url(host, port)
        serve(arena, host, port, [
            f"Point-Battle: {base}/  (leaderboard {base}/leaderboard, human baseline {base}/human)",
            f"agents: {', '.join(ags)}; votes in {db} (export: {base}/api/votes.jsonl)",
            "Stop with Ctrl-C."])
    finally:
        if stop:
            stop()


@pinpoint_app.command("study")
def pinpoint_study_cmd(
    samples: Path = typer.Option(..., "--samples", help="samples JSON (released demo_samples.json shape)"),
    responses: Path = typer.Option(..., "--responses", help="JSONL the answers are appended to (pointlab score localization --pred)"),
    setting: str = typer.Option("gt", "--setting", help="unguided, model or gt (App. D.1)"),
    model_fsd: Optional[Path] = typer.Option(None, "--model-fsd", help='model descriptions JSONL {"id", "prediction"} for --setting model'),
    port: int = typer.Option(8020, "--port", help="port on 127.0.0.1"),
) -> None:
    """Serve the human localization study page (PinpointQA App. D) on http://127.0.0.1:PORT/."""
    from .serve import check_port, public_url, serve
    from .localization import StudyDataError, create_localization_app

    check_port("127.0.0.1", port)
    try:
        web = create_localization_app(samples, responses, setting=setting, model_fsd_path=model_fsd)
    except (StudyDataError, ValueError) as e:
        fail(str(e))
    serve(web, "127.0.0.1", port, [f"localization study on {public_url('127.0.0.1', port)}/ (answers -> {responses})"])
