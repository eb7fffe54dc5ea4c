"""System Usability Scale (SUS) scoring.

Standard scoring (Brooke, J. 1996. "SUS: a quick and dirty usability scale". In Usability
Evaluation in Industry, 189-194): ten items answered on a 1-5 scale; odd-numbered items
(1, 3, 5, 7, 9, positively worded) contribute ``response - 1``, even-numbered items (negatively
worded) contribute ``5 - response``; the sum (0-40) times 2.5 gives the 0-100 score.
PointArena sec. 4.1 collects one SUS survey per agent condition after its trials.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pointlab.bridge.errors import BridgeError

__all__ = ["SUS_ITEMS", "SusError", "sus_score", "validate_responses", "score_sus_lines", "score_sus_file"]

# The ten statements of Brooke (1996), in order; shown to participants after each agent block.
SUS_ITEMS = (
    "I think that I would like to use this system frequently.",
    "I found the system unnecessarily complex.",
    "I thought the system was easy to use.",
    "I think that I would need the support of a technical person to be able to use this system.",
    "I found the various functions in this system were well integrated.",
    "I thought there was too much inconsistency in this system.",
    "I would imagine that most people would learn to use this system very quickly.",
    "I found the system very cumbersome to use.",
    "I felt very confident using the system.",
    "I needed to learn a lot of things before I could get going with this system.",
)


class SusError(BridgeError, ValueError):
    """Responses that are not ten integers in 1..5; the message says which and why."""


def validate_responses(responses: Any) -> list[int]:
    """Check ``responses`` is a sequence of exactly 10 integers in 1..5 and return it as a list.

    Raises:
        SusError: not a list, wrong length, a non-integer (``bool`` and ``2.0`` included), or out of range.
    """
    if not isinstance(responses, (list, tuple)):
        raise SusError(f"responses must be a list of 10 integers 1-5, got {type(responses).__name__}")
    if len(responses) != 10:
        raise SusError(f"responses must have 10 items, got {len(responses)}")
    out = []
    for i, r in enumerate(responses, start=1):
        # bool is an int subclass in Python; a JSON true is not a Likert answer.
        if isinstance(r, bool) or not isinstance(r, int):
            raise SusError(f"item {i}: {r!r} is not an integer")
        if not 1 <= r <= 5:
            raise SusError(f"item {i}: {r} is outside 1-5")
        out.append(int(r))
    return out


def sus_score(responses: Sequence[int]) -> float:
    """The 0-100 SUS score of ten 1-5 responses (Brooke 1996; see module docstring).

    Args:
        responses: 10 integers in 1..5, item 1 first.

    Returns:
        float in [0, 100], a multiple of 2.5.

    Raises:
        SusError: see :func:`validate_responses`.
    """
    r = validate_responses(responses)
    # Index 0 is item 1 (odd): even indices are odd items.
    total = sum((x - 1) if i % 2 == 0 else (5 - x) for i, x in enumerate(r))
    return total * 2.5


def score_sus_lines(lines: Iterable[str]) -> dict[str, Any]:
    """Score prediction lines ``{"id", "responses": [10 integers 1-5]}``.

    Returns ``{"items": [{"id", "score"} | {"id", "score": None, "reason"}], "summary": {"mean",
    "n", "n_invalid"}}``. A malformed line (bad JSON, missing id or responses, bad responses) is
    reported as its own item with ``score: None`` and a ``reason``; it never stops the run. Blank
    lines are skipped. ``mean`` is over valid items (``None`` when there are none). An id already
    seen on an earlier line is refused (``score: None``, reason ``duplicate id``): each id counts once.
    """
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        item_id: Any = f"line {lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            items.append({"id": item_id, "score": None, "reason": f"line {lineno}: not JSON ({e.msg})"})
            continue
        if not isinstance(obj, dict):
            items.append({"id": item_id, "score": None, "reason": f"line {lineno}: not a JSON object"})
            continue
        if "id" in obj:
            item_id = obj["id"]
            # str(): ids may be any JSON value (a list is unhashable); 1 and "1" name one participant
            key = str(item_id)
            if key in seen:
                items.append(
                    {
                        "id": item_id,
                        "score": None,
                        "reason": f"line {lineno}: duplicate id {item_id!r} (the first line with it counts)",
                    }
                )
                continue
            seen.add(key)
        else:
            items.append({"id": item_id, "score": None, "reason": f'line {lineno}: missing "id"'})
            continue
        if "responses" not in obj:
            items.append({"id": item_id, "score": None, "reason": 'missing "responses"'})
            continue
        try:
            items.append({"id": item_id, "score": sus_score(obj["responses"])})
        except SusError as e:
            items.append({"id": item_id, "score": None, "reason": str(e)})
    valid = [it["score"] for it in items if it["score"] is not None]
    summary = {
        "mean": (sum(valid) / len(valid)) if valid else None,
        "n": len(valid),
        "n_invalid": len(items) - len(valid),
    }
    return {"items": items, "summary": summary}


def score_sus_file(path: str | Path) -> dict[str, Any]:
    """:func:`score_sus_lines` over a JSONL file (UTF-8, a leading byte-order mark allowed).

    Raises:
        FileNotFoundError / IsADirectoryError / UnicodeDecodeError: the file cannot be read as text.
    """
    # utf-8-sig: a byte-order mark (Windows editors, Excel exports) is not part of line 1
    with open(path, encoding="utf-8-sig") as f:
        return score_sus_lines(f)
