"""FSD (Fine-Grained Spatial Description) scoring through an LLM judge (PinpointQA sec. 4.2, App. B.1).

The judge prompt is the authors' released rubric, verbatim (``fsd_judge_prompt.txt``: rainchowz/PinpointQA
``eval_prompt.txt`` at 8ae288a, MIT, licence in ``LICENSE.pinpointqa_prompt``), filled by plain
replacement of ``{target}``, ``{ground_truth}`` and ``{model_output}``; the request asks for the released
JSON schema (``response_format`` ``json_schema``, ``FSD_JSON_SCHEMA``). The judge model is whatever the
caller names (the authors used ``gpt-5.4``: ``REFERENCE_JUDGE_MODEL``) and is recorded with every verdict,
with the prompt, the raw answer and the request as sent.

The evaluator then, under both rule sets: reads ``total_score`` (required) and ``dimension_scores``
(``int()`` of each, a missing one 0), replaces a total that differs from the sum of the five by that sum
(App. B.1), refuses error tags outside the eight allowed, and divides by 10. Under ``--rules pointlab``
additionally (docs/scoring.md): the total is capped at 2 when main location and reference objects are
both 0 (App. B.1: "the total score cannot exceed 2"; the released code leaves it to the judge), and a
dimension outside its range or not an integral number makes the verdict invalid (the released code takes
``int()`` of anything, so main_location 5 gives a score above 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

from ..judge import JudgeValidationError, JudgeVerdict, LLMJudge

__all__ = [
    "FSD_DIMENSIONS",
    "FSD_ERROR_TAGS",
    "FSD_PROMPT_VERSION",
    "FSD_JSON_SCHEMA",
    "REFERENCE_JUDGE_MODEL",
    "FSDJudgeResult",
    "fsd_prompt_template",
    "build_fsd_prompt",
    "correct_fsd_verdict",
    "judge_fsd",
    "fsd_judge",
]

#: dimension -> maximum points (App. B.1: 3 / 2 / 2 / 2 / 1, total 10).
FSD_DIMENSIONS = {"main_location": 3, "reference_objects": 2, "spatial_relations": 2, "distance_cm": 2, "clarity": 1}
#: the error tags the judge may return.
FSD_ERROR_TAGS = (
    "wrong_main_location",
    "wrong_support_surface",
    "missing_key_reference",
    "wrong_spatial_relation",
    "missing_numeric_distance",
    "wrong_numeric_distance",
    "unclear_expression",
    "hallucinated_reference",
)
#: the total may not exceed this when main_location and reference_objects are both 0.
FSD_CAP_WITHOUT_ANCHOR = 2
#: the released prompt, by its source commit.
FSD_PROMPT_VERSION = "pinpointqa-eval_prompt@8ae288a"
#: the judge model of the paper and the released evaluator (``TASK3_JUDGE_MODEL``).
REFERENCE_JUDGE_MODEL = "gpt-5.4"

#: the released ``TASK3_JSON_SCHEMA`` (the structured output the judge is asked for).
FSD_JSON_SCHEMA = {
    "name": "task3_judge_result",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {
            "total_score": {"type": "integer", "minimum": 0, "maximum": 10},
            "dimension_scores": {
                "type": "object",
                "properties": {
                    name: {"type": "integer", "minimum": 0, "maximum": top} for name, top in FSD_DIMENSIONS.items()
                },
                "required": list(FSD_DIMENSIONS),
                "additionalProperties": False,
            },
            "error_tags": {"type": "array", "items": {"type": "string", "enum": sorted(FSD_ERROR_TAGS)}},
            "explanation": {"type": "string"},
        },
        "required": ["total_score", "dimension_scores", "error_tags", "explanation"],
        "additionalProperties": False,
    },
}


def fsd_prompt_template() -> str:
    """The released judge prompt, verbatim."""
    return resources.files("pointlab.benchmark.pinpoint").joinpath("fsd_judge_prompt.txt").read_text(encoding="utf-8")


def build_fsd_prompt(target: str, ground_truth: str, prediction: str) -> str:
    """The judge prompt for one item: the released template with its three placeholders replaced (plain
    replacement, as the released ``_build_prompt``; braces in the texts are safe)."""
    return (
        fsd_prompt_template()
        .replace("{target}", target)
        .replace("{ground_truth}", ground_truth)
        .replace("{model_output}", prediction)
    )


def fsd_judge(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    max_retries: int = 2,
    timeout_s: float = 120.0,
) -> LLMJudge:
    """An ``LLMJudge`` set up as the released evaluator's: temperature 0, the released JSON schema."""
    return LLMJudge(
        model,
        base_url=base_url,
        api_key=api_key,
        temperature=0.0,
        max_tokens=None,
        max_retries=max_retries,
        timeout_s=timeout_s,
        response_format={"type": "json_schema", "json_schema": FSD_JSON_SCHEMA},
    )


@dataclass
class FSDJudgeResult:
    """One judged FSD item.

    Attributes:
        score: corrected total / 10, or None when the judge failed.
        parts: the five dimension scores (empty when failed).
        total: the corrected total or None; judge_total: the total the judge wrote.
        total_corrected: the judge's total disagreed with its parts and was replaced.
        capped: the cap of 2 was applied (pointlab rules).
        error_tags, explanation: as the judge gave them.
        verdict: the stored judge call (prompt, model, raw answer); reason: ``ok`` or the failure.
    """

    score: float | None
    parts: dict
    total: int | None
    judge_total: object
    total_corrected: bool
    capped: bool
    error_tags: list
    explanation: str
    reason: str
    verdict: JudgeVerdict
    rules: str = "pointlab"

    def to_dict(self) -> dict:
        return {
            "score": self.score,
            "parts": self.parts,
            "total": self.total,
            "judge_total": self.judge_total,
            "total_corrected": self.total_corrected,
            "capped": self.capped,
            "error_tags": self.error_tags,
            "explanation": self.explanation,
            "reason": self.reason,
            "judge": {
                "model": self.verdict.model,
                "base_url": self.verdict.base_url,
                "temperature": self.verdict.temperature,
                "prompt_version": FSD_PROMPT_VERSION,
                "prompt": self.verdict.prompt,
                "raw_verdict": self.verdict.raw_text,
                "attempts": self.verdict.attempts,
                "error": self.verdict.error,
                "request": self.verdict.extra.get("request"),
            },
        }


def _as_int(value: Any, name: str, maximum: int, rules: str) -> int:
    if rules == "reference":
        try:
            return int(value)  # the released code: int() of whatever the judge wrote
        except (TypeError, ValueError, OverflowError) as e:
            raise JudgeValidationError(f"{name} is not a number: {value!r}") from e
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or value != value
        or value in (float("inf"), float("-inf"))
        or value != int(value)
    ):
        raise JudgeValidationError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if not 0 <= v <= maximum:
        raise JudgeValidationError(f"{name} must be in 0..{maximum}, got {v}")
    return v


def correct_fsd_verdict(obj: dict, rules: str = "pointlab") -> dict:
    """Apply App. B.1's evaluator rules to a judge's JSON verdict (module docstring).

    Returns ``{"parts", "total", "judge_total", "total_corrected", "capped", "error_tags", "explanation"}``.
    Raises:
        JudgeValidationError: no ``total_score``, ``dimension_scores`` not an object, an error tag outside
            the allowed eight, a dimension that is not a number (pointlab: not an integer in its range).
    """
    if "total_score" not in obj:
        raise JudgeValidationError("the judge did not return total_score")
    judge_total: Any = obj.get("total_score")  # whatever the judge wrote: int() decides
    try:
        int(judge_total)  # the released code: int(parsed["total_score"])
    except (TypeError, ValueError, OverflowError) as e:
        raise JudgeValidationError(f"total_score is not a number: {judge_total!r}") from e
    dims = obj.get("dimension_scores", {})
    if not isinstance(dims, dict):
        raise JudgeValidationError(f"dimension_scores is not an object: {dims!r}")
    parts = {name: _as_int(dims.get(name, 0), name, top, rules) for name, top in FSD_DIMENSIONS.items()}
    total = sum(parts.values())
    corrected = int(judge_total) != total
    tags = obj.get("error_tags", [])
    if not isinstance(tags, list) or any(t not in FSD_ERROR_TAGS for t in tags):
        raise JudgeValidationError(f"unsupported error tags: {tags!r}")
    capped = False
    if (
        rules == "pointlab"
        and parts["main_location"] == 0
        and parts["reference_objects"] == 0
        and total > FSD_CAP_WITHOUT_ANCHOR
    ):
        total, capped = FSD_CAP_WITHOUT_ANCHOR, True
    explanation = obj.get("explanation") if isinstance(obj.get("explanation"), str) else ""
    return {
        "parts": parts,
        "total": total,
        "judge_total": judge_total,
        "total_corrected": corrected,
        "capped": capped,
        "error_tags": list(tags),
        "explanation": explanation,
    }


def judge_fsd(
    judge: LLMJudge, target: str, ground_truth: str, prediction: str, *, rules: str = "pointlab"
) -> FSDJudgeResult:
    """Judge one FSD prediction; a failed or invalid verdict gives ``score=None`` and the reason."""
    verdict = judge.judge(
        build_fsd_prompt(target, ground_truth, prediction), validate=lambda obj: correct_fsd_verdict(obj, rules)
    )
    verdict.extra["request"] = judge.describe()
    if not verdict.ok or verdict.result is None:
        return FSDJudgeResult(
            score=None,
            parts={},
            total=None,
            judge_total=None,
            total_corrected=False,
            capped=False,
            error_tags=[],
            explanation="",
            reason=f"judge_failed: {verdict.error}",
            verdict=verdict,
            rules=rules,
        )
    r = verdict.result
    return FSDJudgeResult(
        score=r["total"] / 10.0,
        parts=r["parts"],
        total=r["total"],
        judge_total=r["judge_total"],
        total_corrected=r["total_corrected"],
        capped=r["capped"],
        error_tags=r["error_tags"],
        explanation=r["explanation"],
        reason="ok",
        verdict=verdict,
        rules=rules,
    )
