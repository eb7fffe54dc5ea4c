"""The SSP (Structured Spatial Prediction) scorer, exactly as PinpointQA App. B.2 defines it.

1. Recover a JSON object from the prediction: the whole text, then code fences, then an object
   embedded in other text (``benchmark.judge.recover_json_object``). None -> score 0.
2. ``support_surface`` (alias ``primary_surface``) and the ``references`` list are read; a missing
   or malformed field earns nothing for its component. The target is not scored.
3. Labels and relations are normalized (``normalize``). The surface must match exactly.
4. Predicted references are aligned one to one with the ground-truth reference slots by the
   assignment with the highest total agreement (object + relation + distance credit; a linear
   assignment, scipy's Hungarian solver). Unmatched ground-truth slots earn 0.
5. Per slot: object credit 1 when the labels match, else 0 and nothing else for the slot.
   Relation credit (only with a matched object): 1 exact, 0.5 for next_to/near, under/below,
   on/attached_to, else 0. Distance credit (only with a matched object and relation credit > 0):
   band by ground-truth distance d (cm) and error e = |pred - d|:
   d <= 10: full e <= 5, half e <= 10; 10 < d <= 30: full e <= 10, half e <= 15;
   d > 30: full e <= 15, half e <= 20; beyond half -> 0; then multiplied by the relation credit.
6. Object, relation and distance are averaged over the ground-truth slots;
   S = 0.4 surface + 0.2 object + 0.2 relation + 0.2 distance.

A ground truth with no reference slots leaves the three reference components at 0 (the paper
averages over slots and says nothing for zero slots; the generator never writes such an item).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from ..judge import recover_json_object
from .normalize import normalize_label, normalize_relation

__all__ = ["SSPResult", "score_ssp", "relation_credit", "distance_credit", "parse_ssp_gt", "SSP_WEIGHTS",
           "SSPGroundTruthError"]

#: App. B.2 weights of surface, object, relation, distance.
SSP_WEIGHTS = {"surface": 0.4, "object": 0.2, "relation": 0.2, "distance": 0.2}

_HALF_PAIRS = {frozenset(("next_to", "near")), frozenset(("under", "below")), frozenset(("on", "attached_to"))}
# (upper bound of the ground-truth distance band in cm, full-credit error, half-credit error)
_DISTANCE_BANDS = ((10.0, 5.0, 10.0), (30.0, 10.0, 15.0), (math.inf, 15.0, 20.0))
# distances are compared after rounding to 1e-6 cm so that 12.3 - 2.3 counts as an error of 10
_EPS_DECIMALS = 6


class SSPGroundTruthError(ValueError):
    """The ground-truth SSP answer is not a JSON object with ``support_surface`` and ``references``."""


@dataclass
class SSPResult:
    """Score of one SSP answer.

    Attributes:
        score: S_SSP in [0, 1].
        parts: ``{"surface", "object", "relation", "distance"}`` component scores in [0, 1].
        reason: ``ok``, ``unparseable`` (no JSON object), or ``ok; <notes>`` listing malformed fields.
        parsed: the recovered prediction object (None when unparseable).
        slots: per ground-truth slot ``{gt, pred, object, relation, distance}`` (normalized values).
    """

    score: float
    parts: dict
    reason: str
    parsed: dict | None = None
    slots: list = field(default_factory=list)


def relation_credit(gt: Any, pred: Any) -> float:
    """1 for the same normalized relation, 0.5 for the three half-credit pairs, else 0."""
    g, p = normalize_relation(gt), normalize_relation(pred)
    if not g or not p:
        return 0.0
    if g == p:
        return 1.0
    return 0.5 if frozenset((g, p)) in _HALF_PAIRS else 0.0


def distance_credit(gt_cm: float | None, pred_cm: float | None) -> float:
    """1 / 0.5 / 0 by the App. B.2 bands of the ground-truth distance (cm); 0 when either is missing."""
    if gt_cm is None or pred_cm is None:
        return 0.0
    d = abs(float(gt_cm))
    e = round(abs(float(pred_cm) - float(gt_cm)), _EPS_DECIMALS)
    for upper, full, half in _DISTANCE_BANDS:
        if d <= upper:
            if e <= full:
                return 1.0
            return 0.5 if e <= half else 0.0
    return 0.0  # unreachable: the last band is unbounded


_NUM = re.compile(r"[-+]?\d+(?:\.\d+)?")


def _as_cm(value: Any) -> float | None:
    # numbers, or strings such as "12", "12.5 cm"; metres written as "0.12 m" are converted
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        m = _NUM.search(value)
        if not m:
            return None
        v = float(m.group(0))
        unit = value[m.end():].strip().lower()
        if unit.startswith(("m ", "meter", "metre")) or unit == "m":
            v *= 100.0
        elif unit.startswith(("mm", "millimet")):
            v /= 10.0
        return v
    return None


def _refs(value: Any) -> list[dict] | None:
    if not isinstance(value, list):
        return None
    out = []
    for r in value:
        if not isinstance(r, dict):
            continue
        out.append({"object": normalize_label(r.get("object")), "relation": normalize_relation(r.get("relation")),
                    "distance_cm": _as_cm(r.get("distance_cm"))})
    return out


def _surface(obj: dict) -> tuple[bool, str]:
    key = "support_surface" if "support_surface" in obj else "primary_surface" if "primary_surface" in obj else None
    if key is None:
        return False, ""
    value = obj[key]
    if value is None:
        return True, ""
    if not isinstance(value, str):
        return False, ""
    norm = normalize_label(value)
    return True, "" if norm in {"none", "null", "n/a", "na"} else norm


def parse_ssp_gt(answer: Any) -> dict:
    """The normalized ground truth ``{"support_surface", "references": [...]}`` of an SSP item.

    Args:
        answer: the released ``answer`` field: the JSON text (or an already parsed dict).
    Raises:
        SSPGroundTruthError: not a JSON object with both fields.
    """
    obj = answer if isinstance(answer, dict) else recover_json_object(answer)
    if obj is None:
        raise SSPGroundTruthError(f"SSP ground truth is not a JSON object: {str(answer)[:80]!r}")
    has_surface, surface = _surface(obj)
    refs = _refs(obj.get("references"))
    if not has_surface or refs is None:
        raise SSPGroundTruthError("SSP ground truth lacks support_surface or a references list")
    return {"support_surface": surface, "references": refs}


def _slot_credit(g: dict, p: dict) -> tuple[float, float, float]:
    if not g["object"] or g["object"] != p["object"]:
        return 0.0, 0.0, 0.0
    rel = relation_credit(g["relation"], p["relation"])
    dist = rel * distance_credit(g["distance_cm"], p["distance_cm"]) if rel > 0 else 0.0
    return 1.0, rel, dist


def _align(gt_refs: list[dict], pred_refs: list[dict]) -> list[int | None]:
    """For each ground-truth slot, the index of its aligned prediction (or None)."""
    if not gt_refs or not pred_refs:
        return [None] * len(gt_refs)
    gain = np.zeros((len(gt_refs), len(pred_refs)))
    for i, g in enumerate(gt_refs):
        for j, p in enumerate(pred_refs):
            o, r, d = _slot_credit(g, p)
            # total agreement first; ties prefer more object, then relation, agreement
            gain[i, j] = (o + r + d) + 1e-6 * o + 1e-9 * r
    rows, cols = linear_sum_assignment(gain, maximize=True)
    out: list[int | None] = [None] * len(gt_refs)
    for i, j in zip(rows, cols):
        if gain[i, j] > 0:
            out[i] = int(j)
    return out


def score_ssp(gt_answer: Any, prediction: Any) -> SSPResult:
    """Score one SSP prediction against its ground truth (App. B.2; see the module docstring).

    Args:
        gt_answer: the ground-truth JSON text or dict.
        prediction: the raw model text.
    Returns:
        An ``SSPResult``; an unparseable prediction scores 0 with reason ``unparseable``.
    Raises:
        SSPGroundTruthError: the ground truth itself is malformed.
    """
    gt = parse_ssp_gt(gt_answer)
    zero = {"surface": 0.0, "object": 0.0, "relation": 0.0, "distance": 0.0}
    obj = recover_json_object(prediction)
    if obj is None:
        return SSPResult(score=0.0, parts=zero, reason="unparseable")
    notes = []
    has_surface, surface = _surface(obj)
    if not has_surface:
        notes.append("support_surface missing or malformed")
    surface_score = 1.0 if has_surface and surface == gt["support_surface"] else 0.0
    pred_refs = _refs(obj.get("references"))
    if pred_refs is None:
        notes.append("references missing or not a list")
        pred_refs = []
    slots = []
    totals = np.zeros(3)
    for i, j in enumerate(_align(gt["references"], pred_refs)):
        g = gt["references"][i]
        p = pred_refs[j] if j is not None else None
        credit = _slot_credit(g, p) if p is not None else (0.0, 0.0, 0.0)
        totals += credit
        slots.append({"gt": g, "pred": p, "object": credit[0], "relation": credit[1], "distance": credit[2]})
    n = len(gt["references"])
    parts = {"surface": surface_score}
    for k, v in zip(("object", "relation", "distance"), totals):
        parts[k] = float(v / n) if n else 0.0
    score = sum(SSP_WEIGHTS[k] * parts[k] for k in SSP_WEIGHTS)
    reason = "ok" if not notes else "ok; " + "; ".join(notes)
    return SSPResult(score=float(score), parts=parts, reason=reason, parsed=obj, slots=slots)
