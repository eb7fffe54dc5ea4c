"""Property-based fuzzing of the answer parsers and scorers (issue 14): random text, numbers and nesting
never make them raise, and every numeric result is a finite score. Bounded so the suite stays fast."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pointlab.benchmark import extract
from pointlab.benchmark.egopoint.scoring import reference_extract, score_egopoint
from pointlab.benchmark.judge import recover_json_object
from pointlab.benchmark.pinpoint.scoring import extract_option_letter, extract_yes_no, to_text_answer
from pointlab.benchmark.pinpoint.ssp import score_ssp
from pointlab.benchmark.video.scoring import lmms_extract_number, score_vsi_item

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
numbers = st.one_of(
    st.integers(min_value=-(10**400), max_value=10**400), st.floats(allow_nan=True, allow_infinity=True)
)
leaves = st.one_of(numbers, st.text(max_size=10), st.booleans(), st.none())
values = st.recursive(
    leaves,
    lambda c: st.one_of(
        st.lists(c, max_size=4),
        st.dictionaries(
            st.sampled_from(
                [
                    "support_surface",
                    "primary_surface",
                    "references",
                    "object",
                    "relation",
                    "distance_cm",
                    "score",
                    "answer",
                    "text",
                ]
            ),
            c,
            max_size=4,
        ),
    ),
    max_leaves=16,
)
texts = st.one_of(
    st.text(max_size=200),
    values.map(lambda v: json.dumps(v, allow_nan=True)),
    st.builds(lambda a, b: f"{a} **{b}** Answer: {a}", st.text(max_size=20), st.text(max_size=5)),
)

SSP_GT = json.dumps(
    {"support_surface": "table", "references": [{"object": "cup", "relation": "near", "distance_cm": 12}]}
)


@FUZZ
@given(text=texts)
def test_answer_extraction_never_raises(text):
    for f in (
        extract.parse_choice_strict,
        extract.parse_choice_lenient,
        extract.extract_yes_no,
        extract.parse_yes_no_strict,
    ):
        f(text)
    for v in (extract.parse_number_strict(text), extract.parse_number_lenient(text, "cm"), lmms_extract_number(text)):
        assert v is None or math.isfinite(v) or math.isinf(v)
    reference_extract(text, "TF")
    reference_extract(text, "SCQ", "ABCDE")
    extract_yes_no(text)
    extract_option_letter(text, "ABCDEF")


@FUZZ
@given(value=values)
def test_json_recovery_and_ssp_never_raise(value):
    text = json.dumps(value, allow_nan=True)
    recover_json_object(text)
    to_text_answer(value)
    for rules in ("reference", "pointlab"):
        r = score_ssp(SSP_GT, text, rules)
        assert 0.0 <= r.score <= 1.0 and math.isfinite(r.score)


@FUZZ
@given(pred=st.one_of(texts, values))
def test_scorers_score_any_prediction_in_0_1(pred):
    for rules in ("reference", "pointlab"):
        for rec in (
            {"id": "1", "question_type": "object_counting", "ground_truth": "4"},
            {
                "id": "2",
                "question_type": "object_rel_distance",
                "ground_truth": "B",
                "options": ["A. a", "B. b", "C. c", "D. d"],
            },
        ):
            s = score_vsi_item(rec, pred, rules=rules)
            assert 0.0 <= s.score <= 1.0 and 0.0 <= s.score_lenient <= 1.0
        out = score_egopoint(
            [
                {"id": "e", "question_type": "TF", "answer": "Yes"},
                {"id": "f", "question_type": "SCQ", "answer": "A", "options": ["A. x", "B. y"]},
            ],
            {"e": pred, "f": pred},
            rules=rules,
        )
        assert all(it["score"] in (0.0, 1.0) for it in out["items"])
