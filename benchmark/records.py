"""JSON records: the one strict JSON encoder of the project, and JSONL read and written the same
way by every benchmark, scorer and script reader (ground-truth questions, predictions
``{"id", "prediction"}``, votes, instruction scripts).

Strict JSON (``finite_json``, ``dumps_json``): what every command prints, every JSON API answers,
every ROS payload, store column and run file holds. numpy scalars and arrays become plain numbers
and lists; NaN and infinities become ``null`` (JSON has neither; browsers and strict parsers reject
them, and a stored model answer may hold one). This module sits in ``benchmark`` because benchmark is
the lowest package that every package with JSON output depends on (docs/architecture.md).

JSONL lines are UTF-8 (a leading byte-order mark is dropped); blank lines are skipped; every error
names the file and the line.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from pointlab.benchmark.errors import BenchmarkError

__all__ = [
    "RecordError",
    "finite_json",
    "dumps_json",
    "iter_jsonl",
    "read_jsonl",
    "read_jsonl_lenient",
    "write_jsonl",
    "question_view",
    "is_journal_line",
    "predictions_by_id",
    "by_unique_id",
    "Predictions",
    "read_predictions",
    "predictions_from_records",
]


def finite_json(obj: Any) -> Any:
    """``obj`` as plain JSON values: numpy scalars and arrays as Python numbers and lists, tuples as
    lists, pydantic models as their JSON-mode dump, every non-finite float as ``None``."""
    import numpy as np

    if isinstance(obj, np.ndarray):
        obj = obj.tolist()
    elif isinstance(obj, np.generic):
        obj = obj.item()
    elif hasattr(obj, "model_dump"):  # a pydantic model (typed payloads and records)
        obj = obj.model_dump(mode="json")
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj


def dumps_json(obj: Any, *, indent: int | None = None, compact: bool = False) -> str:
    """Strict JSON text of ``obj`` (see ``finite_json``); ``compact`` drops the spaces after separators.

    Raises:
        TypeError: a value that has no JSON form (neither a JSON type, numpy, nor a pydantic model).
    """
    seps = (",", ":") if compact else None
    return json.dumps(finite_json(obj), indent=indent, allow_nan=False, ensure_ascii=False, separators=seps)


class RecordError(BenchmarkError, ValueError):
    """A JSONL file cannot be read, or a record in it is malformed; the message names the line."""


def json_error_text(e: BaseException) -> str:
    """A short reason for a failed ``json.loads``: the decoder's message, "nested too deeply" for a
    ``RecursionError``, or the first line of another ``ValueError`` (e.g. an integer over Python's
    4300-digit limit)."""
    if isinstance(e, json.JSONDecodeError):
        return e.msg
    if isinstance(e, RecursionError):
        return "nested too deeply"
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text[:120]


def _decoded_lines(path: str | Path) -> Iterator[tuple[str, dict[str, Any] | None, str | None]]:
    """``(where, record, problem)`` per non-blank line: the record, or ``None`` and why the line is not a
    JSON object. Raises ``RecordError`` when the file cannot be read."""
    p = Path(path)
    try:
        # utf-8-sig: a byte-order mark (Windows editors, Excel exports) is dropped, not a JSON error
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise RecordError(f"cannot read {p}: {e}") from e
    # JSON Lines ends records at "\n" only (jsonlines.org): str.splitlines() would also split inside a
    # string holding U+2028, U+2029 or U+0085, which dumps_json writes unescaped (ensure_ascii=False)
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError) as e:  # ValueError: JSONDecodeError, and ints over 4300 digits
            yield f"{p}:{n}", None, f"{p}:{n}: not JSON ({json_error_text(e)})"
            continue
        if not isinstance(rec, dict):
            yield f"{p}:{n}", None, f"{p}:{n}: expected a JSON object, got {type(rec).__name__}"
            continue
        yield f"{p}:{n}", rec, None


def iter_jsonl(path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, record)`` for every non-blank line of ``path``; ``where`` is ``"file:line"`` for the
    caller's own messages about that record.

    Raises:
        RecordError: the file is missing or unreadable, or a line is not a JSON object.
    """
    for where, rec, problem in _decoded_lines(path):
        if rec is None:  # then problem says why
            raise RecordError(problem or where)
        yield where, rec


def read_jsonl_lenient(path: str | Path) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """Every readable line of ``path`` as ``(where, record)``, and a problem message (naming ``file:line``)
    for each line that is not a JSON object: a prediction file with one bad line still scores every other
    line (the bad line's item scores 0 as missing).

    Raises:
        RecordError: the file itself is missing or unreadable.
    """
    good: list[tuple[str, dict[str, Any]]] = []
    bad: list[str] = []
    for where, rec, problem in _decoded_lines(path):
        if rec is None:  # then problem says why
            bad.append(problem or where)
        else:
            good.append((where, rec))
    return good, bad


class Predictions(dict):
    """``{id: prediction}`` read from a prediction file, with the lines that could not be used:
    ``problems`` maps an id to why its prediction is unusable (a repeated id: which of two answers
    counts is a guess, so neither does), ``unreadable`` lists lines with no usable id."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.problems: dict[str, str] = {}
        self.unreadable: list[str] = []

    def summary(self) -> dict[str, Any]:
        return {"prediction_problems": dict(self.problems), "unreadable_prediction_lines": list(self.unreadable)}


def read_predictions(path: str | Path, field: str = "prediction") -> Predictions:
    """Prediction records ``{"id", field}`` of a JSONL file as ``Predictions`` (never fails on one line).

    Raises:
        RecordError: the file itself is missing or unreadable.
    """
    good, bad = read_jsonl_lenient(path)
    return predictions_from_records(good, field, bad)


def is_journal_line(rec: Mapping[str, Any]) -> bool:
    """A line of a run's answer journal (``runs.AnswerRecord``): an id, its raw answer and its run."""
    return "id" in rec and "raw_text" in rec and "run" in rec


def predictions_from_records(
    records: Iterable[tuple[str, dict[str, Any]]], field: str = "prediction", unreadable: Iterable[str] = ()
) -> Predictions:
    """``Predictions`` from ``(where, record)`` pairs (see ``read_predictions``). Lines of a run's journal
    (``runs.AnswerRecord``: ``raw_text`` and ``run``) are read as the run read them: the raw answer is
    the prediction, the last line of an item counts, and a failed call is a problem (scored 0)."""
    out = Predictions()
    out.unreadable.extend(unreadable)
    seen: dict[str, str] = {}
    journal: set[str] = set()  # ids read from lines of a run journal (runs.AnswerRecord)
    for where, rec in records:
        if field == "prediction" and field not in rec and is_journal_line(rec):
            # a line of a run's journal: its raw answer is the prediction, a later line of an item
            # supersedes an earlier one (the run asked it again), and a failed call scores 0
            key = str(rec["id"])
            if key in seen and key not in journal:
                out.problems[key] = f"duplicate prediction id ({seen[key]} and {where}): neither is scored"
                out.pop(key, None)
                continue
            seen[key] = where
            journal.add(key)
            out.problems.pop(key, None)
            if rec.get("error"):
                out.problems[key] = f"model error: {rec['error']}"
                out.pop(key, None)
            else:
                out[key] = rec["raw_text"]
            continue
        if "id" not in rec or field not in rec:
            out.unreadable.append(f"{where}: needs 'id' and '{field}', got keys {sorted(rec)[:8]}")
            continue
        key = str(rec["id"])
        if key in seen:
            out.problems[key] = f"duplicate prediction id ({seen[key]} and {where}): neither is scored"
            out.pop(key, None)
            continue
        seen[key] = where
        if key not in out.problems:
            out[key] = rec[field]
    return out


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
            f.write(dumps_json(rec) + "\n")
            n += 1
    return n


def _umask() -> int:
    """The process umask, read without changing it (Linux ``/proc``; else the usual 022)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


@contextmanager
def replaced_on_success(path: str | Path) -> Iterator[Path]:
    """A new temporary file beside ``path`` (same folder: the rename is atomic) for the block to write;
    renamed onto ``path`` when the block ends without an exception, removed otherwise. A reader sees
    the previous file or the new one, never a partial one; nested blocks (``contextlib.ExitStack``)
    rename only once every file is written."""
    p = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        # mkstemp makes the file 0600; the output gets the mode any new file would (0644 under umask 022)
        os.fchmod(fd, 0o666 & ~_umask())
    finally:
        os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)


def question_view(record: dict[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    """``record`` reduced to ``fields`` (those it has), in that order: what a model runner is given.
    A whitelist, not a list of answer fields to drop, so a field added to the answer key later (a
    distance, a count) cannot reach a questions file by accident."""
    return {k: record[k] for k in fields if k in record}


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


_Record = TypeVar("_Record", bound=Mapping[str, Any])


def by_unique_id(
    records: Iterable[_Record], source: str = "ground-truth", error: type[RecordError] = RecordError
) -> Iterator[tuple[str, _Record]]:
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
