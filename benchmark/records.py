"""JSONL records, read and written the same way by every benchmark, scorer and script reader:
ground-truth questions, predictions ``{"id", "prediction"}``, votes, instruction scripts.

Lines are UTF-8 (a leading byte-order mark is dropped); blank lines are skipped; every error names
the file and the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["RecordError", "iter_jsonl", "read_jsonl", "write_jsonl", "predictions_by_id", "by_unique_id"]


class RecordError(ValueError):
    """A JSONL file cannot be read, or a record in it is malformed; the message names the line."""


def iter_jsonl(path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, record)`` for every non-blank line of ``path``; ``where`` is ``"file:line"`` for the
    caller's own messages about that record.

    Raises:
        RecordError: the file is missing or unreadable, or a line is not a JSON object.
    """
    p = Path(path)
    try:
        # utf-8-sig: a byte-order mark (Windows editors, Excel exports) is dropped, not a JSON error
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise RecordError(f"cannot read {p}: {e}") from e
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as e:
            raise RecordError(f"{p}:{n}: not JSON ({getattr(e, 'msg', 'nested too deeply')})") from e
        if not isinstance(rec, dict):
            raise RecordError(f"{p}:{n}: expected a JSON object, got {type(rec).__name__}")
        yield f"{p}:{n}", rec


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Every non-blank line of ``path`` as a dict (see ``iter_jsonl``).

    Raises:
        RecordError: as ``iter_jsonl``.
    """
    return [rec for _, rec in iter_jsonl(path)]


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> int:
    """Write ``records`` one JSON object per line (UTF-8); returns the number written."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with p.open("w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            n += 1
    return n


def predictions_by_id(records: list[dict[str, Any]], source: str = "predictions") -> dict[str, Any]:
    """``{id: prediction}`` from prediction records ``{"id", "prediction"}``.

    Raises:
        RecordError: a record lacks ``id`` or ``prediction``, or an id repeats.
    """
    out: dict[str, Any] = {}
    for n, rec in enumerate(records, start=1):
        if "id" not in rec or "prediction" not in rec:
            raise RecordError(f"{source} record {n}: needs 'id' and 'prediction', got keys {sorted(rec)}")
        key = str(rec["id"])
        if key in out:
            raise RecordError(f"{source} record {n}: duplicate id {key!r}")
        out[key] = rec["prediction"]
    return out


def by_unique_id(records: Iterable[dict[str, Any]], source: str = "ground-truth",
                 error: type[RecordError] = RecordError) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(id as text, record)`` for each record, in order.

    Raises:
        error (a ``RecordError``, the caller's own kind if given): a record without ``id``, or an id
            seen before (``7`` and ``"7"`` are the same).
    """
    seen: set[str] = set()
    for rec in records:
        if "id" not in rec:
            raise error(f"{source} record without 'id': keys {sorted(rec)}")
        key = str(rec["id"])
        if key in seen:
            raise error(f"duplicate {source} id {key!r}")
        seen.add(key)
        yield key, rec
