"""EgoPoint-Bench scoring (sec. 4.2) under a rule set: True/False and single-choice questions by exact
match, open-ended questions by an LLM judge on 0..1 in steps of 0.2; tables per dimension (BP, FS, SC,
OCR, AR; sec. 3.3), per deixis level (L1-L3; sec. 3.4), per question type (Table 3) and per domain
(sim / real; Table 2), each with the random baseline.

Ground truth: the released JSON array (``pure_real_test.json``, ``mini_dataset.json``: no ``id`` -- the
position is the id --, ``type`` ``True_False`` / ``Multiple_Choice`` / ``Open_Ended``, ``dimension``
``Basic Perception`` / ``Affordance & Function`` / ``Context & Relation`` / ``OCR & Text`` /
``Adversarial``, ``deixis_level``, answers such as ``"D. Milk"`` or ``"False"``), or JSONL records ``id``,
``question_type`` (``TF``, ``SCQ``, ``OQ``), ``dimension`` (codes), ``deixis``, ``answer``, ``options``,
optional ``domain``. Predictions: ``{"id", "prediction"}`` JSONL, or the playground's results file
(``{"details": [... "model_output" ...]}``, matched by position).

The released evaluator is GUYYYUG/EgoPoint ``playground/eval_qwen3vl.py`` (73f12e7): its
``parse_ground_truth`` and ``extract_answer`` decide TF and SCQ under both rule sets (the paper says
"exact matches" and nothing of the extraction): TF by ``true``/``false`` substrings, then ``yes``/``no``
words; SCQ by "Answer/Option/Choice X", a leading "X." / "X)", ``\boxed{X}``, else the last lone capital
letter; a non-match keeps the raw text, compared as is. Differences (docs/scoring.md):

* SCQ letters: the released patterns know A-D only (an "E. ..." answer never matches); pointlab reads the
  letters of the options given.
* Open-ended: the released evaluator scores none ("generation only"); pointlab asks the judge (sec. 4.2:
  0..1 in steps of 0.2). Under ``reference`` they are unscored and out of every mean, as released.
* An answer key that is no answer (the released ``pure_real_test.json`` has True/False answers such as
  ``"Raw"``): the released evaluator compares predictions with that text, so the item counts and is
  never matched; under ``pointlab`` the item is reported (``reason`` ``invalid_ground_truth: ...``,
  ``summary["invalid_ground_truth"]`` lists the ids) and left out of every mean. The rest of the file
  is scored either way.
* The released real-set script ``eval_code/eval_real_qwen3vl.py`` reads a ground truth "No" as True;
  the playground (and pointlab) read it as False.

Also reported: ``score_lenient``, pointlab's lenient reading (``extract``) under the same rules. Group
means are item means; the random baseline of an item is its chance accuracy (TF 1/2, SCQ 1/options);
verdicts are stored and reused by id + prediction hash + prompt version.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import re
import string

from ..extract import extract_yes_no, parse_choice_lenient, strip_reasoning
from ..records import by_unique_id as _unique
from ..scorers import ItemScore, ScoreReport, check_rules, register_scorer
from ..video.errors import RecordError

__all__ = [
    "QUESTION_TYPES",
    "DIMENSIONS",
    "DEIXIS_LEVELS",
    "OQ_PROMPT_VERSION",
    "EgoItemScore",
    "build_oq_prompt",
    "validate_oq_verdict",
    "score_egopoint",
    "prediction_hash",
    "reference_ground_truth",
    "reference_extract",
    "release_records",
    "release_predictions",
]

QUESTION_TYPES = ("TF", "SCQ", "OQ")
_TYPE_ALIASES = {
    "tf": "TF",
    "true_false": "TF",
    "true/false": "TF",
    "scq": "SCQ",
    "single_choice": "SCQ",
    "mcq": "SCQ",
    "multiple_choice": "SCQ",
    "oq": "OQ",
    "open_ended": "OQ",
    "open": "OQ",
}
DIMENSIONS = ("BP", "FS", "SC", "OCR", "AR")
#: the release's dimension names -> the paper's codes (Table 3)
_DIMENSION_NAMES = {
    "basic perception": "BP",
    "affordance & function": "FS",
    "function & state": "FS",
    "function and state": "FS",
    "context & relation": "SC",
    "spatial context": "SC",
    "ocr & text": "OCR",
    "ocr": "OCR",
    "adversarial": "AR",
    "adversarial resilience": "AR",
}
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
    try:
        x = float(raw)
    except OverflowError:
        raise ValueError("verdict score is a number too large for a float") from None
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
    rules: str = "pointlab"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_contract(self) -> ItemScore:
        meta = {k: v for k, v in asdict(self).items() if k not in {"id", "score", "answer_strict", "reason"}}
        return ItemScore(id=self.id, value=self.score, parsed=self.answer_strict, reason=self.reason, metadata=meta)


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
    if not 2 <= n <= 26:
        raise RecordError(f"single-choice questions have 2..26 options, got {n}")
    return string.ascii_uppercase[:n]


def _strip_think(text: str) -> str:
    return re.sub(r"<think>.*?</think>", "", text, flags=re.DOTALL).strip()


def reference_ground_truth(answer: Any, qtype: str, letters: str = "ABCD") -> str:
    """The released ``parse_ground_truth``: SCQ -> the leading letter (of ``letters``) of the upper-cased
    answer, else the upper-cased text; TF -> ``"True"`` / ``"False"`` by ``true``/``false``/``yes``/``no``
    substrings, else the text; OQ -> the text."""
    text = _strip_think(str(answer).strip())
    if qtype == "SCQ":
        text = text.upper()
        m = re.match(f"^([{letters}])", text)
        return m.group(1) if m else text
    if qtype == "TF":
        low = text.lower()
        for word, value in (("true", "True"), ("false", "False"), ("yes", "True"), ("no", "False")):
            if word in low:
                return value
    return text


def reference_extract(text: Any, qtype: str, letters: str = "ABCD") -> str:
    """The released ``extract_answer`` (module docstring); a non-match keeps the stripped text."""
    text = _strip_think(str(text or "").strip())
    if qtype == "TF":
        clean = re.sub(r"[^\w\s]", "", text).lower()
        if "true" in clean and "false" not in clean:
            return "True"
        if "false" in clean and "true" not in clean:
            return "False"
        if re.search(r"\b(yes)\b", clean):
            return "True"
        if re.search(r"\b(no)\b", clean):
            return "False"
        return text
    if qtype == "SCQ":
        cls = f"[{letters}]"
        m = re.search(rf"(?:Answer|Option|Choice)(?:\s*:|\s+is)?\s*({cls})\b", text, re.IGNORECASE)
        if m:
            return m.group(1).upper()
        for rx in (rf"^({cls})[\.\)]", rf"\\boxed\{{({cls})\}}"):
            m = re.search(rx, text)
            if m:
                return m.group(1)
        found = re.findall(rf"\b({cls})\b", text)
        return found[-1] if found else text
    return text


def _score_closed(rec: Mapping[str, Any], qtype: str, prediction: str | None, rules: str):
    gt_raw = rec.get("answer", rec.get("ground_truth"))
    if gt_raw is None:
        raise RecordError("no answer")
    if qtype == "TF":
        if (
            rules != "reference"
            and extract_yes_no(str(gt_raw)) is None
            and reference_ground_truth(gt_raw, "TF") not in ("True", "False")
        ):
            # the released evaluator compares with the text itself ("Raw"), so the item counts and
            # no prediction matches it; pointlab leaves it out of the means and reports it
            raise RecordError(f"TF answer {gt_raw!r} is not yes/no/true/false")
        truth = reference_ground_truth(gt_raw, "TF")
        a_s = reference_extract(prediction, "TF") if prediction is not None else None
        lenient = extract_yes_no(prediction)
        a_l = {"yes": "True", "no": "False"}.get(lenient) if lenient else None
        chance = 0.5
    else:
        all_letters = _letters(rec.get("options"))
        letters = "ABCD" if rules == "reference" else all_letters
        truth = reference_ground_truth(gt_raw, "SCQ", letters)
        own = reference_ground_truth(gt_raw, "SCQ", all_letters)
        if rules != "reference" and (own not in all_letters or len(own) != 1):
            raise RecordError(f"SCQ answer {gt_raw!r} is not one of {all_letters}")
        a_s = reference_extract(prediction, "SCQ", letters) if prediction is not None else None
        a_l = parse_choice_lenient(prediction, all_letters, rec.get("options"))
        truth_l = own
        chance = 1.0 / len(all_letters)
        return truth, a_s, a_l, float(a_s == truth), float(a_l == truth_l), chance
    return truth, a_s, a_l, float(a_s == truth), float(a_l == truth), chance


def _invalid_truth(common: dict[str, Any], rec: Mapping[str, Any], why: str) -> EgoItemScore:
    """An item whose answer key cannot be read (pointlab rules): listed, left out of every mean."""
    return EgoItemScore(
        **common,
        score=None,
        score_lenient=None,
        answer_strict=None,
        answer_lenient=None,
        ground_truth=str(rec.get("answer", rec.get("ground_truth"))),
        random_baseline=None,
        reason=f"invalid_ground_truth: {why}",
    )


def score_egopoint(
    ground_truth: list[Mapping[str, Any]],
    predictions: Mapping[str, Any],
    *,
    judge: Any = None,
    verdicts: Mapping[str, Mapping[str, Any]] | None = None,
    on_verdict: Callable[[dict], None] | None = None,
    rules: str = "pointlab",
) -> dict[str, Any]:
    """Score EgoPoint-Bench predictions; returns ``{"items": [...], "summary": {...}}``.

    Args:
        ground_truth: records as in the module docstring.
        predictions: ``{id: prediction text}``.
        judge: an object with ``judge(prompt, validate) -> JudgeVerdict``
            (``pointlab.benchmark.judge.LLMJudge``), used for open-ended items without a stored
            verdict; ``None`` leaves those unjudged.
        verdicts: stored verdicts ``{id: {"prediction_sha1", "prompt_version", "score", ...}}``.
        on_verdict: called with every new verdict record (to append it to a verdict file).
        rules: ``pointlab`` or ``reference`` (module docstring).
    Raises:
        RecordError: a repeated id or an unknown question type (an answer key that cannot be read is
            an item with reason ``invalid_ground_truth``, module docstring).
    """
    check_rules(rules)
    verdicts = verdicts or {}
    problems = getattr(predictions, "problems", {})
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
        if rules != "reference" and pred:
            # every reasoning tag, an unclosed block included (the released code drops closed <think> only)
            pred = strip_reasoning(pred).strip()
        dim = str(rec.get("dimension", "unknown")).strip()
        common = dict(
            id=qid,
            question_type=qtype,
            dimension=_DIMENSION_NAMES.get(dim.lower(), dim.upper()),
            deixis=str(rec.get("deixis", rec.get("deixis_level", "unknown"))).upper(),
            domain=str(rec.get("domain", "all")).strip().lower(),
            rules=rules,
        )  # "Real" and "real" are one domain
        if qid in problems:
            not_text, pred = f"invalid_prediction: {problems[qid]}", ""
        if qtype != "OQ":
            try:
                truth, a_s, a_l, s_s, s_l, chance = _score_closed(rec, qtype, pred, rules)
            except RecordError as e:  # one unreadable answer key is reported, not the whole file refused
                items.append(_invalid_truth(common, rec, str(e)))
                continue
            if pred is None:
                reason = "missing prediction"
            elif not_text:
                reason = not_text
            elif a_l is None:
                reason = "unparseable"
            else:
                reason = "ok"
            items.append(
                EgoItemScore(
                    **common,
                    score=s_s,
                    score_lenient=s_l,
                    answer_strict=a_s,
                    answer_lenient=a_l,
                    ground_truth=truth,
                    random_baseline=chance,
                    reason=reason,
                )
            )
            continue
        truth = str(rec.get("answer", rec.get("ground_truth", "")))
        score: float | None = None
        if rules == "reference":
            items.append(
                EgoItemScore(
                    **common,
                    score=None,
                    score_lenient=None,
                    answer_strict=None,
                    answer_lenient=None,
                    ground_truth=truth,
                    random_baseline=None,
                    reason="not scored by the released evaluator (open-ended: generation only)",
                )
            )
            continue
        if pred is None:
            score, reason = 0.0, "missing prediction"
        elif not_text:
            score, reason = 0.0, not_text  # not sent to the judge
        else:
            h = prediction_hash(pred)
            stored = verdicts.get(qid)
            stored_score, stored_problem = None, None
            if (
                isinstance(stored, Mapping)
                and stored.get("prediction_sha1") == h
                and stored.get("prompt_version") == OQ_PROMPT_VERSION
                and stored.get("score") is not None
            ):
                # a verdict file is user data: a hand-edited or corrupt score is checked like a fresh one
                try:
                    stored_score = validate_oq_verdict(dict(stored))["score"]
                except ValueError as e:
                    stored_problem = f"stored verdict unusable: {e}"
            if stored_score is not None:
                score, reason = stored_score, "stored verdict"
                reused += 1
            elif judge is not None:
                v = judge.judge(
                    build_oq_prompt(str(rec.get("question", "")), truth, pred), validate=validate_oq_verdict
                )
                judged_now += 1
                record = {
                    "id": qid,
                    "prediction_sha1": h,
                    "prompt_version": OQ_PROMPT_VERSION,
                    "score": v.result["score"] if v.ok and v.result else None,
                    "model": v.model,
                    "raw_verdict": v.raw_text,
                    "error": v.error,
                }
                if on_verdict is not None:
                    on_verdict(record)
                score = record["score"]
                reason = "judged" if v.ok else f"judge_failed: {v.error}"
            else:
                reason = stored_problem or "no judge verdict"
        items.append(
            EgoItemScore(
                **common,
                score=score,
                score_lenient=score,
                answer_strict=None,
                answer_lenient=None,
                ground_truth=truth,
                random_baseline=None,
                reason=reason,
            )
        )
    summary = _summary(items)
    summary.update(
        {
            "rules": rules,
            "judged_now": judged_now,
            "stored_verdicts_used": reused,
            "unknown_prediction_ids": sorted(set(map(str, predictions)) - {it.id for it in items}),
            "unreadable_prediction_lines": list(getattr(predictions, "unreadable", [])),
            "oq_prompt_version": OQ_PROMPT_VERSION,
            "judge": judge.describe() if judge is not None and hasattr(judge, "describe") else None,
        }
    )
    return {"items": [it.to_dict() for it in items], "summary": summary, "_scores": items}


@register_scorer("egopoint", "EgoPoint-Bench (sec. 4.2): TF / SCQ exact match, open-ended LLM judge")
def score_egopoint_contract(
    ground_truth: list[Mapping[str, Any]], predictions: Mapping[str, Any], *, rules: str = "pointlab", **options: Any
) -> ScoreReport:
    """The registered EgoPoint-Bench scorer (contract form of ``score_egopoint``)."""
    out = score_egopoint(ground_truth, predictions, rules=rules, **options)
    summary = dict(out["summary"])
    summary.pop("rules", None)
    return ScoreReport(
        scorer="egopoint", rules=rules, items=[it.to_contract() for it in out["_scores"]], summary=summary
    )


_TYPES = {"true_false": "TF", "multiple_choice": "SCQ", "open_ended": "OQ"}


def release_records(entries: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The released JSON array as ground-truth records: ``id`` = position (unless the entry has one),
    ``type`` -> ``question_type``, ``deixis_level`` -> ``deixis``, domain from the ``image_id`` /
    ``image_path`` prefix (``real`` / ``sim``) when there is one."""
    out = []
    for i, e in enumerate(entries):
        rec = dict(e)
        rec.setdefault("id", i)
        if "question_type" not in rec and "type" in rec:
            rec["question_type"] = _TYPES.get(str(rec["type"]).strip().lower(), rec["type"])
        if "deixis" not in rec and "deixis_level" in rec:
            rec["deixis"] = rec["deixis_level"]
        src = str(rec.get("image_id") or rec.get("image_path") or "").rsplit("/", 1)[-1].lower()
        if "domain" not in rec and src.split("_")[0] in ("real", "sim"):
            rec["domain"] = src.split("_")[0]
        out.append(rec)
    return out


def release_predictions(results: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The playground's results file (``{"details": [{... "model_output"}]}``) as ``(where, {"id",
    "prediction"})`` records for ``records.predictions_from_records`` (so a repeated id scores 0 as in
    any prediction file); an entry's id is its ``id`` or, without one, its position."""
    details = results.get("details")
    if not isinstance(details, list):
        raise RecordError("an EgoPoint results file needs a 'details' list")
    return [
        (f"details[{i}]", {"id": str(d.get("id", i)), "prediction": d.get("model_output")})
        for i, d in enumerate(details)
        if isinstance(d, dict)
    ]


def _cell(items: list[EgoItemScore]) -> dict[str, Any]:
    scored = [it for it in items if it.score is not None]
    chance = [it.random_baseline for it in items if it.random_baseline is not None]
    mean = lambda xs: sum(xs) / len(xs) if xs else None
    return {
        "n": len(items),
        "n_scored": len(scored),
        "score": mean([it.score for it in scored]),
        "score_lenient": mean([it.score_lenient for it in scored]),
        "random": mean(chance),
    }


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
        "unjudged": sum(1 for it in items if it.score is None and not it.reason.startswith("invalid_ground_truth")),
        "invalid_ground_truth": [it.id for it in items if it.reason.startswith("invalid_ground_truth")],
        "missing_predictions": sum(1 for it in items if it.reason == "missing prediction"),
        "unparseable": sum(1 for it in items if it.reason.startswith("unparseable")),
    }
