"""A station's own journal: every trial it ran, kept until the study server has acknowledged it.

The station's ``StorePort`` (``bridge.trials.ports``) writes here, in a SQLite file of its own, never
to the server directly: a trial that ends while the server is unreachable is kept and delivered when
the server is back (``StationNode``'s delivery loop), and a trial is delivered until the server has
acknowledged it. The server stores a trial by its id once (a repeated delivery is acknowledged and
dropped), so delivery is at-least-once and storage exactly-once (docs/stations.md, "Faults").

A trial noted as begun and never saved (the station was killed during it) is, at the next start, a
record ``aborted`` / ``interrupted`` (``bridge.study.interrupted``'s rule); when the server already
stored that trial as ``station_lost``, the server keeps its own and drops this one.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from sqlalchemy import Float, String, Text, create_engine, event, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from pointlab.bridge.stations.wire import TrialRecord, b64, unb64
from pointlab.bridge.study.interrupted import close_interrupted
from pointlab.bridge.trials.ports import Slot
from pointlab.bridge.trials.record import TrialResult

__all__ = ["Journal", "JournalStorePort"]


class _Base(DeclarativeBase):
    pass


class _Entry(_Base):
    __tablename__ = "journal"
    trial_uid: Mapped[str] = mapped_column(String(64), primary_key=True)
    begun: Mapped[str] = mapped_column(Text)  # JSON: slot, agent, instruction, action
    record: Mapped[str | None] = mapped_column(Text, nullable=True)  # TrialRecord JSON once finished
    begun_unix_s: Mapped[float] = mapped_column(Float)
    delivered_unix_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    refused: Mapped[str | None] = mapped_column(Text, nullable=True)  # why the server will never store it
    # the recording's files are at the server too (or there were none to send)
    files_delivered_unix_s: Mapped[float | None] = mapped_column(Float, nullable=True)


def _pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")  # a trial the arm finished survives a power cut
    cur.close()


class Journal:
    """The journal file of one station (module docstring). Thread-safe (one short session per call).

    Args:
        path: the SQLite file (created with its folder's parent existing).
        station: the station's name (written into every record).
        recordings_dir: the station's recordings folder (``None``: it records nothing), where a killed
            trial's cut recording is recovered from.
    """

    def __init__(self, path: str | Path, station: str, recordings_dir: str | Path | None = None) -> None:
        self.path, self.station = Path(path), station
        self.recordings_dir = None if recordings_dir is None else Path(recordings_dir)
        self._engine = create_engine(f"sqlite:///{self.path}", connect_args={"check_same_thread": False})
        event.listen(self._engine, "connect", _pragmas)
        _Base.metadata.create_all(self._engine)
        with self._engine.begin() as c:  # a journal from before recordings were delivered: add the column
            if "files_delivered_unix_s" not in {r[1] for r in c.exec_driver_sql("PRAGMA table_info(journal)")}:
                c.exec_driver_sql("ALTER TABLE journal ADD COLUMN files_delivered_unix_s FLOAT")
        self._sessions = sessionmaker(self._engine, expire_on_commit=False)

    @contextmanager
    def _session(self) -> Iterator[Session]:
        with self._sessions() as s, s.begin():
            yield s

    def begin(self, trial_uid: str, slot: Slot, *, agent: str, instruction: str, action: str) -> None:
        note = {"slot": slot.__dict__, "agent": agent, "instruction": instruction, "action": action}
        with self._session() as s:
            s.add(_Entry(trial_uid=trial_uid, begun=json.dumps(note), begun_unix_s=time.time()))

    def finish(self, result: TrialResult, slot: Slot, frames: dict[str, bytes]) -> TrialRecord:
        """Keep the finished trial (replacing its begun note); returns its record."""
        result.station = self.station
        record = TrialRecord(
            station=self.station,
            slot={"study_id": slot.study_id, "participant_id": slot.participant_id, "block": slot.block},
            result=result.model_dump(mode="json"),
            frames={k: b64(v) for k, v in frames.items() if v and k in ("before", "after")},
        )
        with self._session() as s:
            row = s.get(_Entry, result.trial_id)
            if row is None:
                row = _Entry(trial_uid=result.trial_id, begun="{}", begun_unix_s=time.time())
                s.add(row)
            row.record = record.model_dump_json()
        return record

    def unfinished_trials(self) -> list[dict]:
        """Trials begun and never finished (a killed station's), as ``bridge.study.interrupted``
        reads them from a study store: ``trial_uid``, ``started_unix_s``, ``agent``, ``instruction``,
        ``action``, ``study_id``, ``participant_id``, ``block``."""
        with self._session() as s:
            rows = s.scalars(select(_Entry).where(_Entry.record.is_(None)).order_by(_Entry.begun_unix_s)).all()
            out = []
            for row in rows:
                note = json.loads(row.begun)
                out.append(
                    {
                        "trial_uid": row.trial_uid,
                        "started_unix_s": row.begun_unix_s,
                        **{k: note[k] for k in ("agent", "instruction", "action")},
                        **{k: note["slot"][k] for k in ("study_id", "participant_id", "block")},
                    }
                )
            return out

    def save_trial(self, result: TrialResult, *, study_id: int, participant_id: int, block: int) -> str:
        """Keep ``result`` (no frames) as the study store's ``save_trial`` does; returns its id."""
        self.finish(result, Slot(study_id=study_id, participant_id=participant_id, block=block), {})
        return result.trial_id

    def close_interrupted(self) -> list[dict]:
        """Turn every begun-never-finished note into an ``aborted`` / ``interrupted`` record (a killed
        station's trial), its recording recovered from ``recordings_dir`` and linked, by the single-process
        session's rule (``bridge.study.interrupted.close_interrupted``); returns one item per trial."""
        return close_interrupted(self, self.recordings_dir)

    def undelivered(self, limit: int = 50) -> list[TrialRecord]:
        """Finished records the server has not acknowledged, oldest first."""
        with self._session() as s:
            rows = s.scalars(
                select(_Entry)
                .where(_Entry.record.is_not(None), _Entry.delivered_unix_s.is_(None), _Entry.refused.is_(None))
                .order_by(_Entry.begun_unix_s)
                .limit(limit)
            ).all()
            return [TrialRecord.model_validate_json(r.record) for r in rows if r.record]

    def delivered(self, trial_uid: str) -> None:
        with self._session() as s:
            row = s.get(_Entry, trial_uid)
            if row is not None:
                row.delivered_unix_s = time.time()

    def undelivered_recordings(self, limit: int = 20) -> list[tuple[str, dict | None]]:
        """``(trial_uid, recording)`` of the records the server has acknowledged whose recording
        files it does not have yet, oldest first (``recording``: ``bridge.recording.layout.Recording``
        as JSON values, or ``None`` when the trial was not recorded)."""
        with self._session() as s:
            rows = s.scalars(
                select(_Entry)
                .where(_Entry.delivered_unix_s.is_not(None), _Entry.files_delivered_unix_s.is_(None))
                .order_by(_Entry.begun_unix_s)
                .limit(limit)
            ).all()
            out = []
            for r in rows:
                rec = json.loads(r.record).get("result", {}).get("recording") if r.record else None
                out.append((r.trial_uid, rec if isinstance(rec, dict) else None))
            return out

    def recording_delivered(self, trial_uid: str) -> None:
        with self._session() as s:
            row = s.get(_Entry, trial_uid)
            if row is not None:
                row.files_delivered_unix_s = time.time()

    def refused(self, trial_uid: str, why: str) -> None:
        """The server refused the record for good (another station's slot, an unknown participant):
        it stays in this file for the operator (``counts()["refused"]``) and is not delivered again."""
        with self._session() as s:
            row = s.get(_Entry, trial_uid)
            if row is not None:
                row.refused = why or "refused"

    def frame(self, trial_uid: str, which: str) -> bytes | None:
        with self._session() as s:
            row = s.get(_Entry, trial_uid)
            if row is None or row.record is None:
                return None
            data = json.loads(row.record).get("frames", {}).get(which)
        return unb64(data) if data else None

    def counts(self) -> dict[str, int]:
        """``{"finished", "undelivered", "refused", "recordings_undelivered"}`` (the console and the
        tests)."""
        with self._session() as s:
            rows = s.execute(
                select(
                    _Entry.record.is_not(None),
                    _Entry.delivered_unix_s.is_(None),
                    _Entry.refused.is_not(None),
                    _Entry.files_delivered_unix_s.is_(None),
                )
            ).all()
        return {
            "finished": sum(1 for done, _, _, _ in rows if done),
            "undelivered": sum(1 for done, pending, refused, _ in rows if done and pending and not refused),
            "refused": sum(1 for _, _, refused, _ in rows if refused),
            "recordings_undelivered": sum(
                1 for done, pending, refused, files in rows if done and not pending and not refused and files
            ),
        }

    def close(self) -> None:
        self._engine.dispose()


class JournalStorePort:
    """``bridge.trials.ports.StorePort`` over a station's ``Journal``; ``save`` returns a local row
    number (the study's trial id is the server's) and calls ``on_saved(record)`` so the station can
    deliver it at once."""

    def __init__(self, journal: Journal, on_saved=None) -> None:
        self.journal, self.on_saved = journal, on_saved
        self._n = 0

    def begin(self, trial_id: str, slot: Slot, *, agent: str, instruction: str, action: str) -> None:
        self.journal.begin(trial_id, slot, agent=agent, instruction=instruction, action=action)

    def save(self, result: TrialResult, slot: Slot, frames: dict[str, bytes]) -> int:
        record = self.journal.finish(result, slot, frames)
        if self.on_saved is not None:
            self.on_saved(record)
        self._n += 1
        return self._n

    def frame(self, trial_id: str, which: str) -> bytes | None:
        return self.journal.frame(trial_id, which)
