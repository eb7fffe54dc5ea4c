"""Scoring of a PinpointQA run: per-item scores and the Micro / Macro table (sec. 4.2, App. B).

- TPV: the extracted yes/no equals the ground truth (exact match); unextractable -> 0.
- NRI: the extracted option letter equals the ground truth letter; unextractable -> 0.
- FSD: the LLM judge (``fsd.judge_fsd``); without a judge FSD items are left unscored
  (``score: null``, reason ``no_judge``) and FSD is left out of the averages.
- SSP: ``ssp.score_ssp`` (App. B.2).

Aggregation: per task, Micro = mean over items; Macro = mean over scenes of the per-scene means.
Avg Micro / Avg Macro = mean of the task values over the tasks that were scored. A ground-truth item
with no prediction scores 0 (reason ``missing_prediction``); an item whose judge call failed is
unscored and counted in ``n_unscored``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from ..extract import extract_choice_letter, extract_yes_no
from ..judge import LLMJudge
from .fsd import FSD_PROMPT_VERSION, judge_fsd
from .ssp import SSPGroundTruthError, score_ssp

__all__ = ["TASKS", "QUESTION_TYPES", "PinpointScoreError", "task_of", "score_item", "score_pinpoint", "aggregate"]

TASKS = ("TPV", "NRI", "FSD", "SSP")
#: the released ``question_type`` of each task.
QUESTION_TYPES = {"TPV": "presence", "NRI": "reference_mcq", "FSD": "free_form_localization",
                  "SSP": "structured_localization"}
_BY_QTYPE = {v: k for k, v in QUESTION_TYPES.items()}
_LONG_NAMES = {"target presence verification": "TPV", "nearest reference identification": "NRI",
               "fine-grained spatial description": "FSD", "structured spatial prediction": "SSP"}


class PinpointScoreError(ValueError):
    """A ground-truth record cannot be scored (unknown task, missing answer, malformed SSP JSON)."""


def task_of(rec: dict) -> str:
    """The task code (TPV/NRI/FSD/SSP) of a ground-truth record, from ``task`` or ``question_type``.

    Raises:
        PinpointScoreError: neither field names a known task.
    """
    task = str(rec.get("task", "")).strip()
    if task.upper() in TASKS:
        return task.upper()
    if task.lower() in _LONG_NAMES:
        return _LONG_NAMES[task.lower()]
    qtype = str(rec.get("question_type", "")).strip()
    if qtype in _BY_QTYPE:
        return _BY_QTYPE[qtype]
    raise PinpointScoreError(f"item {rec.get('id')!r}: unknown task {task!r} / question_type {qtype!r}")


def _choice_letters(choices: Any) -> str:
    letters = []
    if isinstance(choices, list):
        for i, c in enumerate(choices):
            m = re.match(r"\s*\(?([A-Za-z])[.):]", str(c))
            letters.append(m.group(1).upper() if m else "ABCDEFGH"[i])
    return "".join(letters) or "ABCD"


def score_item(rec: dict, prediction: Any, judge: LLMJudge | None = None) -> dict:
    """Score one ground-truth record against one raw prediction.

    Returns ``{"id", "scene_id", "task", "score", "parts", "reason"}`` (+ ``"judge"`` for FSD);
    ``score`` is None for an FSD item that was not judged.
    Raises:
        PinpointScoreError: the ground truth itself is unusable.
    """
    task = task_of(rec)
    out = {"id": str(rec.get("id")), "scene_id": str(rec.get("scene_id", "")), "task": task}
    if "answer" not in rec:
        raise PinpointScoreError(f"item {out['id']!r}: no 'answer' field")
    answer = rec["answer"]
    if prediction is None:
        return {**out, "score": 0.0, "parts": {}, "reason": "missing_prediction"}
    text = prediction if isinstance(prediction, str) else str(prediction)
    if task == "TPV":
        expected = extract_yes_no(str(answer))
        if expected is None:
            raise PinpointScoreError(f"item {out['id']!r}: TPV answer {answer!r} is not Yes/No")
        got = extract_yes_no(text)
        return {**out, "score": float(got == expected), "parts": {"expected": expected, "extracted": got},
                "reason": "ok" if got is not None else "unparseable"}
    if task == "NRI":
        letters = _choice_letters(rec.get("choices"))
        expected = extract_choice_letter(str(answer), letters)
        if expected is None:
            raise PinpointScoreError(f"item {out['id']!r}: NRI answer {answer!r} is not an option letter")
        got = extract_choice_letter(text, letters, options=rec.get("choices") or None)
        return {**out, "score": float(got == expected), "parts": {"expected": expected, "extracted": got},
                "reason": "ok" if got is not None else "unparseable"}
    if task == "SSP":
        try:
            r = score_ssp(answer, text)
        except SSPGroundTruthError as e:
            raise PinpointScoreError(f"item {out['id']!r}: {e}") from e
        return {**out, "score": r.score, "parts": r.parts, "reason": r.reason}
    # FSD
    if judge is None:
        return {**out, "score": None, "parts": {}, "reason": "no_judge"}
    target = str(rec.get("target") or "")
    r = judge_fsd(judge, target, str(answer), text)
    d = r.to_dict()
    record = {k: v for k, v in d.items() if k not in {"score", "parts", "reason", "judge"}}
    return {**out, "score": r.score, "parts": r.parts, "reason": r.reason, "judge": {**d["judge"], **record}}


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def aggregate(items: list[dict]) -> dict:
    """Micro and Macro per task and their averages over the scored tasks (sec. 4.2).

    Returns ``{"tasks": {task: {"micro", "macro", "n", "n_scenes", "n_unscored"}},
    "avg_micro", "avg_macro", "tasks_in_average"}``; a task with no scored item has
    ``micro``/``macro`` None and is left out of the averages.
    """
    by_task: dict[str, list[dict]] = defaultdict(list)
    for it in items:
        by_task[it["task"]].append(it)
    table = {}
    for task in TASKS:
        rows = by_task.get(task, [])
        scored = [r for r in rows if r["score"] is not None]
        per_scene: dict[str, list[float]] = defaultdict(list)
        for r in scored:
            per_scene[r["scene_id"]].append(r["score"])
        table[task] = {"micro": _mean([r["score"] for r in scored]),
                       "macro": _mean([_mean(v) for v in per_scene.values()]),
                       "n": len(scored), "n_scenes": len(per_scene), "n_unscored": len(rows) - len(scored)}
    used = [t for t in TASKS if table[t]["micro"] is not None]
    return {"tasks": table, "avg_micro": _mean([table[t]["micro"] for t in used]),
            "avg_macro": _mean([table[t]["macro"] for t in used]), "tasks_in_average": used}


def score_pinpoint(gt: list[dict], predictions: dict[str, Any], judge: LLMJudge | None = None) -> dict:
    """Score a run: ``{"items": [...], "summary": {...}}`` (see ``score_item`` and ``aggregate``).

    Args:
        gt: ground-truth records with the released field names.
        predictions: ``{id: raw model text}``.
        judge: the FSD judge, or None to leave FSD unscored.
    Raises:
        PinpointScoreError: a ground-truth record is unusable, or an id repeats.
    """
    seen = set()
    items = []
    for rec in gt:
        rid = str(rec.get("id"))
        if rid in seen:
            raise PinpointScoreError(f"duplicate ground-truth id {rid!r}")
        seen.add(rid)
        items.append(score_item(rec, predictions.get(rid), judge))
    summary = aggregate(items)
    summary["n_items"] = len(items)
    summary["missing_predictions"] = sum(1 for it in items if it["reason"] == "missing_prediction")
    summary["unknown_prediction_ids"] = sorted(set(predictions) - seen)[:20]
    summary["n_unknown_predictions"] = len(set(predictions) - seen)
    summary["judge"] = None if judge is None else {"model": judge.model, "base_url": judge.base_url,
                                                   "temperature": judge.temperature,
                                                   "prompt_version": FSD_PROMPT_VERSION}
    return {"items": items, "summary": summary}
