"""A participant's next step, read from the store (``bridge.study.design.next_step`` over its rows), and
the two answers a step asks for: the judgement of a pending trial and a block's SUS questionnaire
(stored only when the step is due; the single-process app and the study server both use these)."""

from __future__ import annotations

from pointlab.bridge.errors import BridgeError
from pointlab.bridge.study.design import Step, next_step
from pointlab.bridge.study.episodes import next_pairwise_step
from pointlab.bridge.study.store import JUDGEMENTS, StoreError

__all__ = ["step_of", "NotDue", "store_judgement", "store_comparison", "store_sus"]


class NotDue(BridgeError):
    """The participant's step does not ask for this now (the message is for the participant)."""


def step_of(store, participant: dict) -> Step:
    """The next step of ``participant`` (a ``Store.participant`` row) in its study, from what ``store``
    (``bridge.study.store.Store``) holds: its trials, questionnaires and block starts, or in a
    pairwise study its episodes (``bridge.study.episodes.next_pairwise_step``)."""
    study = store.study(participant["study_id"])
    trials = store.trials(participant_id=participant["id"])
    if study.get("mode") == "pairwise":
        return next_pairwise_step(
            episodes=store.episodes(participant_id=participant["id"]),
            trials={t["id"]: t for t in trials},
            episodes_per_participant=study["trials_per_agent"],
            max_repeats=study.get("max_repeats", 2),
        )
    surveyed = {s["block"] for s in store.surveys(participant_id=participant["id"])}
    started = {b["block"] for b in store.block_starts(participant_id=participant["id"])}
    return next_step(
        n_blocks=len(study["agents"]),
        trials_per_agent=study["trials_per_agent"],
        trials=trials,
        surveyed_blocks=surveyed,
        started_blocks=started,
        max_repeats=study.get("max_repeats", 2),
    )


def store_judgement(store, step: Step, trial_id, judgement) -> None:
    """Store ``judgement`` of the trial ``step`` waits for.

    Raises:
        ValueError: ``judgement`` is not one of ``JUDGEMENTS``.
        NotDue: no such trial waits for it, or the store refused it.
    """
    if judgement not in JUDGEMENTS:
        raise ValueError(f"judgement must be one of {list(JUDGEMENTS)}")
    if step.kind != "judge" or step.trial_id != trial_id:
        raise NotDue("there is no such trial waiting for your judgement")
    try:
        store.set_judgement(trial_id, judgement)
    except StoreError as e:
        raise NotDue(str(e)) from e


def store_comparison(store, step: Step, msg) -> None:
    """Store the comparison ``msg`` (any object with ``episode_id``, ``preference``, ``progress_a``,
    ``progress_b``, ``reason``: the websocket's or the study server's message) of the episode ``step``
    waits for (``Store.judge_episode``: one winner); the reason is kept with its whitespace collapsed.

    Raises:
        NotDue: no such episode waits for it, a bad value (preference, progress, reason), or the store
            refused it (compared already).
    """
    if step.kind != "compare" or step.episode_id != msg.episode_id:
        raise NotDue("there is no such episode waiting for your comparison")
    try:
        store.judge_episode(
            msg.episode_id,
            preference=msg.preference,
            progress_a=msg.progress_a,
            progress_b=msg.progress_b,
            reason=" ".join(str(msg.reason).split()),
        )
    except StoreError as e:
        raise NotDue(str(e)) from e


def store_sus(store, participant: dict, step: Step, block, responses) -> int:
    """Store the SUS questionnaire of ``block`` when ``step`` asks for it; returns its id.

    Raises:
        NotDue: no questionnaire is due for ``block``.
        pointlab.bridge.study.sus.SusError: the responses are not ten integers 1-5.
    """
    if step.kind != "sus" or step.block != block:
        raise NotDue("no questionnaire is due for this block")
    return store.save_survey(
        responses,
        study_id=participant["study_id"],
        participant_id=participant["id"],
        block=block,
        agent=participant["agent_order"][block],
    )
