"""The Point-Battle SQLite store: sessions, battles (the full record) and votes.

PointArena sec. 3.3: two anonymous models answer the same instruction on the same image, the user
votes "A", "B", "both good" or "both bad", names are revealed after the vote. Every battle row keeps
the whole record: image (sha256 + stored path), instruction, both model names, both raw answers,
parsed points, errors and latencies, when the answers were shown, the vote and when it was cast.

Anti-abuse state lives here too: one vote per battle (a second vote is refused), no vote before both
answers were shown, per-session timestamps for the rate limit, and a ``flagged`` mark on sessions
whose votes always pick the same side.

Every write opens its own session and commits before returning. Timestamps are Unix seconds
(``*_unix_s``, float, UTC).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, Boolean, Float, Integer, String, Text, create_engine, event, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

__all__ = ["ArenaStore", "ArenaError", "VOTE_CHOICES", "BattleRow", "SessionRow"]

log = logging.getLogger(__name__)

# Page vote -> the ratings module's winner names (benchmark.ratings.VOTE_WINNERS).
VOTE_CHOICES = {"A": "model_a", "B": "model_b", "both_good": "both_good", "both_bad": "both_bad"}


class ArenaError(Exception):
    """A refused arena action. ``status`` is the HTTP status the web layer answers with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class Base(DeclarativeBase):
    pass


class SessionRow(Base):
    __tablename__ = "sessions"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_unix_s: Mapped[float] = mapped_column(Float)
    flagged: Mapped[bool] = mapped_column(Boolean, default=False)
    flag_reason: Mapped[str | None] = mapped_column(Text, nullable=True)


class BattleRow(Base):
    __tablename__ = "battles"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(64), index=True)
    created_unix_s: Mapped[float] = mapped_column(Float)
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


class HumanClickRow(Base):
    """One person's answer on one Point-Bench item (human baseline page)."""

    __tablename__ = "human_clicks"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(String(64), index=True)
    item_id: Mapped[str] = mapped_column(Text)
    category: Mapped[str] = mapped_column(String(16))
    points_px: Mapped[list] = mapped_column(JSON)
    success: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str] = mapped_column(String(32))
    created_unix_s: Mapped[float] = mapped_column(Float)


class ArenaStore:
    """SQLite store for Point-Battle. ``path`` is a file path or ``":memory:"``."""

    def __init__(self, path: str | Path):
        url = "sqlite://" if str(path) == ":memory:" else f"sqlite:///{Path(path)}"
        kw: dict[str, Any] = {"connect_args": {"check_same_thread": False}}
        if str(path) == ":memory:":
            from sqlalchemy.pool import StaticPool
            kw["poolclass"] = StaticPool
        self.engine = create_engine(url, **kw)

        @event.listens_for(self.engine, "connect")
        def _pragmas(dbapi_conn, _):  # WAL: the leaderboard reads while battles are written
            cur = dbapi_conn.cursor()
            if str(path) != ":memory:":
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=5000")
            cur.close()

        Base.metadata.create_all(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def _tx(self) -> Iterator[Session]:
        with self._sessions() as s, s.begin():
            yield s

    # -- sessions -----------------------------------------------------------------------------
    def ensure_session(self, session_id: str | None) -> str:
        """Return ``session_id`` if known, else create a new session and return its id."""
        with self._tx() as s:
            if session_id and s.get(SessionRow, session_id) is not None:
                return session_id
            sid = uuid.uuid4().hex
            s.add(SessionRow(id=sid, created_unix_s=time.time()))
            return sid

    def session(self, session_id: str) -> dict:
        with self._tx() as s:
            r = s.get(SessionRow, session_id)
            if r is None:
                raise ArenaError("unknown session", 404)
            return {"id": r.id, "flagged": r.flagged, "flag_reason": r.flag_reason}

    def battles_since(self, session_id: str, since_unix_s: float) -> int:
        """Number of battles this session started at or after ``since_unix_s`` (rate limit)."""
        with self._tx() as s:
            return int(s.scalar(select(func.count()).select_from(BattleRow).where(
                BattleRow.session_id == session_id, BattleRow.created_unix_s >= since_unix_s)) or 0)

    # -- battles ------------------------------------------------------------------------------
    def create_battle(self, *, session_id: str, image_sha256: str, image_path: str, image_source: str,
                      width: int, height: int, instruction: str, model_a: str, model_b: str,
                      sampler: str) -> str:
        bid = uuid.uuid4().hex
        with self._tx() as s:
            s.add(BattleRow(id=bid, session_id=session_id, created_unix_s=time.time(), image_sha256=image_sha256,
                            image_path=image_path, image_source=image_source, width=width, height=height,
                            instruction=instruction, model_a=model_a, model_b=model_b, sampler=sampler))
        return bid

    def record_answer(self, battle_id: str, side: str, answer: dict) -> None:
        """Store one side's answer (``side`` ``"A"`` or ``"B"``)."""
        with self._tx() as s:
            b = self._get(s, battle_id)
            if side == "A":
                b.answer_a = answer
            else:
                b.answer_b = answer

    def mark_shown(self, battle_id: str) -> None:
        """Record that both answers were delivered to the page (first time only)."""
        with self._tx() as s:
            b = self._get(s, battle_id)
            if b.answer_a is None or b.answer_b is None:
                raise ArenaError("answers are not complete", 409)
            if b.shown_unix_s is None:
                b.shown_unix_s = time.time()

    def battle(self, battle_id: str) -> dict:
        """The full battle record (includes model names: server side only)."""
        with self._tx() as s:
            return _battle_dict(self._get(s, battle_id))

    def vote(self, battle_id: str, session_id: str, choice: str, *, flag_min_votes: int = 10) -> dict:
        """Cast the vote ``choice`` (a key of ``VOTE_CHOICES``) and return the revealed record.

        Raises:
            ArenaError: unknown battle (404), another session's battle (403), invalid choice (400),
                answers not yet shown (409), already voted (409).
        """
        if choice not in VOTE_CHOICES:
            raise ArenaError(f"vote must be one of {', '.join(VOTE_CHOICES)}", 400)
        with self._tx() as s:
            b = self._get(s, battle_id)
            if b.session_id != session_id:
                raise ArenaError("this battle belongs to another session", 403)
            if b.vote is not None:
                raise ArenaError("this battle already has a vote", 409)
            if b.shown_unix_s is None:
                raise ArenaError("both answers must be shown before voting", 409)
            b.vote = VOTE_CHOICES[choice]
            b.voted_unix_s = time.time()
            out = _battle_dict(b)
        self._update_flag(session_id, flag_min_votes)
        return out

    def _update_flag(self, session_id: str, min_votes: int) -> None:
        """Flag a session whose last ``min_votes`` (or more) votes all picked the same side."""
        with self._tx() as s:
            votes = s.scalars(select(BattleRow.vote).where(BattleRow.session_id == session_id,
                                                           BattleRow.vote.is_not(None))
                              .order_by(BattleRow.voted_unix_s)).all()
            row = s.get(SessionRow, session_id)
            if row is None or len(votes) < min_votes:
                return
            same = set(votes) <= {"model_a"} or set(votes) <= {"model_b"}
            if same and not row.flagged:
                row.flagged = True
                row.flag_reason = f"all {len(votes)} votes picked side {'A' if votes[0] == 'model_a' else 'B'}"
                log.warning("arena session %s flagged: %s", session_id, row.flag_reason)

    def votes(self, *, include_flagged: bool = False) -> list[dict]:
        """Votes in vote order as ``{"model_a", "model_b", "winner", "battle_id", "session_id"}``."""
        with self._tx() as s:
            q = select(BattleRow, SessionRow.flagged).join(SessionRow, SessionRow.id == BattleRow.session_id) \
                .where(BattleRow.vote.is_not(None)).order_by(BattleRow.voted_unix_s)
            out = []
            for b, flagged in s.execute(q).all():
                if flagged and not include_flagged:
                    continue
                out.append({"model_a": b.model_a, "model_b": b.model_b, "winner": b.vote,
                            "battle_id": b.id, "session_id": b.session_id})
            return out

    # -- human baseline ---------------------------------------------------------------------
    def add_human_click(self, session_id: str, item_id: str, category: str, points_px: list, success: bool,
                        reason: str) -> None:
        with self._tx() as s:
            s.add(HumanClickRow(session_id=session_id, item_id=item_id, category=category, points_px=points_px,
                                success=success, reason=reason, created_unix_s=time.time()))

    def human_clicks(self) -> list[dict]:
        """Every saved human answer in order: ``{session_id, id, category, points, success, reason}``."""
        with self._tx() as s:
            return [{"session_id": r.session_id, "id": r.item_id, "category": r.category, "points": r.points_px,
                     "success": r.success, "reason": r.reason}
                    for r in s.scalars(select(HumanClickRow).order_by(HumanClickRow.id)).all()]

    @staticmethod
    def _get(s: Session, battle_id: str) -> BattleRow:
        b = s.get(BattleRow, battle_id)
        if b is None:
            raise ArenaError("unknown battle", 404)
        return b


def _battle_dict(b: BattleRow) -> dict:
    return {"id": b.id, "session_id": b.session_id, "created_unix_s": b.created_unix_s,
            "image_sha256": b.image_sha256, "image_path": b.image_path, "image_source": b.image_source,
            "width": b.width, "height": b.height, "instruction": b.instruction, "model_a": b.model_a,
            "model_b": b.model_b, "sampler": b.sampler, "answer_a": b.answer_a, "answer_b": b.answer_b,
            "shown_unix_s": b.shown_unix_s, "vote": b.vote, "voted_unix_s": b.voted_unix_s}
