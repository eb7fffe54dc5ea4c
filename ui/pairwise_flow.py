"""The participant's side of a pairwise (A/B) study, blinded (``bridge.study.episodes``; docs/statistics.md).

One instruction runs two agents one after the other: the station restores the start scene, agent A
acts, the station restores the same start, agent B acts; then the participant compares the two
before/after pairs. The participant sees the halves only as ``A`` and ``B`` (the order is random per
episode, so a letter names no agent) and each half through ``flow.blinded_trial`` (its first point,
fixed outcome texts). An aborted half ends the episode there: B does not run, the episode is void and
its slot is offered again (``bridge.study.episodes``).

Both halves start from the study's start scene: a simulator restores it exactly; on real hardware
the operator puts every object back before each half (as before an agent block in absolute mode) and
confirms with the console's Reset scene (``ctx.pending_half``); the console's Abort ends the episode
there instead (void: its slot is offered again). The participant's page says the operator is putting
the scene back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pointlab.bridge.study.design import Step, trial_settings
from pointlab.bridge.study.episodes import PROGRESS_ANCHORS, open_episode, pick_pair
from pointlab.bridge.study.steps import NotDue, store_comparison
from pointlab.bridge.trials.ports import Slot
from pointlab.bridge.trials.station import StationBusy

from .context import AppContext, CurrentTrial
from .flow import FlowError, blinded_trial, release_arm

__all__ = [
    "HALVES",
    "is_pairwise",
    "claim_episode",
    "run_episode",
    "blinded_episode",
    "compare_episode",
    "pairwise_state",
]

log = logging.getLogger(__name__)

HALVES = (("a", "A"), ("b", "B"))


def is_pairwise(ctx: AppContext, participant: dict) -> bool:
    return ctx.store.study(participant["study_id"]).get("mode") == "pairwise"


def claim_episode(ctx: AppContext, participant: dict, step: Step, text: str) -> CurrentTrial:
    """Pick the episode's pair (the study's pair sampling) and make it the arm's current work now,
    before any ``await`` (as ``flow.claim_arm``). The claim names agent A; ``run_episode`` names B
    when B's half starts."""
    study = ctx.store.study(participant["study_id"])
    a, b = pick_pair(study, ctx.store.episodes(study_id=study["id"]))
    number = int(step.trial_number or 1)
    ctx.current = CurrentTrial(
        participant["id"], participant["label"], participant["study_id"], number - 1, "A", a, text, "pick", pair=(a, b)
    )
    return ctx.current


async def run_episode(
    ctx: AppContext,
    participant: dict,
    step: Step,
    text: str,
    claim: CurrentTrial,
    on_half: Callable[[str], Awaitable[None]] | None = None,
    on_wait: Callable[[str], Awaitable[None]] | None = None,
) -> dict[str, Any]:
    """Run both halves of one episode for ``claim`` (``claim_episode``), each from the restored start
    scene, and store them; returns the blinded episode. ``on_half(letter)`` is awaited as each half
    starts, ``on_wait(letter)`` when a half waits for the operator to put the scene back (real
    hardware). Raises FlowError when the arm got busy, a reset failed, the operator aborted while the
    scene was being put back, or the runner crashed (what was stored stays: the episode is then void)."""
    if ctx.current is not claim or claim.pair is None:
        raise FlowError("the robot is busy")
    a, b = claim.pair
    study = ctx.store.study(participant["study_id"])
    settings = trial_settings(study)
    episode_id = None
    try:
        episode = open_episode(ctx.store, study, participant["id"], text, (a, b))
        episode_id = episode["id"]
        slot = Slot(study["id"], participant["id"], episode["number"] - 1)
        for (half, letter), agent in zip(HALVES, (a, b)):
            claim.agent, claim.alias, claim.action = agent, letter, "reset"
            if not ctx.parts.scene_automatic:
                await _operator_restores_scene(ctx, participant, episode["number"], letter, on_wait)
            res = await ctx.station.reset_block()
            if res.get("outcome") != "done":
                raise FlowError("the robot could not be reset between the two agents; please tell the operator")
            claim.action = ctx.station.next_action()
            if on_half is not None:
                await on_half(letter)
            try:
                ran = await ctx.station.run_trial(agent, text, slot=slot, settings=settings)
            except asyncio.CancelledError:
                raise
            except StationBusy as e:
                raise FlowError(str(e)) from e
            except Exception as e:  # as flow.run_participant_trial: a crash is told without details
                log.exception("run_trial crashed for agent %s", agent)
                raise FlowError("the trial could not run; please tell the operator") from e
            if ran.stored_id is None:
                raise FlowError("the trial could not be stored; please tell the operator")
            ctx.store.set_episode_half(episode_id, half, ran.stored_id)
            if ran.result.outcome == "aborted":
                break  # the episode is void: B is not run on a start A's abort may have left
        else:
            if ctx.parts.scene_automatic:
                # the next instruction is typed looking at the live view: show the start scene, not B's end
                claim.action = "reset"
                await ctx.station.reset_block()
    finally:
        if episode_id is not None:  # its run has ended, by whatever path: a missing half now voids it
            ctx.store.finish_episode(episode_id)
        release_arm(ctx, claim)
    from .flow import participant_step

    again = participant_step(ctx, participant).repeat
    return blinded_episode(ctx.store, ctx.store.episode(episode_id), offered_again=again)


async def _operator_restores_scene(
    ctx: AppContext, participant: dict, number: int, letter: str, on_wait: Callable[[str], Awaitable[None]] | None
) -> None:
    """Wait until the operator confirms (console: Reset scene) that the start scene is back before
    half ``letter``. Raises FlowError when the operator aborts instead."""
    from .context import PendingHalf

    pending = PendingHalf(
        participant["id"], participant["label"], number, letter, asyncio.get_running_loop().create_future()
    )
    ctx.pending_half = pending
    try:
        if on_wait is not None:
            await on_wait(letter)
        await pending.confirmed
    finally:
        if ctx.pending_half is pending:
            ctx.pending_half = None


def blinded_episode(store: Any, episode: dict, *, offered_again: bool = True) -> dict[str, Any]:
    """An episode (a ``Store.episode`` row of ``store``) as the participant may see it: its number,
    instruction, and each stored half as ``flow.blinded_trial`` with ``alias`` ``A`` or ``B``; ``void``
    when a half was aborted or is missing (an aborted half's message says whether the episode is
    offered again: ``offered_again``)."""
    halves = []
    for half, letter in HALVES:
        tid = episode[f"trial_{half}_id"]
        if tid is None:
            continue
        shown = blinded_trial(store.trial(tid), offered_again, half_of_episode=True)
        shown["alias"] = letter
        halves.append(shown)
    void = len(halves) < 2 or any(h["outcome"] == "aborted" for h in halves)
    return {
        "episode_id": episode["id"],
        "number": episode["number"],
        "instruction": episode["instruction"],
        "halves": halves,
        "void": void,
    }


def compare_episode(ctx: AppContext, participant: dict, msg: Any) -> dict[str, Any]:
    """Store the participant's comparison (``msg``: ``episode_id``, ``preference``, ``progress_a``,
    ``progress_b``, ``reason``) of their own pending episode (``steps.store_comparison``). Raises FlowError."""
    from .flow import participant_step

    try:
        store_comparison(ctx.store, participant_step(ctx, participant), msg)
    except NotDue as e:
        raise FlowError(str(e)) from e
    return {"type": "compared", "episode_id": msg.episode_id}


def pairwise_state(store: Any, step: Step) -> dict[str, Any]:
    """What a pairwise participant's ``state`` message adds (``pointlab act`` and a study server
    alike): the mode, the written progress anchors, and the episode waiting for its comparison."""
    extra: dict[str, Any] = {
        "mode": "pairwise",
        "progress_anchors": [{"score": s, "text": t} for s, t in PROGRESS_ANCHORS],
        "pending_episode": None,
    }
    if step.kind == "compare" and step.episode_id is not None:
        extra["pending_episode"] = blinded_episode(store, store.episode(step.episode_id))
    return extra
