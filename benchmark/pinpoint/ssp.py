"""The SSP (Structured Spatial Prediction) scorer of PinpointQA App. B.2, under a rule set.

Both rule sets follow the released evaluator (rainchowz/PinpointQA ``eval_utils/scoring.py::score_task4``,
``structured.py``, ``alignment.py`` at 8ae288a) where the paper is silent:

1. JSON recovery (``parse_json_maybe``): the whole text with ``json.loads``; then with a leading
   ```` ```json ```` and a trailing fence removed; then the widest ``{...}`` span. Not an object -> 0.
2. The payload: ``support_surface`` (else ``primary_surface``) normalized with the surface map; each
   reference object ``{object, relation, distance_cm}`` normalized (object map, relation aliases,
   ``distance_cm`` read as a float or the first number of a string); a reference with none of the three
   is dropped; references sorted by (object, relation, distance).
3. Alignment: the one-to-one assignment of predicted references to ground-truth slots with the
   lexicographically highest (object, relation, distance) credit totals (the released code searches
   all assignments; a linear assignment with lexicographic weights finds the same totals).
4. Per slot: object 1 on an exact normalized match; relation 1 exact, 0.5 for next_to/near,
   under/below, on/attached_to (only with the object matched); distance by the bands d <= 10: 5/10 cm,
   d <= 30: 10/15 cm, else 15/20 cm (full/half), times the relation credit. Components averaged over
   the ground-truth slots (0 when there are none); S = 0.4 surface + 0.2 object + 0.2 relation +
   0.2 distance, rounded to 6 decimals.

Where they differ (docs/scoring.md): the singular (``normalize``), the distance boundary (reference:
``abs(gt - pred) <= tol`` in floats, so 12.3 vs 7.3 is 5.000000000000001 and misses full credit;
pointlab: compared after rounding to 1e-6 cm), and a **missing** ``support_surface`` field (reference:
read as "" and matched against an empty ground truth; pointlab: no credit, App. B.2 "Missing or
malformed fields receive no credit"). A number too large for a float (the released code raises
OverflowError and drops the item) is no distance under both.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from .normalize import normalize_label, normalize_relation, normalize_surface

from pointlab.benchmark.errors import BenchmarkError

__all__ = [
    "SSPResult",
    "score_ssp",
    "relation_credit",
    "distance_credit",
    "parse_ssp_gt",
    "SSP_WEIGHTS",
    "SSPGroundTruthError",
    "parse_json_maybe",
    "safe_float",
]

#: App. B.2 weights of surface, object, relation, distance.
SSP_WEIGHTS = {"surface": 0.4, "object": 0.2, "relation": 0.2, "distance": 0.2}

_HALF_PAIRS = {frozenset(("next_to", "near")), frozenset(("under", "below")), frozenset(("on", "attached_to"))}
# (upper bound of the ground-truth distance band in cm, full-credit error, half-credit error)
_DISTANCE_BANDS = ((10.0, 5.0, 10.0), (30.0, 10.0, 15.0), (math.inf, 15.0, 20.0))
_EPS_DECIMALS = 6  # pointlab compares distance errors after rounding to 1e-6 cm (12.3 - 7.3 is an error of 5)


class SSPGroundTruthError(BenchmarkError, ValueError):
    """The ground-truth SSP answer is not a JSON object."""


@dataclass
class SSPResult:
    """Score of one SSP answer.

    Attributes:
        score: S_SSP in [0, 1] (rounded to 6 decimals, as the released evaluator reports it).
        parts: ``{"surface", "object", "relation", "distance"}`` component scores in [0, 1].
        reason: ``ok``, ``unparseable`` (no JSON object), or ``ok; <notes>`` (schema problems).
        parsed: the recovered prediction object (None when unparseable).
        slots: per ground-truth slot ``{gt, pred, object, relation, distance}`` (normalized values).
    """

    score: float
    parts: dict
    reason: str
    parsed: dict | None = None
    slots: list = field(default_factory=list)


def parse_json_maybe(text: Any) -> Any:
    """The released ``parse_json_maybe``: any JSON value of the text, of the text without its fences, or of
    its widest ``{...}`` span; ``None`` when none parses."""
    if not text:
        return None
    raw = str(text).strip()
    for attempt in (raw, re.sub(r"\s*```\s*$", "", re.sub(r"^\s*```(?:json)?\s*", "", raw, flags=re.I))):
        try:
            return json.loads(attempt)
        except (ValueError, RecursionError):
            pass
    # the released re.search(r"\{.*\}", raw, re.DOTALL): the first "{" to the last "}" (found by index: the
    # regex rescans to the end from every "{" when no "}" follows, quadratic on '{"a":' * 20000)
    first, last = raw.find("{"), raw.rfind("}")
    if first != -1 and last > first:
        try:
            return json.loads(raw[first : last + 1])
        except (ValueError, RecursionError):
            return None
    return None


_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def safe_float(x: Any) -> float | None:
    """The released ``safe_float``: numbers as floats (``True`` is 1.0), a string's ``float()`` or its first
    number; ``None`` otherwise and for an integer too large for a float (where the released code raises)."""
    if x is None:
        return None
    try:
        if isinstance(x, (int, float)):
            return float(x)
        s = str(x).strip()
        try:
            return float(s)
        except ValueError:
            m = _NUM.search(s)
            return float(m.group(0)) if m else None
    except OverflowError:
        return None


def relation_credit(gt: Any, pred: Any) -> float:
    """1 for the same normalized relation, 0.5 for the three half-credit pairs, else 0."""
    g, p = normalize_relation(gt), normalize_relation(pred)
    if not g or not p:
        return 0.0
    if g == p:
        return 1.0
    return 0.5 if frozenset((g, p)) in _HALF_PAIRS else 0.0


def distance_credit(gt_cm: float | None, pred_cm: float | None, rules: str = "pointlab") -> float:
    """1 / 0.5 / 0 by the App. B.2 bands of the ground-truth distance (cm); 0 when either is missing."""
    if gt_cm is None or pred_cm is None:
        return 0.0
    d = abs(float(gt_cm))
    e = abs(float(gt_cm) - float(pred_cm))
    if rules == "pointlab":
        e = round(e, _EPS_DECIMALS) if math.isfinite(e) else e
    for upper, full, half in _DISTANCE_BANDS:
        if d <= upper:
            if e <= full:
                return 1.0
            return 0.5 if e <= half else 0.0
    return 0.0  # NaN ground truth: no band


def _payload(data: dict, rules: str) -> dict:
    refs = data.get("references", []) or []
    if not isinstance(refs, list):
        refs = []
    out = []
    for r in refs:
        if not isinstance(r, dict):
            continue
        obj, rel = normalize_label(r.get("object", ""), rules), normalize_relation(r.get("relation", ""))
        dist = safe_float(r.get("distance_cm"))
        if not obj and not rel and dist is None:
            continue
        out.append({"object": obj, "relation": rel, "distance_cm": dist})
    out.sort(key=lambda x: (x["object"], x["relation"], math.inf if x["distance_cm"] is None else x["distance_cm"]))
    has_surface = "support_surface" in data or "primary_surface" in data
    surface = normalize_surface(data.get("support_surface", data.get("primary_surface", "")), rules)
    return {"support_surface": surface, "has_surface": has_surface, "references": out}


def parse_ssp_gt(answer: Any, rules: str = "pointlab") -> dict:
    """The normalized ground truth ``{"support_surface", "references": [...]}`` of an SSP item.

    Args:
        answer: the released ``answer`` field: the JSON text (or an already parsed dict).
    Raises:
        SSPGroundTruthError: not a JSON object.
    """
    obj = answer if isinstance(answer, dict) else parse_json_maybe(answer)
    if not isinstance(obj, dict):
        raise SSPGroundTruthError(f"SSP ground truth is not a JSON object: {str(answer)[:80]!r}")
    return _payload(obj, rules)


def _slot_credit(g: dict, p: dict, rules: str) -> tuple[float, float, float]:
    if g["object"] != p["object"]:
        return 0.0, 0.0, 0.0
    rel = relation_credit(g["relation"], p["relation"])
    dist = rel * distance_credit(g["distance_cm"], p["distance_cm"], rules) if rel > 0 else 0.0
    return 1.0, rel, dist


def _align(gt_refs: list[dict], pred_refs: list[dict], rules: str) -> list[int | None]:
    """For each ground-truth slot, the index of its aligned prediction (or None): the assignment whose
    (object, relation, distance) totals are lexicographically highest."""
    if not gt_refs or not pred_refs:
        return [None] * len(gt_refs)
    # credits are multiples of 1/4: scaled to integers, base > the largest total makes the weighted sum
    # order the lexicographic one exactly
    base = 4 * len(gt_refs) + 1
    gain = np.zeros((len(gt_refs), len(pred_refs)))
    for i, g in enumerate(gt_refs):
        for j, p in enumerate(pred_refs):
            o, r, d = _slot_credit(g, p, rules)
            gain[i, j] = 4 * o * base * base + 4 * r * base + 4 * d
    rows, cols = linear_sum_assignment(gain, maximize=True)
    out: list[int | None] = [None] * len(gt_refs)
    for i, j in zip(rows, cols):
        if gain[i, j] > 0:
            out[i] = int(j)
    return out


def score_ssp(gt_answer: Any, prediction: Any, rules: str = "pointlab") -> SSPResult:
    """Score one SSP prediction against its ground truth (module docstring).

    Raises:
        SSPGroundTruthError: the ground truth itself is not a JSON object.
    """
    gt = parse_ssp_gt(gt_answer, rules)
    zero = {"surface": 0.0, "object": 0.0, "relation": 0.0, "distance": 0.0}
    obj = parse_json_maybe(prediction)
    if not isinstance(obj, dict):
        return SSPResult(score=0.0, parts=zero, reason="unparseable")
    pred = _payload(obj, rules)
    notes = []
    if not pred["has_surface"]:
        notes.append("support_surface missing")
    if not isinstance(obj.get("references"), list):
        notes.append("references missing or not a list")
    surface = 1.0 if gt["support_surface"] == pred["support_surface"] else 0.0
    if rules == "pointlab" and not pred["has_surface"]:
        surface = 0.0  # App. B.2: a missing field earns nothing for its component
    slots = []
    totals = np.zeros(3)
    for i, j in enumerate(_align(gt["references"], pred["references"], rules)):
        g = gt["references"][i]
        p = pred["references"][j] if j is not None else None
        credit = _slot_credit(g, p, rules) if p is not None else (0.0, 0.0, 0.0)
        totals += credit
        slots.append({"gt": g, "pred": p, "object": credit[0], "relation": credit[1], "distance": credit[2]})
    n = len(gt["references"])
    parts = {"surface": surface}
    for k, v in zip(("object", "relation", "distance"), totals):
        parts[k] = float(v / n) if n else 0.0
    score = round(sum(SSP_WEIGHTS[k] * parts[k] for k in SSP_WEIGHTS), 6)
    reason = "ok" if not notes else "ok; " + "; ".join(notes)
    return SSPResult(score=float(score), parts=parts, reason=reason, parsed=obj, slots=slots)
