"""The trial machine: every rule of one Point-Act trial as a pure function ``(state, event) -> (state, commands)``.

PointArena sec. 3.4: a blinded agent points on the live colour image; the point goes through aligned
depth and the calibration to a base-frame target; the arm picks (empty tool) or places (holding)
there; the participant judges. This module decides everything about one such trial and does nothing:
it imports no rclpy, FastAPI or SQL, never sleeps, never reads a clock. Times come in with the events
(``t``, monotonic seconds); what must happen goes out as commands that the driver
(``bridge.trials.driver``) carries out through the ports (``bridge.trials.ports``), feeding back
what they report as new events. The same machine runs the browser session, ``pointlab act trials``,
bag replay and the tests (with a fake clock).

Phases and transitions are ``TRANSITIONS`` (drawn in docs/trials.md; a test keeps the drawing equal
to this table, and every step checks that the transition it takes is in it):

- ``asking``: the request is out; the agent's answer is awaited.
- ``targeting``: the first point goes to a base-frame target on the depth of the frame the agent saw.
- ``revealing``: nothing of the answer takes effect before the trial's drawn reveal time
  (``bridge.trials.timing``); a refusal's message is held as long as a motion would be.
- ``checking``: the checks before motion: the arm is ready (not stopped, not faulted) and the store
  and recordings have at least the study's free-space floor. A failed check moves nothing.
- ``moving``: the pick or place runs.
- ``halting``: the operator aborted during a motion: a controlled stop (no fault, no e-stop). An abort
  is taken until the action has completed (``ABORTABLE``); after it the trial stands as it is.
- ``recovering``: after a halt the slot is put back as it was: a pick's tool is opened, then the arm
  homes (a place keeps what it holds and homes).
- ``homing``: after a completed action the arm homes, so the "after" frame shows the scene.
- ``looking``: a frame taken after the arm stopped (and the depth check against the frame before).
- ``judging``: the simulator's judgement and contact state (the belief's evidence; nothing on hardware).
- ``ended``: the trial's record is final; ``Finish`` carries it with the frames and the new belief.

Aborts (``bridge.trials.outcomes.AbortCode``) are decided here and only here; a trial that is not
aborted always ends with an outcome (a refusal is ``failed`` at once, with its failure stage) or
waits for its judgement (``outcome`` ``None``, the automatic check beside it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np

from pointlab.bridge.trials.attribution import point_in_mask, settle
from pointlab.bridge.trials.autocheck import depth_check, physics_check
from pointlab.bridge.trials.belief import Belief, Evidence, belief_after
from pointlab.bridge.trials.outcomes import Abort, RobotErrorInfo
from pointlab.bridge.trials.ports import AgentReply, ArmReadiness, ArmReply, SceneEvidence, TargetReply, TrialFrame
from pointlab.bridge.trials.record import TrialResult
from pointlab.robot.arm import MotionReport
from pointlab.bridge.errors import BridgeError

__all__ = [
    "Phase",
    "PHASES",
    "TRANSITIONS",
    "ABORTABLE",
    "TrialRules",
    "TrialState",
    "start",
    "step",
    "DEFAULT_MIN_FREE_BYTES",
    # events
    "Answered",
    "Targeted",
    "Checked",
    "ArmEnded",
    "AfterFrame",
    "Evidenced",
    "TimerFired",
    "AbortAsked",
    "EStopped",
    "Event",
    # commands
    "BeginRecording",
    "AskAgent",
    "CancelAgent",
    "AskTarget",
    "WakeAt",
    "CheckBeforeMotion",
    "CommandArm",
    "HaltArm",
    "EStopArm",
    "CaptureAfter",
    "GatherEvidence",
    "Finish",
    "Command",
    "IllegalTransition",
]

Phase = Literal[
    "asking",
    "targeting",
    "revealing",
    "checking",
    "moving",
    "halting",
    "recovering",
    "homing",
    "looking",
    "judging",
    "ended",
]
PHASES: tuple[str, ...] = get_args(Phase)

# Measured browser trials (a newcomer's session, docs/trials.md "Storage"): 77-247 MB of raw MCAP each,
# mean about 147 MB, when recordings were raw and ran until the participant's judgement; the default
# floor keeps room for four of the largest beside the store (recordings are smaller now: a margin).
DEFAULT_MIN_FREE_BYTES = 1_000_000_000

# (from, event, to): every transition the machine may take. Event labels are the event's ``label``
# (its kind and, where the kind alone does not decide, the case in brackets).
TRANSITIONS: tuple[tuple[str, str, str], ...] = (
    ("asking", "answer", "targeting"),
    ("asking", "answer[error]", "ended"),
    ("asking", "timer[answer]", "ended"),
    ("asking", "abort", "ended"),
    ("asking", "estop", "ended"),
    ("targeting", "target[valid]", "revealing"),
    ("targeting", "target[valid]", "checking"),
    ("targeting", "target[refused]", "revealing"),
    ("targeting", "target[refused]", "looking"),
    ("targeting", "timer[target]", "ended"),
    ("targeting", "abort", "ended"),
    ("targeting", "estop", "ended"),
    ("revealing", "timer[reveal]", "checking"),
    ("revealing", "timer[reveal]", "looking"),
    ("revealing", "abort", "ended"),
    ("revealing", "estop", "ended"),
    ("checking", "checked[ok]", "moving"),
    ("checking", "checked[arm]", "ended"),
    ("checking", "checked[no_room]", "ended"),
    ("checking", "abort", "ended"),
    ("checking", "estop", "ended"),
    ("moving", "arm[done]", "homing"),
    ("moving", "arm[done]", "looking"),
    ("moving", "arm[refused]", "looking"),
    ("moving", "arm[failed]", "judging"),
    ("moving", "timer[motion]", "judging"),
    ("moving", "abort", "halting"),
    ("moving", "estop", "judging"),
    ("halting", "arm[ended]", "recovering"),
    ("halting", "arm[failed]", "judging"),
    ("halting", "timer[halt]", "judging"),
    ("halting", "estop", "judging"),
    ("recovering", "arm[done]", "recovering"),
    ("recovering", "arm[done]", "judging"),
    ("recovering", "arm[failed]", "judging"),
    ("recovering", "timer[recover]", "judging"),
    ("recovering", "estop", "judging"),
    ("homing", "arm[done]", "looking"),
    ("homing", "arm[failed]", "judging"),
    ("homing", "timer[home]", "judging"),
    ("homing", "estop", "judging"),
    ("looking", "after", "judging"),
    ("looking", "timer[after]", "judging"),
    ("looking", "estop", "judging"),
    ("judging", "evidence", "ended"),
    ("judging", "timer[judge]", "ended"),
    ("judging", "estop", "judging"),
)
# The operator's abort is taken until the action has completed: it voids a trial that was no fair test
# of the agent. Once the pick or place is done its outcome is fixed; voiding it then would throw a
# result away and change the slot (a completed place leaves the tool open: the "same" slot would be a
# pick). Later aborts are refused (``ABORTABLE``); the emergency stop is taken in every phase.
ABORTABLE: frozenset[str] = frozenset({"asking", "targeting", "revealing", "checking", "moving"})
_ALLOWED = frozenset(TRANSITIONS)


class IllegalTransition(BridgeError, RuntimeError):
    """A step tried a transition that ``TRANSITIONS`` does not have (a bug in this module)."""


@dataclass(frozen=True)
class TrialRules:
    """How long each stage may take (seconds) and what the trial does after its action.

    Attributes:
        answer_s: a model agent's answer (its own timeout and retries come first).
        human_answer_s: the human reference's answer (a person must click).
        target_s: targeting's result after the answer.
        motion_s: the pick or place sequence (a few seconds at 0.15 m/s; generous for a real arm).
        halt_s: the controlled stop after an abort; past it the arm is emergency-stopped.
        recover_s: each recovery action after a halt (open the tool, home).
        home_s: homing after the action.
        after_frame_s: a camera frame after the arm stopped.
        judge_s: the simulator's judgement.
        home_after: home after every completed action (the "after" frame then shows the scene).
    """

    answer_s: float = 180.0
    human_answer_s: float = 900.0
    target_s: float = 10.0
    motion_s: float = 120.0
    halt_s: float = 10.0
    recover_s: float = 60.0
    home_s: float = 60.0
    after_frame_s: float = 5.0
    judge_s: float = 10.0
    home_after: bool = True


# -- events ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Answered:
    t: float
    reply: AgentReply

    @property
    def label(self) -> str:
        return "answer[error]" if self.reply.error else "answer"


@dataclass(frozen=True)
class Targeted:
    t: float
    reply: TargetReply

    @property
    def label(self) -> str:
        return "target[valid]" if self.reply.target.valid else "target[refused]"


@dataclass(frozen=True)
class Checked:
    """The conditions measured right before the motion."""

    t: float
    free_bytes: int | None
    arm: ArmReadiness
    label: str = "checked"


@dataclass(frozen=True)
class ArmEnded:
    t: float
    request_id: str
    reply: ArmReply
    label: str = "arm"


@dataclass(frozen=True)
class AfterFrame:
    t: float
    frame: TrialFrame | None
    label: str = "after"


@dataclass(frozen=True)
class Evidenced:
    t: float
    evidence: SceneEvidence | None
    label: str = "evidence"


@dataclass(frozen=True)
class TimerFired:
    t: float
    name: str

    @property
    def label(self) -> str:
        return f"timer[{self.name}]"


@dataclass(frozen=True)
class AbortAsked:
    """The operator's *Abort trial*."""

    t: float
    label: str = "abort"


@dataclass(frozen=True)
class EStopped:
    """The emergency stop was pressed (the arm was already told by the station)."""

    t: float
    label: str = "estop"


Event = Answered | Targeted | Checked | ArmEnded | AfterFrame | Evidenced | TimerFired | AbortAsked | EStopped


# -- commands --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BeginRecording:
    trial_id: str


@dataclass(frozen=True)
class AskAgent:
    request_id: str
    agent: str
    instruction: str


@dataclass(frozen=True)
class CancelAgent:
    request_id: str


@dataclass(frozen=True)
class AskTarget:
    request_id: str
    reply: AgentReply


@dataclass(frozen=True)
class WakeAt:
    """Fire ``TimerFired(name)`` at monotonic time ``t`` (a later ``WakeAt`` replaces it)."""

    name: str
    t: float


@dataclass(frozen=True)
class CheckBeforeMotion:
    """Measure the free bytes and the arm's readiness now; answer with ``Checked``."""


@dataclass(frozen=True)
class CommandArm:
    request_id: str
    action: str
    target_m: tuple[float, float, float] | None = None


@dataclass(frozen=True)
class HaltArm:
    """Stop the running action in a controlled way."""


@dataclass(frozen=True)
class EStopArm:
    """Emergency-stop the arm (a stage that must not go on moving did not answer)."""


@dataclass(frozen=True)
class CaptureAfter:
    timeout_s: float


@dataclass(frozen=True)
class GatherEvidence:
    expected: dict | None


@dataclass(frozen=True)
class Finish:
    """The trial is over: ``result`` is final, ``frames`` its ``before``/``after`` JPEGs, ``belief`` what
    the arm holds now."""

    result: TrialResult
    frames: dict[str, bytes]
    belief: Belief


Command = (
    BeginRecording
    | AskAgent
    | CancelAgent
    | AskTarget
    | WakeAt
    | CheckBeforeMotion
    | CommandArm
    | HaltArm
    | EStopArm
    | CaptureAfter
    | GatherEvidence
    | Finish
)


# -- state -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrialState:
    """One trial between events (never mutated: every step returns a new one).

    Attributes:
        phase: where the trial is (``PHASES``).
        record: the trial's record so far.
        t0: when the request went out (monotonic seconds).
        reveal_t: the drawn reveal time (absolute, monotonic seconds).
        min_free_bytes: the study's free-space floor for the check before motion.
        belief: what the arm held when the trial started.
        human: the agent is answered by a person (its answer timeout is ``human_answer_s``).
        intended: the intended object's mask on the frame the agent saw (attribution), if known.
        before, after: the frames the agent saw and the one after the arm stopped.
        timer: the one running timer's name (a fired timer of another name is stale).
        arm_request: the arm action this trial waits for.
        recover: recovery actions still to run after a halt.
        moved, completed, tool_open: for the belief (``bridge.trials.belief``).
        depth_pick: the depth check of a completed pick (the belief's evidence on hardware).
        abort: the abort decided (the trial still gathers the physics evidence after a motion).
    """

    phase: Phase
    record: TrialResult
    t0: float
    reveal_t: float
    min_free_bytes: int | None
    belief: Belief
    rules: TrialRules
    human: bool = False
    intended: np.ndarray | None = field(default=None, repr=False)
    before: TrialFrame | None = field(default=None, repr=False)
    after: TrialFrame | None = field(default=None, repr=False)
    timer: str | None = None
    arm_request: str | None = None
    arm_action: str | None = None
    arm_count: int = 0
    answered_ns: int = 0
    recover: tuple[str, ...] = ()
    moved: bool = False
    completed: bool = False
    tool_open: bool = False
    depth_pick: bool | None = None
    abort: Abort | None = None
    evidence: SceneEvidence | None = None
    auto_judge: bool = False


def start(
    *,
    t: float,
    trial_id: str,
    agent: str,
    instruction: str,
    belief: Belief,
    reveal_s: float,
    expected: dict | None = None,
    human: bool = False,
    intended: np.ndarray | None = None,
    min_free_bytes: int | None = DEFAULT_MIN_FREE_BYTES,
    rules: TrialRules = TrialRules(),
    auto_judge: bool = False,
) -> tuple[TrialState, list[Command]]:
    """A new trial at monotonic time ``t``: the action follows the belief (pick when it holds nothing,
    PointArena sec. 3.4), the reveal time is ``t + reveal_s`` (drawn by the station from the study's
    ``RevealRule``). ``auto_judge``: no participant judges (headless runs): a completed motion's outcome
    is the automatic check's, when it can tell. Returns the ``asking`` state and its commands."""
    action = "place" if belief.holding else "pick"
    record = TrialResult(
        trial_id=trial_id,
        agent=agent,
        instruction=instruction,
        action=action,
        expected=expected,
        timings_s={"reveal": round(float(reveal_s), 4)},
    )
    timeout = rules.human_answer_s if human else rules.answer_s
    state = TrialState(
        phase="asking",
        record=record,
        t0=t,
        reveal_t=t + float(reveal_s),
        min_free_bytes=min_free_bytes,
        belief=belief,
        rules=rules,
        human=human,
        intended=intended,
        timer="answer",
        auto_judge=auto_judge,
    )
    return state, [BeginRecording(trial_id), AskAgent(trial_id, agent, instruction), WakeAt("answer", t + timeout)]


def step(state: TrialState, event: Event) -> tuple[TrialState, list[Command]]:
    """The next state and the commands to carry out. Stale events (a timer or an arm result this
    trial no longer waits for, anything after ``ended``) change nothing.

    Raises:
        IllegalTransition: only for a bug here (a transition missing from ``TRANSITIONS``).
    """
    if state.phase == "ended":
        return state, []
    if isinstance(event, TimerFired) and event.name != state.timer:
        return state, []
    if isinstance(event, ArmEnded) and event.request_id != state.arm_request:
        return state, []
    handler = _HANDLERS.get((state.phase, type(event)))
    if handler is None:
        return state, []
    return handler(state, event)


# -- helpers ---------------------------------------------------------------------------------------
def _go(state: TrialState, event: Any, to: Phase, label: str | None = None, **changes: Any) -> TrialState:
    label = label or event.label
    if (state.phase, label, to) not in _ALLOWED:
        raise IllegalTransition(f"{state.phase} --{label}--> {to} is not in TRANSITIONS")
    return dataclasses.replace(state, phase=to, **changes)


def _rec(state: TrialState, **update: Any) -> TrialResult:
    return state.record.model_copy(update=update)


def _timed(state: TrialState, t: float, **timings: float) -> dict[str, float]:
    out = dict(state.record.timings_s)
    out.update({k: round(v, 4) for k, v in timings.items()})
    out["total"] = round(t - state.t0, 4)
    return out


def _arm(
    state: TrialState, t: float, action: str, timer: str, timeout_s: float, target_m=None
) -> tuple[dict[str, Any], list[Command]]:
    n = state.arm_count + 1
    # the action carries the trial's id (its answer, command and result share it in a recording);
    # what follows it (homing, a recovery) is numbered after it
    rid = state.record.trial_id if n == 1 else f"{state.record.trial_id}-{n}"
    return (
        {"arm_request": rid, "arm_count": n, "arm_action": action, "timer": timer},
        [CommandArm(rid, action, target_m), WakeAt(timer, t + timeout_s)],
    )


def _finish(
    state: TrialState, event: Any, t: float, to_label: str | None = None, **changes: Any
) -> tuple[TrialState, list[Command]]:
    """End the trial now (``ended``): settle its outcome, the automatic check and the belief."""
    state = dataclasses.replace(state, **changes)
    rec = state.record.model_copy(update={"timings_s": _timed(state, t)})
    ev = state.evidence
    if ev is not None and ev.sim_success is not None:
        # a trial whose motion did not complete is never a success, even if the scene already looked
        # as asked (a refused "put it next to X" with it already there)
        done = rec.robot_outcome == "done"
        rec.sim_success = bool(ev.sim_success) and done
        rec.sim_detail = ev.sim_detail if done else f"no completed motion ({rec.robot_outcome}); {ev.sim_detail}"
        rec.auto_check = physics_check(rec.sim_success, rec.sim_detail)
    else:
        if ev is not None and ev.sim_detail:
            rec.sim_detail = ev.sim_detail
        rec.auto_check = rec.depth_check
    if state.abort is not None:
        rec.abort, rec.outcome = state.abort, "aborted"
    elif rec.robot_outcome == "refused":
        rec.outcome = "failed"  # nothing moved at the agent's point: a failure whoever judges it
    elif state.auto_judge and rec.auto_check is not None and rec.auto_check.success is not None:
        settle(rec, rec.auto_check.success)
    settle(rec, None)
    evidence = Evidence(
        physics_known=ev is not None,
        physics_held=None if ev is None else ev.held,
        sensor=None if ev is None else ev.sensor,
        depth_pick=state.depth_pick,
        tool_open=state.tool_open,
    )
    belief = belief_after(state.belief, rec.action, moved=state.moved, completed=state.completed, evidence=evidence)
    frames = {k: f.jpeg for k, f in (("before", state.before), ("after", state.after)) if f is not None and f.jpeg}
    new = _go(state, event, "ended", to_label, record=rec, timer=None)
    return new, [Finish(rec, frames, belief)]


def _aborted(
    state: TrialState, event: Any, code: str, detail: str, **record_update: Any
) -> tuple[TrialState, list[Command]]:
    """Abort before any motion: the trial ends at once."""
    extra = {"robot_outcome": "not_moved", **record_update}
    state = dataclasses.replace(state, record=_rec(state, **extra), abort=Abort(code=code, detail=detail))
    return _finish(state, event, event.t)


def _to_judging(
    state: TrialState, event: Any, cmds: list[Command] | None = None, **changes: Any
) -> tuple[TrialState, list[Command]]:
    """After a motion (completed or not): ask the simulator for its judgement and contact state."""
    new = _go(state, event, "judging", timer="judge", **changes)
    return new, [*(cmds or []), GatherEvidence(new.record.expected), WakeAt("judge", event.t + new.rules.judge_s)]


def _abort_code_of(reply: ArmReply) -> str:
    return "estop" if reply.outcome == "stopped" else "robot_fault"


# -- handlers --------------------------------------------------------------------------------------
def _asking_answer(s: TrialState, e: Answered) -> tuple[TrialState, list[Command]]:
    r = e.reply
    upd: dict[str, Any] = {
        "raw_answer": r.raw_answer,
        "points": list(r.points),
        "points_px": list(r.points_px),
        "parse_error": r.parse_error,
    }
    if r.frame is not None:
        upd["frame_index"] = r.frame.index
        if r.frame.size:
            upd["frame_size"] = tuple(r.frame.size)
    timings = {"agent": e.t - s.t0}
    if r.latency_s is not None:
        timings["agent_model"] = r.latency_s
    upd["timings_s"] = _timed(s, e.t, **timings)
    if r.error:
        code = "camera_error" if r.error_kind == "camera" else "agent_error"
        return _aborted(s, e, code, r.error, agent_error=r.error, robot_outcome="agent_failure", **upd)
    first = r.points[0] if r.points else None
    if s.intended is not None and first is not None and (px := first.pixel) is not None:  # usable
        upd["point_on_target"] = point_in_mask(s.intended, *px)
    new = _go(s, e, "targeting", record=_rec(s, **upd), before=r.frame, timer="target", answered_ns=r.answered_ns)
    return new, [AskTarget(s.record.trial_id, r), WakeAt("target", e.t + s.rules.target_s)]


def _asking_timeout(s: TrialState, e: TimerFired) -> tuple[TrialState, list[Command]]:
    limit = s.rules.human_answer_s if s.human else s.rules.answer_s
    new, cmds = _aborted(
        s,
        e,
        "timeout",
        f"no answer within {limit:.0f} s",
        robot_outcome="agent_failure",
        agent_error=f"no answer within {limit:.0f} s",
    )
    return new, [CancelAgent(s.record.trial_id), *cmds]


def _early_abort(s: TrialState, e: AbortAsked | EStopped) -> tuple[TrialState, list[Command]]:
    code, detail = (
        ("operator_abort", f"before the motion ({s.phase})")
        if isinstance(e, AbortAsked)
        else ("estop", f"emergency stop before the motion ({s.phase})")
    )
    new, cmds = _aborted(s, e, code, detail)
    return new, ([CancelAgent(s.record.trial_id)] if s.phase == "asking" else []) + cmds


def _targeting_target(s: TrialState, e: Targeted) -> tuple[TrialState, list[Command]]:
    tgt = e.reply.target
    timings = {"targeting": e.t - s.t0 - s.record.timings_s.get("agent", 0.0), "ready": e.t - s.t0}
    if e.reply.published_ns and s.answered_ns:
        timings["point_to_target"] = (e.reply.published_ns - s.answered_ns) / 1e9
    upd: dict[str, Any] = {"target": tgt}
    if not tgt.valid:
        upd.update(robot_outcome="refused", refusal=tgt.refusal)
    s2 = dataclasses.replace(s, record=_rec(s, **upd, timings_s=_timed(s, e.t, **timings)))
    if e.t < s.reveal_t:
        new = _go(s2, e, "revealing", timer="reveal")
        return new, [WakeAt("reveal", s.reveal_t)]
    return _after_reveal(s2, e, e.label)


def _after_reveal(s: TrialState, e: Any, label: str) -> tuple[TrialState, list[Command]]:
    if s.record.target is not None and s.record.target.valid:
        return _go(s, e, "checking", label, timer=None), [CheckBeforeMotion()]
    new = _go(s, e, "looking", label, timer="after")
    return new, [CaptureAfter(s.rules.after_frame_s), WakeAt("after", e.t + s.rules.after_frame_s + 1.0)]


def _targeting_timeout(s: TrialState, e: TimerFired) -> tuple[TrialState, list[Command]]:
    return _aborted(s, e, "timeout", f"targeting gave no result within {s.rules.target_s:.0f} s")


def _revealing_timer(s: TrialState, e: TimerFired) -> tuple[TrialState, list[Command]]:
    return _after_reveal(s, e, e.label)


def _checking_checked(s: TrialState, e: Checked) -> tuple[TrialState, list[Command]]:
    if not e.arm.ready:
        code = "estop" if e.arm.problem == "estop" else "robot_fault"
        abort = Abort(code=code, detail=f"the arm is not ready: {e.arm.detail or e.arm.problem}")
        return _finish(
            dataclasses.replace(s, record=_rec(s, robot_outcome="not_moved"), abort=abort), e, e.t, "checked[arm]"
        )
    if e.free_bytes is not None and s.min_free_bytes is not None and e.free_bytes < s.min_free_bytes:
        detail = (
            f"{e.free_bytes / 1e6:.0f} MB free where trials are stored, below the study's floor of "
            f"{s.min_free_bytes / 1e6:.0f} MB"
        )
        return _finish(
            dataclasses.replace(
                s, record=_rec(s, robot_outcome="not_moved"), abort=Abort(code="no_storage", detail=detail)
            ),
            e,
            e.t,
            "checked[no_room]",
        )
    assert s.record.target is not None  # "checking" follows a valid target only (_after_reveal)
    target = s.record.target.point_base_m
    changes, cmds = _arm(s, e.t, s.record.action, "motion", s.rules.motion_s, target)
    rec = _rec(s, timings_s=_timed(s, e.t, to_motion=e.t - s.t0))
    return _go(s, e, "moving", "checked[ok]", record=rec, **changes), cmds


def _moving_arm(s: TrialState, e: ArmEnded) -> tuple[TrialState, list[Command]]:
    r = e.reply
    motion = None if r.motion is None else MotionReport.model_validate(r.motion)
    timings = {"motion": e.t - s.t0 - s.record.timings_s.get("to_motion", 0.0)}
    if r.command_rx_ns and s.answered_ns:
        # the loop's own latency: answer published -> command received by the arm (wall clocks)
        timings["point_to_command"] = (r.command_rx_ns - s.answered_ns) / 1e9
    if r.outcome == "done":
        rec = _rec(s, robot_outcome="done", motion=motion, timings_s=_timed(s, e.t, **timings))
        s2 = dataclasses.replace(s, record=rec, moved=True, completed=True, tool_open=s.record.action == "place")
        if s.rules.home_after:
            changes, cmds = _arm(s2, e.t, "home", "home", s.rules.home_s)
            return _go(s2, e, "homing", "arm[done]", **changes), cmds
        new = _go(s2, e, "looking", "arm[done]", timer="after", arm_request=None)
        return new, [CaptureAfter(s.rules.after_frame_s), WakeAt("after", e.t + s.rules.after_frame_s + 1.0)]
    if r.outcome == "refused" and r.refusal is not None and r.refusal.code == "bad_command":
        # the arm refused the system's own command as malformed: no test of the agent
        rec = _rec(s, robot_outcome="refused", refusal=r.refusal, timings_s=_timed(s, e.t, **timings))
        abort = Abort(code="system_error", detail=str(r.refusal))
        return _to_judging(
            dataclasses.replace(s, record=rec, abort=abort), _Labelled(e, "arm[failed]"), arm_request=None
        )
    if r.outcome == "refused":
        rec = _rec(s, robot_outcome="refused", refusal=r.refusal, timings_s=_timed(s, e.t, **timings))
        new = _go(dataclasses.replace(s, record=rec), e, "looking", "arm[refused]", timer="after", arm_request=None)
        return new, [CaptureAfter(s.rules.after_frame_s), WakeAt("after", e.t + s.rules.after_frame_s + 1.0)]
    # stopped, robot_failure, or a halt nobody asked for: the arm did not do its job
    outcome = "stopped" if r.outcome == "stopped" else "robot_failure"
    rec = _rec(s, robot_outcome=outcome, motion=motion, robot_error=r.error, timings_s=_timed(s, e.t, **timings))
    abort = Abort(code=_abort_code_of(r), detail=str(r.error) if r.error else r.outcome)
    return _to_judging(
        dataclasses.replace(s, record=rec, moved=True, abort=abort), _Labelled(e, "arm[failed]"), arm_request=None
    )


def _motion_timeout(s: TrialState, e: TimerFired) -> tuple[TrialState, list[Command]]:
    limit = {"motion": s.rules.motion_s, "home": s.rules.home_s, "halt": s.rules.halt_s, "recover": s.rules.recover_s}[
        e.name
    ]
    err = RobotErrorInfo(
        type="ArmTimeoutError", detail=f"the arm gave no result within {limit:.0f} s ({e.name}); emergency stop sent"
    )
    upd: dict[str, Any] = {"robot_error": err}
    if s.phase == "moving":
        upd["robot_outcome"] = "robot_failure"
    abort = (
        s.abort
        if s.abort is not None and s.phase == "recovering"
        else Abort(code="timeout", detail=f"the arm gave no result within {limit:.0f} s ({e.name})")
    )
    s2 = dataclasses.replace(s, record=_rec(s, **upd), moved=True, abort=abort)
    return _to_judging(s2, e, [EStopArm()], arm_request=None)


def _moving_abort(s: TrialState, e: AbortAsked) -> tuple[TrialState, list[Command]]:
    new = _go(s, e, "halting", timer="halt", abort=Abort(code="operator_abort", detail="during the motion"))
    return new, [HaltArm(), WakeAt("halt", e.t + s.rules.halt_s)]


def _motion_estop(s: TrialState, e: EStopped) -> tuple[TrialState, list[Command]]:
    upd: dict[str, Any] = {}
    if s.phase == "moving":
        upd = {
            "robot_outcome": "stopped",
            "robot_error": RobotErrorInfo(type="EmergencyStopError", detail="emergency stop during the motion"),
        }
    s2 = dataclasses.replace(
        s, record=_rec(s, **upd), moved=True, abort=Abort(code="estop", detail=f"emergency stop ({s.phase})")
    )
    return _to_judging(s2, e, arm_request=None)


def _halting_arm(s: TrialState, e: ArmEnded) -> tuple[TrialState, list[Command]]:
    r = e.reply
    motion = None if r.motion is None else MotionReport.model_validate(r.motion)
    if r.outcome in ("stopped", "robot_failure"):
        outcome = "stopped" if r.outcome == "stopped" else "robot_failure"
        rec = _rec(
            s,
            robot_outcome=outcome if s.record.robot_outcome != "done" else "done",
            robot_error=r.error,
            motion=motion or s.record.motion,
        )
        abort = Abort(
            code=_abort_code_of(r),
            detail=f"the controlled stop after the operator's abort ended in {r.outcome}: {r.error}",
        )
        return _to_judging(
            dataclasses.replace(s, record=rec, moved=True, abort=abort), _Labelled(e, "arm[failed]"), arm_request=None
        )
    # halted (or finished just before the halt took effect): put the slot back as it was
    robot_outcome = (
        s.record.robot_outcome
        if s.record.robot_outcome == "done"
        else ("halted" if r.outcome == "halted" else r.outcome)
    )
    rec = _rec(s, robot_outcome=robot_outcome, motion=motion or s.record.motion)
    steps = ("release", "home") if s.record.action == "pick" else ("home",)
    s2 = dataclasses.replace(s, record=rec, moved=s.moved or r.outcome != "refused", recover=steps[1:])
    changes, cmds = _arm(s2, e.t, steps[0], "recover", s.rules.recover_s)
    return _go(s2, _Labelled(e, "arm[ended]"), "recovering", **changes), cmds


def _recovering_arm(s: TrialState, e: ArmEnded) -> tuple[TrialState, list[Command]]:
    if e.reply.outcome != "done":
        rec = _rec(s, robot_error=e.reply.error or RobotErrorInfo(type="RecoveryError", detail=e.reply.outcome))
        return _to_judging(dataclasses.replace(s, record=rec), _Labelled(e, "arm[failed]"), arm_request=None)
    if s.arm_action == "release":
        s = dataclasses.replace(s, tool_open=True)  # an open gripper holds nothing
    if s.recover:
        changes, cmds = _arm(s, e.t, s.recover[0], "recover", s.rules.recover_s)
        return _go(
            dataclasses.replace(s, recover=s.recover[1:]), _Labelled(e, "arm[done]"), "recovering", **changes
        ), cmds
    return _to_judging(s, _Labelled(e, "arm[done]"), arm_request=None)


def _homing_arm(s: TrialState, e: ArmEnded) -> tuple[TrialState, list[Command]]:
    r = e.reply
    if r.outcome == "done":
        new = _go(s, _Labelled(e, "arm[done]"), "looking", timer="after", arm_request=None)
        return new, [CaptureAfter(s.rules.after_frame_s), WakeAt("after", e.t + s.rules.after_frame_s + 1.0)]
    rec = _rec(s, robot_error=r.error)
    abort = Abort(code=_abort_code_of(r), detail="homing after the action did not complete")
    return _to_judging(dataclasses.replace(s, record=rec, abort=abort), _Labelled(e, "arm[failed]"), arm_request=None)


def _looking_after(s: TrialState, e: AfterFrame | TimerFired) -> tuple[TrialState, list[Command]]:
    frame = e.frame if isinstance(e, AfterFrame) else None
    upd: dict[str, Any] = {}
    depth_pick = None
    if frame is not None:
        upd["after_frame_index"] = frame.index
        before, tgt = s.before, s.record.target
        if (
            before is not None
            and before.depth is not None
            and frame.depth is not None
            and tgt is not None
            and tgt.pixel is not None
            and before.depth_scale_m
        ):
            try:
                check = depth_check(s.record.action, tgt.pixel, before.depth, frame.depth, before.depth_scale_m)
            except ValueError:  # frames of different sizes (the camera changed): no check
                check = None
            upd["depth_check"] = check
            if check is not None and s.record.action == "pick" and s.completed:
                depth_pick = check.success
    s2 = dataclasses.replace(s, record=_rec(s, **upd), after=frame, depth_pick=depth_pick)
    return _to_judging(s2, e, arm_request=None)


def _looking_estop(s: TrialState, e: EStopped) -> tuple[TrialState, list[Command]]:
    return _to_judging(
        dataclasses.replace(s, abort=Abort(code="estop", detail="after the motion")), e, arm_request=None
    )


def _judging_evidence(s: TrialState, e: Evidenced | TimerFired) -> tuple[TrialState, list[Command]]:
    ev = e.evidence if isinstance(e, Evidenced) else None
    return _finish(s, e, e.t, evidence=ev)


def _judging_estop(s: TrialState, e: EStopped) -> tuple[TrialState, list[Command]]:
    if s.abort is not None:
        return s, []
    return _go(s, e, "judging", abort=Abort(code="estop", detail="after the motion")), []


@dataclass(frozen=True)
class _Labelled:
    """An event seen under a more specific transition label (``arm[done]``, ``arm[failed]``...)."""

    event: Any
    label: str

    @property
    def t(self) -> float:
        return self.event.t


_HANDLERS: dict[tuple[str, type], Any] = {
    ("asking", Answered): _asking_answer,
    ("asking", TimerFired): _asking_timeout,
    ("asking", AbortAsked): _early_abort,
    ("asking", EStopped): _early_abort,
    ("targeting", Targeted): _targeting_target,
    ("targeting", TimerFired): _targeting_timeout,
    ("targeting", AbortAsked): _early_abort,
    ("targeting", EStopped): _early_abort,
    ("revealing", TimerFired): _revealing_timer,
    ("revealing", AbortAsked): _early_abort,
    ("revealing", EStopped): _early_abort,
    ("checking", Checked): _checking_checked,
    ("checking", AbortAsked): _early_abort,
    ("checking", EStopped): _early_abort,
    ("moving", ArmEnded): _moving_arm,
    ("moving", TimerFired): _motion_timeout,
    ("moving", AbortAsked): _moving_abort,
    ("moving", EStopped): _motion_estop,
    ("halting", ArmEnded): _halting_arm,
    ("halting", TimerFired): _motion_timeout,
    ("halting", EStopped): _motion_estop,
    ("recovering", ArmEnded): _recovering_arm,
    ("recovering", TimerFired): _motion_timeout,
    ("recovering", EStopped): _motion_estop,
    ("homing", ArmEnded): _homing_arm,
    ("homing", TimerFired): _motion_timeout,
    ("homing", EStopped): _motion_estop,
    ("looking", AfterFrame): _looking_after,
    ("looking", TimerFired): _looking_after,
    ("looking", EStopped): _looking_estop,
    ("judging", Evidenced): _judging_evidence,
    ("judging", TimerFired): _judging_evidence,
    ("judging", EStopped): _judging_estop,
}
