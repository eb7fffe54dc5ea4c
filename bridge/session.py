"""``start_session``: the whole Point-Act system in one process (``pointlab act`` and the tests).

What it starts, in order:

1. a sim world (``sim_mock.world.SimWorld``, one per session) when the camera or the robot is ``sim``;
2. the sim model server (``sim_mock.model_server``, 127.0.0.1, a free port) when the agents config
   has ``base_url = "sim"`` agents, and the agents (``benchmark.agents_config.load_agents``);
3. one rclpy context with a ``MultiThreadedExecutor`` in a background thread (``RosHost``), and in it
   the camera, targeting, pointing and arm nodes and the ``RosTrialRunner``'s node;
4. the SQLite store (``bridge.store.Store``) when ``db_path`` is given.

Calibration: an explicit file or ``Calibration`` always wins. ``calibration="table"`` fits a
stand-in from the camera's first frame (``bridge.table_calibration``: the recorded table becomes the
sim table, z = 0); it is the default for a recording (``replay:``/``bag:``) driven with the sim
arm, since the sim camera's pose does not match a real recording (on uoc_tabletop frame 000003, 17
of a 16x12 grid of pixels become valid targets with the sim pose and 38 with the table fit; the
rest are out of the Lite 6's reach either way). Otherwise a session with a sim world uses the
world's exact ``T_base_camera``. (The sim oracle has no ground truth for real frames; the human
reference and real models still work there.) A real camera with a real arm needs a file.

``Session.close()`` stops everything in reverse order and is safe to call twice.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from pointlab.perception.extrinsics import Calibration, load_camera_to_base

__all__ = ["Session", "start_session", "SessionError"]

log = logging.getLogger(__name__)


class SessionError(RuntimeError):
    """The session could not be started (bad spec, missing calibration, camera or arm not reachable)."""


@dataclass
class Session:
    """A running Point-Act system. Attributes are the live parts (``None`` when not used)."""

    runner: Any
    store: Any
    host: Any
    agents: dict
    calibration: Calibration
    world: Any = None
    camera_node: Any = None
    arm_node: Any = None
    pointing_node: Any = None
    targeting_node: Any = None
    model_server_url: str | None = None
    camera_spec: str = ""
    robot_spec: str = ""
    _closers: list[Callable[[], None]] = field(default_factory=list, repr=False)
    _closed: bool = field(default=False, repr=False)

    def wait_ready(self, timeout_s: float = 10.0) -> bool:
        """Wait until the runner has a colour frame and an arm state; ``False`` on timeout."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.runner.ready():
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


def _resolve_calibration(calibration, world) -> Calibration:
    if isinstance(calibration, Calibration):
        return calibration
    if calibration is not None:
        return load_camera_to_base(calibration)
    if world is not None:
        return world.calibration()
    raise SessionError("a real camera with a real robot needs a calibration file (--calibration FILE, "
                       "see docs/perception.md)")


def _sim_agents(config) -> bool:
    from pointlab.benchmark.agents_config import SIM_BASE_URL, load_agents_config

    return any(a.base_url == SIM_BASE_URL for a in load_agents_config(config).agents)


def _start_model_server(world) -> tuple[str, Callable[[], None]]:
    from pointlab.sim_mock import model_server
    from pointlab.sim_mock.oracle import SceneOracle

    app = model_server.create_model_server(model_server.default_sim_models(SceneOracle(world)))
    return model_server.serve_in_thread(app)


def start_session(camera: str = "sim", robot: str = "sim", agents_config: str | Path | None = None,
                  db_path: str | Path | None = None, calibration: str | Path | Calibration | None = None,
                  time_scale: float = 1.0, *, agents: dict | None = None, workspace=None, camera_fps: float = 30.0,
                  timeouts=None, domain_id: int | None = None, ready_timeout_s: float = 15.0,
                  graph_check_s: float = 1.0) -> Session:
    """Start the Point-Act node set, the runner and the store in this process.

    Args:
        camera: ``sim``, ``replay:DIR`` or ``realsense[:SERIAL]`` (``perception.make_camera``).
        robot: ``sim`` or ``xarm:IP[:PORT]`` (``robot.make_arm``).
        agents_config: agents TOML (``None``: the default sim-oracle, sim-noisy, human).
        db_path: SQLite file of the store (``None``: no store; ``Session.store`` is ``None``).
        calibration: ``T_base_camera`` file or object, or ``"table"`` (see the module docstring).
        time_scale: the sim arm's motion-time multiplier (tests: ~0.01; ignored for a real arm).
        agents: already built agents (name -> ``Agent``) used instead of ``agents_config``.
        workspace: the envelope (default ``robot.Workspace()``), shared by targeting and the arm.
        camera_fps: upper bound of the camera node's rate.
        timeouts: ``ros_runner.RunnerTimeouts``.
        domain_id: ROS domain id (``None``: ``ROS_DOMAIN_ID`` of the environment).
        ready_timeout_s: how long to wait for the first frame and arm state (a warning, not an error).
        graph_check_s: how long to watch DDS discovery for another session on the same ROS graph
            (``bridge.graph_guard``) before the arm is connected; 0 skips the check.

    Raises:
        SessionError: a part could not start (the message says which), or another session or driver
            is on the same ROS graph; everything already started is shut down first.
        CalibrationFileError, AgentsConfigError, CameraSourceError: bad inputs, raised before any ROS work.
    """
    from pointlab.benchmark.agents import HumanAgent
    from pointlab.perception.camera import make_camera
    from pointlab.robot.arm import MotionConfig, make_arm
    from pointlab.robot.workspace import Workspace

    from .ros_runner import RosTrialRunner, RunnerTimeouts

    if not (isinstance(time_scale, (int, float)) and math.isfinite(time_scale) and time_scale >= 0):
        raise ValueError(f"time_scale must be a finite number >= 0, got {time_scale!r}")
    camera_kind = camera.partition(":")[0]
    robot_kind = robot.partition(":")[0]
    world = None
    if camera_kind == "sim" or robot_kind == "sim":
        from pointlab.sim_mock.world import SimWorld

        world = SimWorld()
    workspace = workspace or Workspace()
    if calibration is None and camera_kind in ("replay", "bag") and robot_kind == "sim":
        calibration = "table"
    if calibration is not None and str(calibration) == "table":
        from .table_calibration import fit_table_calibration

        probe = make_camera(camera, **({"world": world} if camera_kind == "sim" else {}))
        try:
            with probe:
                cal = fit_table_calibration(probe.read())
        except ValueError as e:
            raise SessionError(f"calibration 'table': {e}") from e
        log.info("table-fit calibration: %s", cal.residuals)
    else:
        cal = _resolve_calibration(calibration, world)

    session = Session(runner=None, store=None, host=None, agents={}, calibration=cal, world=world,
                      camera_spec=camera, robot_spec=robot)
    try:
        cam_kwargs = {"world": world} if camera_kind == "sim" else {}
        cam = make_camera(camera, **cam_kwargs)
        if robot_kind == "sim":
            # the gripper's settle wait is simulated time too
            motion = replace(MotionConfig(), grip_settle_s=MotionConfig().grip_settle_s * time_scale)
            arm = make_arm(robot, workspace, motion, world=world, time_scale=time_scale)
        else:
            arm = make_arm(robot, workspace)

        if agents is None:
            from pointlab.benchmark.agents_config import load_agents

            sim_url = None
            if _sim_agents(agents_config):
                if world is None:
                    raise SessionError("the agents config has sim agents but neither camera nor robot is sim")
                sim_url, stop_server = _start_model_server(world)
                session.model_server_url = sim_url
                session._closers.append(stop_server)
            agents = load_agents(agents_config, sim_base_url=sim_url)
        session.agents = agents

        if db_path is not None:
            from .store import Store

            session.store = Store(db_path)
            session._closers.append(session.store.close)

        from pointlab.perception.camera_node import CameraNode
        from pointlab.robot.arm_node import ArmNode

        from .pointing_node import PointingNode
        from .ros_host import RosHost
        from .targeting_node import TargetingNode

        host = RosHost(domain_id=domain_id)
        session.host = host
        session._closers.append(host.close)
        ctx = host.context
        session.camera_node = host.add(CameraNode(cam, context=ctx, max_fps=camera_fps))
        session.targeting_node = host.add(TargetingNode(cal, workspace, context=ctx))
        session.pointing_node = host.add(PointingNode(agents, context=ctx))
        session.arm_node = host.add(ArmNode(arm, context=ctx))
        humans = [n for n, a in agents.items() if isinstance(a, HumanAgent)]
        sim_judges = world is not None and robot_kind == "sim"
        session.runner = RosTrialRunner(host, list(agents), judge=world.judge if sim_judges else None,
                                        infer_expected=world.infer_expected if sim_judges and camera_kind == "sim" else None,
                                        human=agents[humans[0]] if humans else None, human_agent_names=humans,
                                        timeouts=timeouts or RunnerTimeouts())
        session._closers.append(session.runner.close)
        session._closers.append(lambda: _close_agents(session.pointing_node, agents))
        host.start()
        if graph_check_s > 0:
            from .graph_guard import GraphClash, wait_for_clashes

            try:  # before the arm is connected: a second session must never reach the first one's robot
                wait_for_clashes(host.nodes, graph_check_s)
            except GraphClash as e:
                raise SessionError(str(e)) from e
        try:
            session.arm_node.start()
        except Exception as e:
            raise SessionError(f"robot {robot!r} did not come up: {e}") from e
        session._closers.append(session.arm_node.stop)
        try:
            session.camera_node.start()
        except Exception as e:
            raise SessionError(f"camera {camera!r} did not start: {e}") from e
        session._closers.append(session.camera_node.stop)
    except BaseException:
        session.close()
        raise
    if not session.wait_ready(ready_timeout_s):
        log.warning("session not ready after %.0f s (no colour frame or no arm state yet)", ready_timeout_s)
    return session


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

