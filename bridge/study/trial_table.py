"""The ``trials`` table, derived from ``bridge.trials.record.TrialResult``, and the schema migrations.

Every field of ``TrialResult`` is a column of the same name (``trial_id`` is stored as
``trial_uid``): ``str`` -> TEXT, ``int`` -> INTEGER, ``float`` -> REAL, ``bool`` -> BOOLEAN, a
``Literal`` of strings -> VARCHAR(32), anything nested (models, lists, dicts) -> JSON. The store adds
its own columns (``STORE_COLUMNS``: the row id, study, participant, block, the participant's
judgement, timestamps). A field added to ``TrialResult`` becomes a column here, and ``migrate``
adds it to an older database; so the record is written down once.

Schema versions: 2 (issue 2's flat record, refusals as ``"kind: detail"`` strings), 3 (typed
refusals, robot errors and point entries), 4 (trial outcomes, aborts, failure stages, the automatic
check, recordings; studies' ``max_repeats`` and ``reveal_floor_s``; block starts and scene
references), 5 (the trial machine: trials numbered per study, the trial frames table, studies'
reveal range ``reveal_low_s``/``reveal_high_s`` (a version-4 study keeps its floor as both bounds, as
it was run) and ``min_free_mb``), 6 (begun trials), 7 (the trial's station), 8 (pairwise studies:
``studies.mode``, ``studies.pair_sampling``, the ``episodes`` table). ``migrate`` brings an older file to the current version in place, converting each
stored row; nothing is dropped. A version-2/3 trial that was judged gets its ``outcome`` from the
judgement.
"""

from __future__ import annotations

import json
import logging
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

from sqlalchemy import JSON, Boolean, Column, Float, ForeignKey, Integer, String, Text, inspect, text
from sqlalchemy.engine import Connection

from pointlab.bridge.trials.machine import DEFAULT_MIN_FREE_BYTES
from pointlab.bridge.trials.outcomes import REFUSAL_STAGES
from pointlab.bridge.trials.record import TrialResult
from pointlab.bridge.errors import BridgeError

__all__ = ["SCHEMA_VERSION", "STORE_COLUMNS", "trial_columns", "trial_table_attrs", "migrate", "MigrationError"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 8
DEFAULT_MIN_FREE_MB = DEFAULT_MIN_FREE_BYTES // 1_000_000
STORE_COLUMNS = (
    "id",
    "trial_uid",
    "study_id",
    "participant_id",
    "block",
    "number",
    "judgement",
    "created_unix_s",
    "judged_unix_s",
)


class MigrationError(BridgeError, RuntimeError):
    """A database of a version this pointlab cannot migrate from."""


def _sql_type(annotation: Any) -> tuple[Any, bool]:
    """``(SQLAlchemy type, nullable)`` of a model field's annotation."""
    nullable = False
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        nullable = len(args) < len(get_args(annotation))
        annotation = args[0] if len(args) == 1 else annotation
        origin = get_origin(annotation)
    if origin is Literal:
        return String(32), nullable
    if annotation is bool:
        return Boolean, nullable
    if annotation is int:
        return Integer, nullable
    if annotation is float:
        return Float, nullable
    if annotation is str:
        return Text, nullable
    return JSON, nullable


def trial_columns() -> dict[str, tuple[Any, bool]]:
    """``{column: (type, nullable)}`` of every ``TrialResult`` field (``trial_id`` as ``trial_uid``)."""
    hints = typing.get_type_hints(TrialResult)
    return {("trial_uid" if name == "trial_id" else name): _sql_type(hints[name]) for name in TrialResult.model_fields}


def trial_table_attrs() -> dict[str, Any]:
    """Class attributes of the declarative ``TrialRow`` (``bridge.study.store``)."""
    attrs: dict[str, Any] = {
        "__tablename__": "trials",
        "id": Column(Integer, primary_key=True),
        "study_id": Column(ForeignKey("studies.id"), index=True, nullable=True),
        "participant_id": Column(ForeignKey("participants.id"), index=True, nullable=True),
        "block": Column(Integer, nullable=True),
        "number": Column(Integer, nullable=True),  # the trial's number in its study (1, 2, ...)
        "judgement": Column(String(16), nullable=True),
        "created_unix_s": Column(Float, nullable=False),
        "judged_unix_s": Column(Float, nullable=True),
    }
    for name, (sql_type, nullable) in trial_columns().items():
        if name == "trial_uid":
            attrs[name] = Column(String(64), unique=True, nullable=False)
        else:
            attrs[name] = Column(
                sql_type, nullable=True if name not in ("agent", "instruction", "action") else nullable
            )
    return attrs


# -- migrations -----------------------------------------------------------------------------------
def _v2_refusal(reason: str) -> dict:
    code, _, detail = reason.partition(":")
    code = _V2_CODES.get(code.strip(), code.strip())
    return {"code": code, "detail": detail.strip(), "stage": REFUSAL_STAGES.get(code, "targeting")}


_V2_CODES = {"unsafe_target": "workspace"}  # version 2's refusal kinds that version 3 renamed


def _v2_row_to_v3(row: dict) -> dict:
    """One version-2 row's changed columns (the only place a ``"kind: detail"`` string is split)."""
    target = json.loads(row["target"]) if row.get("target") else None
    refusal = None
    if isinstance(target, dict):
        reason = target.pop("reason", None)
        if not target.get("valid") and reason:
            target["refusal"] = refusal = _v2_refusal(reason)
        for k in ("point_camera_m", "point_base_m", "pixel"):
            if target.get(k) is not None:
                target[k] = list(target[k])
    error = row.get("robot_error")
    robot_error = None
    if row["robot_outcome"] == "refused" and error:  # an arm-side refusal kept its reason here
        refusal = _v2_refusal(error)
    elif error:
        robot_error = {"type": "RobotError", "detail": error, "code": None}
    pts = json.loads(row["points_px"]) if row.get("points_px") else []
    points = [{"u_px": float(u), "v_px": float(v), "valid": True, "reason": None} for u, v in pts]
    return {
        "target": json.dumps(target) if target is not None else None,
        "refusal": json.dumps(refusal) if refusal else None,
        "robot_error": json.dumps(robot_error) if robot_error else None,
        "points": json.dumps(points),
    }


def _v2_to_v3(conn: Connection) -> None:
    _add_missing_columns(conn)
    rows = conn.execute(text("SELECT id, target, robot_outcome, robot_error, points_px FROM trials")).mappings().all()
    for row in rows:
        conn.execute(
            text(
                "UPDATE trials SET target = :target, refusal = :refusal, robot_error = :robot_error, "
                "points = :points WHERE id = :id"
            ),
            {**_v2_row_to_v3(dict(row)), "id": row["id"]},
        )
    log.info("migrated %d trials from schema version 2 to 3", len(rows))


def _v3_to_v4(conn: Connection) -> None:
    _add_missing_columns(conn)
    have = {c["name"] for c in inspect(conn).get_columns("studies")}
    if "max_repeats" not in have:
        conn.execute(text("ALTER TABLE studies ADD COLUMN max_repeats INTEGER NOT NULL DEFAULT 2"))
    if "reveal_floor_s" not in have:
        # studies run before the floor existed had none: keep them as they were run
        conn.execute(text("ALTER TABLE studies ADD COLUMN reveal_floor_s FLOAT NOT NULL DEFAULT 0"))
    conn.execute(text("UPDATE trials SET outcome = judgement WHERE outcome IS NULL AND judgement IS NOT NULL"))


def _v4_to_v5(conn: Connection) -> None:
    _add_missing_columns(conn)
    if "number" not in {c["name"] for c in inspect(conn).get_columns("trials")}:
        conn.execute(text("ALTER TABLE trials ADD COLUMN number INTEGER"))
    # number the trials of each study (and those outside any study) in the order they were stored
    conn.execute(
        text(
            "UPDATE trials SET number = (SELECT COUNT(*) FROM trials AS t2 WHERE t2.id <= trials.id AND "
            "(t2.study_id = trials.study_id OR (t2.study_id IS NULL AND trials.study_id IS NULL)))"
        )
    )
    have = {c["name"] for c in inspect(conn).get_columns("studies")}
    floor = "reveal_floor_s" if "reveal_floor_s" in have else "0"
    for col, value in (("reveal_low_s", floor), ("reveal_high_s", floor)):
        if col not in have:  # a version-4 study keeps the fixed floor it was run with
            conn.execute(text(f"ALTER TABLE studies ADD COLUMN {col} FLOAT NOT NULL DEFAULT 0"))
            conn.execute(text(f"UPDATE studies SET {col} = {value}"))
    if "min_free_mb" not in have:  # a safety floor, not a design choice: older studies get the default
        conn.execute(text(f"ALTER TABLE studies ADD COLUMN min_free_mb INTEGER NOT NULL DEFAULT {DEFAULT_MIN_FREE_MB}"))
    # trial_frames is a new table: created by create_all before the migration runs


def _v5_to_v6(conn: Connection) -> None:
    """trial_starts (begun, not yet stored trials) is a new table: created by create_all before this runs."""


def _v6_to_v7(conn: Connection) -> None:
    """trials.station (the station a study server dispatched the trial to): a new nullable column."""
    _add_missing_columns(conn)


def _v7_to_v8(conn: Connection) -> None:
    """Pairwise studies: ``studies.mode`` and ``studies.pair_sampling`` (an older study is absolute,
    as it was run); the ``episodes`` table is new (created by create_all before this runs)."""
    have = {c["name"] for c in inspect(conn).get_columns("studies")}  # an older file's rebuilt table has them
    for name, default in (("mode", "absolute"), ("pair_sampling", "uniform")):
        if name not in have:
            conn.execute(text(f"ALTER TABLE studies ADD COLUMN {name} VARCHAR(16) NOT NULL DEFAULT '{default}'"))


_MIGRATIONS = {2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5, 5: _v5_to_v6, 6: _v6_to_v7, 7: _v7_to_v8}


def _add_missing_columns(conn: Connection) -> None:
    have = {c["name"] for c in inspect(conn).get_columns("trials")}
    for name, (sql_type, _) in trial_columns().items():
        if name not in have:
            type_sql = (
                sql_type.compile(dialect=conn.dialect)
                if not isinstance(sql_type, type)
                else sql_type().compile(dialect=conn.dialect)
            )
            conn.execute(text(f'ALTER TABLE trials ADD COLUMN "{name}" {type_sql}'))


def migrate(conn: Connection, version: int) -> None:
    """Bring a database of schema ``version`` to ``SCHEMA_VERSION`` inside the caller's transaction
    (the caller commits and records the new version).

    Raises:
        MigrationError: no migration path from ``version`` (e.g. a newer pointlab wrote the file).
    """
    while version < SCHEMA_VERSION:
        step = _MIGRATIONS.get(version)
        if step is None:
            raise MigrationError(f"no migration from schema version {version}")
        step(conn)
        version += 1
    if version != SCHEMA_VERSION:
        raise MigrationError(f"schema version {version} is newer than this pointlab's {SCHEMA_VERSION}")
