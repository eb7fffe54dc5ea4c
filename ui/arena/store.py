"""The Point-Battle store on any SQLAlchemy URL: SQLite by default, PostgreSQL for several workers.

PointArena sec. 3.3: two anonymous models answer the same instruction on the same image, the user
votes "A", "B", "both good" or "both bad", names are revealed after the vote. Every battle row keeps
the whole record: image (sha256 + stored path), instruction, both model names, both raw answers,
parsed points, errors and latencies, when the answers were shown, the vote and when it was cast,
and the client address that started it.

**One vote per battle, atomically** (issue 14, #2): the vote is a single conditional
``UPDATE battles SET vote = ... WHERE id = ? AND session_id = ? AND vote IS NULL AND shown_unix_s
IS NOT NULL RETURNING ...``. On PostgreSQL a concurrent second UPDATE waits for the first one's row
lock and then re-checks ``vote IS NULL`` on the committed row, so it matches nothing; SQLite
serialises writers. Exactly one caller gets the row back; the others read the row to learn why
(404 / 403 / 409) and change nothing. The session's vote counters (for flagging one-sided
sessions) are updated in the same transaction, so a vote is counted once or not at all.

Targets: ``ArenaStore("arena.db")`` (a path: SQLite in WAL mode, ``synchronous=NORMAL``),
``ArenaStore("sqlite:///x.db")``, ``ArenaStore("postgresql+psycopg://user@host/db")``,
``ArenaStore(":memory:")``. Schema creation takes a lock (PostgreSQL advisory lock; SQLite's
write lock) so several workers starting at once create it once. The ``meta`` table holds the
schema version; a database from an older pointlab is upgraded in place (columns added), one from a
newer one is refused.

Every write commits before returning. Timestamps are Unix seconds (``*_unix_s``, float, UTC).

**An unreachable database** (server stopped or restarting, network gone, pool exhausted, SQLite
busy past its timeout) raises ``StoreUnavailable`` (an ``ArenaError`` with status 503 and
``retry_after_s``) from every method, never a driver exception: the web layer answers 503 with
``Retry-After`` (docs/arena.md, "When the database is unreachable"). A write whose commit was cut by
the outage may or may not have been applied; every write here is idempotent or conditional (the
vote), so a client that repeats it after a 503 changes nothing twice.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    Index,
    Integer,
    Select,
    String,
    Table,
    Text,
    bindparam,
    create_engine,
    event,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection, CursorResult, Engine, Row, make_url
from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError, ProgrammingError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from pointlab.ui.errors import UiError

__all__ = [
    "ArenaStore",
    "ArenaError",
    "StoreUnavailable",
    "VOTE_CHOICES",
    "BattleRow",
    "SessionRow",
    "SCHEMA_VERSION",
    "store_url",
    "RateLimit",
]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
# session ids remembered per process (ArenaStore.ensure_session); ~100 bytes each
_KNOWN_SESSIONS_MAX = 100_000
# Page vote -> the ratings module's winner names (benchmark.ratings.VOTE_WINNERS).
VOTE_CHOICES = {"A": "model_a", "B": "model_b", "both_good": "both_good", "both_bad": "both_bad"}


class ArenaError(UiError):
    """A refused arena action. ``status`` is the HTTP status the web layer answers with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class StoreUnavailable(ArenaError):
    """The database cannot be reached now (status 503); try again after ``retry_after_s`` seconds."""

    def __init__(self, message: str, retry_after_s: int = 3):
        super().__init__(message, 503)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class RateLimit:
    """At most ``limit`` battles a minute among those matching ``where`` (keywords of
    ``ArenaStore.battles_since``: ``session_id``, ``client_addr``, ``source``); ``what`` names it in
    the refusal."""

    where: dict = field(hash=False)
    limit: int
    what: str


def _rowcount(result: Any) -> int:
    """Rows an UPDATE matched: its result is a CursorResult (SQLAlchemy's ``Session.execute`` is typed
    as returning the general ``Result``, which has no ``rowcount``)."""
    return cast(CursorResult, result).rowcount


def _unreachable(e: Exception) -> bool:
    """Whether a SQLAlchemy error means the database is out of reach (not a bad statement): the
    driver's OperationalError/InterfaceError (connection refused, server shut down, connection
    lost mid-transaction; SQLite: database locked past busy_timeout), an invalidated connection, or
    no pooled connection free within the pool's timeout."""
    return isinstance(e, (OperationalError, InterfaceError, PoolTimeout)) or (
        isinstance(e, DBAPIError) and e.connection_invalidated
    )


@contextmanager
def _reachable() -> Iterator[None]:
    """Turn "cannot reach the database" (``_unreachable``) into StoreUnavailable; any other error is
    raised as it is (a bad statement stays a bug)."""
    try:
        yield
    except (DBAPIError, PoolTimeout) as e:
        if not _unreachable(e):
            raise
        log.warning("arena store unreachable: %s", str(e).splitlines()[0][:200])
        raise StoreUnavailable(
            "the arena's database is unreachable for the moment; try again in a few seconds"
        ) from None


class Base(DeclarativeBase):
    pass


class MetaRow(Base):
    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class SessionRow(Base):
    __tablename__ = "sessions"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_unix_s: Mapped[float] = mapped_column(Float)
    flagged: Mapped[bool] = mapped_column(Boolean, default=False)
    flag_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    client_addr: Mapped[str | None] = mapped_column(String(64), nullable=True)
    votes_n: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    votes_a: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    votes_b: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class BattleRow(Base):
    __tablename__ = "battles"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(64), index=True)
    created_unix_s: Mapped[float] = mapped_column(Float)
    client_addr: Mapped[str | None] = mapped_column(String(64), nullable=True)
    image_sha256: Mapped[str] = mapped_column(String(64))
    image_path: Mapped[str] = mapped_column(Text)
    image_source: Mapped[str] = mapped_column(String(16))  # "curated" | "upload"
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    instruction: Mapped[str] = mapped_column(Text)
    model_a: Mapped[str] = mapped_column(Text)
    model_b: Mapped[str] = mapped_column(Text)
    sampler: Mapped[str] = mapped_column(String(16))
    answer_a: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    answer_b: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    shown_unix_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    vote: Mapped[str | None] = mapped_column(String(16), nullable=True)  # a VOTE_CHOICES value
    voted_unix_s: Mapped[float | None] = mapped_column(Float, nullable=True)

    __table_args__ = (
        Index("ix_battles_session_created", "session_id", "created_unix_s"),
        Index("ix_battles_addr_created", "client_addr", "created_unix_s"),
        Index("ix_battles_voted", "voted_unix_s"),
    )


_B, _S = cast(Table, BattleRow.__table__), cast(Table, SessionRow.__table__)
#: columns of ``RateLimit.where`` keys
_LIMIT_COLUMNS = {"session_id": _B.c.session_id, "client_addr": _B.c.client_addr, "source": _B.c.image_source}


class _Hot:
    """The statements every vote runs, built once with bound parameters: SQLAlchemy caches their
    compiled SQL either way, but building the expression on each call (and the ORM session around
    it) cost more CPU than the statement's round trip (docs/arena.md, "Performance")."""

    insert_battle = insert(_B)
    answer = {
        side: update(_B).where(_B.c.id == bindparam("bid")).values({col: bindparam("answer")})
        for side, col in (("A", _B.c.answer_a), ("B", _B.c.answer_b))
    }
    shown = (
        update(_B)
        .where(
            _B.c.id == bindparam("bid"),
            _B.c.shown_unix_s.is_(None),
            _B.c.answer_a.is_not(None),
            _B.c.answer_b.is_not(None),
        )
        .values(shown_unix_s=bindparam("now"))
    )
    stored = select(_B.c.answer_a.is_not(None), _B.c.answer_b.is_not(None)).where(_B.c.id == bindparam("bid"))
    answers_of = select(_B.c.id, _B.c.answer_a, _B.c.answer_b).where(_B.c.id.in_(bindparam("ids", expanding=True)))
    row = select(_B).where(_B.c.id == bindparam("bid"))
    vote = (
        update(_B)
        .where(
            _B.c.id == bindparam("bid"),
            _B.c.session_id == bindparam("sid"),
            _B.c.vote.is_(None),
            _B.c.shown_unix_s.is_not(None),
        )
        .values(vote=bindparam("winner"), voted_unix_s=bindparam("now"))
        .returning(_B.c.model_a, _B.c.model_b)
    )
    count_vote = (
        update(_S)
        .where(_S.c.id == bindparam("sid"))
        .values(
            votes_n=_S.c.votes_n + 1,
            votes_a=_S.c.votes_a + bindparam("is_a", type_=Integer),
            votes_b=_S.c.votes_b + bindparam("is_b", type_=Integer),
        )
        .returning(_S.c.votes_n, _S.c.votes_a, _S.c.votes_b, _S.c.flagged)
    )
    flag = update(_S).where(_S.c.id == bindparam("sid")).values(flagged=True, flag_reason=bindparam("reason"))

    @staticmethod
    @functools.lru_cache(maxsize=32)
    def limit_counts(shapes: tuple[tuple[str, ...], ...]) -> Select:
        """One ``SELECT`` of the battles started since ``:since`` per rate limit, each matching its
        keys (``shapes[i]``, keys of ``RateLimit.where``) to the parameters ``w{i}_{key}``."""
        return select(
            *(
                select(func.count())
                .select_from(_B)
                .where(
                    _B.c.created_unix_s >= bindparam("since"),
                    *(_LIMIT_COLUMNS[k] == bindparam(f"w{i}_{k}") for k in keys),
                )
                .scalar_subquery()
                for i, keys in enumerate(shapes)
            )
        )


def _row(c: Connection, battle_id: str) -> Row:
    """The battle's row. Raises: ArenaError(404) for an unknown battle."""
    got = c.execute(_Hot.row, {"bid": battle_id}).first()
    if got is None:
        raise ArenaError("unknown battle", 404)
    return got


class HumanClickRow(Base):
    """One person's answer on one Point-Bench item (human baseline page); a redo adds a row and the
    latest row of a (session, item) is the answer."""

    __tablename__ = "human_clicks"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(String(64), index=True)
    item_id: Mapped[str] = mapped_column(Text)
    category: Mapped[str] = mapped_column(String(16))
    points_px: Mapped[list] = mapped_column(JSON)
    success: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str] = mapped_column(String(32))
    created_unix_s: Mapped[float] = mapped_column(Float)


class HumanSessionRow(Base):
    """Human-baseline sessions left out of the summary (a training run, a tester)."""

    __tablename__ = "human_excluded"
    session_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    excluded_unix_s: Mapped[float] = mapped_column(Float)


def store_url(target: str | Path) -> str:
    """The SQLAlchemy URL of ``target``: a URL (``dialect[+driver]://...``) as is, ``":memory:"``
    as in-memory SQLite, anything else as a SQLite file path."""
    s = str(target)
    if "://" in s:
        return s
    if s == ":memory:":
        return "sqlite://"
    return f"sqlite:///{Path(s)}"


def _make_engine(url: str, pool_size: int) -> Engine:
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        kw: dict[str, Any] = {"connect_args": {"check_same_thread": False, "timeout": 10.0}}
        memory = u.database in (None, "", ":memory:")
        if memory:
            from sqlalchemy.pool import StaticPool

            kw["poolclass"] = StaticPool
        engine = create_engine(u, **kw)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _):
            cur = dbapi_conn.cursor()
            if not memory:
                # WAL: the leaderboard reads while battles are written. NORMAL in WAL mode loses no
                # committed transaction on a process crash (only on power loss of the last ones).
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=10000")
            cur.close()

        return engine
    if u.get_backend_name() == "postgresql" and u.drivername == "postgresql":
        u = u.set(drivername="postgresql+psycopg")  # psycopg 3, the driver this project installs
    # pool_pre_ping kept: after a PostgreSQL restart a dead pooled connection is replaced before use
    # instead of failing a request. Measured (docs/arena.md): 0.04 ms of CPU and 0.1 ms of wall time
    # per transaction, about 1 % of a vote's cost here.
    return create_engine(u, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True, pool_recycle=1800)


def check_store_url(target: str | Path) -> None:
    """Whether ``target`` names a store this pointlab can open: a well-formed URL of an installed
    driver (nothing is connected to or written). For commands to refuse a bad ``--db`` before they
    start anything. Raises: ArenaError (400) saying what is wrong."""
    url = store_url(target)
    try:
        _make_engine(url, 1).dispose()
    except Exception as e:  # a malformed URL or a missing driver, as ArenaStore reports it
        raise ArenaError(f"cannot open the arena store {url!r}: {e}", 400) from None


class ArenaStore:
    """The arena store (see the module docstring).

    Args:
        target: SQLAlchemy URL, SQLite file path or ``":memory:"``.
        pool_size: connections kept per process (PostgreSQL).

    Raises:
        ArenaError: the database cannot be opened or holds a newer schema (status 500).
    """

    def __init__(self, target: str | Path, *, pool_size: int = 10):
        self.url = store_url(target)
        self.pool_size = pool_size
        try:
            self.engine = _make_engine(self.url, pool_size)
        except Exception as e:  # a malformed URL or a missing driver
            raise ArenaError(f"cannot open the arena store {self.url!r}: {e}", 500) from None
        self.dialect = self.engine.dialect.name
        self._create_schema()
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._known_sessions: set[str] = set()

    # -- schema -------------------------------------------------------------------------------
    def _create_schema(self) -> None:
        try:
            tables = set(inspect(self.engine).get_table_names())
        except Exception:  # unreachable or not a database: the creation below says so
            tables = set()
        if "studies" in tables and "battles" not in tables:
            # a Point-Act study store: creating the arena's tables would write into it
            raise ArenaError(
                f"{self.url} is a Point-Act study store, not an arena store; nothing was written to it", 500
            )
        for attempt in range(5):
            try:
                with self.engine.begin() as conn:
                    if self.dialect == "postgresql":
                        conn.execute(text("SELECT pg_advisory_xact_lock(7213401)"))  # one creator at a time
                    Base.metadata.create_all(conn)
                    self._upgrade(conn)
                return
            except (OperationalError, ProgrammingError, IntegrityError) as e:
                # two SQLite processes racing on CREATE TABLE: the loser sees "already exists"
                if attempt == 4:
                    raise ArenaError(f"cannot create the arena schema in {self.url}: {e}", 500) from None
                time.sleep(0.05 * (attempt + 1))

    def _upgrade(self, conn) -> None:
        row = conn.execute(select(MetaRow.value).where(MetaRow.key == "schema_version")).scalar()
        version = int(row) if row is not None else None
        if version is not None and version > SCHEMA_VERSION:
            raise ArenaError(
                f"arena store {self.url} has schema {version}, newer than this pointlab ({SCHEMA_VERSION})", 500
            )
        if version == SCHEMA_VERSION:
            return
        # version 1 (no meta table): add the columns of version 2 and count the votes cast so far
        insp = inspect(conn)
        have = {t: {c["name"] for c in insp.get_columns(t)} for t in ("sessions", "battles")}
        for table, cols in (
            (
                "sessions",
                {
                    "client_addr": "VARCHAR(64)",
                    "votes_n": "INTEGER DEFAULT 0",
                    "votes_a": "INTEGER DEFAULT 0",
                    "votes_b": "INTEGER DEFAULT 0",
                },
            ),
            ("battles", {"client_addr": "VARCHAR(64)"}),
        ):
            for name, ddl in cols.items():
                if name not in have[table]:
                    conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {name} {ddl}"))
        if version is None:
            conn.execute(
                text(
                    "UPDATE sessions SET "
                    "votes_n = (SELECT COUNT(*) FROM battles b WHERE b.session_id = sessions.id AND b.vote IS NOT NULL), "
                    "votes_a = (SELECT COUNT(*) FROM battles b WHERE b.session_id = sessions.id AND b.vote = 'model_a'), "
                    "votes_b = (SELECT COUNT(*) FROM battles b WHERE b.session_id = sessions.id AND b.vote = 'model_b')"
                )
            )
            conn.execute(insert(MetaRow).values(key="schema_version", value=str(SCHEMA_VERSION)))

    @contextmanager
    def _tx(self) -> Iterator[Session]:
        """One transaction in an ORM session, committed on exit. Raises: StoreUnavailable when the
        database cannot be reached (from the statement or from the commit)."""
        with _reachable():
            with self._sessions() as s, s.begin():
                yield s

    @contextmanager
    def _core(self) -> Iterator[Connection]:
        """One transaction on a plain connection, committed on exit: for the statements every vote
        runs (built once at import, ``_Hot``), without the ORM session's bookkeeping, which cost
        more than the statements (docs/arena.md, "Performance"). Raises: StoreUnavailable as ``_tx``."""
        with _reachable():
            with self.engine.begin() as c:
                yield c

    def close(self) -> None:
        self.engine.dispose()

    def ping(self) -> None:
        """One round trip to the database. Raises: DBAPIError when it is unreachable."""
        with self.engine.connect() as c:
            c.execute(text("SELECT 1"))

    # -- sessions -----------------------------------------------------------------------------
    def ensure_session(self, session_id: str | None, client_addr: str | None = None) -> str:
        """Return ``session_id`` if known, else create a new session and return its id.

        Every request of a page checks its cookie here, so ids this process has seen in the store
        are remembered (sessions are never deleted) and answered without a transaction: one
        round trip less per request (``pointlab perf arena``, docs/arena.md)."""
        if session_id and self.session_known(session_id):
            return session_id
        with self._tx() as s:
            if session_id and len(session_id) <= 64 and s.get(SessionRow, session_id) is not None:
                self._remember_session(session_id)
                return session_id
            sid = uuid.uuid4().hex
            s.add(
                SessionRow(id=sid, created_unix_s=time.time(), client_addr=client_addr, votes_n=0, votes_a=0, votes_b=0)
            )
        self._remember_session(sid)  # after the commit: a session is remembered only once it is stored
        return sid

    def session_known(self, session_id: str | None) -> bool:
        """Whether this process has seen ``session_id`` stored (no database access: an event loop
        may call it)."""
        return bool(session_id) and session_id in self._known_sessions

    def _remember_session(self, sid: str) -> None:
        if len(self._known_sessions) >= _KNOWN_SESSIONS_MAX:
            self._known_sessions.clear()  # a bound, not an LRU: forgetting costs one read per session
        self._known_sessions.add(sid)

    def session(self, session_id: str) -> dict:
        with self._tx() as s:
            r = s.get(SessionRow, session_id)
            if r is None:
                raise ArenaError("unknown session", 404)
            return {"id": r.id, "flagged": r.flagged, "flag_reason": r.flag_reason, "votes": r.votes_n}

    def battles_since(
        self,
        since_unix_s: float,
        *,
        session_id: str | None = None,
        client_addr: str | None = None,
        source: str | None = None,
    ) -> int:
        """Battles started at or after ``since_unix_s`` by this session or this client address
        (optionally only uploads: ``source="upload"``), for the rate limits."""
        q = self._count_since(since_unix_s, session_id=session_id, client_addr=client_addr, source=source)
        with self._tx() as s:
            return int(s.scalar(q) or 0)

    def check_rate_limits(self, rate_limits: Sequence[RateLimit]) -> None:
        """Count ``rate_limits`` (one statement) without starting a battle: for work that should be
        refused before it is done (decoding an upload). Raises: ArenaError(429) naming the limit."""
        with self._tx() as s:
            self._refuse_over_limit(s, rate_limits)

    @staticmethod
    def _refuse_over_limit(c: Session | Connection, rate_limits: Sequence[RateLimit]) -> None:
        if not rate_limits:
            return
        for r in rate_limits:
            if unknown := set(r.where) - set(_LIMIT_COLUMNS):
                raise ValueError(f"rate limit on unknown keys {sorted(unknown)}")
        shapes = tuple(tuple(sorted(r.where)) for r in rate_limits)
        params: dict[str, Any] = {"since": time.time() - 60.0}
        for i, r in enumerate(rate_limits):
            params.update({f"w{i}_{k}": v for k, v in r.where.items()})
        counts = c.execute(_Hot.limit_counts(shapes), params).one()
        for r, n in zip(rate_limits, counts):
            if int(n or 0) >= r.limit:
                raise ArenaError(f"rate limit: at most {r.limit} {r.what}", 429)

    @staticmethod
    def _count_since(since_unix_s: float, *, session_id=None, client_addr=None, source=None):
        keys = {"session_id": session_id, "client_addr": client_addr, "source": source}
        return (
            select(func.count())
            .select_from(_B)
            .where(
                _B.c.created_unix_s >= since_unix_s, *(_LIMIT_COLUMNS[k] == v for k, v in keys.items() if v is not None)
            )
        )

    # -- battles ------------------------------------------------------------------------------
    def create_battle(
        self,
        *,
        session_id: str,
        image_sha256: str,
        image_path: str,
        image_source: str,
        width: int,
        height: int,
        instruction: str,
        model_a: str,
        model_b: str,
        sampler: str,
        client_addr: str | None = None,
        rate_limits: Sequence[RateLimit] = (),
    ) -> str:
        """Store a new battle and return its id, after checking ``rate_limits`` in the same
        transaction (one statement counts them all; the first one reached is refused).

        Raises: ArenaError(429) naming the limit reached; nothing is stored then."""
        bid = uuid.uuid4().hex
        with self._core() as c:
            self._refuse_over_limit(c, rate_limits)
            c.execute(
                _Hot.insert_battle,
                {
                    "id": bid,
                    "session_id": session_id,
                    "created_unix_s": time.time(),
                    "client_addr": client_addr,
                    "image_sha256": image_sha256,
                    "image_path": image_path,
                    "image_source": image_source,
                    "width": width,
                    "height": height,
                    "instruction": instruction,
                    "model_a": model_a,
                    "model_b": model_b,
                    "sampler": sampler,
                },
            )
        return bid

    def record_answer(self, battle_id: str, side: str, answer: dict) -> None:
        """Store one side's answer (``side`` ``"A"`` or ``"B"``)."""
        with self._core() as c:
            if _rowcount(c.execute(_Hot.answer[side], {"bid": battle_id, "answer": answer})) == 0:
                raise ArenaError("unknown battle", 404)

    def mark_shown(self, battle_id: str) -> None:
        """Record that both answers were delivered to the page (first time only)."""
        with self._core() as c:
            if _rowcount(c.execute(_Hot.shown, {"bid": battle_id, "now": time.time()})) == 0:
                b = _row(c, battle_id)
                if b.answer_a is None or b.answer_b is None:
                    raise ArenaError("answers are not complete", 409)

    def answers_stored(self, battle_id: str) -> tuple[bool, bool]:
        """``(answer A stored, answer B stored)``: two booleans from one indexed read, the cheap question
        a worker that did not ask the models polls before it reads the full record.

        Raises: ArenaError(404) for an unknown battle."""
        with self._core() as c:
            got = c.execute(_Hot.stored, {"bid": battle_id}).first()
        if got is None:
            raise ArenaError("unknown battle", 404)
        return bool(got[0]), bool(got[1])

    def answers_of(self, battle_ids: Sequence[str]) -> dict[str, tuple[dict | None, dict | None]]:
        """``{battle id: (answer A or None, answer B or None)}`` for the known ids among
        ``battle_ids``, in one statement: the poll of a worker that waits on answers other
        workers collect (``ui.arena.watch.AnswerWatcher``)."""
        if not battle_ids:
            return {}
        with self._core() as c:
            rows = c.execute(_Hot.answers_of, {"ids": list(battle_ids)}).all()
        return {r[0]: (r[1], r[2]) for r in rows}

    def battle(self, battle_id: str) -> dict:
        """The full battle record (includes model names: server side only)."""
        with self._core() as c:
            return _battle_dict(_row(c, battle_id))

    def vote(self, battle_id: str, session_id: str, choice: str, *, flag_min_votes: int = 10) -> dict:
        """Cast the vote ``choice`` (a key of ``VOTE_CHOICES``) once, atomically, and return the
        revealed record ``{"id", "model_a", "model_b", "vote", "voted_unix_s"}``.

        Raises:
            ArenaError: unknown battle (404), another session's battle (403), invalid choice (400),
                answers not yet shown (409), already voted (409); nothing is changed then.
        """
        if choice not in VOTE_CHOICES:
            raise ArenaError(f"vote must be one of {', '.join(VOTE_CHOICES)}", 400)
        winner, now = VOTE_CHOICES[choice], time.time()
        with self._core() as c:
            got = c.execute(_Hot.vote, {"bid": battle_id, "sid": session_id, "winner": winner, "now": now}).first()
            if got is None:
                b = _row(c, battle_id)
                if b.session_id != session_id:
                    raise ArenaError("this battle belongs to another session", 403)
                if b.vote is not None:
                    raise ArenaError("this battle already has a vote", 409)
                raise ArenaError("both answers must be shown before voting", 409)
            counts = c.execute(
                _Hot.count_vote,
                {"sid": session_id, "is_a": int(winner == "model_a"), "is_b": int(winner == "model_b")},
            ).first()
            if counts is not None:
                n, na, nb, flagged = counts
                if not flagged and n >= flag_min_votes and (na == n or nb == n):
                    reason = f"all {n} votes picked side {'A' if na == n else 'B'}"
                    c.execute(_Hot.flag, {"sid": session_id, "reason": reason})
                    log.warning("arena session %s flagged: %s", session_id, reason)
        return {"id": battle_id, "model_a": got[0], "model_b": got[1], "vote": winner, "voted_unix_s": now}

    def votes(self, *, include_flagged: bool = False) -> list[dict]:
        """Votes in vote order as ``{"model_a", "model_b", "winner", "battle_id", "session_id"}``."""
        q = (
            select(
                BattleRow.model_a,
                BattleRow.model_b,
                BattleRow.vote,
                BattleRow.id,
                BattleRow.session_id,
                SessionRow.flagged,
            )
            .join(SessionRow, SessionRow.id == BattleRow.session_id)
            .where(BattleRow.vote.is_not(None))
            .order_by(BattleRow.voted_unix_s, BattleRow.id)
        )
        if not include_flagged:
            q = q.where(SessionRow.flagged.is_(False))
        with self._tx() as s:
            return [
                {"model_a": a, "model_b": b, "winner": w, "battle_id": i, "session_id": sid}
                for a, b, w, i, sid, _ in s.execute(q).all()
            ]

    def vote_count(self) -> int:
        """Votes cast so far (flagged sessions included): a cheap change marker for caches."""
        with self._tx() as s:
            return int(s.scalar(select(func.count()).select_from(BattleRow).where(BattleRow.vote.is_not(None))) or 0)

    def battle_counts(self) -> dict[str, int]:
        """Battles started per model (voted or not)."""
        out: dict[str, int] = {}
        with self._tx() as s:
            for col in (BattleRow.model_a, BattleRow.model_b):
                for m, n in s.execute(select(col, func.count()).group_by(col)).all():
                    out[m] = out.get(m, 0) + int(n)
        return out

    def voted_battles(self, *, include_flagged: bool = False) -> list[dict]:
        """Full records of voted battles, in vote order, each with its session's ``flagged`` (for
        promotion to Point-Bench candidates, and the published vote release, ``ui.arena.release``)."""
        q = (
            select(BattleRow, SessionRow.flagged)
            .join(SessionRow, SessionRow.id == BattleRow.session_id)
            .where(BattleRow.vote.is_not(None))
            .order_by(BattleRow.voted_unix_s, BattleRow.id)
        )
        if not include_flagged:
            q = q.where(SessionRow.flagged.is_(False))
        with self._tx() as s:
            return [{**_battle_dict(b), "flagged": bool(f)} for b, f in s.execute(q).all()]

    # -- human baseline ---------------------------------------------------------------------
    def add_human_click(
        self, session_id: str, item_id: str, category: str, points_px: list, success: bool, reason: str
    ) -> None:
        with self._tx() as s:
            s.add(
                HumanClickRow(
                    session_id=session_id,
                    item_id=item_id,
                    category=category,
                    points_px=points_px,
                    success=success,
                    reason=reason,
                    created_unix_s=time.time(),
                )
            )

    def human_clicks(self, *, latest_only: bool = True, include_excluded: bool = True) -> list[dict]:
        """Saved human answers in order: ``{session_id, id, category, points, success, reason,
        excluded}``; with ``latest_only`` a redone item keeps only its last answer per session."""
        with self._tx() as s:
            excluded = set(s.scalars(select(HumanSessionRow.session_id)).all())
            rows = s.scalars(select(HumanClickRow).order_by(HumanClickRow.id)).all()
        if latest_only:
            last: dict[tuple[str, str], HumanClickRow] = {}
            for r in rows:
                last.pop((r.session_id, r.item_id), None)
                last[(r.session_id, r.item_id)] = r
            rows = list(last.values())
        return [
            {
                "session_id": r.session_id,
                "id": r.item_id,
                "category": r.category,
                "points": r.points_px,
                "success": r.success,
                "reason": r.reason,
                "excluded": r.session_id in excluded,
            }
            for r in rows
            if include_excluded or r.session_id not in excluded
        ]

    def set_human_excluded(self, session_id: str, excluded: bool) -> None:
        with self._tx() as s:
            row = s.get(HumanSessionRow, session_id)
            if excluded and row is None:
                s.add(HumanSessionRow(session_id=session_id, excluded_unix_s=time.time()))
            elif not excluded and row is not None:
                s.delete(row)


def _battle_dict(b: BattleRow | Row) -> dict:
    return {
        "id": b.id,
        "session_id": b.session_id,
        "created_unix_s": b.created_unix_s,
        "client_addr": b.client_addr,
        "image_sha256": b.image_sha256,
        "image_path": b.image_path,
        "image_source": b.image_source,
        "width": b.width,
        "height": b.height,
        "instruction": b.instruction,
        "model_a": b.model_a,
        "model_b": b.model_b,
        "sampler": b.sampler,
        "answer_a": b.answer_a,
        "answer_b": b.answer_b,
        "shown_unix_s": b.shown_unix_s,
        "vote": b.vote,
        "voted_unix_s": b.voted_unix_s,
    }
