"""EgoPoint-Bench scoring (sec. 4.2): True/False and single-choice questions by exact match,
open-ended questions by an LLM judge on 0..1 in steps of 0.2; tables per dimension (BP, FS, SC,
OCR, AR; sec. 3.3), per deixis level (L1-L3; sec. 3.4), per question type (Table 3) and per domain
(sim / real; Table 2), each with the random baseline.

Ground-truth records (JSONL): ``id``, ``question_type`` (``TF``, ``SCQ``, ``OQ``; the long names
``true_false``, ``single_choice``, ``open_ended`` are accepted), ``dimension``, ``deixis``,
``question``, ``answer`` (TF: yes/no/true/false; SCQ: the option letter A-E; OQ: reference text),
``options`` (SCQ), optional ``domain``. Predictions: ``{"id", "prediction"}``.

Rules we fix (docs/video.md):

* Yes/No and True/False answers are one answer space (``extract_yes_no``), the same everywhere.
* ``score`` uses the strict parser (first token), ``score_lenient`` the lenient one; open-ended
  items score the judge's verdict under both.
* Group means are item means (micro). The random baseline of an item is its chance accuracy
  (TF 1/2, SCQ 1/number of options); open-ended items have none (the paper prints "-").
* An open-ended item without a usable verdict has ``score = None`` and is left out of the means
  (counted in ``summary.unjudged``), never silently given 0.
* Verdicts are stored: a verdict is reused when its ``id``, the hash of the prediction and the
  prompt version match, so a saved run re-scores without calling the judge.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..extract import extract_yes_no, parse_choice_lenient, parse_choice_strict, parse_yes_no_strict
from ..records import by_unique_id as _unique
from ..video.errors import RecordError

__all__ = ["QUESTION_TYPES", "DIMENSIONS", "DEIXIS_LEVELS", "OQ_PROMPT_VERSION", "EgoItemScore",
           "build_oq_prompt", "validate_oq_verdict", "score_egopoint", "prediction_hash"]

QUESTION_TYPES = ("TF", "SCQ", "OQ")
_TYPE_ALIASES = {"tf": "TF", "true_false": "TF", "true/false": "TF", "scq": "SCQ", "single_choice": "SCQ",
                 "mcq": "SCQ", "multiple_choice": "SCQ", "oq": "OQ", "open_ended": "OQ", "open": "OQ"}
DIMENSIONS = ("BP", "FS", "SC", "OCR", "AR")
DEIXIS_LEVELS = ("L1", "L2", "L3")
OQ_PROMPT_VERSION = "egopoint-oq-v1"
_STEP = 0.2

_OQ_PROMPT = """You are grading an answer to a question about the object a person points at in an egocentric image.
Compare the model's answer with the ground-truth answer and rate how correct it is.

Question: {question}
Ground-truth answer: {answer}
Model answer: {prediction}

Scoring scale (use only these values): 0.0 (wrong or about another object), 0.2, 0.4, 0.6, 0.8, 1.0 (fully correct and consistent with the ground truth).
Judge meaning, not wording. Return only a JSON object: {{"score": <one of 0.0, 0.2, 0.4, 0.6, 0.8, 1.0>, "reason": "<one sentence>"}}"""


def build_oq_prompt(question: str, answer: str, prediction: str) -> str:
    """The open-ended judge prompt (EgoPoint sec. 4.2 / App. A.4: 0..1 in steps of 0.2)."""
    return _OQ_PROMPT.format(question=question, answer=answer, prediction=prediction)


def validate_oq_verdict(obj: dict) -> dict:
    """Check a judge verdict ``{"score": x, ...}``: ``x`` must be a number in [0, 1]; it is snapped
    to the nearest multiple of 0.2 (``snapped_from`` records the original when it moved).

    Raises:
        ValueError: no numeric score, or one outside [0, 1].
    """
    raw = obj.get("score")
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise ValueError(f"verdict score must be a number, got {raw!r}")
    x = float(raw)
    if not math.isfinite(x) or not -1e-9 <= x <= 1 + 1e-9:
        raise ValueError(f"verdict score {x} is outside 0..1")
    snapped = round(round(x / _STEP) * _STEP, 1)
    out = {"score": snapped, "reason": str(obj.get("reason", ""))}
    if abs(snapped - x) > 1e-9:
        out["snapped_from"] = x
    return out


def prediction_hash(prediction: str | None) -> str:
    """Short SHA-1 of a prediction text (the key a stored verdict is reused under)."""
    return hashlib.sha1((prediction or "").encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class EgoItemScore:
    id: str
    question_type: str
    dimension: str
    deixis: str
    domain: str
    score: float | None
    score_lenient: float | None
    answer_strict: str | None
    answer_lenient: str | None
    ground_truth: str
    random_baseline: float | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _qtype(rec: Mapping[str, Any]) -> str:
    raw = str(rec.get("question_type", "")).strip()
    t = _TYPE_ALIASES.get(raw.lower(), raw.upper())
    if t not in QUESTION_TYPES:
        raise RecordError(f"question {rec.get('id')}: unknown question_type {raw!r} (TF, SCQ, OQ)")
    return t


def _letters(options: Sequence[str] | None) -> str:
    if options and not isinstance(options, (list, tuple)):  # a string's length is not a number of options
        raise RecordError(f"single-choice options must be a list, got {type(options).__name__}")
    n = len(options) if options else 4
    if not 2 <= n <= 5:
        raise RecordError(f"single-choice questions have 2..5 options (A-E), got {n}")
    return "ABCDE"[:n]


def _score_closed(rec: Mapping[str, Any], qtype: str, prediction: str | None):
    gt_raw = rec.get("answer", rec.get("ground_truth"))
    if qtype == "TF":
        truth = extract_yes_no(str(gt_raw)) if gt_raw is not None else None
        if truth is None:
            raise RecordError(f"question {rec.get('id')}: TF answer {gt_raw!r} is not yes/no/true/false")
        a_s, a_l = parse_yes_no_strict(prediction), extract_yes_no(prediction)
        chance = 0.5
    else:
        letters = _letters(rec.get("options"))
        truth = str(gt_raw or "").strip().upper()[:1]
        if truth not in letters:
            raise RecordError(f"question {rec.get('id')}: SCQ answer {gt_raw!r} is not one of {letters}")
        a_s = parse_choice_strict(prediction, letters)
        a_l = parse_choice_lenient(prediction, letters, rec.get("options"))
        chance = 1.0 / len(letters)
    return truth, a_s, a_l, float(a_s == truth), float(a_l == truth), chance


def score_egopoint(ground_truth: list[Mapping[str, Any]], predictions: Mapping[str, Any], *,
                   judge: Any = None, verdicts: Mapping[str, Mapping[str, Any]] | None = None,
                   on_verdict: Callable[[dict], None] | None = None) -> dict[str, Any]:
    """Score EgoPoint-Bench predictions; returns ``{"items": [...], "summary": {...}}``.

    Args:
        ground_truth: records as in the module docstring.
        predictions: ``{id: prediction text}``.
        judge: an object with ``judge(prompt, validate) -> JudgeVerdict``
            (``pointlab.benchmark.judge.LLMJudge``), used for open-ended items without a stored
            verdict; ``None`` leaves those unjudged.
        verdicts: stored verdicts ``{id: {"prediction_sha1", "prompt_version", "score", ...}}``.
        on_verdict: called with every new verdict record (to append it to a verdict file).
    Raises:
        RecordError: a malformed or repeated ground-truth record.
    """
    verdicts = verdicts or {}
    items: list[EgoItemScore] = []
    judged_now = reused = 0
    for qid, rec in _unique(ground_truth, error=RecordError):
        qtype = _qtype(rec)
        pred = predictions.get(qid)
        not_text = None
        if isinstance(pred, (list, dict)):  # a model answer is text: "['yes']" must not read as yes
            not_text, pred = f"unparseable: prediction is a JSON {type(pred).__name__}, not text", ""
        elif pred is not None and not isinstance(pred, str):
            pred = str(pred)  # a bare JSON number or boolean is its text
        common = dict(id=qid, question_type=qtype, dimension=str(rec.get("dimension", "unknown")).upper(),
                      deixis=str(rec.get("deixis", "unknown")).upper(),
                      domain=str(rec.get("domain", "all")).strip().lower())  # "Real" and "real" are one domain
        if qtype != "OQ":
            truth, a_s, a_l, s_s, s_l, chance = _score_closed(rec, qtype, pred)
            if pred is None:
                reason = "missing prediction"
            elif not_text:
                reason = not_text
            elif a_l is None:
                reason = "unparseable"
            else:
                reason = "ok"
            items.append(EgoItemScore(**common, score=s_s, score_lenient=s_l, answer_strict=a_s, answer_lenient=a_l,
                                      ground_truth=truth, random_baseline=chance, reason=reason))
            continue
        truth = str(rec.get("answer", rec.get("ground_truth", "")))
        score: float | None = None
        if pred is None:
            score, reason = 0.0, "missing prediction"
        elif not_text:
            score, reason = 0.0, not_text  # not sent to the judge
        else:
            h = prediction_hash(pred)
            stored = verdicts.get(qid)
            stored_score, stored_problem = None, None
            if isinstance(stored, Mapping) and stored.get("prediction_sha1") == h \
                    and stored.get("prompt_version") == OQ_PROMPT_VERSION and stored.get("score") is not None:
                # a verdict file is user data: a hand-edited or corrupt score is checked like a fresh one
                try:
                    stored_score = validate_oq_verdict(dict(stored))["score"]
                except ValueError as e:
                    stored_problem = f"stored verdict unusable: {e}"
            if stored_score is not None:
                score, reason = stored_score, "stored verdict"
                reused += 1
            elif judge is not None:
                v = judge.judge(build_oq_prompt(str(rec.get("question", "")), truth, pred), validate=validate_oq_verdict)
                judged_now += 1
                record = {"id": qid, "prediction_sha1": h, "prompt_version": OQ_PROMPT_VERSION,
                          "score": v.result["score"] if v.ok and v.result else None, "model": v.model,
                          "raw_verdict": v.raw_text, "error": v.error}
                if on_verdict is not None:
                    on_verdict(record)
                score = record["score"]
                reason = "judged" if v.ok else f"judge_failed: {v.error}"
            else:
                reason = stored_problem or "no judge verdict"
        items.append(EgoItemScore(**common, score=score, score_lenient=score, answer_strict=None, answer_lenient=None,
                                  ground_truth=truth, random_baseline=None, reason=reason))
    summary = _summary(items)
    summary.update({"judged_now": judged_now, "stored_verdicts_used": reused,
                    "unknown_prediction_ids": sorted(set(map(str, predictions)) - {it.id for it in items}),
                    "oq_prompt_version": OQ_PROMPT_VERSION})
    return {"items": [it.to_dict() for it in items], "summary": summary}


def _cell(items: list[EgoItemScore]) -> dict[str, Any]:
    scored = [it for it in items if it.score is not None]
    chance = [it.random_baseline for it in items if it.random_baseline is not None]
    mean = (lambda xs: sum(xs) / len(xs) if xs else None)
    return {"n": len(items), "n_scored": len(scored), "score": mean([it.score for it in scored]),
            "score_lenient": mean([it.score_lenient for it in scored]), "random": mean(chance)}


def _summary(items: list[EgoItemScore]) -> dict[str, Any]:
    def table(key: Callable[[EgoItemScore], str], order: Sequence[str] = ()) -> dict[str, Any]:
        groups: dict[str, list[EgoItemScore]] = defaultdict(list)
        for it in items:
            groups[key(it)].append(it)
        names = [k for k in order if k in groups] + sorted(k for k in groups if k not in order)
        return {k: _cell(groups[k]) for k in names}

    return {
        "overall": _cell(items),
        "dimension": table(lambda it: it.dimension, DIMENSIONS),
        "deixis": table(lambda it: it.deixis, DEIXIS_LEVELS),
        "question_type": table(lambda it: it.question_type, QUESTION_TYPES),
        "dimension_by_type": table(lambda it: f"{it.dimension}/{it.question_type}"),
        "domain": table(lambda it: it.domain),
        "unjudged": sum(1 for it in items if it.score is None),
        "missing_predictions": sum(1 for it in items if it.reason == "missing prediction"),
        "unparseable": sum(1 for it in items if it.reason.startswith("unparseable")),
    }
