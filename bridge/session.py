"""``start_session``: the whole Point-Act system in one process (``pointlab act`` and the tests).

What it starts, in order, from one ``SessionConfig``:

1. a simulated world (``bridge.worlds``: the registered class that claims the camera's or the
   robot's type, e.g. sim_mock's ``sim``) when the camera or the robot is simulated;
2. that world's sim model server when the agents config has ``base_url = "sim"`` agents, and the
   agents (``benchmark.agents_config.load_agents``);
3. one rclpy context with a ``MultiThreadedExecutor`` in a background thread (``ros.host.RosHost``),
   and in it the camera, targeting, pointing and arm nodes and the trial ports' node
   (``ros.trial_ports.RosTrialPorts``);
4. the SQLite store (``bridge.study.store.Store``) when ``db_path`` is given;
5. the station (``bridge.trials.station.Station``): the trial machine over those ports, the scene
   port of the world (``bridge.trials.scene``), the free-space port (``bridge.trials.storage``), the
   recorder and the store.

Calibration: an explicit file or ``Calibration`` always wins. ``calibration="table"`` fits a
stand-in from the camera's first frame (``bridge.calibration.table``: the recorded table becomes the
sim table, z = 0); it is the default for a recording (``replay:``/``bag:``) driven with a simulated
arm, since the sim camera's pose does not match a real recording (on uoc_tabletop frame 000003, 17
of a 16x12 grid of pixels become valid targets with the sim pose and 38 with the table fit; the
rest are out of the Lite 6's reach either way). Otherwise a session with a sim world uses the
world's exact ``T_base_camera``. (The sim oracle has no ground truth for real frames; the human
reference and real models still work there.) A real camera with a real arm needs a file.

``Session.close()`` stops everything in reverse order and is safe to call twice.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pointlab.perception.extrinsics import Calibration, load_camera_to_base
from pointlab.robot.workspace import Workspace

from pointlab.bridge.recording.layout import RecordingConfig
from pointlab.bridge.trials.machine import TrialRules
from pointlab.bridge.worlds import spec_kind, world_class_for
from pointlab.bridge.errors import BridgeError

__all__ = ["Session", "SessionConfig", "start_session", "SessionError"]

log = logging.getLogger(__name__)


class SessionError(BridgeError, RuntimeError):
    """The session could not be started (bad spec, missing calibration, camera or arm not reachable)."""


@dataclass
class Session:
    """A running Point-Act system. Attributes are the live parts (``None`` when not used)."""

    station: Any
    ports: Any  # the ``ros.trial_ports.RosTrialPorts``
    store: Any
    host: Any
    agents: dict
    calibration: Calibration
    world: Any = None  # the session's ``bridge.worlds.World`` when the camera or robot is simulated
    recorder: Any = None  # the ``ros.recorder.TrialRecorder`` when trials are recorded
    camera_node: Any = None
    arm_node: Any = None
    pointing_node: Any = None
    targeting_node: Any = None
    model_server_url: str | None = None
    camera_spec: str = ""
    robot_spec: str = ""
    world_drives_scene: bool = False  # both camera and arm are the world's: it can restore the scene
    # trials the last session began and never stored, closed at this start (bridge.study.interrupted)
    interrupted: list = field(default_factory=list)
    foxglove: Any = None  # the ``ros.foxglove_live.FoxgloveLive`` server when asked for
    _closers: list[Callable[[], None]] = field(default_factory=list, repr=False)
    _closed: bool = field(default=False, repr=False)

    @property
    def parts(self):
        """The running system as the web app uses it (``bridge.trials.station.PointActParts``)."""
        from pointlab.bridge.trials.station import PointActParts

        return PointActParts(self.station, self.ports.human)

    def wait_ready(self, timeout_s: float = 10.0) -> bool:
        """Wait until a colour frame and an arm state have arrived; ``False`` on timeout."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.ports.ready():
                return True
            time.sleep(0.02)
        return False

    def close(self) -> None:
        """Shut everything down (reverse start order). Idempotent; logs, never raises."""
        if self._closed:
            return
        self._closed = True
        for fn in reversed(self._closers):
            try:
                fn()
            except Exception:
                log.exception("closing %s failed", getattr(fn, "__qualname__", fn))
        self._closers.clear()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SessionConfig(BaseModel):
    """Everything ``start_session`` needs, validated on construction (bad values raise
    ``pydantic.ValidationError``, a ``ValueError``).

    Attributes:
        camera: ``sim``, ``replay:DIR``, ``realsense[:SERIAL]``, ``bag:PATH`` (``perception.make_camera``).
        robot: ``sim`` or ``xarm:IP[:PORT]`` (``robot.make_arm``).
        agents_config: agents TOML (``None``: the default sim-oracle, sim-noisy, human).
        db_path: SQLite file of the store (``None``: no store; ``Session.store`` is ``None``).
        calibration: ``T_base_camera`` file, a ``Calibration``, or ``"table"`` (module docstring);
            ``None``: the sim world's exact pose, or ``"table"`` for a recording with a sim arm.
        time_scale: the sim arm's motion-time multiplier (tests: ~0.02; ignored for a real arm).
        workspace: the envelope, shared by targeting and the arm.
        camera_fps: upper bound of the camera node's rate, frames per second.
        timeouts: per-stage timeouts of the trial machine (``bridge.trials.machine.TrialRules``).
        seed: seeds the station's reveal-time draws (``None``: from the OS).
        domain_id: ROS domain id (``None``: ``ROS_DOMAIN_ID`` of the environment).
        ready_timeout_s: how long to wait for the first frame and arm state (a warning, not an error).
        graph_check_s: how long to watch DDS discovery for another session on the same ROS graph
            (``ros.graph_guard``) before the arm is connected; 0 skips the check.
        recording: per-trial recordings (MCAP + clip beside the store, or in ``recording.dir``,
            docs/recording.md); ``None`` records nothing. Without a ``db_path`` or a ``recording.dir``
            nothing is recorded either (no folder to put them).
        foxglove_port: serve the topics live over the Foxglove WebSocket protocol on 127.0.0.1 at
            this port (``bridge.ros.foxglove_live``; 0: any free port); ``None``: no server.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    camera: str = "sim"
    robot: str = "sim"
    agents_config: Path | None = None
    db_path: Path | None = None
    calibration: Calibration | Path | Literal["table"] | None = None
    time_scale: float = Field(1.0, ge=0, allow_inf_nan=False)
    workspace: Workspace = Field(default_factory=Workspace)
    camera_fps: float = Field(30.0, gt=0, allow_inf_nan=False)
    timeouts: TrialRules = Field(default_factory=TrialRules)
    seed: int | None = None
    domain_id: int | None = Field(None, ge=0, le=232)
    ready_timeout_s: float = Field(15.0, ge=0, allow_inf_nan=False)
    graph_check_s: float = Field(1.0, ge=0, allow_inf_nan=False)
    recording: RecordingConfig | None = Field(default_factory=RecordingConfig)
    foxglove_port: int | None = Field(None, ge=0, le=65535)

    @field_validator("calibration", mode="before")
    @classmethod
    def _table_or_path(cls, v: Any) -> Any:
        return "table" if isinstance(v, str) and v == "table" else v


def _calibration(
    config: SessionConfig, world, sim_camera: bool, sim_robot: bool, make_probe: Callable[[], Any]
) -> Calibration:
    calibration = config.calibration
    if calibration is None and spec_kind(config.camera) in ("replay", "bag") and sim_robot:
        calibration = "table"
    if isinstance(calibration, Calibration):
        return calibration
    if calibration == "table":
        from pointlab.bridge.calibration.table import fit_table_calibration

        try:
            with make_probe() as probe:
                cal = fit_table_calibration(probe.read())
        except ValueError as e:
            raise SessionError(f"calibration 'table': {e}") from e
        log.info("table-fit calibration: %s", cal.residuals)
        return cal
    if calibration is not None:
        return load_camera_to_base(calibration)
    if sim_camera:  # the simulated camera's exact pose in the world's base frame
        return world.calibration()
    raise SessionError(
        "a real camera with a real robot needs a calibration file (--calibration FILE, see docs/perception.md)"
    )


def _sim_agents(config) -> bool:
    from pointlab.benchmark.agents_config import SIM_BASE_URL, load_agents_config

    return any(a.base_url == SIM_BASE_URL for a in load_agents_config(config).agents)


def start_session(config: SessionConfig = SessionConfig(), *, agents: dict | None = None) -> Session:
    """Start the Point-Act node set, the runner and the store in this process.

    Args:
        config: what to start (``SessionConfig``).
        agents: already built agents (name -> ``Agent``) used instead of ``config.agents_config``.

    Raises:
        SessionError: a part could not start (the message says which), or another session or driver
            is on the same ROS graph; everything already started is shut down first.
        CalibrationFileError, AgentsConfigError, CameraSourceError: bad inputs, raised before any ROS work.

    One session per ROS domain on this machine: the domain's lock (``ros.domain_lock``) is taken first
    and held until ``Session.close()``; a second session on the same domain fails at once.
    """
    from pointlab.bridge.ros.domain_lock import DomainBusy, DomainLock

    try:  # first of all: a second session on this domain must never open the first one's camera or arm
        lock = DomainLock(config.domain_id)
    except DomainBusy as e:
        raise SessionError(str(e)) from e
    try:
        session = _start(config, agents, lock)
    except BaseException:
        lock.release()
        raise
    if not session.wait_ready(config.ready_timeout_s):
        log.warning("session not ready after %.0f s (no colour frame or no arm state yet)", config.ready_timeout_s)
    return session


def _start(config: SessionConfig, agents: dict | None, lock) -> Session:
    from pointlab.benchmark.agents import HumanAgent
    from pointlab.perception.camera import make_camera
    from pointlab.robot.arm import Arm, MotionConfig, make_arm

    world_cls = world_class_for(config.camera, config.robot)
    world = world_cls() if world_cls is not None else None
    sim_camera = world is not None and spec_kind(config.camera) in world.camera_kinds
    sim_robot = world is not None and spec_kind(config.robot) in world.robot_kinds

    def new_camera():
        if sim_camera:
            assert world is not None  # sim_camera says the world makes the camera
            return world.camera(config.camera, fps=config.camera_fps)
        return make_camera(config.camera)

    cam = new_camera()  # a bad camera spec is a CameraSourceError before anything else
    cal = _calibration(config, world, sim_camera, sim_robot, new_camera)
    session = Session(
        station=None,
        ports=None,
        store=None,
        host=None,
        agents={},
        calibration=cal,
        world=world,
        camera_spec=config.camera,
        robot_spec=config.robot,
        world_drives_scene=sim_camera and sim_robot,
    )
    session._closers.append(lock.release)  # released last
    try:
        if sim_robot:
            assert world is not None  # sim_robot says the world drives the arm
            # the gripper's settle wait is simulated time too
            motion = replace(MotionConfig(), grip_settle_s=MotionConfig().grip_settle_s * config.time_scale)
            arm = Arm(world.arm_driver(config.robot, time_scale=config.time_scale), config.workspace, motion)
        else:
            arm = make_arm(config.robot, config.workspace)

        if agents is None:
            from pointlab.benchmark.agents_config import load_agents

            sim_url = None
            if _sim_agents(config.agents_config):
                if world is None:
                    raise SessionError("the agents config has sim agents but neither camera nor robot is simulated")
                sim_url, stop_server = world.serve_models()
                session.model_server_url = sim_url
                session._closers.append(stop_server)
            agents = load_agents(config.agents_config, sim_base_url=sim_url)
        session.agents = agents

        if config.db_path is not None:
            from pointlab.bridge.study.store import Store

            from pointlab.bridge.recording.layout import RecordingConfig
            from pointlab.bridge.study.interrupted import close_interrupted

            session.store = Store(config.db_path)
            session._closers.append(session.store.close)
            # before any new trial: a killed session's unfinished trials, with their recordings recovered
            session.interrupted = close_interrupted(
                session.store, (config.recording or RecordingConfig()).resolved_dir(config.db_path)
            )
            # and its pairwise episodes cut between their halves: void, their slots offered again
            session.store.close_unfinished_episodes()

        from pointlab.bridge.ros.arm_node import ArmNode
        from pointlab.bridge.ros.camera_node import CameraNode
        from pointlab.bridge.ros.host import RosHost
        from pointlab.bridge.ros.pointing_node import PointingNode
        from pointlab.bridge.ros.targeting_node import TargetingNode

        host = RosHost(domain_id=config.domain_id)
        session.host = host
        session._closers.append(host.close)
        ctx = host.context
        session.camera_node = host.add(CameraNode(cam, context=ctx, max_fps=config.camera_fps))
        # the camera node is this session's own (its QoS is known): no QoS event handlers to poll
        session.targeting_node = host.add(TargetingNode(cal, config.workspace, context=ctx, watch_camera_qos=False))
        session.pointing_node = host.add(PointingNode(agents, context=ctx, watch_camera_qos=False))
        nonce = secrets.token_hex(8)  # the arm node takes commands from this session's runner only
        session.arm_node = host.add(ArmNode(arm, context=ctx, session=nonce))
        humans = [n for n, a in agents.items() if isinstance(a, HumanAgent)]
        from pointlab.bridge.ros.trial_ports import RosRecorderPort, RosTrialPorts

        session.ports = RosTrialPorts(
            host,
            session=nonce,
            human=agents[humans[0]] if humans else None,
            human_agent_names=humans,
            watch_camera_qos=False,
        )
        session._closers.append(session.ports.close)
        session._closers.append(lambda: _close_agents(session.pointing_node, agents))
        host.start()
        recorder = None
        # a folder for the recordings: beside the store, or the one given (a station has no study store)
        if config.recording is not None and (config.db_path is not None or config.recording.dir is not None):
            from pointlab.bridge.ros.recorder import TrialRecorder

            from pointlab.bridge.recording.static_tf import StaticTransform

            # every recording carries the camera's pose in the base frame, for a 3D viewer
            session.recorder = TrialRecorder(
                host,
                config.recording,
                db_path=config.db_path,
                static_transforms=[StaticTransform.of_calibration(session.calibration)],
            )
            session._closers.append(session.recorder.close)  # before the host goes
            recorder = RosRecorderPort(session.recorder)
        if config.foxglove_port is not None:
            from pointlab.bridge.recording.static_tf import StaticTransform
            from pointlab.bridge.ros.foxglove_live import FoxgloveLive

            try:
                session.foxglove = FoxgloveLive(
                    host,
                    port=config.foxglove_port,
                    static_transforms=[StaticTransform.of_calibration(session.calibration)],
                )
            except RuntimeError as e:
                raise SessionError(str(e)) from e
            session._closers.append(session.foxglove.close)  # before the host goes
        session.station = _station(config, session, world if sim_robot else None, sim_camera, humans, recorder)
        if config.graph_check_s > 0:
            from pointlab.bridge.ros.graph_guard import GraphClash, wait_for_clashes

            try:  # before the arm is connected: a second session must never reach the first one's robot
                wait_for_clashes(host.nodes, config.graph_check_s)
            except GraphClash as e:
                raise SessionError(str(e)) from e
        try:
            session.arm_node.start()
        except Exception as e:
            raise SessionError(f"robot {config.robot!r} did not come up: {e}") from e
        session._closers.append(session.arm_node.stop)
        try:
            session.camera_node.start()
        except Exception as e:
            raise SessionError(f"camera {config.camera!r} did not start: {e}") from e
        session._closers.append(session.camera_node.stop)
    except BaseException:
        session.close()
        raise
    return session


def _station(config: SessionConfig, session: Session, world, sim_camera: bool, humans: list[str], recorder):
    """The station of a session: the trial machine over the session's ports."""
    from pointlab.bridge.recording.layout import default_recordings_dir
    from pointlab.bridge.trials.ports import Ports
    from pointlab.bridge.trials.scene import ManualScene, WorldScene
    from pointlab.bridge.trials.station import Station
    from pointlab.bridge.trials.storage import DiskStorage

    scene = WorldScene(world, reads_frames=sim_camera) if world is not None else ManualScene()
    where = () if config.db_path is None else (config.db_path, default_recordings_dir(config.db_path))
    store = None
    if session.store is not None:
        from pointlab.bridge.study.trial_store import StudyStorePort

        store = StudyStorePort(session.store)
    p = session.ports
    ports = Ports(
        agent=p.pointing,
        targeting=p.pointing,
        arm=p.arm,
        camera=p.camera,
        storage=DiskStorage(*where),
        scene=scene,
        recorder=recorder,
        store=store,
    )
    station = Station(ports, list(session.agents), human_agents=humans, rules=config.timeouts, seed=config.seed)
    station.sync_belief()
    return station


def _close_agents(pointing_node, agents: dict) -> None:
    """Cancel human requests and close the agents' HTTP clients on the loop they were used on."""
    import asyncio

    for a in agents.values():
        cancel = getattr(a, "cancel_all", None)
        if cancel is not None:
            cancel()
    loop = getattr(pointing_node, "_loop", None)
    if loop is None or not loop.is_running():
        return

    async def _all() -> None:
        for a in agents.values():
            try:
                await a.aclose()
            except Exception:
                log.debug("closing agent %s failed", a, exc_info=True)

    try:
        asyncio.run_coroutine_threadsafe(_all(), loop).result(timeout=5.0)
    except Exception:
        log.debug("closing agents timed out", exc_info=True)
