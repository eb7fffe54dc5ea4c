"""Property-based fuzzing of the point parsers (issue 14): random text, numbers and nesting never make
``parse_points`` raise, and what it returns keeps its contract. Bounded (example counts, sizes) so the
suite stays fast."""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pointlab.benchmark.points import POINT_FORMATS, parse_points

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# numbers as a model (or a corrupt file) may write them: huge integers, NaN, inf, negative zero
numbers = st.one_of(
    st.integers(min_value=-(10**500), max_value=10**500),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -0.0, 999, 1000, 1e308, -1e308, 10**309]),
)
json_values = st.recursive(
    st.one_of(numbers, st.text(max_size=8), st.booleans(), st.none()),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.sampled_from(["point", "point_2d", "box_2d", "bbox_2d", "x", "y", "points", "label"]),
            children,
            max_size=4,
        ),
    ),
    max_leaves=20,
)


def _dump(v) -> str:
    # json.dumps writes NaN/Infinity (the tokens models also write); huge ints stay digits
    return json.dumps(v, allow_nan=True)


def _check(p, width: int, height: int) -> None:
    assert p.points_px.dtype == np.float64 and p.points_px.ndim == 2 and p.points_px.shape[1] == 2
    assert np.isfinite(p.points_px).all()
    assert p.ok == (len(p.points_px) > 0)
    assert (p.reason is None) == p.ok
    finite = [(e.u_px, e.v_px) for e in p.entries if e.u_px is not None]
    assert np.array_equal(np.asarray(finite, dtype=np.float64).reshape(-1, 2), p.points_px)
    for e in p.entries:
        assert (e.reason is None) == e.inside
        assert e.valid == (e.u_px is not None)
        if e.inside:
            assert e.valid and -0.5 <= e.u_px < width - 0.5 and -0.5 <= e.v_px < height - 0.5
        elif e.valid:
            assert e.reason.startswith("outside_image")
        else:
            assert e.reason in ("number too large for a float", "non-finite coordinate")
    assert isinstance(p.first.valid, bool)


@FUZZ
@given(text=st.text(max_size=300), fmt=st.sampled_from(POINT_FORMATS))
def test_random_text_never_raises(text, fmt):
    _check(parse_points(text, fmt, 640, 480), 640, 480)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=json_values,
    fmt=st.sampled_from(POINT_FORMATS),
    fence=st.booleans(),
    size=st.tuples(st.integers(1, 4000), st.integers(1, 4000)),
)
def test_random_json_answers_never_raise(value, fmt, fence, size):
    body = _dump(value)
    text = f"```json\n{body}\n```" if fence else f"The answer is {body}."
    _check(parse_points(text, fmt, *size), *size)


@FUZZ
@given(x=numbers, y=numbers, fmt=st.sampled_from(["xy_pixels", "gemini", "qwen", "grid1000"]))
def test_one_point_of_any_numbers_is_one_entry_with_a_reason_when_invalid(x, y, fmt):
    key = {"xy_pixels": None, "gemini": "point", "qwen": "point_2d", "grid1000": None}[fmt]
    body = _dump([x, y]) if key is None else _dump([{key: [x, y]}])
    if fmt == "grid1000":
        body = f"[({x}, {y})]"
    p = parse_points(body, fmt, 640, 480)
    _check(p, 640, 480)
    finite_in = all(isinstance(c, (int, float)) and not isinstance(c, bool) and _fits(c) for c in (x, y))
    if finite_in and fmt != "grid1000":
        assert len(p.entries) == 1


def _fits(c) -> bool:
    try:
        return math.isfinite(float(c))
    except OverflowError:
        return False


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tags=st.lists(
        st.tuples(
            st.sampled_from(["x", "y", "x1", "y1", "x2", "coords"]), st.text(alphabet="0123456789.-eE ;", max_size=12)
        ),
        max_size=6,
    ),
    cut=st.booleans(),
)
def test_random_xml_tags_never_raise(tags, cut):
    attrs = " ".join(f'{k}="{v}"' for k, v in tags)
    text = f'<points {attrs} alt="a">a</points>' if not cut else f"<point {attrs}"
    for fmt in ("molmo", "molmo2", "qwen", "auto"):
        _check(parse_points(text, fmt, 640, 480), 640, 480)


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(1, 60), fmt=st.sampled_from(POINT_FORMATS))
def test_deep_nesting_never_raises(depth, fmt):
    _check(parse_points("[" * depth + "1, 2" + "]" * depth, fmt, 640, 480), 640, 480)
    _check(parse_points('{"point": ' * depth + "[1, 2]" + "}" * depth, fmt, 640, 480), 640, 480)
