"""The automatic quality checks of PinpointQA (sec. 3.2 "Quality Control", App. A.4).

- TPV: the answer is exactly ``Yes`` or ``No``.
- NRI: four distinct options ``A.``-``D.``, the answer one of their letters, the target not an option.
- FSD: a complete description (sentences ending in a full stop) that names the target and at least
  one spatial anchor (a relation phrase followed by an object).
- SSP: the answer parses directly (``json.loads``, no recovery) as an object with ``target``,
  ``support_surface`` and ``references``; each reference has an ``object``, one of the nine
  relations and a numeric ``distance_cm`` >= 0 with at most one decimal.
- every record: the released fields present, a task/question_type pair that agree.

``check_record`` returns the list of problems (empty: the record passes). Failing records are
excluded by the generator and counted per problem.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .normalize import RELATIONS
from .scoring import QUESTION_TYPES

__all__ = ["RELEASED_FIELDS", "check_record"]

RELEASED_FIELDS = (
    "id",
    "scene_id",
    "source_dataset",
    "task",
    "question_type",
    "question",
    "instruction",
    "answer",
    "target",
    "choices",
)
_ANCHOR = re.compile(r"\b(on|under|above|below|next to|near|attached to|to the side of and (?:above|below)) the \w")


def _check_nri(rec: dict) -> list[str]:
    choices = rec.get("choices")
    if not isinstance(choices, list) or len(choices) != 4:
        return ["nri_needs_four_options"]
    problems = []
    texts = []
    for k, c in enumerate(choices):
        m = re.fullmatch(r"([A-D])\. (.+)", str(c))
        if m is None or m.group(1) != "ABCD"[k]:
            problems.append("nri_bad_option_format")
            continue
        texts.append(m.group(2).strip().lower())
    if len(set(texts)) != len(texts):
        problems.append("nri_options_not_distinct")
    if rec.get("answer") not in ("A", "B", "C", "D"):
        problems.append("nri_answer_not_a_letter")
    if str(rec.get("target", "")).lower() in texts:
        problems.append("nri_target_among_options")
    return problems


def _check_fsd(rec: dict) -> list[str]:
    text = rec.get("answer")
    if not isinstance(text, str) or not text.strip().endswith("."):
        return ["fsd_incomplete"]
    problems = []
    if str(rec.get("target", "")) not in text:
        problems.append("fsd_target_not_named")
    if not _ANCHOR.search(text):
        problems.append("fsd_no_spatial_anchor")
    return problems


def _check_ssp(rec: dict) -> list[str]:
    try:
        answer: Any = rec.get("answer")  # any JSON value: json.loads decides
        obj = json.loads(answer)
    except (TypeError, ValueError):
        return ["ssp_not_json"]
    if not isinstance(obj, dict) or not {"target", "support_surface", "references"} <= set(obj):
        return ["ssp_missing_fields"]
    if not isinstance(obj["references"], list):
        return ["ssp_references_not_a_list"]
    problems = []
    for r in obj["references"]:
        if not isinstance(r, dict) or not isinstance(r.get("object"), str) or not r["object"]:
            problems.append("ssp_bad_reference")
        elif r.get("relation") not in RELATIONS:
            problems.append("ssp_bad_relation")
        elif (
            isinstance(r.get("distance_cm"), bool)
            or not isinstance(r.get("distance_cm"), (int, float))
            or r["distance_cm"] < 0
            or round(r["distance_cm"], 1) != r["distance_cm"]
        ):
            problems.append("ssp_bad_distance")
    return problems


_BY_TASK = {
    "TPV": lambda r: [] if r.get("answer") in ("Yes", "No") else ["tpv_answer_not_yes_no"],
    "NRI": _check_nri,
    "FSD": _check_fsd,
    "SSP": _check_ssp,
}


def check_record(rec: dict) -> list[str]:
    """The App. A.4 problems of one generated record (empty list: it passes)."""
    missing = [f for f in RELEASED_FIELDS if f not in rec]
    if missing:
        return [f"missing_field:{f}" for f in missing]
    task = rec["task"]
    if task not in _BY_TASK or QUESTION_TYPES.get(task) != rec["question_type"]:
        return ["unknown_task"]
    return _BY_TASK[task](rec)
