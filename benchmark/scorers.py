"""One score contract for every benchmark: scorers registered by name, each returning typed item
scores and a summary that names its rule set (STYLE.md: inspect_ai's typed score with value, answer,
explanation and metadata; scorers registered by name so a saved run is re-scored without a model).

- ``ItemScore``: ``id``, ``value`` (the item's score in [0, 1]; ``None`` when it could not be scored,
  e.g. a judge that failed), ``parsed`` (the answer as the rule set read it), ``reason`` (``ok``,
  ``hit``, ``unparseable: ...``, ``missing_prediction``, ...), ``metadata`` (what else the benchmark
  reports for the item: parts, the lenient parser's reading, the judge's verdict ...).
- ``ScoreReport``: ``scorer``, ``rules``, ``items``, ``summary``; ``to_dict()`` is what
  ``pointlab score <name>`` prints, ``{"items": [...], "summary": {...}}``.
- ``register_scorer(name)`` / ``get_scorer(name)`` / ``scorer_names()``: the registry. A scorer is a
  function ``(ground_truth, predictions, *, rules="pointlab", **options) -> ScoreReport``.

Rule sets: ``RULE_SETS`` = ``reference`` (the authors' released evaluator, item for item, except where
it crashes) and ``pointlab`` (the default: the same except where the reference code contradicts its
own paper). Every rule and both its values are in ``RULES`` and in the table of docs/scoring.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "RULE_SETS",
    "DEFAULT_RULES",
    "check_rules",
    "ItemScore",
    "ScoreReport",
    "Scorer",
    "register_scorer",
    "get_scorer",
    "scorer_names",
    "Rule",
    "RULES",
    "rules_for",
    "rules_table_markdown",
]

RULE_SETS = ("reference", "pointlab")
DEFAULT_RULES = "pointlab"


def check_rules(rules: str) -> str:
    """``rules`` if it names a rule set. Raises ``ValueError`` otherwise."""
    if rules not in RULE_SETS:
        raise ValueError(f"unknown rule set {rules!r}; use one of {', '.join(RULE_SETS)}")
    return rules


class ItemScore(BaseModel):
    """One scored item (module docstring)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    value: float | None
    parsed: Any = None
    reason: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class ScoreReport(BaseModel):
    """A scorer's result: items in ground-truth order and the summary (which names ``rules``)."""

    scorer: str
    rules: str
    items: list[ItemScore]
    summary: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """``{"items": [...], "summary": {..., "scorer", "rules"}}`` (strict JSON values)."""
        summary = {"scorer": self.scorer, "rules": self.rules, **self.summary}
        return {"items": [it.model_dump(mode="json") for it in self.items], "summary": summary}


@dataclass(frozen=True)
class Scorer:
    """A registered scorer: its ``name``, the function, and a one-line description."""

    name: str
    fn: Callable[..., ScoreReport]
    description: str

    def __call__(
        self, ground_truth: Any, predictions: Any, *, rules: str = DEFAULT_RULES, **options: Any
    ) -> ScoreReport:
        return self.fn(ground_truth, predictions, rules=check_rules(rules), **options)


_REGISTRY: dict[str, Scorer] = {}


def register_scorer(name: str, description: str) -> Callable[[Callable[..., ScoreReport]], Callable[..., ScoreReport]]:
    """Decorator: register ``fn`` under ``name``. Raises ``ValueError`` for a name registered twice."""

    def deco(fn: Callable[..., ScoreReport]) -> Callable[..., ScoreReport]:
        if name in _REGISTRY and _REGISTRY[name].fn is not fn:
            raise ValueError(f"scorer {name!r} is registered twice")
        _REGISTRY[name] = Scorer(name, fn, description)
        return fn

    return deco


def _load_all() -> None:
    # the scorers register themselves when their modules load
    from .egopoint import scoring as _e  # noqa: F401
    from .pinpoint import localization as _l, scoring as _p  # noqa: F401
    from .pointbench import scoring as _b  # noqa: F401
    from .video import scoring as _v  # noqa: F401


def get_scorer(name: str) -> Scorer:
    """The scorer registered under ``name``. Raises ``KeyError`` naming the registered ones."""
    _load_all()
    if name not in _REGISTRY:
        raise KeyError(f"no scorer {name!r}; registered: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def scorer_names() -> list[str]:
    """Every registered scorer name, sorted."""
    _load_all()
    return sorted(_REGISTRY)


# ---------------------------------------------------------------------------------------------------
# The rules table: every rule whose value could differ between the rule sets, with both values.


@dataclass(frozen=True)
class Rule:
    """One scoring rule: where it applies, its value under each rule set, the paper's sentence behind the
    pointlab value when the two differ, and the test that pins it (``path::test_name``)."""

    key: str
    benchmark: str
    rule: str
    reference: str
    pointlab: str
    paper: str
    test: str

    @property
    def differs(self) -> bool:
        return self.reference != self.pointlab


def rules_table_markdown() -> str:
    """The rules table of docs/scoring.md, from ``RULES`` (a test keeps the two equal)."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [
        "| benchmark | rule | `--rules reference` | `--rules pointlab` | the paper's sentence (pointlab's reason) | test |",
        "|---|---|---|---|---|---|",
    ]
    for r in RULES:
        test = r.test.split("::")[-1]
        paper = r.paper or ("(same value under both)" if not r.differs else "")
        lines.append(
            f"| {r.benchmark} | {cell(r.rule)} | {cell(r.reference)} | {cell(r.pointlab)} | {cell(paper)} | `{test}` |"
        )
    return "\n".join(lines) + "\n"


def rules_for(benchmark: str) -> list[Rule]:
    """The rules of one benchmark (``pointbench``, ``vsi``, ``pinpoint``, ``egopoint``)."""
    return [r for r in RULES if r.key.split(".")[0] == benchmark]


_T = "tests/benchmark/"
_VSI_EXTRACTION = (
    "VSI-Bench: multiple choice by the first space-separated token (trailing '.' removed), case-"
    "insensitive; numbers by extract_number (first digit run or number words). ReVSI: the first "
    "token of the stripped answer, float() for numbers"
)
_PP_SSP = (
    "the released DEFAULT_OBJECT_SYNONYMS / DEFAULT_SURFACE_SYNONYMS / relation aliases; parse_json_maybe; "
    "the assignment with the lexicographically highest (object, relation, distance) credit"
)
_EGO_EXTRACTION = (
    "playground parse_ground_truth / extract_answer: true/false substrings, then yes/no words; "
    "'Answer/Option/Choice X', 'X.' / 'X)', \\boxed{X}, the last lone capital; else the raw text"
)
RULES: tuple[Rule, ...] = (
    # ------------------------------------------------------------------ Point-Bench (PointArena model_evaluator.py)
    Rule(
        "pointbench.area_frames",
        "Point-Bench",
        "normalised answer (Gemini, Molmo, RoboPoint, grid) -> pixel",
        "column int(x * W / S): truncation toward zero, so -0.3 % is column 0 (inside); lmms-eval's "
        "grid/RoboPoint reader rounds, round(x * W / S) (999 on 320 px -> 320, outside)",
        "column floor(x * W / S): the image-area convention, [0, S) covers [0, W) (999 -> 319, inside; "
        "negatives outside)",
        'sec. 3.1: "A predicted point (x_i, y_i) is considered correct if it lies within the spatial support of '
        'some mask M_j"',
        _T + "pointbench/test_rules.py::test_gemini_999_full_mask_succeeds_under_both_rule_sets",
    ),
    Rule(
        "pointbench.pixel_answers",
        "Point-Bench",
        "pixel answer [x, y] -> mask pixel",
        "int(x), int(y): truncation toward zero (99.7 -> 99, -0.7 -> 0, inside)",
        "nearest pixel centre floor(x + 0.5) (99.7 -> 100, -0.7 -> outside): the pixel the robot deprojects",
        'sec. 3.1: "A predicted point (x_i, y_i) is considered correct if it lies within the spatial support of '
        'some mask M_j"; a point left of the image lies in no mask',
        _T + "pointbench/test_rules.py::test_fractional_pixel_answers",
    ),
    Rule(
        "pointbench.first_point",
        "Point-Bench",
        "non-counting items",
        "the first point only: an invalid first point (NaN, overflow, outside) fails, the next one is never used",
        "the first point only: an invalid first point (NaN, overflow, outside) fails, the next one is never used",
        'sec. 4.1: "if multiple were returned, only the first point was evaluated"',
        _T + "pointbench/test_rules.py::test_invalid_first_point_fails_under_pointlab",
    ),
    Rule(
        "pointbench.counting",
        "Point-Bench",
        "counting items",
        "number of points = count and every point in the union mask",
        "number of points = count and every point in the union mask; with instance masks each instance "
        "covered one-to-one",
        'sec. 3.1: "Each target region M_j is covered by at least one predicted point"',
        _T + "pointbench/test_rules.py::test_counting_reference_uses_the_union_mask",
    ),
    Rule(
        "pointbench.mask_channels",
        "Point-Bench",
        "mask pixel is a target",
        "np.array(mask) > 127 (grey), any channel > 127 (RGB, RGBA: alpha counts; 1-bit masks never)",
        "grey > 127; any colour channel > 127 (alpha ignored); 1-bit masks by their bit",
        'sec. 3.1: "binary masks ... denoting the valid region for one of K* annotated targets": an opaque '
        "alpha channel marks no region",
        _T + "pointbench/test_rules.py::test_mask_channels",
    ),
    Rule(
        "pointbench.qwen_resize",
        "Point-Bench",
        "Qwen2.5-VL point_2d -> pixel",
        "taken as original pixels (the authors ran the processor with the checkpoint's limits, which keep the size)",
        "mapped back from the processor's resize (checkpoint min/max_pixels)",
        'sec. 4.1: Qwen2.5-VL "provide[s] explicit coordinate outputs" in its own frame (the resized image)',
        _T + "pointbench/test_rules.py::test_qwen_point_under_both_rule_sets",
    ),
    Rule(
        "pointbench.answer_parsing",
        "Point-Bench",
        "reading the answer text",
        "model_evaluator.py / molmo_evaluator.py readers per model type (first [...] to last ], regex fallbacks);"
        " lmms-eval _text_to_points for grid1000 / robopoint",
        "pointlab.benchmark.points.parse_points (docs/models.md)",
        "sec. 4.1: the standard [x, y] pixel format, the model's own format for Molmo, Qwen2.5-VL and Gemini",
        _T + "pointbench/test_rules.py::test_reference_readers",
    ),
    # ------------------------------------------------------------------ VSI-Bench / ReVSI (lmms-eval)
    Rule(
        "vsi.mra_boundary",
        "VSI-Bench / ReVSI",
        "MRA: relative error on a tolerance",
        "|p - g| / g <= 1 - np.linspace(.5, .95, 10) in floats: 1 - 0.8 is 0.19999999999999984, so gt 5, pred 6 "
        "(error 0.2) fails theta 0.8 (MRA 0.6)",
        "an error within 1e-9 of a tolerance counts (gt 5, pred 6: MRA 0.7; gt 10, pred 9: 0.9 under both)",
        'ReVSI sec. 6: "MRA treats predictions as correct when relative error falls within a dynamic threshold"',
        _T + "video/test_rules.py::test_mra_float_boundary",
    ),
    Rule(
        "vsi.zero_ground_truth",
        "VSI-Bench / ReVSI",
        "numeric ground truth 0 (dummy-video counts)",
        "ReVSI: ZeroDivisionError caught, 0.0; VSI-Bench: crashes (scored 0.0 as ReVSI's code)",
        "exact match: 1 when the prediction is 0",
        'ReVSI sec. 5: dummy videos "retaining deterministic ground-truth answers such as zero for object counting"',
        _T + "video/test_rules.py::test_zero_ground_truth",
    ),
    Rule(
        "vsi.negative_gt",
        "VSI-Bench / ReVSI",
        "MRA of a negative numeric ground truth",
        "|p - g| / g is negative, below every tolerance: MRA 1 whatever the prediction",
        "|p - g| / |g| (a relative error is never negative)",
        'ReVSI sec. 6: MRA "penalizes large deviations while rewarding relatively close predictions"',
        _T + "video/test_rules.py::test_negative_ground_truth",
    ),
    Rule(
        "vsi.extraction",
        "VSI-Bench / ReVSI",
        "answer extraction (pointlab's lenient reading is reported beside it)",
        _VSI_EXTRACTION,
        _VSI_EXTRACTION,
        "",
        _T + "video/test_rules.py::test_reference_extraction",
    ),
    # ------------------------------------------------------------------ PinpointQA (rainchowz/PinpointQA eval.py)
    Rule(
        "pinpoint.tpv_nri_extraction",
        "PinpointQA",
        "TPV / NRI extraction (pointlab's lenient reading is reported beside it)",
        "first \\byes|no\\b; NRI letters A-D by five patterns",
        "the same, with the letters of all options given",
        'sec. 4.2: "we extract the predicted option letter and compare it with the correct choice" (an E option '
        "is a choice)",
        _T + "pinpoint/test_rules.py::test_options_beyond_d",
    ),
    Rule(
        "qa.reasoning",
        "VSI-Bench / ReVSI, PinpointQA, EgoPoint-Bench",
        "reasoning in the answer (<think> / <thinking> / <reasoning> blocks, or a closing tag whose opening one the chat template wrote)",
        "read as released: lmms-eval, ReVSI and PinpointQA read the whole text; EgoPoint drops closed <think> blocks only",
        "dropped before any reading (extract.strip_reasoning); kept in the run record, never scored",
        "Qwen3 Technical Report (Yang et al. 2025), thinking mode: the reasoning is emitted in a <think> block "
        "before the final response, which is the answer",
        _T + "test_reasoning_never_scored.py::test_pinpoint_tpv_and_nri",
    ),
    Rule(
        "pinpoint.singular",
        "PinpointQA",
        "SSP label singularization",
        "strip -es when longer than 4 (shoes -> sho, tables -> tabl), else -s when longer than 3",
        "conservative singular of the last word (shoes -> shoe, batteries -> battery, glass kept)",
        'App. B.2: "A conservative singularization rule and a fixed synonym map are then applied"',
        _T + "pinpoint/test_rules.py::test_singularization",
    ),
    Rule(
        "pinpoint.distance_boundary",
        "PinpointQA",
        "SSP distance error on a band edge",
        "float |pred - gt| <= tol (12.3 vs 7.3: 5.000000000000001 > 5, half credit)",
        "compared after rounding to 1e-6 cm (full credit)",
        'App. B.2: "d <= 10 cm: e <= 5 cm" full credit',
        _T + "pinpoint/test_rules.py::test_distance_float_boundary",
    ),
    Rule(
        "pinpoint.missing_field",
        "PinpointQA",
        "SSP support_surface missing from the answer",
        'read as "": full surface credit when the ground truth has none',
        "no credit",
        'App. B.2: "Missing or malformed fields receive no credit for their corresponding components."',
        _T + "pinpoint/test_rules.py::test_missing_surface_field",
    ),
    Rule(
        "pinpoint.fsd_cap",
        "PinpointQA",
        "FSD total when main location and references are both 0",
        "not enforced (only the prompt asks for it)",
        "capped at 2",
        'App. B.1: "If both the main location score and the reference object score are zero, the total score '
        'cannot exceed 2."',
        _T + "pinpoint/test_rules.py::test_fsd_cap",
    ),
    Rule(
        "pinpoint.fsd_range",
        "PinpointQA",
        "FSD dimension score outside its range",
        "int() of it, accepted (main_location 5 gives a total above 10)",
        "the verdict is invalid (unscored)",
        'App. B.1: "Main location and supporting surface receive up to 3 points ..."',
        _T + "pinpoint/test_rules.py::test_fsd_out_of_range",
    ),
    Rule(
        "pinpoint.fsd_target",
        "PinpointQA",
        "FSD judge's target label",
        "guessed from the question text (normalized: shoes -> sho) or a nearby SSP item",
        "the record's target field",
        'App. B.1: "the judge receives the target label"',
        _T + "pinpoint/test_rules.py::test_fsd_target_label",
    ),
    Rule(
        "pinpoint.missing_prediction",
        "PinpointQA",
        "ground-truth item without a prediction",
        "left out (only ids in both files are scored)",
        "scores 0 (missing_prediction)",
        'sec. 4.2: "An output from which no valid label or option can be extracted receives a score of zero"; '
        '"Micro is the mean over all QA pairs"',
        _T + "pinpoint/test_rules.py::test_missing_prediction",
    ),
    Rule(
        "pinpoint.ssp_maps",
        "PinpointQA",
        "SSP synonym and relation maps, JSON recovery, slot alignment",
        _PP_SSP,
        _PP_SSP,
        "",
        _T + "pinpoint/test_rules.py::test_reference_maps",
    ),
    # ------------------------------------------------------------------ EgoPoint-Bench (playground/eval_qwen3vl.py)
    Rule(
        "egopoint.options",
        "EgoPoint-Bench",
        "single-choice letters",
        "A-D only (an E answer never matches)",
        "the letters of the options given",
        'sec. 4.2: "we adopt exact matches for the TF and SCQ tasks"',
        _T + "egopoint/test_rules.py::test_option_e",
    ),
    Rule(
        "egopoint.open_ended",
        "EgoPoint-Bench",
        "open-ended questions",
        "not scored (generation only)",
        "LLM judge 0..1 in steps of 0.2",
        'sec. 4.2: "GPT-4o ... scores the model predictions against '
        'ground-truth answers on a scale of 0 to 1 (with an increment of 0.2)"',
        _T + "egopoint/test_rules.py::test_open_ended_under_both_rule_sets",
    ),
    Rule(
        "egopoint.extraction",
        "EgoPoint-Bench",
        "TF / SCQ extraction (pointlab's lenient reading reported beside)",
        _EGO_EXTRACTION,
        _EGO_EXTRACTION,
        "",
        _T + "egopoint/test_rules.py::test_reference_extraction",
    ),
)
