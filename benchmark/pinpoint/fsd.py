"""FSD (Fine-Grained Spatial Description) scoring through an LLM judge (PinpointQA sec. 4.2, App. B.1).

The judge (any OpenAI-compatible model, temperature 0) receives the target label, the ground-truth
description and the prediction, and returns JSON with five dimension scores -- main location and
supporting surface 0-3, key reference objects 0-2, spatial relations 0-2, numeric distances 0-2,
clarity 0-1 -- a total, a one-sentence explanation and error tags. The evaluator then:

1. replaces a total that differs from the sum of the five dimensions by that sum (App. B.1);
2. caps the total at 2 when main location and reference objects are both 0 (App. B.1);
3. divides by 10.

Dimension scores must be integers (or integral numbers) within their ranges; anything else makes
the verdict invalid (a recorded failure, not a guess). The prompt, judge model, raw answer and the
correction flags are stored with every item.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..judge import JudgeValidationError, JudgeVerdict, LLMJudge

__all__ = ["FSD_DIMENSIONS", "FSD_ERROR_TAGS", "FSD_PROMPT_TEMPLATE", "FSD_PROMPT_VERSION", "FSDJudgeResult",
           "build_fsd_prompt", "correct_fsd_verdict", "judge_fsd"]

#: dimension -> maximum points (App. B.1: 3 / 2 / 2 / 2 / 1, total 10).
FSD_DIMENSIONS = {"main_location": 3, "reference_objects": 2, "spatial_relations": 2, "distance_cm": 2,
                  "clarity": 1}
#: the error tags the judge may return.
FSD_ERROR_TAGS = ("wrong_main_location", "wrong_support_surface", "missing_key_reference",
                  "wrong_spatial_relation", "missing_numeric_distance", "wrong_numeric_distance",
                  "unclear_expression", "hallucinated_reference")
#: the total may not exceed this when main_location and reference_objects are both 0.
FSD_CAP_WITHOUT_ANCHOR = 2

FSD_PROMPT_VERSION = "pointlab-fsd-v1"
FSD_PROMPT_TEMPLATE = """You are grading how well a model's answer locates a small object in an indoor scene.
Compare the model answer with the ground-truth description only. Judge only what the ground truth
supports; do not reward extra references because they sound plausible, and do not reward length.

Target object: {target}

Ground-truth description:
{ground_truth}

Model answer:
{prediction}

Relations used by the ground truth: on, under, above, below, side_above ("to the side of and
above"), side_below ("to the side of and below"), next_to, near, attached_to. "On" and "attached
to" usually name the supporting surface or anchor. "Near" is weaker than any directional relation.

Score five dimensions (integers):
A. main_location (0-3): 3 = supporting surface / main location correct and placement matches;
   2 = supporting surface or anchor correct but important details missing; 1 = only a broad related
   area; 0 = wrong surface or wrong region.
B. reference_objects (0-2): 2 = at least two correct ground-truth references used to localize;
   1 = exactly one; 0 = none, or only unsupported / generic references.
C. spatial_relations (0-2): 2 = the important relations are correct; 1 = one important relation
   correct, others weaker or partly wrong; 0 = wrong, missing, or replaced by vague proximity
   where the ground truth gives a direction. A reversed direction is a serious error.
D. distance_cm (0-2): 2 = usable numeric distances (cm, or metres convertible to cm) tied to the
   right references and roughly consistent with the ground truth; 1 = at least one usable distance
   tied to a correct reference but inaccurate or incomplete; 0 = none, vague ("very close"),
   without unit, or tied to the wrong reference. Tolerance grows with distance: about 5 cm up to
   10 cm, 10 cm from 10 to 30 cm, 15 cm above 30 cm.
E. clarity (0-1): 1 = understandable; 0 = confusing or malformed. Clarity never compensates for
   localization errors.

total_score = A + B + C + D + E. If A = 0 and B = 0 the total must not exceed 2; an answer with
almost no usable localization information should not exceed 2 either.

Allowed error_tags: wrong_main_location, wrong_support_surface, missing_key_reference,
wrong_spatial_relation, missing_numeric_distance, wrong_numeric_distance, unclear_expression,
hallucinated_reference.

Return only this JSON object:
{{"total_score": 0, "dimension_scores": {{"main_location": 0, "reference_objects": 0,
"spatial_relations": 0, "distance_cm": 0, "clarity": 0}}, "error_tags": [],
"explanation": "one sentence"}}"""


@dataclass
class FSDJudgeResult:
    """One judged FSD item.

    Attributes:
        score: corrected total / 10 in [0, 1], or None when the judge failed.
        parts: the five dimension scores (empty when failed).
        total: the corrected total (0-10) or None; judge_total: the total the judge wrote.
        total_corrected: the judge's total disagreed with its parts and was replaced.
        capped: the cap of 2 was applied.
        error_tags, explanation: as the judge gave them (unknown tags dropped, listed in
            ``unknown_tags``).
        verdict: the stored judge call (prompt, model, raw answer); reason: ``ok`` or the failure.
    """

    score: float | None
    parts: dict
    total: int | None
    judge_total: object
    total_corrected: bool
    capped: bool
    error_tags: list
    unknown_tags: list
    explanation: str
    reason: str
    verdict: JudgeVerdict

    def to_dict(self) -> dict:
        return {"score": self.score, "parts": self.parts, "total": self.total, "judge_total": self.judge_total,
                "total_corrected": self.total_corrected, "capped": self.capped, "error_tags": self.error_tags,
                "unknown_tags": self.unknown_tags, "explanation": self.explanation, "reason": self.reason,
                "judge": {"model": self.verdict.model, "base_url": self.verdict.base_url,
                          "temperature": self.verdict.temperature, "prompt_version": FSD_PROMPT_VERSION,
                          "prompt": self.verdict.prompt, "raw_verdict": self.verdict.raw_text,
                          "attempts": self.verdict.attempts, "error": self.verdict.error}}


def build_fsd_prompt(target: str, ground_truth: str, prediction: str) -> str:
    """The judge prompt for one item (plain substitution; braces in the texts are safe)."""
    return FSD_PROMPT_TEMPLATE.format(target=target.strip(), ground_truth=ground_truth.strip(),
                                      prediction=(prediction or "").strip() or "(empty answer)")


def _int_score(value: object, name: str, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise JudgeValidationError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if not 0 <= v <= maximum:
        raise JudgeValidationError(f"{name} must be in 0..{maximum}, got {v}")
    return v


def correct_fsd_verdict(obj: dict) -> dict:
    """Apply App. B.1's evaluator rules to a judge's JSON verdict.

    Returns ``{"parts", "total", "judge_total", "total_corrected", "capped", "error_tags",
    "unknown_tags", "explanation"}``.
    Raises:
        JudgeValidationError: missing ``dimension_scores``, or a dimension not an integer in range.
    """
    dims = obj.get("dimension_scores")
    if not isinstance(dims, dict):
        raise JudgeValidationError("dimension_scores missing or not an object")
    parts = {name: _int_score(dims.get(name), name, top) for name, top in FSD_DIMENSIONS.items()}
    total = sum(parts.values())
    judge_total = obj.get("total_score")
    corrected = not (isinstance(judge_total, (int, float)) and not isinstance(judge_total, bool)
                     and float(judge_total) == float(total))
    capped = False
    if parts["main_location"] == 0 and parts["reference_objects"] == 0 and total > FSD_CAP_WITHOUT_ANCHOR:
        total, capped = FSD_CAP_WITHOUT_ANCHOR, True
    tags = obj.get("error_tags") if isinstance(obj.get("error_tags"), list) else []
    known = [t for t in tags if t in FSD_ERROR_TAGS]
    unknown = [t for t in tags if t not in FSD_ERROR_TAGS]
    explanation = obj.get("explanation") if isinstance(obj.get("explanation"), str) else ""
    return {"parts": parts, "total": total, "judge_total": judge_total, "total_corrected": corrected,
            "capped": capped, "error_tags": known, "unknown_tags": unknown, "explanation": explanation}


def judge_fsd(judge: LLMJudge, target: str, ground_truth: str, prediction: str) -> FSDJudgeResult:
    """Judge one FSD prediction; a failed or invalid verdict gives ``score=None`` and the reason."""
    verdict = judge.judge(build_fsd_prompt(target, ground_truth, prediction), validate=correct_fsd_verdict)
    if not verdict.ok or verdict.result is None:
        return FSDJudgeResult(score=None, parts={}, total=None, judge_total=None, total_corrected=False,
                              capped=False, error_tags=[], unknown_tags=[], explanation="",
                              reason=f"judge_failed: {verdict.error}", verdict=verdict)
    r = verdict.result
    return FSDJudgeResult(score=r["total"] / 10.0, parts=r["parts"], total=r["total"], judge_total=r["judge_total"],
                          total_corrected=r["total_corrected"], capped=r["capped"], error_tags=r["error_tags"],
                          unknown_tags=r["unknown_tags"], explanation=r["explanation"], reason="ok", verdict=verdict)
