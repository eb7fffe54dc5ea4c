"""The store port of the trial machine over the study's SQLite store (``bridge.study.store.Store``)."""

from __future__ import annotations

from pointlab.bridge.study.store import Store
from pointlab.bridge.trials.ports import Slot
from pointlab.bridge.trials.record import TrialResult

__all__ = ["StudyStorePort"]


class StudyStorePort:
    """``bridge.trials.ports.StorePort``: a trial noted when it begins; once finished, stored with its
    two frames in one transaction in its study slot (the note removed); frames read back by the
    trial's record id.

    Raises (from ``save``):
        pointlab.bridge.study.store.StoreError: the trial cannot be stored (repeated id, unknown study
            or participant, the database unwritable).
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def begin(self, trial_id: str, slot: Slot, *, agent: str, instruction: str, action: str) -> None:
        self.store.begin_trial(
            trial_id,
            agent=agent,
            instruction=instruction,
            action=action,
            study_id=slot.study_id,
            participant_id=slot.participant_id,
            block=slot.block,
        )

    def save(self, result: TrialResult, slot: Slot, frames: dict[str, bytes]) -> int:
        return self.store.save_trial(
            result, study_id=slot.study_id, participant_id=slot.participant_id, block=slot.block, frames=frames
        )

    def frame(self, trial_id: str, which: str) -> bytes | None:
        return self.store.trial_frame(trial_id, which)
