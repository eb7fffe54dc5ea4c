"""Typed FastAPI dependencies: the store (database handle), the app context, the caller's role.

Callers authenticate with a bearer token (``Authorization: Bearer <token>``): the operator token
given to ``create_app`` makes the caller the operator; a participant's invite token makes it that
participant. Websockets pass the token as ``?token=`` (browsers cannot set headers on them).

The database dependency hands out the :class:`~pointlab.bridge.study.store.Store` rather than a
request-scoped SQLAlchemy session: every store method commits its own short session so a crash
loses nothing already written (issue 2), which a session spanning a long request (a trial takes
seconds) would not give.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import Depends, HTTPException, Path, Query, Request, status
from pydantic import AfterValidator

from pointlab.bridge.study.store import Store
from pointlab.bridge.trials.record import text_problem

from .context import AppContext

__all__ = [
    "Caller",
    "get_ctx",
    "get_store",
    "resolve_token",
    "caller",
    "operator",
    "participant",
    "Ctx",
    "Db",
    "AnyCaller",
    "Operator",
    "Participant",
    "IdPath",
    "IdQuery",
    "unusable_text",
    "StorableStr",
]


@dataclass(frozen=True)
class Caller:
    """Who is calling: ``role`` and, for a participant, its stored row (``participant``)."""

    role: Literal["operator", "participant"]
    participant: dict[str, Any] | None = None

    @property
    def participant_row(self) -> dict[str, Any]:
        """``participant`` of a participant caller (the ``Participant`` dependency lets only those in)."""
        assert self.participant is not None, "not a participant caller"
        return self.participant


def get_ctx(request: Request) -> AppContext:
    return request.app.state.ctx


def get_store(ctx: Annotated[AppContext, Depends(get_ctx)]) -> Store:
    return ctx.store


def resolve_token(ctx: AppContext, token: str | None) -> Caller | None:
    """The caller a token stands for, or ``None`` for a missing/unknown token."""
    if not token:
        return None
    # Constant-time compare: the operator token is the only secret that commands the arm for everyone.
    if hmac.compare_digest(token.encode(), ctx.operator_token.encode()):
        return Caller("operator")
    p = ctx.store.participant_by_token(token)
    return Caller("participant", p) if p else None


def _bearer(request: Request) -> str | None:
    h = request.headers.get("authorization", "")
    return h[7:].strip() if h.lower().startswith("bearer ") else None


def caller(request: Request, ctx: Annotated[AppContext, Depends(get_ctx)]) -> Caller:
    """Raises 401 when the bearer token is missing or unknown."""
    c = resolve_token(ctx, _bearer(request))
    if c is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED, "missing or unknown token", headers={"WWW-Authenticate": "Bearer"}
        )
    return c


def operator(c: Annotated[Caller, Depends(caller)]) -> Caller:
    """Raises 403 unless the caller is the operator."""
    if c.role != "operator":
        raise HTTPException(status.HTTP_403_FORBIDDEN, "operator token required")
    return c


def participant(c: Annotated[Caller, Depends(caller)]) -> Caller:
    """Raises 403 unless the caller is a participant."""
    if c.role != "participant":
        raise HTTPException(status.HTTP_403_FORBIDDEN, "invite token required")
    return c


Ctx = Annotated[AppContext, Depends(get_ctx)]
Db = Annotated[Store, Depends(get_store)]
AnyCaller = Annotated[Caller, Depends(caller)]
Operator = Annotated[Caller, Depends(operator)]
Participant = Annotated[Caller, Depends(participant)]

# Row ids are SQLite INTEGERs (64-bit); a larger number would make the driver raise OverflowError
# (a 500) instead of the route's 404, so ids are bounded where they enter.
_ID_MAX = 2**63 - 1
IdPath = Annotated[int, Path(ge=1, le=_ID_MAX)]
IdQuery = Annotated[int, Query(ge=1, le=_ID_MAX)]


unusable_text = text_problem  # why a text cannot be stored, or None (bridge.trials.record.text_problem)


def _storable(text: str) -> str:
    reason = unusable_text(text)
    if reason:
        raise ValueError(f"text cannot be used: {reason}")
    return text


StorableStr = Annotated[str, AfterValidator(_storable)]
