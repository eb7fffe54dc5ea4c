"""The Point-Act SQLite store: studies, participants, trials (with their two frames) and SUS surveys.

Every write opens its own session and commits before returning, so a crash (or a killed server)
loses nothing that was already saved or judged (issue 2: "a crash loses nothing already judged").
The database runs in WAL mode so the results page can read while a trial is being written.

Tables (SQLAlchemy 2.x ORM, one class each below): ``studies``, ``participants`` (invite token,
agent order = the Latin-square row), ``trials`` (derived from :class:`~pointlab.bridge.trials.record.TrialResult`
by ``bridge.study.trial_table``: every field a column, nested ones as JSON, plus study / participant /
block / the trial's number in its study / judgement / timestamps), ``trial_frames`` (the JPEG the
agent saw and the one after the arm stopped, for every trial that has them), ``surveys`` (the ten SUS
responses and their 0-100 score),
``meta`` (schema version; an older file is migrated in place when opened, see ``trial_table``).

Timestamps are Unix seconds (``*_unix_s``, float, UTC).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    JSON,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    func,
    select,
    update,
)
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import DatabaseError, IntegrityError, OperationalError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from pointlab.benchmark.records import finite_json

from pointlab.bridge.trials.attribution import settle
from pointlab.bridge.study.sus import sus_score
from pointlab.bridge.trials.timing import DEFAULT_REVEAL, RevealRule
from pointlab.bridge.trials.record import TrialResult
from pointlab.bridge.study.trial_table import (
    DEFAULT_MIN_FREE_MB,
    SCHEMA_VERSION,
    MigrationError,
    migrate,
    trial_table_attrs,
)
from pointlab.bridge.errors import BridgeError

__all__ = ["Store", "StoreError", "JUDGEMENTS", "PREFERENCES", "STUDY_MODES", "SCHEMA_VERSION", "trial_result"]

log = logging.getLogger(__name__)

JUDGEMENTS = ("succeeded", "failed")
DEFAULT_MAX_REPEATS = 2  # an aborted trial's slot is offered again at most this many times
DEFAULT_REVEAL_LOW_S = DEFAULT_REVEAL.low_s  # reveal times are drawn from [low, high] s (bridge.trials.timing)
DEFAULT_REVEAL_HIGH_S = DEFAULT_REVEAL.high_s
FRAME_KINDS = ("before", "after")
STUDY_MODES = ("absolute", "pairwise")
PAIR_SAMPLING = ("uniform", "adaptive")
PREFERENCES = ("A", "B", "tie")
MAX_REASON_CHARS = 1000
SUCCESS_PROGRESS = 75  # a pairwise half with this progress or more carried the instruction out


def _sqlite_tables(path: Path) -> set[str]:
    """The table names of an existing SQLite file, read through a read-only connection (before any
    engine's pragmas touch the file). Raises ``sqlite3.DatabaseError`` (corrupt, not SQLite)."""
    import sqlite3

    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


def _require_pointlab_schema(path: Path) -> None:
    """Raise ``StoreError`` unless the SQLite file ``path`` holds pointlab's ``meta`` table. Read
    through a read-only connection, before the engine's pragmas (WAL) touch the file: a reader
    (export, reports) must leave an empty file or another program's database as it was."""
    import sqlite3

    try:
        tables = _sqlite_tables(path)
    except sqlite3.DatabaseError as e:
        raise StoreError(
            f"database {path} cannot be opened as a pointlab SQLite store (corrupt or not SQLite?): {e}"
        ) from e
    if "meta" not in tables:
        raise StoreError(
            f"database {path} is not a pointlab store (no meta table, {len(tables)} other tables); "
            "nothing was written to it"
        )
    _refuse_arena_store(path, tables)
    if "studies" not in tables:
        raise StoreError(f"database {path} is a pointlab store without studies; nothing was written to it")


def _refuse_arena_store(where, tables: set[str]) -> None:
    """A Point-Battle arena's store (its ``battles``, no ``studies``) is not a study store: refused
    before anything is written to it (a study's tables would be added and its schema version raised,
    so the arena would refuse its own file)."""
    if "battles" in tables and "studies" not in tables:
        raise StoreError(
            f"database {where} is a Point-Battle arena store, not a Point-Act study store; nothing was written to it"
        )


def _redacted(url: str) -> str:
    """``url`` without its password (error messages reach logs and consoles)."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


class StoreError(BridgeError):
    """The database cannot be opened or used (missing, corrupt, wrong schema), or an unknown id / bad value."""


class Base(DeclarativeBase):
    pass


class Meta(Base):
    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class StudyRow(Base):
    __tablename__ = "studies"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(Text, default="")
    scene: Mapped[str] = mapped_column(Text, default="")
    agents: Mapped[list] = mapped_column(JSON)  # agent config names, in the study's canonical order
    trials_per_agent: Mapped[int] = mapped_column(Integer)
    design: Mapped[str] = mapped_column(Text, default="")  # how agent orders are balanced (docs)
    created_unix_s: Mapped[float] = mapped_column(Float)
    max_repeats: Mapped[int] = mapped_column(Integer, default=DEFAULT_MAX_REPEATS)  # aborted slots re-offered
    reveal_low_s: Mapped[float] = mapped_column(Float, default=DEFAULT_REVEAL_LOW_S)  # blinding: reveal times
    reveal_high_s: Mapped[float] = mapped_column(Float, default=DEFAULT_REVEAL_HIGH_S)
    min_free_mb: Mapped[int] = mapped_column(Integer, default=DEFAULT_MIN_FREE_MB)  # storage floor before motion
    # absolute: agent blocks of trials judged one by one; pairwise: A/B episodes (docs/statistics.md),
    # where trials_per_agent is read as the episodes of each participant
    mode: Mapped[str] = mapped_column(String(16), default="absolute")
    pair_sampling: Mapped[str] = mapped_column(String(16), default="uniform")  # pairwise: uniform | adaptive


class EpisodeRow(Base):
    """One pairwise (A/B) episode: one instruction, two agents acting on it one after the other from the
    same start (``agent_a`` first), and the participant's comparison (``preference`` ``A`` | ``B`` |
    ``tie``, a 0-100 progress score for each half, an optional reason). Each half is an ordinary trial
    row (``trial_a_id``, ``trial_b_id``)."""

    __tablename__ = "episodes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"), index=True)
    participant_id: Mapped[int] = mapped_column(ForeignKey("participants.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)  # 1, 2, ... per participant (a void episode keeps its number)
    instruction: Mapped[str] = mapped_column(Text)
    category: Mapped[str] = mapped_column(String(32))  # the task bucket (bridge.study.episodes.category_of)
    agent_a: Mapped[str] = mapped_column(Text)
    agent_b: Mapped[str] = mapped_column(Text)
    trial_a_id: Mapped[int | None] = mapped_column(ForeignKey("trials.id"), nullable=True)
    trial_b_id: Mapped[int | None] = mapped_column(ForeignKey("trials.id"), nullable=True)
    preference: Mapped[str | None] = mapped_column(String(8), nullable=True)
    progress_a: Mapped[int | None] = mapped_column(Integer, nullable=True)
    progress_b: Mapped[int | None] = mapped_column(Integer, nullable=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    created_unix_s: Mapped[float] = mapped_column(Float)
    judged_unix_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    # set when its run ends (both halves, or an abort): until then a missing half means "still running",
    # not "void"; a session that dies mid-episode leaves it unset, and the next start closes it
    finished_unix_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    __table_args__ = (UniqueConstraint("participant_id", "number"),)


class BlockStartRow(Base):
    """The start of one participant's agent block: how the scene was reset and the starting frame."""

    __tablename__ = "block_starts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"), index=True)
    participant_id: Mapped[int] = mapped_column(ForeignKey("participants.id"), index=True)
    block: Mapped[int] = mapped_column(Integer)
    method: Mapped[str] = mapped_column(String(32))  # sim_reset | operator_confirmed
    frame_jpeg: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    frame_index: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_unix_s: Mapped[float] = mapped_column(Float)
    __table_args__ = (UniqueConstraint("participant_id", "block"),)


class SceneReferenceRow(Base):
    """The reference photo of a study's starting scene (real hardware: the operator matches it)."""

    __tablename__ = "scene_references"
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"), primary_key=True)
    frame_jpeg: Mapped[bytes] = mapped_column(LargeBinary)
    created_unix_s: Mapped[float] = mapped_column(Float)


class ParticipantRow(Base):
    __tablename__ = "participants"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"), index=True)
    token: Mapped[str] = mapped_column(String(128), unique=True, index=True)
    label: Mapped[str] = mapped_column(Text, default="")
    order_index: Mapped[int] = mapped_column(Integer)  # 0-based index of the participant in the study
    agent_order: Mapped[list] = mapped_column(JSON)  # agent config names: block 0 is "Agent 1", ...
    created_unix_s: Mapped[float] = mapped_column(Float)


# Derived from TrialResult's fields (bridge.study.trial_table): the record is written down once.
if TYPE_CHECKING:

    class TrialRow(Base):
        """What the type checker knows of the built class: the columns of its own (trial_table_attrs);
        TrialResult's columns, made from its fields, are Any."""

        __tablename__ = "trials"
        id: Mapped[int]
        study_id: Mapped[int | None]
        participant_id: Mapped[int | None]
        block: Mapped[int | None]
        number: Mapped[int | None]
        judgement: Mapped[str | None]
        created_unix_s: Mapped[float]
        judged_unix_s: Mapped[float | None]
        trial_uid: Mapped[str]
        agent: Mapped[str]  # (TrialResult's: queried by close_unfinished_episodes)

        def __getattr__(self, name: str) -> Any: ...

        def __setattr__(self, name: str, value: Any) -> None: ...

else:
    TrialRow = type("TrialRow", (Base,), trial_table_attrs())


class TrialFrameRow(Base):
    """One of a trial's two frames (``before``: what the agent saw; ``after``: after the arm stopped)."""

    __tablename__ = "trial_frames"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id"), index=True)
    which: Mapped[str] = mapped_column(String(8))
    jpeg: Mapped[bytes] = mapped_column(LargeBinary)
    __table_args__ = (UniqueConstraint("trial_id", "which"),)


class TrialStartRow(Base):
    """A trial that has begun and is not stored yet (``Store.begin_trial``): one left here when a
    session starts was running when its session died (``bridge.study.interrupted``)."""

    __tablename__ = "trial_starts"
    trial_uid: Mapped[str] = mapped_column(String(64), primary_key=True)
    study_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    participant_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    block: Mapped[int | None] = mapped_column(Integer, nullable=True)
    agent: Mapped[str] = mapped_column(String)
    instruction: Mapped[str] = mapped_column(Text)
    action: Mapped[str] = mapped_column(String(8))
    started_unix_s: Mapped[float] = mapped_column(Float)


class SurveyRow(Base):
    __tablename__ = "surveys"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int | None] = mapped_column(ForeignKey("studies.id"), index=True, nullable=True)
    participant_id: Mapped[int | None] = mapped_column(ForeignKey("participants.id"), index=True, nullable=True)
    block: Mapped[int | None] = mapped_column(Integer, nullable=True)
    agent: Mapped[str | None] = mapped_column(Text, nullable=True)
    responses: Mapped[list] = mapped_column(JSON)
    score: Mapped[float] = mapped_column(Float)
    created_unix_s: Mapped[float] = mapped_column(Float)


def _insert(s: Session, row: Base, message) -> None:
    """Add ``row`` (its id, where it has one, is set on return); a constraint it breaks (a repeated
    unique value, an unknown foreign key) is a ``StoreError`` with ``message(reason)``."""
    s.add(row)
    try:
        s.flush()
    except IntegrityError as e:
        raise StoreError(message(e.orig)) from e


def _of(q, row_cls, study_id: int | None, participant_id: int | None):
    """``q`` restricted to one study and/or one participant (``None``: no restriction)."""
    if study_id is not None:
        q = q.where(row_cls.study_id == study_id)
    if participant_id is not None:
        q = q.where(row_cls.participant_id == participant_id)
    return q


def _row_dict(row: Base) -> dict[str, Any]:
    return {c.key: getattr(row, c.key) for c in row.__table__.columns}


def _sqlite_pragmas(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    # WAL: readers (results page) never block the writer; synchronous=FULL: a committed trial
    # survives a power cut, not only a process crash.
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=5000")
    cur.close()


class Store:
    """The SQLite store of one Point-Act deployment.

    Args:
        path: the ``.sqlite`` file. Created with its schema when absent (``create=True``).
        create: when False, a missing file, or a file without a pointlab schema (an empty file, another
            program's SQLite), raises instead of being created or written to (readers, reports). An
            older pointlab schema is still migrated in place.

    Raises:
        StoreError: the parent folder does not exist, the file is missing (``create=False``), the
            file is not an SQLite database (corrupt, truncated, another format), or it was written
            by another schema version.

    Thread-safe for the web app's use: each method uses its own short session and connection.
    """

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        if isinstance(path, str) and path.startswith(("postgresql://", "postgresql+psycopg://")):
            self._open_postgres(path)
            return
        self.url: str | None = None
        self.path = Path(path)
        if not self.path.exists():
            if not create:
                raise StoreError(f"database {self.path} does not exist")
            if not self.path.parent.is_dir():
                raise StoreError(f"cannot create database {self.path}: folder {self.path.parent} does not exist")
        elif self.path.is_dir():
            raise StoreError(f"database path {self.path} is a folder, not a file")
        elif not create:
            _require_pointlab_schema(self.path)
        else:
            import sqlite3

            try:
                tables = _sqlite_tables(self.path)
            except sqlite3.DatabaseError:
                tables = set()  # the engine's own open below reports a file it cannot read
            _refuse_arena_store(self.path, tables)
        self._engine = create_engine(f"sqlite:///{self.path}", connect_args={"check_same_thread": False})
        event.listen(self._engine, "connect", _sqlite_pragmas)
        try:
            with self._engine.connect() as conn:
                ok = conn.exec_driver_sql("PRAGMA quick_check").scalar()
            if ok != "ok":
                raise StoreError(f"database {self.path} is corrupt: quick_check says {ok!r}")
            Base.metadata.create_all(self._engine)
            self._check_version()
        except (DatabaseError, OperationalError) as e:
            self._engine.dispose()
            raise StoreError(
                f"database {self.path} cannot be opened as a pointlab SQLite store "
                f"(corrupt or not SQLite?): {e.orig if hasattr(e, 'orig') else e}"
            ) from e
        except StoreError:
            self._engine.dispose()
            raise
        self._sessions = sessionmaker(self._engine, expire_on_commit=False)

    def _open_postgres(self, url: str) -> None:
        """The study server's store (``pointlab act server``, docs/stations.md): the same tables in a
        PostgreSQL database, so that one server and its stations share one study. ``path`` is ``None``
        (no folder beside it: recordings stay on the stations)."""
        self.url = url.replace("postgresql://", "postgresql+psycopg://", 1)  # psycopg 3, as the arena
        self.path = None  # type: ignore[assignment]  # a SQLite store always has one; this one has a URL
        # pool_pre_ping: after a PostgreSQL restart a dead pooled connection is replaced before use
        self._engine = create_engine(self.url, pool_size=10, max_overflow=10, pool_pre_ping=True)
        try:
            Base.metadata.create_all(self._engine)
            self._check_version()
        except (DatabaseError, OperationalError) as e:
            self._engine.dispose()
            raise StoreError(f"PostgreSQL store {_redacted(self.url)} cannot be used: {getattr(e, 'orig', e)}") from e
        self._sessions = sessionmaker(self._engine, expire_on_commit=False)

    # -- plumbing -----------------------------------------------------------------------------
    def _check_version(self) -> None:
        with Session(self._engine) as s:
            row = s.get(Meta, "schema_version")
            if row is None:
                s.add(Meta(key="schema_version", value=str(SCHEMA_VERSION)))
                s.commit()
            elif row.value != str(SCHEMA_VERSION):
                try:
                    version = int(row.value)
                    migrate(s.connection(), version)
                except (ValueError, MigrationError) as e:
                    raise StoreError(
                        f"database {self.path} has schema version {row.value}, "
                        f"this pointlab writes version {SCHEMA_VERSION} ({e})"
                    ) from e
                row.value = str(SCHEMA_VERSION)
                s.commit()
                log.info("database %s migrated from schema version %d to %d", self.path, version, SCHEMA_VERSION)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A SQLAlchemy session committed on normal exit and rolled back on an exception."""
        s = self._sessions()
        try:
            yield s
            s.commit()
        except Exception:
            s.rollback()
            raise
        finally:
            s.close()

    def close(self) -> None:
        """Release the connections (the file stays consistent; committed data is on disk)."""
        self._engine.dispose()

    # -- studies and participants ---------------------------------------------------------------
    def create_study(
        self,
        *,
        agents: Sequence[str],
        trials_per_agent: int,
        scene: str = "",
        name: str = "",
        design: str = "",
        max_repeats: int = DEFAULT_MAX_REPEATS,
        reveal_low_s: float = DEFAULT_REVEAL_LOW_S,
        reveal_high_s: float = DEFAULT_REVEAL_HIGH_S,
        min_free_mb: int = DEFAULT_MIN_FREE_MB,
        mode: str = "absolute",
        pair_sampling: str = "uniform",
    ) -> int:
        """Insert a study and return its id.

        Args:
            max_repeats: how many times an aborted trial's slot is offered again, per block.
            reveal_low_s, reveal_high_s: every trial's reveal time is drawn uniformly from this range of
                seconds after sending (``bridge.trials.timing``; blinding).
            min_free_mb: no trial starts and no motion is sent with less free space than this, in
                megabytes (10^6 bytes), where the store and the recordings are.
            mode: ``absolute`` (agent blocks) or ``pairwise`` (A/B episodes; ``trials_per_agent`` is
                then the episodes of each participant, and each episode's aborted half voids it).
            pair_sampling: ``uniform`` or ``adaptive`` (``benchmark.pairwise.next_pair``), pairwise only.

        Raises:
            StoreError: no agents, a repeated agent, ``trials_per_agent < 1``, ``max_repeats < 0``,
                reveal bounds that are not finite numbers in [0, 300] with low <= high, a negative
                ``min_free_mb``, an unknown mode or pair sampling, or a pairwise study of one agent.
        """
        agents = [str(a) for a in agents]
        if not agents:
            raise StoreError("a study needs at least one agent")
        if len(set(agents)) != len(agents):
            raise StoreError(f"agents repeat: {agents}")
        if int(trials_per_agent) < 1:
            raise StoreError(f"trials_per_agent must be >= 1, got {trials_per_agent}")
        if int(max_repeats) < 0:
            raise StoreError(f"max_repeats must be >= 0, got {max_repeats}")
        try:
            reveal = RevealRule(reveal_low_s, reveal_high_s)
        except ValueError as e:
            raise StoreError(str(e)) from e
        if isinstance(min_free_mb, bool) or not isinstance(min_free_mb, int) or min_free_mb < 0:
            raise StoreError(f"min_free_mb must be a whole number of megabytes >= 0, got {min_free_mb!r}")
        if mode not in STUDY_MODES:
            raise StoreError(f"mode must be one of {list(STUDY_MODES)}, got {mode!r}")
        if pair_sampling not in PAIR_SAMPLING:
            raise StoreError(f"pair_sampling must be one of {list(PAIR_SAMPLING)}, got {pair_sampling!r}")
        if mode == "pairwise" and len(agents) < 2:
            raise StoreError("a pairwise study needs at least two agents")
        with self.session() as s:
            row = StudyRow(
                name=name,
                scene=scene,
                agents=agents,
                trials_per_agent=int(trials_per_agent),
                design=design,
                created_unix_s=time.time(),
                max_repeats=int(max_repeats),
                reveal_low_s=float(reveal.low_s),
                reveal_high_s=float(reveal.high_s),
                min_free_mb=int(min_free_mb),
                mode=mode,
                pair_sampling=pair_sampling,
            )
            s.add(row)
            s.flush()
            return row.id

    def study(self, study_id: int) -> dict[str, Any]:
        """The study as a dict (columns of ``studies``). Raises StoreError when unknown."""
        with self.session() as s:
            row = s.get(StudyRow, study_id)
            if row is None:
                raise StoreError(f"unknown study {study_id}")
            return _row_dict(row)

    def studies(self) -> list[dict[str, Any]]:
        with self.session() as s:
            return [_row_dict(r) for r in s.scalars(select(StudyRow).order_by(StudyRow.id))]

    def add_participant(self, study_id: int, *, token: str, agent_order: Sequence[str], label: str = "") -> int:
        """Insert a participant of ``study_id`` with its invite ``token`` and agent order; returns its id.

        ``order_index`` is the number of participants the study had before (0 for the first).

        Raises:
            StoreError: unknown study, a token already used, or an order that is not a permutation
                of the study's agents.
        """
        with self.session() as s:
            study = s.get(StudyRow, study_id)
            if study is None:
                raise StoreError(f"unknown study {study_id}")
            if sorted(agent_order) != sorted(study.agents):
                raise StoreError(f"agent order {list(agent_order)} is not a permutation of {study.agents}")
            n = self._count_participants(s, study_id)
            row = ParticipantRow(
                study_id=study_id,
                token=token,
                label=label or f"P{n + 1}",
                order_index=n,
                agent_order=list(agent_order),
                created_unix_s=time.time(),
            )
            _insert(s, row, lambda why: "invite token already in use")
            return row.id

    @staticmethod
    def _count_participants(s: Session, study_id: int) -> int:
        return s.scalar(select(func.count(ParticipantRow.id)).where(ParticipantRow.study_id == study_id)) or 0

    def participant_count(self, study_id: int) -> int:
        """How many participants ``study_id`` has (0 for an unknown study)."""
        with self.session() as s:
            return self._count_participants(s, study_id)

    def participant(self, participant_id: int) -> dict[str, Any]:
        with self.session() as s:
            row = s.get(ParticipantRow, participant_id)
            if row is None:
                raise StoreError(f"unknown participant {participant_id}")
            return _row_dict(row)

    def participant_by_token(self, token: str) -> dict[str, Any] | None:
        """The participant holding invite ``token``, or ``None``."""
        with self.session() as s:
            row = s.scalars(select(ParticipantRow).where(ParticipantRow.token == token)).first()
            return None if row is None else _row_dict(row)

    def participants(self, study_id: int | None = None) -> list[dict[str, Any]]:
        with self.session() as s:
            q = select(ParticipantRow).order_by(ParticipantRow.id)
            if study_id is not None:
                q = q.where(ParticipantRow.study_id == study_id)
            return [_row_dict(r) for r in s.scalars(q)]

    # -- trials ---------------------------------------------------------------------------------
    def save_trial(
        self,
        result: TrialResult,
        *,
        study_id: int | None = None,
        participant_id: int | None = None,
        block: int | None = None,
        frames: dict[str, bytes] | None = None,
    ) -> int:
        """Store every field of ``result`` with its ``frames`` (``{"before"|"after": JPEG bytes}``), in
        one transaction (committed on return), and return the row id. The trial gets the next
        ``number`` of its study (1, 2, ...: what people are shown; trials outside any study are
        numbered among themselves).

        Raises:
            StoreError: the trial id was stored before, the study/participant does not exist, or a
                frame kind is not ``before``/``after``.
        """
        frames = frames or {}
        if bad := [k for k in frames if k not in FRAME_KINDS]:
            raise StoreError(f"unknown frame kinds {bad}; expected {FRAME_KINDS}")
        data = finite_json(result)  # JSON values of every field (strict: a NaN point is null)
        data["trial_uid"] = data.pop("trial_id")
        with self.session() as s:
            same_study = TrialRow.study_id == study_id if study_id is not None else TrialRow.study_id.is_(None)
            number = (s.scalar(select(func.max(TrialRow.number)).where(same_study)) or 0) + 1
            row = TrialRow(
                **data,
                study_id=study_id,
                participant_id=participant_id,
                block=block,
                number=number,
                created_unix_s=time.time(),
            )
            _insert(
                s,
                row,
                lambda why: (
                    f"trial {result.trial_id} cannot be stored (repeated id or unknown study/participant): {why}"
                ),
            )
            tid = row.id
            started = s.get(TrialStartRow, result.trial_id)
            if started is not None:  # the trial is stored: no longer an unfinished one
                s.delete(started)
            for which, jpeg in frames.items():
                if jpeg:
                    s.add(TrialFrameRow(trial_id=tid, which=which, jpeg=bytes(jpeg)))
            return tid

    def begin_trial(
        self,
        trial_uid: str,
        *,
        agent: str,
        instruction: str,
        action: str,
        study_id: int | None = None,
        participant_id: int | None = None,
        block: int | None = None,
    ) -> None:
        """Note that trial ``trial_uid`` has begun (committed on return); ``save_trial`` removes the
        note in its own transaction. A note still here at the next start is an interrupted trial.

        Raises:
            StoreError: the database cannot be written, or the id was noted before.
        """
        with self.session() as s:
            _insert(
                s,
                TrialStartRow(
                    trial_uid=trial_uid,
                    study_id=study_id,
                    participant_id=participant_id,
                    block=block,
                    agent=agent,
                    instruction=instruction,
                    action=action,
                    started_unix_s=time.time(),
                ),
                lambda why: f"trial {trial_uid} cannot be noted as begun: {why}",
            )

    def unfinished_trials(self) -> list[dict[str, Any]]:
        """The trials noted as begun and never stored, oldest first (``begin_trial``)."""
        with self.session() as s:
            rows = s.scalars(select(TrialStartRow).order_by(TrialStartRow.started_unix_s)).all()
            return [
                {
                    c: getattr(r, c)
                    for c in (
                        "trial_uid",
                        "study_id",
                        "participant_id",
                        "block",
                        "agent",
                        "instruction",
                        "action",
                        "started_unix_s",
                    )
                }
                for r in rows
            ]

    def trial_id_of(self, trial_uid: str) -> int | None:
        """The row id of the trial whose record id is ``trial_uid``, ``None`` when not stored."""
        with self.session() as s:
            return s.scalar(select(TrialRow.id).where(TrialRow.trial_uid == trial_uid))

    def trial_frame(self, trial_uid: str, which: str) -> bytes | None:
        """The ``before``/``after`` JPEG of the trial whose record id is ``trial_uid``, or ``None``."""
        with self.session() as s:
            q = (
                select(TrialFrameRow.jpeg)
                .join(TrialRow, TrialRow.id == TrialFrameRow.trial_id)
                .where(TrialRow.trial_uid == trial_uid, TrialFrameRow.which == which)
            )
            return s.scalar(q)

    def set_judgement(self, trial_id: int, judgement: str) -> None:
        """Record the participant's judgement (``succeeded`` | ``failed``) of trial row ``trial_id``,
        and with it the trial's ``outcome`` and ``failure_stage`` (``bridge.trials.attribution.settle``).

        Raises:
            StoreError: unknown trial, an aborted trial (not judged), or a judgement not in ``JUDGEMENTS``.
        """
        if judgement not in JUDGEMENTS:
            raise StoreError(f"judgement must be one of {JUDGEMENTS}, got {judgement!r}")
        with self.session() as s:
            _judge(_trial_row(s, trial_id), judgement)

    def set_recording(self, trial_id: int, recording: dict[str, Any] | None) -> None:
        """Record where trial ``trial_id``'s recording is (``bridge.recording.layout.Recording`` as JSON values).

        Raises:
            StoreError: unknown trial.
        """
        with self.session() as s:
            row = _trial_row(s, trial_id)
            row.recording = finite_json(recording)

    def set_point_on_target(self, trial_id: int, on_target: bool | None) -> dict[str, Any]:
        """Record whether the trial's first point was on the intended object (the operator's click on
        real frames), updating its ``failure_stage``; returns the row.

        Raises:
            StoreError: unknown trial.
        """
        with self.session() as s:
            row = _trial_row(s, trial_id)
            row.point_on_target = on_target
            record = settle(trial_result(_row_dict(row)), None)
            row.failure_stage = record.failure_stage
            return _row_dict(row)

    # -- block starts and scene references -------------------------------------------------------
    def save_block_start(
        self,
        *,
        study_id: int,
        participant_id: int,
        block: int,
        method: str,
        frame_jpeg: bytes | None,
        frame_index: int | None,
    ) -> int:
        """Record the start of a participant's block (scene reset ``method`` and the starting frame).

        Raises:
            StoreError: the block was started before, or an unknown study/participant.
        """
        with self.session() as s:
            row = BlockStartRow(
                study_id=study_id,
                participant_id=participant_id,
                block=block,
                method=method,
                frame_jpeg=frame_jpeg,
                frame_index=frame_index,
                created_unix_s=time.time(),
            )
            _insert(s, row, lambda why: f"block {block} of participant {participant_id} cannot be started: {why}")
            return row.id

    def block_starts(
        self, *, study_id: int | None = None, participant_id: int | None = None, with_frames: bool = False
    ) -> list[dict[str, Any]]:
        """Block starts as dicts, oldest first (``frame_jpeg`` only when ``with_frames``)."""
        with self.session() as s:
            q = _of(select(BlockStartRow).order_by(BlockStartRow.id), BlockStartRow, study_id, participant_id)
            rows = [_row_dict(r) for r in s.scalars(q)]
        if not with_frames:
            for r in rows:
                r.pop("frame_jpeg", None)
        return rows

    def set_scene_reference(self, study_id: int, frame_jpeg: bytes) -> None:
        """Keep ``frame_jpeg`` as the study's reference scene (replacing an earlier one).

        Raises:
            StoreError: unknown study.
        """
        with self.session() as s:
            if s.get(StudyRow, study_id) is None:
                raise StoreError(f"unknown study {study_id}")
            row = s.get(SceneReferenceRow, study_id)
            if row is None:
                s.add(SceneReferenceRow(study_id=study_id, frame_jpeg=frame_jpeg, created_unix_s=time.time()))
            else:
                row.frame_jpeg, row.created_unix_s = frame_jpeg, time.time()

    def scene_reference(self, study_id: int) -> bytes | None:
        """The study's reference scene JPEG, or ``None``."""
        with self.session() as s:
            row = s.get(SceneReferenceRow, study_id)
            return None if row is None else row.frame_jpeg

    def trial_result(self, trial_id: int) -> TrialResult:
        """Trial row ``trial_id`` as the typed record. Raises StoreError when unknown."""
        return trial_result(self.trial(trial_id))

    def trial(self, trial_id: int) -> dict[str, Any]:
        with self.session() as s:
            row = _trial_row(s, trial_id)
            return _row_dict(row)

    def trials(self, *, study_id: int | None = None, participant_id: int | None = None) -> list[dict[str, Any]]:
        """Trials as dicts (all ``trials`` columns), oldest first, optionally filtered."""
        with self.session() as s:
            q = _of(select(TrialRow).order_by(TrialRow.id), TrialRow, study_id, participant_id)
            return [_row_dict(r) for r in s.scalars(q)]

    # -- pairwise episodes ----------------------------------------------------------------------
    def create_episode(
        self, *, study_id: int, participant_id: int, instruction: str, category: str, agent_a: str, agent_b: str
    ) -> int:
        """Insert the participant's next episode (numbered 1, 2, ... per participant); returns its id.

        Raises:
            StoreError: unknown study or participant, or the same agent on both sides.
        """
        if agent_a == agent_b:
            raise StoreError(f"an episode compares two agents, got {agent_a!r} twice")
        with self.session() as s:
            number = (
                s.scalar(select(func.max(EpisodeRow.number)).where(EpisodeRow.participant_id == participant_id)) or 0
            ) + 1
            row = EpisodeRow(
                study_id=study_id,
                participant_id=participant_id,
                number=number,
                instruction=instruction,
                category=category,
                agent_a=agent_a,
                agent_b=agent_b,
                reason="",
                created_unix_s=time.time(),
            )
            _insert(s, row, lambda why: f"episode cannot be stored (unknown study/participant): {why}")
            return row.id

    def set_episode_half(self, episode_id: int, half: str, trial_id: int) -> None:
        """Link trial row ``trial_id`` as half ``half`` (``a`` | ``b``) of episode ``episode_id``.

        Raises:
            StoreError: unknown episode or trial, a half other than ``a``/``b``, or a half already linked.
        """
        if half not in ("a", "b"):
            raise StoreError(f"half must be 'a' or 'b', got {half!r}")
        with self.session() as s:
            row = s.get(EpisodeRow, episode_id)
            if row is None:
                raise StoreError(f"unknown episode {episode_id}")
            _trial_row(s, trial_id)
            column = f"trial_{half}_id"
            if getattr(row, column) is not None:
                raise StoreError(f"half {half} of episode {episode_id} is already stored")
            setattr(row, column, trial_id)

    def finish_episode(self, episode_id: int) -> None:
        """Mark episode ``episode_id``'s run as ended (kept at the first call). Raises StoreError when unknown."""
        with self.session() as s:
            row = s.get(EpisodeRow, episode_id)
            if row is None:
                raise StoreError(f"unknown episode {episode_id}")
            if row.finished_unix_s is None:
                row.finished_unix_s = time.time()

    def close_unfinished_episodes(self) -> int:
        """Mark every episode whose run never ended (its session or server died meanwhile) as ended, so a
        missing half makes it void and its slot is offered again; a half that was running then, stored
        since as an interrupted trial (``bridge.study.interrupted``), is linked to it. Call at a start,
        after ``close_interrupted`` and before any episode runs. Returns how many were closed."""
        with self.session() as s:
            open_rows = list(s.scalars(select(EpisodeRow).where(EpisodeRow.finished_unix_s.is_(None))))
            linked = {tid for e in s.scalars(select(EpisodeRow)) for tid in (e.trial_a_id, e.trial_b_id) if tid}
            now = time.time()
            for e in open_rows:
                for half, agent in (("a", e.agent_a), ("b", e.agent_b)):
                    if getattr(e, f"trial_{half}_id") is not None:
                        continue
                    # the half that was running when the session died, stored since by close_interrupted
                    # (aborted, interrupted): linked, so the episode's log shows what happened to it
                    tid = s.scalar(
                        select(TrialRow.id)
                        .where(
                            TrialRow.participant_id == e.participant_id,
                            TrialRow.block == e.number - 1,
                            TrialRow.agent == agent,
                            TrialRow.created_unix_s >= e.created_unix_s,
                        )
                        .order_by(TrialRow.id.desc())
                        .limit(1)
                    )
                    if tid is not None and tid not in linked:
                        setattr(e, f"trial_{half}_id", tid)
                        linked.add(tid)
                e.finished_unix_s = now
            return len(open_rows)

    def judge_episode(
        self, episode_id: int, *, preference: str, progress_a: int, progress_b: int, reason: str = ""
    ) -> None:
        """Store the participant's comparison of episode ``episode_id`` (one winner: a conditional
        update ``... WHERE preference IS NULL``, so of two concurrent comparisons exactly one is kept)
        and judge each half that still waits for it: ``succeeded`` when its progress is at least
        ``SUCCESS_PROGRESS`` (75: the anchor "it did what was asked, but clumsily"; the participant's
        answer to absolute mode's "was your instruction carried out?"), else ``failed``; a refused half
        keeps its outcome (failed).

        Raises:
            StoreError: unknown episode, a preference not in ``PREFERENCES``, a progress that is not a
                whole number 0-100, a reason longer than ``MAX_REASON_CHARS``, an episode with a
                missing or aborted half, or one already compared.
        """
        if preference not in PREFERENCES:
            raise StoreError(f"preference must be one of {list(PREFERENCES)}, got {preference!r}")
        for name, value in (("progress_a", progress_a), ("progress_b", progress_b)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
                raise StoreError(f"{name} must be a whole number from 0 to 100, got {value!r}")
        if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS:
            raise StoreError(f"the reason must be text of at most {MAX_REASON_CHARS} characters")
        with self.session() as s:
            row = s.get(EpisodeRow, episode_id)
            if row is None:
                raise StoreError(f"unknown episode {episode_id}")
            if row.trial_a_id is None or row.trial_b_id is None:
                raise StoreError(f"episode {episode_id} does not have both halves")
            halves = [(row.trial_a_id, progress_a), (row.trial_b_id, progress_b)]
            done: CursorResult = s.execute(  # type: ignore[assignment]  # an UPDATE's result is a CursorResult
                update(EpisodeRow)
                .where(EpisodeRow.id == episode_id, EpisodeRow.preference.is_(None))
                .values(
                    preference=preference,
                    progress_a=progress_a,
                    progress_b=progress_b,
                    reason=reason,
                    judged_unix_s=time.time(),
                )
                .execution_options(synchronize_session=False)
            )
            if done.rowcount != 1:
                raise StoreError(f"episode {episode_id} was compared already")
            for tid, progress in halves:
                trial = _trial_row(s, tid)
                if trial.judgement is None and trial.outcome is None:
                    _judge(trial, "succeeded" if progress >= SUCCESS_PROGRESS else "failed")
                elif trial.outcome == "aborted":
                    raise StoreError(f"episode {episode_id} has an aborted half: it is not compared")

    def episode(self, episode_id: int) -> dict[str, Any]:
        """Episode ``episode_id`` as a dict (columns of ``episodes``). Raises StoreError when unknown."""
        with self.session() as s:
            row = s.get(EpisodeRow, episode_id)
            if row is None:
                raise StoreError(f"unknown episode {episode_id}")
            return _row_dict(row)

    def episodes(self, *, study_id: int | None = None, participant_id: int | None = None) -> list[dict[str, Any]]:
        """Episodes as dicts, oldest first, optionally filtered."""
        with self.session() as s:
            q = _of(select(EpisodeRow).order_by(EpisodeRow.id), EpisodeRow, study_id, participant_id)
            return [_row_dict(r) for r in s.scalars(q)]

    # -- surveys --------------------------------------------------------------------------------
    def save_survey(
        self,
        responses: Sequence[int],
        *,
        study_id: int | None = None,
        participant_id: int | None = None,
        block: int | None = None,
        agent: str | None = None,
    ) -> int:
        """Store ten SUS responses with their 0-100 score (:func:`pointlab.bridge.study.sus.sus_score`); returns the row id.

        Raises:
            pointlab.bridge.study.sus.SusError: the responses are not ten integers 1-5 (nothing stored).
            StoreError: unknown study or participant.
        """
        score = sus_score(responses)
        with self.session() as s:
            row = SurveyRow(
                study_id=study_id,
                participant_id=participant_id,
                block=block,
                agent=agent,
                responses=list(responses),
                score=score,
                created_unix_s=time.time(),
            )
            _insert(s, row, lambda why: f"survey cannot be stored (unknown study/participant): {why}")
            return row.id

    def surveys(self, *, study_id: int | None = None, participant_id: int | None = None) -> list[dict[str, Any]]:
        """Surveys as dicts (all ``surveys`` columns), oldest first, optionally filtered."""
        with self.session() as s:
            q = _of(select(SurveyRow).order_by(SurveyRow.id), SurveyRow, study_id, participant_id)
            return [_row_dict(r) for r in s.scalars(q)]


def trial_result(row: dict[str, Any]) -> TrialResult:
    """A ``trials`` row (``Store.trials()`` item) as the typed record (store-only columns dropped)."""
    data = {k: v for k, v in row.items() if k in TrialResult.model_fields or k == "trial_uid"}
    data["trial_id"] = data.pop("trial_uid")
    return TrialResult.model_validate(data)


def _judge(row: TrialRow, judgement: str) -> None:
    """Set ``row``'s judgement, and with it its ``outcome`` and ``failure_stage``
    (``bridge.trials.attribution.settle``). Raises StoreError for an aborted trial."""
    if row.outcome == "aborted":
        raise StoreError(f"trial {row.id} was aborted: it is not judged")
    record = settle(trial_result(_row_dict(row)), judgement == "succeeded")
    row.judgement, row.judged_unix_s = judgement, time.time()
    row.outcome, row.failure_stage = record.outcome, record.failure_stage


def _trial_row(s, trial_id: int) -> TrialRow:
    """The trial's row in session ``s``. Raises: StoreError for an unknown trial."""
    row = s.get(TrialRow, trial_id)
    if row is None:
        raise StoreError(f"unknown trial {trial_id}")
    return row
