"""The station: one arm's trials, run by the trial machine over the ports, and what lasts between them.

``Station.run_trial`` drives ``bridge.trials.machine`` for one trial: it carries out each command
through the ports (``bridge.trials.ports``) and feeds back what they report as events until the
machine says ``ended``. Between trials the station keeps what the next trial needs: the holding
belief (``bridge.trials.belief``), whether the emergency stop is engaged, the reveal-time generator
(``bridge.trials.timing``) and the frames of recent trials. The browser session (``ui``), headless
trials (``pointlab act trials``), bag replay and the tests all call this one class; only the ports
differ (``bridge.ros.trial_ports`` over the ROS node set, ``sim_mock.scripted_station`` for tests).

Threading: ``run_trial``, ``release``, ``home`` and ``reset_block`` are coroutines of one event loop
at a time (one motion at a time, from any loop: a lock polled without blocking the loop);
``abort_current`` and ``emergency_stop`` may be called from any thread (a FastAPI worker) and reach
the running trial through its loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import random
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from pointlab.bridge.trials import machine as m
from pointlab.bridge.trials.belief import EMPTY, Belief, next_action
from pointlab.bridge.trials.machine import DEFAULT_MIN_FREE_BYTES, TrialRules
from pointlab.bridge.trials.ports import AgentReply, ArmReadiness, CameraPort, HumanRelayPort, Ports, Slot
from pointlab.bridge.trials.record import TrialResult
from pointlab.bridge.trials.timing import DEFAULT_REVEAL, RevealRule
from pointlab.bridge.errors import BridgeError

__all__ = ["Station", "TrialSettings", "Ran", "StationBusy", "KEEP_TRIAL_FRAMES", "PointActParts"]

log = logging.getLogger(__name__)

# ``Station.needs_reset`` after a reset from a stop or fault: the arm is where it stopped (a reset never
# moves it); trials wait until it is homed
NEEDS_HOME = "stopped away from home: press Home arm"
KEEP_TRIAL_FRAMES = 50  # trials whose before/after JPEGs stay in memory (the store keeps them all)


class StationBusy(BridgeError, RuntimeError):
    """A trial cannot start now; the message says why in words a participant can read."""


@dataclass(frozen=True)
class TrialSettings:
    """A study's settings that a trial runs under.

    Attributes:
        reveal: when a point may take effect (``bridge.trials.timing.RevealRule``).
        min_free_bytes: the free-space floor of the store and the recordings folder; below it no
            trial starts and no motion is sent (``None``: not checked).
    """

    reveal: RevealRule = DEFAULT_REVEAL
    min_free_bytes: int | None = DEFAULT_MIN_FREE_BYTES


@dataclass(frozen=True)
class Ran:
    """A finished trial: its record and, when it was stored, its id in the store."""

    result: TrialResult
    stored_id: int | None = None


class Station:
    """One arm's trials (module docstring).

    Args:
        ports: the world (``bridge.trials.ports.Ports``).
        agent_names: the agents the agent port can ask (config names; never shown to participants).
        human_agents: names answered by a person (longer answer timeout).
        rules: the machine's timeouts.
        seed: seeds the reveal-time draws (``None``: from the OS).
    """

    def __init__(
        self, ports: Ports, agent_names, *, human_agents=(), rules: TrialRules = TrialRules(), seed: int | None = None
    ) -> None:
        self.ports = ports
        self.agent_names = list(agent_names)
        self.human_agents = set(human_agents)
        self.rules = rules
        self.belief: Belief = EMPTY
        self.stopped = False  # the emergency stop is engaged: nothing starts until reset()
        # the arm reported a fault or a stop in a trial: nothing starts until reset() (the arm's own
        # latched state says so too, a moment later; this does not wait for it)
        self.needs_reset: str | None = None
        self._rng = random.Random(seed)
        self._motion = threading.Lock()  # one trial or arm action at a time, from any loop
        self._lock = threading.Lock()
        self._running: tuple[asyncio.AbstractEventLoop, asyncio.Queue] | None = None
        self._phase: str | None = None  # the running trial's phase (read by abort_current on its loop)
        self._frames: OrderedDict[str, dict[str, bytes]] = OrderedDict()

    # -- state -----------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """A trial or an arm action is running."""
        return self._motion.locked()

    def next_action(self) -> str:
        """What the next trial will be (``pick``/``place``), from the belief."""
        return next_action(self.belief)

    def holding(self) -> bool:
        return self.belief.holding

    def state(self) -> dict:
        """The arm's latest state (``robot.arm.ArmState`` as JSON values) with the belief under
        ``belief`` and the station's ``stopped`` and ``busy``."""
        try:
            arm = dict(self.ports.arm.state())
        except Exception as e:  # a state read must not break a page
            arm = {"error": str(e)}
        return {
            **arm,
            "belief": self.belief.to_dict(),
            "stopped": self.stopped,
            "needs_reset": self.needs_reset,
            "busy": self.busy,
        }

    def free_bytes(self) -> int | None:
        try:
            return self.ports.storage.free_bytes()
        except OSError as e:
            log.warning("free space unknown: %s", e)
            return None

    def start_problem(self, settings: TrialSettings = TrialSettings(), *, homes_first: bool = False) -> str | None:
        """Why a trial cannot start now, in plain words, or ``None``: stopped, busy, the arm not ready,
        or less free space than the floor (checked again before the motion by the machine).
        ``homes_first``: the caller homes the arm before anything else (a block start), so an arm
        left away from home by a reset is no reason."""
        if self.busy:
            return "the robot is busy"
        return self._start_problem(settings, homes_first=homes_first)

    def _readiness(self) -> ArmReadiness:
        try:
            return self.ports.arm.readiness()
        except Exception as e:
            return ArmReadiness(False, "disconnected", str(e))

    # -- trials ----------------------------------------------------------------------------------
    async def run_trial(
        self,
        agent: str,
        instruction: str,
        *,
        expected: dict | None = None,
        slot: Slot | None = None,
        settings: TrialSettings = TrialSettings(),
        auto_judge: bool = False,
        trial_id: str | None = None,
    ) -> Ran:
        """Run one trial to its end and store it in ``slot`` (when the ports have a store and a slot is
        given). Never raises for what the agent, targeting or the arm did (those are recorded
        outcomes and aborts, docs/trials.md).

        The trial's recording (when the ports have a recorder) spans the trial, from the agent's request
        to the frame after the arm stopped, and ends with it: a participant's judging time is not
        recorded, and no recording waits for a person (docs/recording.md).
        ``auto_judge``: no participant judges (headless): the automatic check gives the outcome.
        ``trial_id``: the record's id when the caller chose it (a study server names the trial it
        dispatches, so that a station lost mid-trial and its own late record are one trial:
        docs/stations.md); ``None``: a new uuid4 hex.

        Raises:
            ValueError: ``agent`` is not one of ``agent_names``.
            StationBusy: the station cannot start a trial now (``start_problem``); nothing ran.
        """
        if agent not in self.agent_names:
            raise ValueError(f"unknown agent {agent!r}")
        if not self._motion.acquire(blocking=False):
            raise StationBusy("the robot is busy")
        try:
            problem = self._start_problem(settings)
            if problem is not None:
                raise StationBusy(problem)
            return await self._run(agent, instruction, expected, slot, settings, auto_judge, trial_id)
        finally:
            self._motion.release()

    def _start_problem(self, settings: TrialSettings, *, homes_first: bool = False) -> str | None:
        if self.stopped:
            return "the robot is stopped; wait for the operator to reset it"
        if self.needs_reset and not (homes_first and self.needs_reset == NEEDS_HOME):
            return f"the robot is not ready ({self.needs_reset}); please tell the operator"
        ready = self._readiness()
        if not ready.ready:
            return f"the robot is not ready ({ready.problem}); please tell the operator"
        free = self.free_bytes()
        if settings.min_free_bytes is not None and free is not None and free < settings.min_free_bytes:
            return (
                f"there is not enough room to record trials ({free / 1e6:.0f} MB free, the study needs "
                f"{settings.min_free_bytes / 1e6:.0f} MB); please tell the operator"
            )
        return None

    async def _run(
        self,
        agent: str,
        instruction: str,
        expected: dict | None,
        slot: Slot | None,
        settings: TrialSettings,
        auto_judge: bool,
        trial_id: str | None = None,
    ) -> Ran:
        loop = asyncio.get_running_loop()
        events: asyncio.Queue = asyncio.Queue()
        clock = self.ports.clock
        scene = self.ports.scene
        action = next_action(self.belief)
        if expected is None and scene is not None:
            # a typed instruction has no script: the sim reads what it asks for before anything moves
            expected = _quietly(lambda: scene.infer_expected(instruction, action), "reading the instruction")
        intended = (
            None
            if expected is None or scene is None
            else _quietly(lambda: scene.intended_mask(expected), "the intended object's mask")
        )
        trial_id = trial_id or uuid.uuid4().hex
        if self.ports.store is not None and slot is not None:
            # before anything moves or records: a session killed from here on leaves this note, and
            # its next start stores the trial as interrupted with its recovered recording
            _quietly(
                lambda: self.ports.store.begin(trial_id, slot, agent=agent, instruction=instruction, action=action),
                "noting the trial's start",
            )
        state, cmds = m.start(
            t=clock.now(),
            trial_id=trial_id,
            agent=agent,
            instruction=instruction,
            belief=self.belief,
            reveal_s=settings.reveal.draw(self._rng),
            expected=expected,
            human=agent in self.human_agents,
            intended=intended,
            min_free_bytes=settings.min_free_bytes,
            rules=self.rules,
            auto_judge=auto_judge,
        )
        run = _Run(self, events, loop)
        with self._lock:
            self._running = (loop, events)
            self._phase = state.phase
        finish: m.Finish | None = None
        try:
            while True:
                for cmd in cmds:
                    if isinstance(cmd, m.Finish):
                        finish = cmd
                    else:
                        run.do(cmd)
                if state.phase == "ended":
                    break
                event, reply = await events.get()
                new, cmds = m.step(state, event)
                if reply is not None:  # whoever asked learns whether the machine took the event
                    reply.set_result(new is not state)
                state = new
                self._phase = state.phase
        finally:
            with self._lock:
                self._running, self._phase = None, None
            for event, reply in _drain(events):  # nobody will take these now
                if reply is not None and not reply.done():
                    reply.set_result(False)
            run.close()
            if state.phase != "ended" and state.arm_request is not None:
                # the trial was cancelled (its caller went away) while the arm had a command: the
                # arm must not go on with a motion nobody waits for
                log.warning("trial %s cancelled in %s: halting the arm", state.record.trial_id, state.phase)
                _quietly(self.ports.arm.halt, "halting the arm")
        assert finish is not None
        self.belief = finish.belief
        result = finish.result
        if result.robot_outcome in ("robot_failure", "stopped"):
            self.needs_reset = "fault" if result.robot_outcome == "robot_failure" else "estop"
        self._keep_frames(trial_id, finish.frames)
        if self.ports.recorder is not None:
            result.recording = await self._end_recording(trial_id)
        stored = self._store(result, slot, finish.frames)
        return Ran(result, stored)

    def _store(self, result: TrialResult, slot: Slot | None, frames: dict[str, bytes]) -> int | None:
        """Save the trial in its slot; ``None`` when there is no store, no slot, or the save failed
        (logged: the trial ran and is lost for the study, which the caller tells the operator)."""
        if self.ports.store is None or slot is None:
            return None
        try:
            return self.ports.store.save(result, slot, frames)
        except Exception:
            log.error(
                "trial %s (%s, %s) ran but could not be stored",
                result.trial_id,
                result.agent,
                result.outcome,
                exc_info=True,
            )
            return None

    def _keep_frames(self, trial_id: str, frames: dict[str, bytes]) -> None:
        self._frames[trial_id] = frames
        while len(self._frames) > KEEP_TRIAL_FRAMES:
            self._frames.popitem(last=False)

    def trial_jpeg(self, trial_id: str, which: str = "before") -> bytes | None:
        """The frame the agent saw (``before``) or the one after the arm stopped (``after``) of trial
        ``trial_id`` as JPEG, from memory or the store; ``None`` when neither has it."""
        jpeg = self._frames.get(trial_id, {}).get(which)
        if jpeg is None and self.ports.store is not None:
            jpeg = self.ports.store.frame(trial_id, which)
        return jpeg

    async def _end_recording(self, trial_id: str) -> dict | None:
        """End trial ``trial_id``'s recording; its ``Recording`` as JSON values, or ``None``. Never
        raises (a recording is a record of the trial, not a reason to lose it)."""
        if self.ports.recorder is None:
            return None
        try:
            return await self.ports.recorder.end(trial_id)
        except Exception:
            log.exception("ending the recording of %s failed", trial_id)
            return None

    def _post(self, event_of, reply: concurrent.futures.Future | None = None) -> bool:
        """Hand ``event_of(t)`` to the running trial from any thread; ``False`` when none runs."""
        with self._lock:
            running = self._running
        if running is None:
            return False
        loop, events = running
        try:
            loop.call_soon_threadsafe(lambda: events.put_nowait((event_of(self.ports.clock.now()), reply)))
        except RuntimeError:  # the loop closed meanwhile
            return False
        return True

    def abort_current(self, timeout_s: float = 5.0) -> bool:
        """The operator's *Abort trial*: the running trial ends ``aborted`` (``operator_abort``); a motion
        is stopped in a controlled way and the slot put back as it was. ``False`` when no trial runs or
        its action has already completed (``machine.ABORTABLE``: the trial then stands as it is).

        From another thread it waits (up to ``timeout_s``) for the machine's answer; on the trial's own
        event loop it answers from the phase (the machine steps on that same thread)."""
        with self._lock:
            running, phase = self._running, self._phase
        if running is None:
            return False
        try:
            on_loop = asyncio.get_running_loop() is running[0]
        except RuntimeError:
            on_loop = False
        if on_loop:
            return phase in m.ABORTABLE and self._post(lambda t: m.AbortAsked(t))
        reply: concurrent.futures.Future = concurrent.futures.Future()
        if not self._post(lambda t: m.AbortAsked(t), reply):
            return False
        try:
            return bool(reply.result(timeout=timeout_s))
        except concurrent.futures.TimeoutError:
            return False

    # -- the arm outside trials ------------------------------------------------------------------
    def emergency_stop(self) -> None:
        """Stop the arm now (never waits for a trial), keep new trials from starting until ``reset``,
        and end the running trial ``aborted`` (``estop``)."""
        self.stopped = True
        self.ports.arm.emergency_stop()
        self._post(lambda t: m.EStopped(t))

    def reset(self, ready_timeout_s: float = 5.0) -> None:
        """Leave the emergency stop or fault (the arm's bring-up runs again). Blocks until the arm
        reports itself ready, at most ``ready_timeout_s`` (its state arrives a moment after the reset;
        a trial started before it would be refused as not ready).

        A reset never moves the arm (ISO 13850: resetting an emergency stop shall not by itself
        start motion), so after a stop or fault the arm is wherever it stopped, maybe in the
        camera's view: trials stay refused (``needs_reset == NEEDS_HOME``) until ``home`` or a block
        start has homed it. A reset with nothing stopped allows trials at once."""
        import time

        was_stopped = self.stopped or self.needs_reset is not None or self._arm_latched()
        self.ports.arm.reset()
        # needs_reset first: a page's state read between the two never sees a ready arm that is not
        self.needs_reset = NEEDS_HOME if was_stopped else None
        self.stopped = False
        deadline = time.monotonic() + ready_timeout_s
        while not self._readiness().ready and time.monotonic() < deadline:
            time.sleep(0.02)

    async def _locked(self):
        while not self._motion.acquire(blocking=False):  # after any trial or action that is running
            await asyncio.sleep(0.01)

    async def _arm_action(self, action: str, timeout_s: float) -> dict:
        await self._locked()
        try:
            return await self._arm_action_locked(action, timeout_s)
        finally:
            self._motion.release()

    async def _arm_action_locked(self, action: str, timeout_s: float) -> dict:
        try:
            reply = await asyncio.wait_for(self.ports.arm.run(uuid.uuid4().hex, action), timeout_s)
        except asyncio.TimeoutError:
            self.ports.arm.emergency_stop()
            return {
                "outcome": "robot_failure",
                "holding": self.belief.holding,
                "error": f"the arm gave no result within {timeout_s:.0f} s; emergency stop sent",
            }
        if reply.outcome == "done" and action == "release":
            self.belief = Belief(False, None, "operator", "the operator opened the gripper")
        if reply.outcome == "done" and action == "home" and self.needs_reset == NEEDS_HOME:
            self.needs_reset = None
        return {
            "outcome": reply.outcome,
            "error": None if reply.error is None else str(reply.error),
            "holding": self.belief.holding,
        }

    async def release(self) -> dict:
        """Open the gripper where the arm is and clear the belief (the operator's fix when it is wrong).

        Returns:
            ``{"outcome", "error", "holding"}``; never raises for the arm's failures.
        """
        return await self._arm_action("release", self.rules.recover_s)

    async def home(self) -> dict:
        """Move to the home pose (after a reset, this allows trials again); returns as ``release``."""
        return await self._arm_action("home", self.rules.home_s)

    def _arm_latched(self) -> bool:
        """The arm itself reports an emergency stop or a fault (e.g. the controller's own button)."""
        try:
            st = self.ports.arm.state()
        except Exception:
            return True  # unknown: treat it as stopped somewhere
        return bool(st.get("estopped") or st.get("fault"))

    async def reset_block(self) -> dict:
        """The start of an agent block: open the gripper, home, and (a simulator) restore the scene
        exactly; the belief starts empty. One motion lock for all of it, so that no trial starts
        between the homing and the restored scene. Returns ``{"outcome", "error"}`` of the first step
        that did not complete, else ``{"outcome": "done"}``."""
        await self._locked()
        try:
            for action in ("release", "home"):
                res = await self._arm_action_locked(action, self.rules.recover_s)
                if res["outcome"] != "done":
                    return res
            scene = self.ports.scene
            if scene is not None and scene.automatic:
                await asyncio.to_thread(scene.restore)
            self.belief = EMPTY
            return {"outcome": "done", "error": None}
        finally:
            self._motion.release()

    def sync_belief(self) -> Belief:
        """What the arm holds when a session starts: a simulator's contact state, else not known (a
        restarted session cannot see into a gripper without a sensor: the console shows the doubt,
        the next trial is a pick, and every block start opens the gripper anyway)."""
        scene = self.ports.scene
        ev = None
        if scene is not None:
            ev = _quietly(lambda: scene.evidence(None), "reading the simulator's contact state")
        if ev is not None:
            self.belief = Belief(ev.held is not None, ev.held, "physics", "the simulator's contacts at the start")
        else:
            self.belief = Belief(
                False,
                None,
                "unknown",
                "the session (re)started: what the gripper holds is not known; open the gripper if it holds something",
            )
        return self.belief


class _Run:
    """Carries out one trial's commands: tasks that post events, and the one timer."""

    def __init__(self, station: Station, events: asyncio.Queue, loop: asyncio.AbstractEventLoop) -> None:
        self.station, self.ports, self.events, self.loop = station, station.ports, events, loop
        self.tasks: set[asyncio.Task] = set()
        self.agent_task: asyncio.Task | None = None
        self.arm_task: asyncio.Task | None = None
        self.timer: asyncio.Task | None = None

    def _spawn(self, coro) -> asyncio.Task:
        task = self.loop.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def _put(self, make) -> None:
        self.events.put_nowait((make(self.ports.clock.now()), None))

    def do(self, cmd: Any) -> None:
        p = self.ports
        if isinstance(cmd, m.BeginRecording):
            if p.recorder is not None:
                _quietly(lambda: p.recorder.begin(cmd.trial_id), "starting the recording")
        elif isinstance(cmd, m.AskAgent):
            self.agent_task = self._spawn(self._ask(cmd))
        elif isinstance(cmd, m.CancelAgent):
            if self.agent_task is not None:
                self.agent_task.cancel()
        elif isinstance(cmd, m.AskTarget):
            self._spawn(self._target(cmd))
        elif isinstance(cmd, m.WakeAt):
            if self.timer is not None:
                self.timer.cancel()
            self.timer = self._spawn(self._wake(cmd))
        elif isinstance(cmd, m.CheckBeforeMotion):
            self._put(lambda t: m.Checked(t, self.station.free_bytes(), self.station._readiness()))
        elif isinstance(cmd, m.CommandArm):
            self.arm_task = self._spawn(self._arm(cmd))
        elif isinstance(cmd, m.HaltArm):
            _quietly(p.arm.halt, "halting the arm")
        elif isinstance(cmd, m.EStopArm):
            _quietly(p.arm.emergency_stop, "the emergency stop")
        elif isinstance(cmd, m.CaptureAfter):
            self._spawn(self._after(cmd))
        elif isinstance(cmd, m.GatherEvidence):
            self._spawn(self._evidence(cmd))
        else:  # pragma: no cover - a command this driver does not know is a bug
            raise TypeError(f"unknown command {cmd!r}")

    async def _ask(self, cmd: m.AskAgent) -> None:
        try:
            reply = await self.ports.agent.point(cmd.request_id, cmd.agent, cmd.instruction)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a port that raises is an agent failure, recorded, never a crash
            log.exception("the agent port failed")
            reply = AgentReply(error=f"{type(e).__name__}: {e}", error_kind="agent")
        self._put(lambda t: m.Answered(t, reply))

    async def _target(self, cmd: m.AskTarget) -> None:
        try:
            reply = await self.ports.targeting.target(cmd.request_id, cmd.reply)
        except asyncio.CancelledError:
            raise
        except Exception:  # no target: the machine's target timer ends the trial (timeout)
            log.exception("the targeting port failed")
            return
        self._put(lambda t: m.Targeted(t, reply))

    async def _arm(self, cmd: m.CommandArm) -> None:
        try:
            reply = await self.ports.arm.run(cmd.request_id, cmd.action, cmd.target_m)
        except asyncio.CancelledError:
            raise
        except Exception:  # no result: the machine's timer stops the arm and ends the trial
            log.exception("the arm port failed")
            return
        self._put(lambda t: m.ArmEnded(t, cmd.request_id, reply))

    async def _wake(self, cmd: m.WakeAt) -> None:
        await self.ports.clock.sleep(cmd.t - self.ports.clock.now())
        self._put(lambda t: m.TimerFired(t, cmd.name))

    async def _after(self, cmd: m.CaptureAfter) -> None:
        try:
            frame = await self.ports.camera.frame_after(cmd.timeout_s)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the camera port failed")
            frame = None
        self._put(lambda t: m.AfterFrame(t, frame))

    async def _evidence(self, cmd: m.GatherEvidence) -> None:
        scene = self.ports.scene
        ev = None
        if scene is not None:
            try:
                ev = await asyncio.to_thread(scene.evidence, cmd.expected)
            except Exception:  # the judgement is a record, never a reason to lose the trial
                log.exception("the simulator's judgement failed")
        self._put(lambda t: m.Evidenced(t, ev))

    def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()


def _quietly(fn, what: str):
    """``fn()``, or ``None`` (logged) when it raises: a side record must not end a trial."""
    try:
        return fn()
    except Exception:
        log.exception("%s failed", what)
        return None


@dataclass(frozen=True)
class PointActParts:
    """The running system as the web app sees it: the station (trials, the arm, the belief, the
    scene) and the human reference's relay (the console's open requests)."""

    station: Station
    human: HumanRelayPort

    @property
    def live_view(self) -> CameraPort:
        """The camera port (``latest_jpeg``: the live view)."""
        return self.station.ports.camera

    @property
    def agent_names(self) -> list[str]:
        return list(self.station.agent_names)

    @property
    def scene_automatic(self) -> bool:
        """A simulator restores the block's starting scene itself (else the operator does)."""
        scene = self.station.ports.scene
        return bool(scene is not None and scene.automatic)


def _drain(queue: asyncio.Queue) -> list:
    out = []
    while not queue.empty():
        out.append(queue.get_nowait())
    return out
