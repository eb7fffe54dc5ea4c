"""Scoring of a PinpointQA run under a rule set: per-item scores and the Micro / Macro table (sec. 4.2,
App. B).

The released evaluator is rainchowz/PinpointQA ``eval.py`` (``eval_utils`` at 8ae288a). Under both rule
sets, where the paper is silent, its readings are kept:

- TPV: the first ``\\b(yes|no)\\b`` of the lower-cased answer (True/False, Y/N are not labels); NRI: the
  option letter by the released five patterns (``^X\\b``, ``^X[.)]``, ``\\bX[.)]``, ``option X``,
  ``choice X``, case-insensitive). A valid label equal to the ground truth's scores 1, else 0.
- Model outputs are read as text the released way (``to_text_answer``: a list joined by lines, an object
  by its ``text``/``answer``/``content``/... field).
- SSP: ``ssp.score_ssp``; FSD: ``fsd.judge_fsd`` with the released prompt (unscored without a judge:
  the released ``eval.py`` refuses to start without an API key).
- Also reported, under both rule sets: pointlab's lenient reading of TPV and NRI (``extract``: answer
  markers such as ``Answer: D``, bracketed or bold letters, the option text; true/false as yes/no), per
  item (``lenient``) and as a second table (``summary["lenient"]``), as for VSI-Bench.
- Micro = mean over scored items, Macro = mean over scenes of per-scene means, rounded to 6 decimals;
  an item whose judge failed is left out (counted in ``n_unscored``); Avg Micro / Macro over the tasks
  scored (sec. 4.2).

Differences (docs/scoring.md): NRI letters beyond D (pointlab reads the letters of the options given),
the SSP rules of ``ssp``, the FSD rules of ``fsd``, the FSD target (reference: guessed from the question;
pointlab: the record's ``target``), and a ground-truth item without a prediction (reference: left out,
the evaluator scores only ids in both files; pointlab: 0, ``missing_prediction``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from .. import extract
from ..extract import parse_choice_lenient, strip_reasoning
from ..judge import LLMJudge
from ..records import json_error_text
from ..scorers import ItemScore, ScoreReport, check_rules, register_scorer
from .fsd import FSD_PROMPT_VERSION, judge_fsd
from .normalize import normalize_label
from .ssp import SSPGroundTruthError, parse_json_maybe, score_ssp

from pointlab.benchmark.errors import BenchmarkError

__all__ = [
    "TASKS",
    "QUESTION_TYPES",
    "PinpointScoreError",
    "task_of",
    "score_item",
    "score_pinpoint",
    "aggregate",
    "to_text_answer",
    "extract_yes_no",
    "extract_option_letter",
    "reference_target",
    "load_ground_truth",
    "load_predictions",
]

TASKS = ("TPV", "NRI", "FSD", "SSP")
#: the released ``question_type`` of each task.
QUESTION_TYPES = {
    "TPV": "presence",
    "NRI": "reference_mcq",
    "FSD": "free_form_localization",
    "SSP": "structured_localization",
}
_BY_QTYPE = {v: k for k, v in QUESTION_TYPES.items()}
_LONG_NAMES = {
    "target presence verification": "TPV",
    "nearest reference identification": "NRI",
    "fine-grained spatial description": "FSD",
    "structured spatial prediction": "SSP",
}


class PinpointScoreError(BenchmarkError, ValueError):
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


def to_text_answer(value: Any) -> str:
    """A model output as text, the released way: strings stripped, numbers and booleans as ``str``, lists
    joined by newlines, an object by its first ``text``/``answer``/``content``/``output``/``model_output``/
    ``response`` field, else its JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (int, float, bool)):
        return str(value)
    if isinstance(value, list):
        return "\n".join(p for p in (to_text_answer(x) for x in value) if p).strip()
    if isinstance(value, dict):
        for key in ("text", "answer", "content", "output", "model_output", "response"):
            if key in value:
                return to_text_answer(value[key])
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def extract_yes_no(text: str) -> str | None:
    """The released TPV reading: the first ``yes`` or ``no`` word of the lower-cased text."""
    m = re.search(r"\b(yes|no)\b", str(text or "").strip().lower())
    return m.group(1) if m else None


def extract_option_letter(text: str, letters: str = "ABCD") -> str | None:
    """The released NRI reading over the option letters ``letters`` (the released code: ``ABCD``)."""
    if not text:
        return None
    s = str(text).strip()
    cls = "[" + re.escape(letters) + "]"
    for p in (
        rf"^\s*({cls})\b",
        rf"^\s*({cls})\s*[.)]",
        rf"\b({cls})\s*[.)]",
        rf"\boption\s*({cls})\b",
        rf"\bchoice\s*({cls})\b",
    ):
        m = re.search(p, s, flags=re.IGNORECASE)
        if m:
            return m.group(1).upper()
    return None


def _choice_letters(choices: Any) -> str:
    letters = []
    if isinstance(choices, list):
        for i, c in enumerate(choices):
            m = re.match(r"\s*\(?([A-Za-z])[.):]", str(c))
            letters.append(m.group(1).upper() if m else "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i % 26])
    return "".join(dict.fromkeys(letters)) or "ABCD"


_TARGET_PATTERNS = (
    r"did the ([^?]+?) appear",
    r"final location of the ([^?.,]+?) in",
    r"final location of the ([^?.,]+?)\b",
    r"location of the ([^?.,]+?) in",
    r"where .*? the ([^?.,]+?)\b",
    r"describe .*? the ([^?.,]+?)\b",
    r"output .*? the ([^?.,]+?)\b",
)


def reference_target(rec: dict, scene_items: list[dict]) -> str:
    """The FSD target as the released evaluator finds it: from the question text (seven patterns),
    normalized with its object map and singular; else the target of an SSP item of the same scene within
    two places in id order."""
    q = str(rec.get("question") or "").lower()
    for p in _TARGET_PATTERNS:
        m = re.search(p, q)
        if m:
            t = normalize_label(" ".join(m.group(1).split()), "reference")
            if t:
                return t
    ordered = sorted(scene_items, key=lambda x: str(x.get("id")))
    ids = [str(x.get("id")) for x in ordered]
    i = ids.index(str(rec.get("id"))) if str(rec.get("id")) in ids else -1
    for other in ordered[max(0, i - 2) : i + 3] if i >= 0 else []:
        if _safe_task(other) == "SSP":
            gt = parse_json_maybe(to_text_answer(other.get("answer")))
            if isinstance(gt, dict):
                t = normalize_label(gt.get("target", ""), "reference")
                if t:
                    return t
    return ""


def _safe_task(rec: dict) -> str | None:
    try:
        return task_of(rec)
    except PinpointScoreError:
        return None


def score_item(
    rec: dict,
    prediction: Any,
    judge: LLMJudge | None = None,
    *,
    rules: str = "pointlab",
    scene_items: list[dict] | None = None,
) -> dict:
    """Score one ground-truth record against one raw prediction.

    Returns ``{"id", "scene_id", "task", "score", "parts", "reason"}`` (+ ``"judge"`` for FSD);
    ``score`` is None for an FSD item that was not judged.
    Raises:
        PinpointScoreError: the ground truth itself is unusable.
    """
    check_rules(rules)
    task = task_of(rec)
    out = {"id": str(rec.get("id")), "scene_id": str(rec.get("scene_id", rec.get("scene_name", ""))), "task": task}
    if "answer" not in rec:
        raise PinpointScoreError(f"item {out['id']!r}: no 'answer' field")
    answer = rec["answer"]
    if prediction is None:
        return {**out, "score": 0.0, "parts": {}, "reason": "missing_prediction"}
    text = to_text_answer(prediction)
    if rules != "reference":
        text = strip_reasoning(text)  # reasoning is never read for the answer (the released code reads it)
    if task == "TPV":
        expected = extract_yes_no(to_text_answer(answer))
        if expected is None:
            raise PinpointScoreError(f"item {out['id']!r}: TPV answer {answer!r} is not Yes/No")
        got = extract_yes_no(text)
        lenient = extract.extract_yes_no(text)  # pointlab's lenient reading: true/false, a negating "not"
        return {
            **out,
            "score": float(got == expected),
            "parts": {"expected": expected, "extracted": got},
            "reason": "ok" if got is not None else "unparseable",
            "lenient": {"answer": lenient, "score": float(lenient == expected)},
        }
    if task == "NRI":
        letters = "ABCD" if rules == "reference" else _choice_letters(rec.get("choices"))
        expected = extract_option_letter(to_text_answer(answer), letters)
        if expected is None:
            raise PinpointScoreError(f"item {out['id']!r}: NRI answer {answer!r} is not an option letter of {letters}")
        got = extract_option_letter(text, letters)
        choices = rec.get("choices") if isinstance(rec.get("choices"), list) else None
        lenient = parse_choice_lenient(text, letters, [str(c) for c in choices] if choices else None)
        return {
            **out,
            "score": float(got == expected),
            "parts": {"expected": expected, "extracted": got},
            "reason": "ok" if got is not None else "unparseable",
            "lenient": {"answer": lenient, "score": float(lenient == expected)},
        }
    if task == "SSP":
        try:
            r = score_ssp(answer if isinstance(answer, dict) else to_text_answer(answer), text, rules)
        except SSPGroundTruthError as e:
            raise PinpointScoreError(f"item {out['id']!r}: {e}") from e
        return {**out, "score": r.score, "parts": r.parts, "reason": r.reason}
    # FSD
    if judge is None:
        return {**out, "score": None, "parts": {}, "reason": "no_judge"}
    target = reference_target(rec, scene_items or [rec]) if rules == "reference" else str(rec.get("target") or "")
    fsd = judge_fsd(judge, target, to_text_answer(answer), text, rules=rules)
    d = fsd.to_dict()
    record = {k: v for k, v in d.items() if k not in {"score", "parts", "reason", "judge"}}
    return {
        **out,
        "score": fsd.score,
        "parts": fsd.parts,
        "reason": fsd.reason,
        "judge": {**d["judge"], **record, "target": target},
    }


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _r6(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def aggregate(items: list[dict]) -> dict:
    """Micro and Macro per task (rounded to 6 decimals, as the released summary) and their averages over
    the scored tasks (sec. 4.2).

    Returns ``{"tasks": {task: {"micro", "macro", "n", "n_scenes", "n_unscored"}}, "avg_micro", "avg_macro",
    "tasks_in_average"}``; a task with no scored item has ``micro``/``macro`` None and is left out.
    """
    by_task: dict[str, list[dict]] = defaultdict(list)
    for it in items:
        by_task[it["task"]].append(it)
    table: dict[str, dict[str, Any]] = {}
    for task in TASKS:
        rows = by_task.get(task, [])
        scored = [r for r in rows if r["score"] is not None]
        per_scene: dict[str, list[float]] = defaultdict(list)
        for r in scored:
            per_scene[r["scene_id"]].append(r["score"])
        table[task] = {
            "micro": _r6(_mean([r["score"] for r in scored])),
            "macro": _r6(_mean([m for v in per_scene.values() if (m := _mean(v)) is not None])),  # (none is empty)
            "n": len(scored),
            "n_scenes": len(per_scene),
            "n_unscored": len(rows) - len(scored),
        }
    used = [t for t in TASKS if table[t]["micro"] is not None]
    return {
        "tasks": table,
        "avg_micro": _mean([table[t]["micro"] for t in used]),
        "avg_macro": _mean([table[t]["macro"] for t in used]),
        "tasks_in_average": used,
    }


def score_pinpoint(
    gt: list[dict], predictions: dict[str, Any], judge: LLMJudge | None = None, *, rules: str = "pointlab"
) -> dict:
    """Score a run: ``{"items": [...], "summary": {...}}`` (see ``score_item`` and ``aggregate``).

    Args:
        gt: ground-truth records with the released field names.
        predictions: ``{id: raw model output}`` (``records.Predictions``: its problems score 0).
        judge: the FSD judge, or None to leave FSD unscored.
        rules: ``pointlab`` or ``reference`` (module docstring).
    Raises:
        PinpointScoreError: a ground-truth record is unusable, or an id repeats.
    """
    check_rules(rules)
    seen = set()
    by_scene: dict[str, list[dict]] = defaultdict(list)
    for rec in gt:
        by_scene[str(rec.get("scene_id", rec.get("scene_name", "")))].append(rec)
    problems = getattr(predictions, "problems", {})
    items: list[dict[str, Any]] = []
    left_out = 0
    for rec in gt:
        rid = str(rec.get("id"))
        if rid in seen:
            raise PinpointScoreError(f"duplicate ground-truth id {rid!r}")
        seen.add(rid)
        if rid in problems:
            items.append(
                {
                    "id": rid,
                    "scene_id": str(rec.get("scene_id", "")),
                    "task": task_of(rec),
                    "score": 0.0,
                    "parts": {},
                    "reason": f"invalid_prediction: {problems[rid]}",
                }
            )
            continue
        if rules == "reference" and rid not in predictions:
            left_out += 1  # the released evaluator scores only the ids both files hold
            task_of(rec)
            continue
        items.append(
            score_item(
                rec,
                predictions.get(rid),
                judge,
                rules=rules,
                scene_items=by_scene[str(rec.get("scene_id", rec.get("scene_name", "")))],
            )
        )
    summary = aggregate(items)
    # pointlab's lenient reading of TPV and NRI under the same rules, beside the released one (as for
    # VSI-Bench); SSP and FSD have one reading, so their rows are the same in both tables
    summary["lenient"] = aggregate([{**it, "score": it["lenient"]["score"]} if "lenient" in it else it for it in items])
    summary["rules"] = rules
    summary["n_items"] = len(items)
    summary["missing_predictions"] = sum(1 for it in items if it["reason"] == "missing_prediction")
    summary["left_out_without_prediction"] = left_out
    unknown = sorted(set(map(str, predictions)) - seen)
    summary["unknown_prediction_ids"] = unknown[:20]
    summary["n_unknown_predictions"] = len(unknown)
    summary["unreadable_prediction_lines"] = list(getattr(predictions, "unreadable", []))
    summary["judge"] = None if judge is None else {**judge.describe(), "prompt_version": FSD_PROMPT_VERSION}
    return {"items": items, "summary": summary}


def _contract(it: dict) -> ItemScore:
    meta = {k: v for k, v in it.items() if k not in {"id", "score", "reason"}}
    return ItemScore(
        id=it["id"],
        value=it["score"],
        parsed=(it.get("parts") or {}).get("extracted"),
        reason=it["reason"],
        metadata=meta,
    )


@register_scorer("pinpoint", "PinpointQA (sec. 4.2, App. B): TPV / NRI exact match, FSD judge, SSP programmatic")
def score_pinpoint_contract(
    gt: list[dict], predictions: dict[str, Any], *, rules: str = "pointlab", judge: LLMJudge | None = None
) -> ScoreReport:
    """The registered PinpointQA scorer (contract form of ``score_pinpoint``)."""
    out = score_pinpoint(gt, predictions, judge, rules=rules)
    summary = dict(out["summary"])
    summary.pop("rules", None)
    return ScoreReport(scorer="pinpoint", rules=rules, items=[_contract(it) for it in out["items"]], summary=summary)


# ------------------------------------------------------------------ the released file layouts


def _scene_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.json") if p.is_file()) + sorted(folder.glob("*/*.json"))


def load_ground_truth(path: str | Path) -> list[dict]:
    """Ground truth: the released ``test.jsonl`` (``answer``), or a folder of scene files as the released
    ``tools/convert_test_jsonl_to_gt_dir.py`` writes them (``{"qa_pairs": [{id, scene_name, question_type,
    question, ground_truth, ...}]}``), read as records with the released field names.

    Raises:
        PinpointScoreError: unreadable files or records.
    """
    from ..records import RecordError, read_jsonl

    p = Path(path)
    if p.is_dir():
        out = []
        for f in _scene_files(p):
            try:
                data = json.loads(f.read_text(encoding="utf-8-sig"))
            except (OSError, ValueError, RecursionError) as e:
                raise PinpointScoreError(f"{f}: not a readable scene file ({json_error_text(e)})") from e
            pairs = data.get("qa_pairs") if isinstance(data, dict) else None
            if not isinstance(pairs, list):
                raise PinpointScoreError(f"{f}: no 'qa_pairs' list")
            for q in pairs:
                if not isinstance(q, dict):
                    continue
                rec = dict(q)
                rec.setdefault("scene_id", q.get("scene_name") or f.stem)
                if "answer" not in rec and "ground_truth" in rec:
                    rec["answer"] = rec["ground_truth"]
                out.append(rec)
        return out
    try:
        return read_jsonl(p)
    except RecordError as e:
        raise PinpointScoreError(str(e)) from e


def load_predictions(path: str | Path):
    """Predictions: ``{"id", "prediction"}`` JSONL, or the released prediction folder ``pred_dir/<scene>.json``
    (``{"qa_pairs": [{"id", "question_type", "model_outputs"}]}``). One bad line or file never stops a run
    (its items score as missing; the file is listed).

    Raises:
        PinpointScoreError: the path cannot be read at all.
    """
    from ..records import Predictions, RecordError, read_predictions

    p = Path(path)
    if not p.is_dir():
        try:
            return read_predictions(p)
        except RecordError as e:
            raise PinpointScoreError(str(e)) from e
    out = Predictions()
    files = _scene_files(p)
    if not files:
        raise PinpointScoreError(f"{p}: no <scene>.json prediction files")
    for f in files:
        try:
            data = json.loads(f.read_text(encoding="utf-8-sig"))
            pairs = data["qa_pairs"]
            if not isinstance(pairs, list):
                raise TypeError("qa_pairs is not a list")
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as e:
            out.unreadable.append(f"{f}: {type(e).__name__}: {json_error_text(e)}")
            continue
        for k, q in enumerate(pairs):
            if not isinstance(q, dict) or "id" not in q:
                out.unreadable.append(f"{f}: qa_pairs[{k}] has no id")
                continue
            rid = str(q["id"])
            if rid in out or rid in out.problems:
                out.problems[rid] = f"duplicate prediction id {rid!r} ({f.name})"
                out.pop(rid, None)
                continue
            out[rid] = q.get("model_outputs") if q.get("model_outputs") is not None else ""  # scored, as released
    return out
