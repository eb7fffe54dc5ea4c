"""``pointlab act trials|node|export``: headless trials, single nodes and a study's export
(``pointlab act`` itself, the session with its web app, is in ``pointlab.ui.cli``).

- ``pointlab act trials --agent NAME [--instructions FILE.jsonl] --db FILE.sqlite`` runs scripted
  instructions without a browser and prints the summary (``bridge.trials.headless.summarize_trials``);
- ``pointlab act node camera|pointing|targeting|arm`` runs one ROS 2 node alone (a lab can use
  realsense-ros or xarm_ros2 for the others; see docs/ros.md);
- ``pointlab act export --db FILE --study N --out DIR`` writes the study's trial CSV, SUS CSV, clips
  and recordings into one folder (``bridge.study.export``; docs/recording.md).
"""

from __future__ import annotations

import logging
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from pointlab.benchmark.clikit import fail, print_json, require_writable_file

from pointlab.bridge.commands import sub
from pointlab.bridge.commands.stores import read_store

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

act_app = sub.group("act")

log = logging.getLogger(__name__)

CAMERA_HELP = (
    "camera source: sim, replay:DIR (e.g. replay:../shared/data/rgbd/uoc_tabletop), realsense[:SERIAL] "
    "or bag:PATH[#rate=R,loop=0|1] (a recording; default rate=1, loop=1; rate=max: unpaced)"
)
ROBOT_HELP = "robot: sim or xarm:IP[:PORT]"
CAL_HELP = (
    "calibration file (T_base_camera), or 'table' (the recorded table becomes the sim table); default: "
    "'table' for replay/bag with the sim arm, the sim camera's exact pose for --camera sim"
)


DEPTH_FPS_HELP = (
    "recorded aligned-depth frames per second, at most the colour's 5 (default 1); the capture the "
    "agent pointed on is always kept whole; 5 keeps every colour frame's depth, 3x larger bags "
    "(docs/recording.md)"
)


def _option_of(error: ErrorDetails, renames: dict[str, str] | None = None) -> str:
    """The command-line option a pydantic error is about (``--time-scale`` for ``time_scale``;
    ``renames`` where the field is not the option's name), or ``"session"`` for a model-level one."""
    field = str(error["loc"][0]) if error["loc"] else ""
    if not field:
        return "session"
    return (renames or {}).get(field, "--" + field.replace("_", "-"))


def recording_config(
    *, images: str = "compressed", image_fps: Optional[float] = None, depth_fps: Optional[float] = None
):
    """The ``RecordingConfig`` of a command's recording options (``--images``, ``--image-fps``,
    ``--depth-fps``; ``None``: the default), or a one-line error naming the option (exit 2)."""
    from pydantic import ValidationError

    from pointlab.bridge.recording.layout import RecordingConfig

    given = {k: v for k, v in (("images", images), ("image_fps", image_fps), ("depth_fps", depth_fps)) if v is not None}
    try:
        return RecordingConfig(**given)
    except ValidationError as e:
        first = e.errors()[0]
        fail(f"{_option_of(first)}: {first.get('ctx', {}).get('error') or first['msg']}", 2)


def start_or_fail(
    camera: str,
    robot: str,
    agents: Optional[Path],
    db: Optional[Path],
    calibration: Optional[str],
    time_scale: float,
    foxglove_port: Optional[int] = None,
    depth_fps: Optional[float] = None,
    recordings_dir: Optional[Path] = None,
    **fields,
):
    """``start_session`` for a command: bad input exits 2, a part that does not start exits 1.
    ``fields``: more ``SessionConfig`` fields (``act station``: ``camera_fps``, ``domain_id``), named
    in an error by their option (``--camera-fps``). ``recordings_dir``: record each trial there even
    without a ``db`` (a station's recordings beside its journal)."""
    from pydantic import ValidationError

    from pointlab.benchmark.agents_config import AgentsConfigError
    from pointlab.perception.errors import PerceptionError

    from pointlab.bridge.session import SessionConfig, SessionError, start_session

    if db is not None:
        require_writable_file(db, "--db", sqlite=True)  # before the sim, the camera or the arm start
    recording = recording_config(depth_fps=depth_fps)
    if recordings_dir is not None:
        recording = recording.model_copy(update={"dir": Path(recordings_dir)})
    try:
        config = SessionConfig(
            camera=camera,
            robot=robot,
            agents_config=agents,
            db_path=db,
            calibration=calibration,
            time_scale=time_scale,
            foxglove_port=foxglove_port,
            recording=recording,
            **fields,
        )
    except ValidationError as e:
        first = e.errors()[0]
        # name the option the user typed (--time-scale), not the config field (time_scale)
        fail(f"{_option_of(first, {'agents_config': '--agents', 'db_path': '--db'})}: {first['msg']}", 2)
    try:
        return start_session(config)
    except (AgentsConfigError, PerceptionError, ValueError) as e:
        fail(str(e), 2)
    except SessionError as e:
        fail(str(e), 1)


@act_app.command("trials")
def trials_cmd(
    agent: str = typer.Option(..., "--agent", help="agent name from the agents config, e.g. sim-oracle"),
    camera: str = typer.Option("sim", "--camera", help=CAMERA_HELP),
    robot: str = typer.Option("sim", "--robot", help=ROBOT_HELP),
    instructions: Optional[Path] = typer.Option(
        None, "--instructions", help='JSONL of {"instruction", "expected"?} (default: the sim demo script)'
    ),
    db: Path = typer.Option(..., "--db", help="SQLite file the trials are saved in"),
    agents: Optional[Path] = typer.Option(None, "--agents", help="agents TOML (default: sim-oracle, sim-noisy, human)"),
    calibration: Optional[str] = typer.Option(None, "--calibration", help=CAL_HELP),
    time_scale: float = typer.Option(1.0, "--time-scale", help="sim arm motion-time multiplier (0.05: 20x faster)"),
    max_repeats: int = typer.Option(
        2, "--max-repeats", min=0, help="runs of an aborted trial's instruction again, at most"
    ),
    repeat: int = typer.Option(
        1, "--repeat", min=1, max=1000, help="run the script this many times, the scene restored before each (sim only)"
    ),
    depth_fps: Optional[float] = typer.Option(None, "--depth-fps", help=DEPTH_FPS_HELP),
) -> None:
    """Run scripted instructions through the ROS node set without a browser; one progress line per
    trial on stderr, then print {"agent", "trials": [...], "success_rate", "successes", "judged",
    "aborted", "unjudged", "failure_stages" (failures only), "skipped" (with line and round),
    "stopped" (why the run ended early, else null)}. Each trial has its outcome (judged by the automatic
    check: the sim's physics state, else depth; a refusal is a failure), failure stage and recording;
    aborted trials are left out of the rate and repeated; a scripted place after a pick that held
    nothing is skipped as not applicable (docs/trials.md)."""
    from pointlab.bridge.trials.headless import InstructionsError, demo_script, load_instructions, run_scripted_trials

    from pointlab.benchmark.agents_config import AgentsConfigError, load_agents_config

    try:
        script = load_instructions(instructions) if instructions is not None else demo_script(camera, robot)
        names = [a.name for a in load_agents_config(agents).agents]
    except (InstructionsError, AgentsConfigError) as e:
        fail(str(e), 2)
    if agent not in names:  # checked before anything starts
        fail(f"unknown agent {agent!r}; known: {', '.join(names)}", 2)
    if repeat > 1:
        from pointlab.bridge.worlds import spec_kind, world_class_for

        world = world_class_for(camera, robot)
        if world is None or spec_kind(camera) not in world.camera_kinds or spec_kind(robot) not in world.robot_kinds:
            fail(
                "--repeat needs a simulated camera and arm (the scene is restored between runs); on real hardware "
                "run the script once per reset of the scene",
                2,
            )
    from pointlab.bridge.trials.station import StationBusy

    session = start_or_fail(camera, robot, agents, db, calibration, time_scale, depth_fps=depth_fps)
    try:
        out = run_scripted_trials(
            session.station, agent, script, max_repeats=max_repeats, progress=_print_progress, repeat=repeat
        )
    except ValueError as e:
        fail(str(e), 2)
    except (StationBusy, RuntimeError) as e:
        fail(f"the trials stopped: {e}", 1)
    finally:
        session.close()
    print_json(out)
    if out["stopped"]:
        fail(f"the trials stopped: {out['stopped']}", 1)


def _print_progress(p: dict) -> None:
    """One line on stderr per trial or skipped line: where the run is and the rate so far."""
    import sys

    where = f"round {p['round']} line {p['line']}/{p['of']}"
    if p["event"] in ("skipped", "released"):
        line = f"{where}  {p['agent']}  {p['event']}: {p['reason']}"
    else:
        if p["outcome"] == "aborted":
            what = f"aborted ({p['abort']}), repeated"
        else:
            what = p["outcome"] or "not judged"
            if p.get("failure_stage"):
                what += f" ({p['failure_stage']})"
        rate = f"{p['successes']}/{p['judged']} so far" if p["judged"] else "none judged yet"
        line = f"{where}  {p['agent']}  {p['action']}: {what}  [{rate}]"
    print(line, file=sys.stderr, flush=True)


class NodeKind(str, Enum):
    camera = "camera"
    pointing = "pointing"
    targeting = "targeting"
    arm = "arm"


@act_app.command("node")
def node_cmd(
    which: NodeKind = typer.Argument(..., help="camera, pointing, targeting or arm"),
    camera: str = typer.Option("sim", "--camera", help=CAMERA_HELP + " (camera node)"),
    robot: str = typer.Option("sim", "--robot", help=ROBOT_HELP + " (arm node)"),
    agents: Optional[Path] = typer.Option(None, "--agents", help="agents TOML (pointing node; no sim agents alone)"),
    calibration: Optional[Path] = typer.Option(
        None, "--calibration", help="calibration file (targeting node; required)"
    ),
    fps: float = typer.Option(30.0, "--fps", help="camera node: upper bound of the frame rate"),
) -> None:
    """Run one ROS 2 node alone until Ctrl-C (the others may be realsense-ros, xarm_ros2 or ours).

    In simulation each process has its own sim world: run the whole set with `pointlab act` instead."""
    from pointlab.benchmark.agents_config import AgentsConfigError
    from pointlab.perception.errors import PerceptionError
    from pointlab.robot.errors import RobotError

    try:
        if which is NodeKind.camera:
            from pointlab.bridge.ros.camera_node import main as camera_main

            camera_main(camera, fps)
        elif which is NodeKind.pointing:
            from pointlab.bridge.ros.pointing_node import main as pointing_main

            pointing_main(str(agents) if agents else None)
        elif which is NodeKind.targeting:
            if calibration is None:
                fail("the targeting node needs --calibration FILE", 2)
            from pointlab.bridge.ros.targeting_node import main as targeting_main

            targeting_main(str(calibration))
        else:
            from pointlab.bridge.ros.arm_node import main as arm_main

            arm_main(robot)
    except (AgentsConfigError, PerceptionError, ValueError) as e:
        fail(str(e), 2)
    except RobotError as e:
        fail(str(e), 1)


@act_app.command("recordings")
def recordings_cmd(
    db: list[Path] = typer.Option(
        ..., "--db", help="SQLite file whose trials record into the folder; repeat --db for every store that shares it"
    ),
    recordings: Optional[Path] = typer.Option(
        None, "--recordings", help="recordings folder (default: recordings/ beside the db)"
    ),
    check: bool = typer.Option(
        True,
        "--check",
        help="compare the folder with the stored trials (always done; the flag is for scripts that say so)",
    ),
    recover: bool = typer.Option(
        False,
        "--recover",
        help="store the trials a killed session left unfinished "
        "(aborted, interrupted) and rewrite every MCAP a killed "
        "writer left without its summary from its whole chunks",
    ),
    prune: bool = typer.Option(
        False,
        "--prune",
        help="delete the recordings no given store names (refused while another store beside the folder was not given)",
    ),
) -> None:
    """List the recordings no stored trial names (orphans, e.g. after a killed session), the trials
    whose recording is missing, the MCAPs that are not whole, and the trials a killed session left
    unfinished (``interrupted_pending``: a session's start stores them); --recover stores those
    (aborted, ``interrupted``, with their recovered recordings) and rewrites the cut MCAPs from their
    whole chunks (first), --prune deletes the orphans and the dead clips of killed trials. Every store
    beside the folder shares it
    (recordings/ is per directory): pass each with --db. Prints JSON; exits 1 when anything is still
    missing, truncated or orphaned, 2 on bad input (docs/recording.md)."""
    from pointlab.bridge.recording.check import check_recordings, other_stores, prune_orphans, recover_truncated
    from pointlab.bridge.recording.layout import default_recordings_dir
    from pointlab.bridge.study.store import Store, StoreError

    roots = {default_recordings_dir(d).resolve() for d in db}
    if recordings is None and len(roots) > 1:
        fail("these stores record into different folders; check one folder at a time or give --recordings", 2)
    root = recordings or default_recordings_dir(db[0])
    stores = []
    try:
        for d in db:
            try:
                stores.append(Store(d, create=False))
            except StoreError as e:
                fail(str(e), 2)
        others = other_stores(root, db)
        if prune and others:
            fail(
                f"{root} is shared with other stores beside it ({', '.join(others)}): their trials' recordings "
                "would look like orphans; pass each with --db too",
                2,
            )
        closed = None
        if recover:  # what a session's start does: the killed session's trials, stored and linked
            from pointlab.bridge.study.interrupted import close_interrupted

            closed = [item for store in stores for item in close_interrupted(store, root)]
        pending = [n["trial_uid"] for store in stores for n in store.unfinished_trials()]
        rows, where = [], {}
        for store in stores:
            for row in store.trials():
                rows.append(row)
                where[row["trial_uid"]] = (store, row["id"])
        found = check_recordings(rows, root)
        recovered = recover_truncated(found, where) if recover else None
        if recover:  # the stored records changed: read them again
            rows = [r for store in stores for r in store.trials()]
            found = check_recordings(rows, root)
        out = found.to_dict()
        out["other_stores"] = others
        out["interrupted_pending"] = pending
        if pending:
            out["ok"] = False
        if closed is not None:
            out["interrupted_closed"] = closed
        if recovered is not None:
            out["recovered"] = recovered
        if prune and (found.orphans or found.dead_clips):
            try:
                out["pruned_bytes"] = prune_orphans(found)
            except OSError as e:
                fail(f"pruning {root} failed: {e}", 1)
            out = {
                **out,
                **check_recordings(rows, root).to_dict(),
                "pruned": [o["uid"] for o in found.orphans] + [d["clip"] for d in found.dead_clips],
            }
    finally:
        for store in stores:
            store.close()
    print_json(out)
    if not out["ok"]:
        raise typer.Exit(1)


@act_app.command("export")
def export_cmd(
    db: str = typer.Option(..., "--db", help="the study's store: a SQLite file or a postgresql+psycopg URL"),
    study: int = typer.Option(..., "--study", min=1, help="study id (the operator console's study list)"),
    out: Path = typer.Option(..., "--out", help="folder to write (new or empty)"),
    recordings: Optional[Path] = typer.Option(
        None,
        "--recordings",
        help="recordings folder (default: recordings/ beside a SQLite db; a study server's: its --recordings)",
    ),
) -> None:
    """Write one study's trial CSV, SUS CSV, clips and MCAP recordings into one folder, with an
    export.json index; prints the index."""
    from pointlab.bridge.study.export import ExportError, export_study
    from pointlab.bridge.recording.layout import default_recordings_dir

    store = read_store(db, None)
    if recordings is None and "://" in db:
        store.close()
        fail("--recordings: give the study server's recordings folder (a PostgreSQL store has none beside it)", 2)
    try:
        print_json(export_study(store, study, out, recordings_dir=recordings or default_recordings_dir(db)))
    except ExportError as e:
        fail(str(e), 2)
    except OSError as e:
        fail(f"writing {out} failed: {e}", 1)
    finally:
        store.close()
