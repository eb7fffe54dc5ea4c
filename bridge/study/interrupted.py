"""Trials a session began and never finished (killed, crashed, power cut): found and closed at the next start.

The station notes every trial in the store when it begins (``Store.begin_trial``) and the note goes
when the trial is stored (``Store.save_trial``, one transaction). A note still there when a session
starts is a trial that was running when its session died. ``close_interrupted`` turns each into a
stored trial, ``aborted`` with ``abort.code = "interrupted"`` and ``robot_outcome = "interrupted"``
(what the arm did is not known): not charged to the agent, as every abort (docs/trials.md), and its
slot is offered again as after any abort. The agent's answer, when the recording kept it, is stored
with the trial (its points, for the record). Its recording, cut by the kill, is rewritten from the whole
chunks that survived (``bridge.recording.recover.recover_bag``: at most the last chunk is lost) and
linked to it, with ``ended_by = "interrupted"`` and ``complete = False``. A trial whose recording
cannot be recovered is stored all the same, with the reason in its recording's errors, and its files
stay where they are for ``pointlab act recordings --check`` to list.
"""

from __future__ import annotations

import logging
from pathlib import Path

from pointlab.bridge.recording.check import mcap_is_whole
from pointlab.bridge.recording.layout import Recording, RecordingLayout
from pointlab.bridge.recording.recorder import image_frames
from pointlab.bridge.recording.recover import RecoveryError, recover_bag, summarize_bag
from pointlab.bridge.ros.msgs import TOPICS
from pointlab.bridge.trials.record import unfinished_trial

__all__ = ["close_interrupted", "INTERRUPTED_DETAIL"]

log = logging.getLogger(__name__)

INTERRUPTED_DETAIL = "the session stopped during the trial (killed or crashed); found when it started again"


def _recording(layout: RecordingLayout, uid: str, started_unix_ns: int) -> tuple[Recording | None, str]:
    """The recording of an interrupted trial, recovered when its MCAP is cut, and what became of it:
    ``recovered``, ``whole`` (closed before the kill), ``lost`` (nothing readable) or ``none``."""
    bag, mcap = layout.bag(uid), layout.mcap(uid)
    rec = Recording(trial_id=uid, started_unix_ns=started_unix_ns, ended_by="interrupted")
    if not mcap.exists():
        if not bag.exists():
            return None, "none"
        rec.errors = [f"the session stopped before any of {layout.relative(bag)} was written"]
        return rec, "lost"
    rec.bag, rec.mcap = layout.relative(bag), layout.relative(mcap)
    whole = mcap_is_whole(mcap)
    if whole:  # the writer had closed it: nothing to rebuild
        saved = layout.load(uid)
        if saved is not None and saved.trial_id == uid:  # and written its record: that is the recording
            return saved, "whole"
    try:
        got = summarize_bag(bag) if whole else recover_bag(bag)
    except RecoveryError as e:
        rec.errors = [f"the recording was cut and could not be recovered: {e}"]
        return rec, "lost"
    rec.mcap_bytes, rec.messages = got.mcap_bytes, got.messages
    rec.color_frames, rec.depth_frames = image_frames(got.messages)
    rec.duration_s = round(max(0, got.last_log_ns - started_unix_ns) / 1e9, 3)
    rec.errors = (
        ["the session stopped after the bag was closed, before its record and the trial were stored"]
        if whole
        else [f"bag recovered after the session stopped: {got.total} messages kept ({got.stopped_at})"]
    )
    if layout.clip(uid).exists():
        # an MP4 is indexed when it is closed: the one the kill cut plays nowhere; it stays beside the bag
        rec.errors.append(
            f"clip {layout.relative(layout.clip(uid))}: cut by the kill before it was closed, so "
            "it has no index and cannot be played"
        )
    return rec, "whole" if whole else "recovered"


def _answer_in(layout: RecordingLayout, rec: Recording | None, uid: str) -> dict:
    """The agent's answer to trial ``uid`` as its recording kept it (``/pointlab/point_answer`` with that
    request id): the ``TrialResult`` fields it fills (``raw_answer``, ``points``, ``points_px``,
    ``parse_error``, ``frame_size``), or ``{}`` when the kill came before it (or nothing is readable)."""
    if rec is None or rec.bag is None or not rec.messages.get(TOPICS["point_answer"]):
        return {}
    from rosbags.highlevel import AnyReader

    from pointlab.bridge.ros.payloads import PointAnswer

    try:
        with AnyReader([layout.bag(uid)]) as reader:
            conns = [c for c in reader.connections if c.topic == TOPICS["point_answer"]]
            for conn, _t, raw in reader.messages(connections=conns):
                try:
                    ans = PointAnswer.model_validate_json(reader.deserialize(raw, conn.msgtype).data)  # type: ignore[attr-defined]  # rosbags types messages as object; a std_msgs/String
                except ValueError:
                    continue
                if ans.request_id == uid:
                    size = (ans.width, ans.height) if ans.width and ans.height else None
                    return {
                        "raw_answer": ans.raw_answer,
                        "points": ans.points,
                        "points_px": ans.points_px,
                        "parse_error": ans.parse_error,
                        "frame_size": size,
                    }
    except Exception as e:  # an unreadable bag costs the answer only, never the trial
        log.warning("the answer of interrupted trial %s could not be read from its bag: %s", uid, e)
    return {}


def close_interrupted(store, recordings_dir: str | Path | None) -> list[dict]:
    """Store every trial ``store`` noted as begun and never stored (module docstring) and link its
    recovered recording (``recordings_dir``: the session's recordings folder; ``None``: none kept).

    Returns:
        one ``{"trial_uid", "row", "recording": "recovered"|"whole"|"none"|"lost", "error"?}`` per trial.
        Never raises for one trial (a trial that cannot be stored keeps its note and is tried again at
        the next start).
    """
    layout = RecordingLayout(recordings_dir) if recordings_dir is not None else None
    out = []
    for note in store.unfinished_trials():
        uid = note["trial_uid"]
        started_ns = int(note["started_unix_s"] * 1e9)
        rec, kind = _recording(layout, uid, started_ns) if layout is not None else (None, "none")
        answer = _answer_in(layout, rec, uid) if layout is not None else {}
        result = unfinished_trial(
            uid,
            agent=note["agent"],
            instruction=note["instruction"],
            action=note["action"],
            code="interrupted",
            detail=INTERRUPTED_DETAIL,
            recording=None if rec is None else rec.model_dump(mode="json"),
            **answer,
        )
        item = {"trial_uid": uid, "recording": kind}
        try:
            if rec is not None and layout is not None:  # (a recording is found in a layout only)
                layout.save(rec)
            item["row"] = store.save_trial(
                result, study_id=note["study_id"], participant_id=note["participant_id"], block=note["block"]
            )
        except Exception as e:  # a store that cannot take it now: the note stays for the next start
            item["error"] = f"{type(e).__name__}: {e}"
            log.error("interrupted trial %s could not be stored: %s", uid, e)
        out.append(item)
        log.warning(
            "trial %s (%s) was interrupted by the last session's end: stored as aborted, recording %s",
            uid,
            note["agent"],
            kind,
        )
    return out
