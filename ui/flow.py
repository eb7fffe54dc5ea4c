"""The participant's side of a study, blinded: what a participant may see and do.

Everything returned here goes to a participant's browser, so it is built from an explicit list of
safe fields: the alias (``"Agent k"``), the action, the points, the frame size and a fixed outcome
message. The agent's config name, model id, raw answer, parse error text and robot error text are
never copied (a raw answer or an API error can name the model, e.g. "As GPT-4o, ..." or
"model 'x' not found"). The server maps alias -> agent from the participant's stored order.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

from pointlab.bridge.study.design import Step, alias, trial_settings
from pointlab.bridge.study.steps import NotDue, step_of, store_judgement, store_sus
from pointlab.bridge.study.sus import SUS_ITEMS, SusError
from pointlab.bridge.trials.ports import Slot
from pointlab.bridge.trials.station import StationBusy

from .context import AppContext, CurrentTrial
from .deps import unusable_text

from pointlab.ui.errors import UiError

__all__ = [
    "FlowError",
    "participant_step",
    "participant_state",
    "blinded_trial",
    "claim_arm",
    "release_arm",
    "prepare_block",
    "request_block_start",
    "ABORT_WORDS",
    "run_participant_trial",
    "judge_trial",
    "submit_sus",
    "current_action",
    "OUTCOME_MESSAGES",
]

log = logging.getLogger(__name__)

# Fixed texts per robot outcome (bridge.trials.outcomes.ROBOT_OUTCOMES); no runner text reaches a participant.
# Neutral: "finished its motion" says the arm stopped, not that the instruction was carried out.
# The outcomes that only aborted trials have (halted, stopped, not_moved, ...) are told by ABORT_WORDS.
OUTCOME_MESSAGES = {
    "done": "The robot finished its {action} motion. Compare the two pictures.",
    "refused": "The robot did not move: {refusal}. This trial counts as not carried out.",
    "robot_failure": "The robot reported a fault and stopped.",
    "agent_failure": "The agent did not answer.",
    "stopped": "The robot was stopped by the operator.",
    "halted": "The robot was stopped by the operator.",
    "not_moved": "The robot did not move.",
    "interrupted": "The system stopped during this trial.",
}
# Refusal codes of bridge.trials.outcomes, in plain words (a refusal is not a fault: nothing moved).
# No point, an invalid one and one off the image read the same: only a model can produce the last two
# (the console refuses such a click), so telling them apart would single out a model.
REFUSAL_WORDS = {
    "no_point": "the agent gave no point",
    "invalid_point": "the agent gave no point",
    "outside_image": "the agent gave no point",
    "no_depth": "there is no depth reading near the point",
    "workspace": "the point is outside the robot's safe workspace",
    "unreachable": "the robot cannot reach that point",
    "no_target": "the point could not be turned into a target in time",
    "bad_command": "the command was refused",
}


class FlowError(UiError):
    """A participant request that is not allowed now (wrong step, not their turn, arm busy, bad value)."""


def current_action(ctx: AppContext) -> str:
    """``place`` when the arm's belief says it holds something, else ``pick`` (PointArena sec. 3.4)."""
    return ctx.station.next_action()


# Why an aborted trial did not count, in plain words (bridge.trials.outcomes.AbortCode).
ABORT_WORDS = {
    "estop": "the robot was stopped with the emergency stop",
    "operator_abort": "the operator stopped the trial",
    "robot_fault": "the robot reported a fault",
    # the same words: a model's failed call and a human reference who never clicks must read alike
    "agent_error": "no answer came in time",
    "camera_error": "the camera gave no picture",
    "timeout": "no answer came in time",
    "no_storage": "there is no room left to record the trial",
    "system_error": "the system did not respond correctly",
    "interrupted": "the system stopped during the trial",
    "station_lost": "the robot's station went offline during the trial",
}
AGAIN = {
    True: "The same trial is offered again.",
    False: "This agent's repeats are used up, so the trial is not offered again.",
}
# a pairwise episode's aborted half voids the episode (ui.pairwise_flow): said of the episode
AGAIN_EPISODE = {
    True: "The same episode is offered again.",
    False: "Your repeats are used up, so the episode is not offered again.",
}


def participant_step(ctx: AppContext, participant: dict) -> Step:
    return step_of(ctx.store, participant)


def blinded_trial(row: dict, offered_again: bool = True, *, half_of_episode: bool = False) -> dict[str, Any]:
    """A stored trial as a participant may see it. ``offered_again``: an aborted trial's slot is offered
    again (the block has repeats left), which the message says; ``half_of_episode``: the trial is a
    pairwise episode's half, so an abort is told of the episode it voids."""
    outcome = row["robot_outcome"] if row["robot_outcome"] in OUTCOME_MESSAGES else "robot_failure"
    # an answer that could not be read holds no point: told exactly as any answer without a point,
    # which the human reference's console can give too (its "No point" button), so it singles out no model
    refusal = (row.get("refusal") or {}).get("code") or "no_point"
    aborted = row.get("outcome") == "aborted"
    if aborted:
        code = (row.get("abort") or {}).get("code")
        why = (
            ABORT_WORDS.get(code, "the trial could not be completed")
            if isinstance(code, str)
            else "the trial could not be completed"
        )
        if half_of_episode:
            message = f"This episode does not count: {why}. {AGAIN_EPISODE[bool(offered_again)]}"
        else:
            message = f"This trial does not count: {why}. {AGAIN[bool(offered_again)]}"
    else:
        message = OUTCOME_MESSAGES[outcome].format(
            action=row["action"], refusal=REFUSAL_WORDS.get(refusal, "no safe target")
        )
    # Blinding: only the first point (the one acted on: PointArena sec. 4.1), as integer pixels inside
    # the image, for every agent: a human reference clicks exactly one point, on the image, at
    # half-pixel precision, so more points, a model's native grid (Molmo's percent, Gemini's per mille)
    # or a point off the image would tell agents apart. Non-finite points (a custom agent) would be a
    # bare NaN in the JSON, which browsers cannot parse.
    size = row.get("frame_size")
    points = _shown_point(row, size)
    return {
        "trial_id": row["id"],
        "number": row.get("number"),
        "alias": alias(row["block"]) if row.get("block") is not None else None,
        "instruction": row["instruction"],
        "action": row["action"],
        "points_px": points,
        "frame_size": [int(x) for x in size] if size else None,
        "outcome": "aborted" if aborted else outcome,
        "message": message,
        "judgement": row.get("judgement"),
        "has_after": row.get("after_frame_index") is not None,
    }


def _shown_point(row: dict, size) -> list[list[int]]:
    """The trial's first point as ``[[u, v]]`` integer pixels when it is a usable point on the image,
    else ``[]`` (a refusal at pointing reads "no point")."""
    entries = row.get("points") or [
        {"u_px": p[0], "v_px": p[1]} for p in row.get("points_px") or [] if isinstance(p, (list, tuple)) and len(p) == 2
    ]  # a row without entries
    first = entries[0] if entries else None
    if not isinstance(first, dict) or not first.get("valid", True):
        return []
    u, v = first.get("u_px"), first.get("v_px")
    if not (isinstance(u, (int, float)) and isinstance(v, (int, float)) and math.isfinite(u) and math.isfinite(v)):
        return []
    if size and not (-0.5 <= u < size[0] - 0.5 and -0.5 <= v < size[1] - 0.5):
        return []
    return [[int(math.floor(u + 0.5)), int(math.floor(v + 0.5))]]


def participant_state(ctx: AppContext, participant: dict) -> dict[str, Any]:
    """The ``state`` message of a participant's websocket (blinded)."""
    step = participant_step(ctx, participant)
    pos = ctx.queue.position(participant["id"])
    mine_running = ctx.current is not None and ctx.current.participant_id == participant["id"]
    state = {
        "type": "state",
        "label": participant["label"],
        "step": step.to_dict(),
        "queue_position": pos,
        "queue_length": len(ctx.queue.snapshot()),
        "action": current_action(ctx),
        "arm_busy": ctx.current is not None,
        "running": mine_running,
        "stopped": ctx.stopped,
        "pending_trial": None,
        # after a reset the arm waits for the operator's Home arm (or a fault for a reset): the page
        # says the operator is getting it ready, instead of offering a Send that would be refused
        "not_ready": ctx.station.needs_reset is not None and not ctx.stopped,
    }
    if step.kind == "judge" and step.trial_id is not None:
        state["pending_trial"] = blinded_trial(ctx.store.trial(step.trial_id))
    if step.kind == "sus":  # the page shows the same statements the score is computed for
        state["sus_items"] = list(SUS_ITEMS)
    if ctx.store.study(participant["study_id"]).get("mode") == "pairwise":
        from .pairwise_flow import pairwise_state  # it builds on this module

        state["action"] = "pick"  # every half starts from the restored start scene, holding nothing
        state.update(pairwise_state(ctx.store, step))
    return state


def _check_turn(ctx: AppContext, participant: dict) -> None:
    if ctx.queue.position(participant["id"]) != 0:
        raise FlowError("it is not your turn yet: please wait until you reach the front of the queue")


def check_can_start(ctx: AppContext, participant: dict, text: Any) -> tuple[Step, str]:
    """Validate an instruction request; returns the step and the cleaned instruction. Raises FlowError."""
    if not isinstance(text, str) or not text.strip():
        raise FlowError("type an instruction first")
    text = " ".join(text.split())
    if reason := unusable_text(text):  # before anything runs: such a trial could not be stored
        raise FlowError(f"the instruction cannot be used: {reason}")
    if len(text) > ctx.settings.max_instruction_chars:
        raise FlowError(f"the instruction is longer than {ctx.settings.max_instruction_chars} characters")
    step = participant_step(ctx, participant)
    if step.kind == "done":
        raise FlowError("you have finished the study")
    _check_turn(ctx, participant)
    if ctx.stopped:
        raise FlowError("the robot is stopped; wait for the operator to reset it")
    if step.kind != "trial":
        raise FlowError(
            {
                "judge": "judge the last trial first",
                "compare": "compare the last two robots first",
                "sus": "fill in the questionnaire first",
                "setup": "wait until the robot and the scene are reset for this agent",
            }[step.kind]
        )
    if ctx.current is not None:
        raise FlowError("the robot is busy")
    if problem := ctx.station.start_problem(trial_settings(ctx.store.study(participant["study_id"]))):
        raise FlowError(problem)  # stopped, busy, not ready, or too little room to store the trial
    return step, text


def claim_arm(ctx: AppContext, participant: dict, step: Step, text: str) -> CurrentTrial:
    """Make this trial the arm's current trial now, before any ``await``.

    Call it right after :func:`check_can_start` on the event loop: messages that arrive together
    (a double click, a script) are all read before a trial task first runs, so a claim made only
    inside the task would let every one of them pass ``check_can_start``."""
    assert step.block is not None and step.alias is not None  # a trial step names its block
    ctx.current = CurrentTrial(
        participant["id"],
        participant["label"],
        participant["study_id"],
        step.block,
        step.alias,
        participant["agent_order"][step.block],
        text,
        current_action(ctx),
    )
    return ctx.current


def release_arm(ctx: AppContext, claim: CurrentTrial) -> None:
    """Drop ``claim`` if it is still the current trial (e.g. its task was cancelled before it ran)."""
    if ctx.current is claim:
        ctx.current = None


async def run_participant_trial(
    ctx: AppContext, participant: dict, step: Step, text: str, claim: CurrentTrial | None = None
) -> dict[str, Any]:
    """Run and store one trial of ``step``'s block; returns the blinded trial. ``claim`` is the
    :func:`claim_arm` made for it (``None``: claim here). Raises FlowError when the arm got busy
    meanwhile or the runner itself crashed (nothing is stored then)."""
    if claim is None:
        if ctx.current is not None:
            raise FlowError("the robot is busy")
        claim = claim_arm(ctx, participant, step, text)
    elif ctx.current is not claim:
        raise FlowError("the robot is busy")
    try:
        settings = trial_settings(ctx.store.study(participant["study_id"]))
        slot = Slot(participant["study_id"], participant["id"], step.block)
        try:
            # the station stores the trial in its slot, with its finished recording, before it returns
            ran = await ctx.station.run_trial(claim.agent, text, slot=slot, settings=settings)
        except asyncio.CancelledError:
            raise
        except StationBusy as e:
            raise FlowError(str(e)) from e
        except Exception as e:  # the station does not raise for trial failures; a crash is told without details
            log.exception("run_trial crashed for agent %s", claim.agent)
            raise FlowError("the trial could not run; please tell the operator") from e
    finally:
        release_arm(ctx, claim)
    if ran.stored_id is None:
        raise FlowError("the trial could not be stored; please tell the operator")
    again = ran.result.outcome == "aborted" and participant_step(ctx, participant).repeat
    return blinded_trial(ctx.store.trial(ran.stored_id), offered_again=again)


# -- block setup: the starting scene of each agent block ---------------------------------------------
def request_block_start(ctx: AppContext, participant: dict) -> Step:
    """Check that ``participant`` may start its next block now (its step is ``setup``, its turn, the
    arm free and not stopped); returns the step. Raises FlowError."""
    step = participant_step(ctx, participant)
    if step.kind != "setup":
        raise FlowError("there is no agent block to start now")
    _check_turn(ctx, participant)
    if ctx.stopped:
        raise FlowError("the robot is stopped; wait for the operator to reset it")
    if ctx.busy():
        raise FlowError("the robot is busy")
    # the block start moves the arm too: nothing moves when a trial could not start (no room, not
    # ready), except that it homes first, so an arm a reset left where it stopped is no reason
    if problem := ctx.station.start_problem(trial_settings(ctx.store.study(participant["study_id"])), homes_first=True):
        raise FlowError(problem)
    return step


async def prepare_block(ctx: AppContext, participant: dict, step: Step, *, method: str) -> dict[str, Any]:
    """Bring the arm and the scene to the block's start and store the starting frame: open the
    gripper and clear what it holds, home, restore the scene (a simulator does it exactly; for real
    hardware ``method`` is ``operator_confirmed``: the operator has put the scene back), then keep a
    fresh camera frame. Raises FlowError when the arm cannot be reset (nothing is stored then)."""
    assert step.block is not None and step.alias is not None  # a setup step names its block
    claim = CurrentTrial(
        participant["id"],
        participant["label"],
        participant["study_id"],
        step.block,
        step.alias,
        participant["agent_order"][step.block],
        "(resetting the scene)",
        "reset",
    )
    if ctx.busy():
        raise FlowError("the robot is busy")
    ctx.current = claim
    try:
        res = await ctx.station.reset_block()
        if res.get("outcome") != "done":
            raise FlowError("the robot could not be reset for the next agent; please tell the operator")
        frame = await _fresh_frame(ctx)
        ctx.store.save_block_start(
            study_id=participant["study_id"],
            participant_id=participant["id"],
            block=step.block,
            method=method,
            frame_jpeg=frame[0] if frame else None,
            frame_index=frame[1] if frame else None,
        )
    finally:
        release_arm(ctx, claim)
    return {"type": "block_started", "block": step.block, "alias": step.alias}


async def _fresh_frame(ctx: AppContext, timeout_s: float = 5.0) -> tuple[bytes, int] | None:
    """A live-view frame captured after now (two frame indices later), or the latest on timeout."""
    first = ctx.parts.live_view.latest_jpeg()
    start = first[1] if first else -1
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    latest = first
    while loop.time() < deadline:
        latest = ctx.parts.live_view.latest_jpeg()
        if latest is not None and latest[1] >= start + 2:
            return latest
        await asyncio.sleep(0.02)
    return latest


def judge_trial(ctx: AppContext, participant: dict, trial_id: Any, judgement: Any) -> dict[str, Any]:
    """Store the participant's judgement of their own pending trial. Raises FlowError."""
    try:
        store_judgement(ctx.store, participant_step(ctx, participant), trial_id, judgement)
    except (NotDue, ValueError) as e:
        raise FlowError(str(e)) from e
    return {"type": "judged", "trial_id": trial_id, "judgement": judgement}


def submit_sus(ctx: AppContext, participant: dict, block: Any, responses: Any) -> dict[str, Any]:
    """Store the SUS survey of ``block``; returns ``{"type": "sus_saved", "block", "alias", "score"}``.
    Raises FlowError (wrong step or block, responses not ten integers 1-5)."""
    try:
        sid = store_sus(ctx.store, participant, participant_step(ctx, participant), block, responses)
    except NotDue as e:
        raise FlowError(str(e)) from e
    except SusError as e:
        raise FlowError(f"questionnaire: {e}") from e
    score = next(s["score"] for s in ctx.store.surveys(participant_id=participant["id"]) if s["id"] == sid)
    return {"type": "sus_saved", "block": block, "alias": alias(block), "score": score}
