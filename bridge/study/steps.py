"""A participant's next step, read from the store (``bridge.study.design.next_step`` over its rows)."""

from __future__ import annotations

from pointlab.bridge.study.design import Step, next_step

__all__ = ["step_of"]


def step_of(store, participant: dict) -> Step:
    """The next step of ``participant`` (a ``Store.participant`` row) in its study, from what ``store``
    (``bridge.study.store.Store``) holds: its trials, questionnaires and block starts."""
    study = store.study(participant["study_id"])
    trials = store.trials(participant_id=participant["id"])
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
