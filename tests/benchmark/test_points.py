"""Point formats: expectations worked out by hand from each format's definition (docs/models.md)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pointlab.benchmark.points import (
    POINT_FORMATS,
    QWEN_PROCESSOR_CLASS_MAX_PIXELS,
    PointEntry,
    format_points,
    parse_points,
    qwen_model_size,
    smart_resize,
)

W, H = 640, 480


def pts(text, fmt, w=W, h=H, **kw):
    p = parse_points(text, fmt, w, h, **kw)
    return p, p.points_px.tolist()


# ---------------------------------------------------------------- Molmo 1 (percent of W, H)


def test_molmo_single_point_percent():
    p, xy = pts('<point x="50" y="25" alt="mug">mug</point>', "molmo")
    assert p.ok and p.format == "molmo" and p.reason is None
    # area frame: 50 % of 640 is the position 320 from the left edge = pixel centre 319.5 (column 319 or 320's
    # shared border); 25 % of 480 = 120 -> 119.5
    assert xy == [[319.5, 119.5]]


def test_molmo_points_x1_y1_in_index_order_with_reasoning_around():
    text = (
        'Sure. Counting the <points x1="10" y1="10" x2="61.5" y2="40.4" x3="100" y3="100" '
        'alt="cups">cups</points> shows a total of 3.'
    )
    p, xy = pts(text, "molmo")
    assert p.ok
    assert np.allclose(xy, [[63.5, 47.5], [393.1, 193.42], [639.5, 479.5]])  # 0.615*640 - 0.5, 0.404*480 - 0.5


def test_molmo_value_above_100_is_returned_as_parsed():
    p, xy = pts('<point x="150" y="-10">x</point>', "molmo")
    assert xy == [[959.5, -48.5]]
    assert p.first.valid and not p.first.inside and p.first.reason.startswith("outside_image")


# ---------------------------------------------------------------- Molmo 2 (0-1000, triplets)


def test_molmo2_coords_triplets():
    text = 'Counting the <points coords="1 1 073 160 2 173 600" alt="boats">the boats</points> shows 2.'
    p, xy = pts(text, "molmo2")
    assert p.ok and p.format == "molmo2"
    assert np.allclose(xy, [[46.22, 76.3], [110.22, 287.5]])  # 0.073*640 - 0.5, 0.160*480 - 0.5, ...


def test_molmo2_multi_group_and_auto_detection():
    text = '<points coords="1 1 500 500;2 1 250 750">x</points>'
    p, xy = pts(text, "auto")
    assert p.format == "molmo2"
    assert np.allclose(xy, [[319.5, 239.5], [159.5, 359.5]])


# ---------------------------------------------------------------- Gemini ([y, x] on 0-1000)


def test_gemini_y_first_in_code_fence():
    text = 'Here you go:\n```json\n[{"point": [500, 250], "label": "cup"}]\n```\nDone.'
    p, xy = pts(text, "gemini")
    assert p.ok and xy == [[159.5, 239.5]]  # u = 0.25*640 - 0.5, v = 0.5*480 - 0.5


def test_gemini_box_2d_counts_as_centre():
    # ymin 100, xmin 200, ymax 300, xmax 400 -> centre y 200, x 300 -> u 0.3*640, v 0.2*480
    _, xy = pts('[{"box_2d": [100, 200, 300, 400], "label": "box"}]', "gemini")
    assert np.allclose(xy, [[191.5, 95.5]])


def test_gemini_multiple_points_keep_order():
    p, xy = pts('[{"point": [0, 0], "label": "a"}, {"point": [1000, 1000], "label": "b"}]', "gemini")
    assert xy == [[-0.5, -0.5], [639.5, 479.5]]
    # 0 is the image's left edge (column 0, inside); 1000 its right edge (outside: column 640)
    assert [(e.valid, e.inside) for e in p.entries] == [(True, True), (True, False)]


# ---------------------------------------------------------------- Qwen2.5-VL (resized pixels)


def test_smart_resize_by_hand():
    # 1280x720: 720/28 = 25.71 -> 26*28 = 728; 1280/28 = 45.71 -> 46*28 = 1288;
    # 728*1288 = 937,664 <= 1,003,520 (28*28*1280), so no further scaling.
    assert smart_resize(720, 1280) == (728, 1288)
    assert qwen_model_size(1280, 720) == (1288, 728)
    # 1920x1080 under the processor class's max 1,003,520: rounded 1092x1932 = 2,109,744 > max;
    # beta = sqrt(2,073,600/1,003,520) = 1.43747; 1080/1.43747/28 = 26.83 -> 728; 1920/1.43747/28 = 47.70 -> 1316.
    assert smart_resize(1080, 1920, max_pixels=QWEN_PROCESSOR_CLASS_MAX_PIXELS) == (728, 1316)
    # under the released checkpoints' max 12,845,056 (the default): 1092x1932 is below it, kept
    assert smart_resize(1080, 1920) == (1092, 1932)
    # 40x40: rounds to 28x28 = 784 < 3136; beta = sqrt(3136/1600) = 1.4; ceil(56/28)*28 = 56.
    assert smart_resize(40, 40) == (56, 56)
    with pytest.raises(ValueError):
        smart_resize(10, 640)


def test_qwen_point_2d_rescaled_from_resized_image():
    # 1280x720 is seen as 1288x728: x 644 -> 644*1280/1288 = 640.0 from the left edge -> 639.5;
    # y 364 -> 364*720/728 = 360.0 -> 359.5
    p, xy = pts('```json\n[{"point_2d": [644, 364], "label": "cup"}]\n```', "qwen", 1280, 720)
    assert p.ok and np.allclose(xy, [[639.5, 359.5]])


def test_qwen_explicit_model_size_and_xml_form():
    _, xy = pts('<points x1="100" y1="50" alt="a">a</points>', "qwen", 640, 480, model_size=(320, 240))
    assert xy == [[199.5, 99.5]]  # 100*2 - 0.5, 50*2 - 0.5


def test_qwen_bbox_2d_centre():
    _, xy = pts('[{"bbox_2d": [10, 20, 30, 40], "label": "x"}]', "qwen", 640, 480, model_size=(640, 480))
    assert xy == [[19.5, 29.5]]


# ---------------------------------------------------------------- RoboPoint (0-1) and xy_pixels


def test_robopoint_tuples():
    p, xy = pts("The free space is at [(0.5, 0.25), (0.1, 0.9)].", "robopoint")
    assert p.ok and np.allclose(xy, [[319.5, 119.5], [63.5, 431.5]])


def test_xy_pixels_forms():
    assert pts("[320, 120]", "xy_pixels")[1] == [[320.0, 120.0]]
    assert pts("[[1, 2], [3, 4]]", "xy_pixels")[1] == [[1.0, 2.0], [3.0, 4.0]]
    assert pts('{"point": [5, 6]}', "xy_pixels")[1] == [[5.0, 6.0]]
    assert pts('[{"point": [5, 6]}, {"point": [7, 8]}]', "xy_pixels")[1] == [[5.0, 6.0], [7.0, 8.0]]
    assert pts("The cup is at [100, 200], [300, 400].", "xy_pixels")[1] == [[100.0, 200.0], [300.0, 400.0]]
    assert pts('[{"x": 3, "y": 4.5}]', "xy_pixels")[1] == [[3.0, 4.5]]


def test_brackets_inside_json_strings_do_not_confuse_the_scan():
    text = 'Answer: [{"point": [500, 250], "label": "a ] odd [ label with \\" quote"}] ok'
    assert pts(text, "gemini")[1] == [[159.5, 239.5]]


def test_xy_pixels_model_size_rescales():
    # image sent downscaled to 320x240; the model's pixel centre [160, 60] is centre to centre
    # ((160 + 0.5) * 2 - 0.5, (60 + 0.5) * 2 - 0.5) = (320.5, 120.5) in the 640x480 original
    assert pts("[160, 60]", "xy_pixels", model_size=(320, 240))[1] == [[320.5, 120.5]]


def test_chain_of_thought_last_answer_wins():
    text = (
        "The image is 640 by 480. The mug looks like it is near [[10, 10]] at first, but looking "
        "again the handle is to the right.\nAnswer: [[500, 300]]"
    )
    assert pts(text, "xy_pixels")[1] == [[500.0, 300.0]]


# ---------------------------------------------------------------- auto, garbage


def test_auto_never_guesses_between_gemini_and_xy_pixels_for_an_object():
    for text in ('[{"point": [100, 200]}]', '{"point": [100, 200]}'):
        p = parse_points(text, "auto", W, H)
        assert not p.ok and p.reason.startswith("unparseable: ambiguous")
        assert p.points_px.shape == (0, 2)


def test_auto_reads_a_bare_pair_as_pointarenas_standard_pixel_answer():
    # PointArena sec. 4.1: models without their own format answer [x, y] in pixels
    p = parse_points("[260, 650]", "auto", 1000, 800)
    assert p.ok and p.format == "xy_pixels" and p.points_px.tolist() == [[260.0, 650.0]]
    p = parse_points("The points are [[1, 2], [3, 4]].", "auto", W, H)
    assert p.format == "xy_pixels" and p.points_px.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_auto_reads_self_identifying_forms():
    assert parse_points('<point x="50" y="50">a</point>', "auto", W, H).format == "molmo"
    p = parse_points('[{"point_2d": [644, 364]}]', "auto", 1280, 720)
    assert p.format == "qwen" and np.allclose(p.points_px, [[639.5, 359.5]])
    assert parse_points("no idea", "auto", W, H).reason.startswith("unparseable: no self-identifying")


@pytest.mark.parametrize("fmt", POINT_FORMATS)
@pytest.mark.parametrize(
    "text",
    [
        "",
        "I cannot find it.",
        "[x, y]",
        "{'point': }",
        "<point x=>",
        "[NaN, NaN]",
        "]]]{{{[[[",
        "(a, b)",
        '<points coords="">x</points>',
        "\x00\xff" * 50,
        "[" * 20000,
        "[1," * 5000,
        "[" * 2000 + "]" * 2000,
        '{"a":' * 3000,
    ],
)
def test_garbage_never_raises(fmt, text):
    p = parse_points(text, fmt, W, H)
    assert not p.ok and p.reason.startswith("unparseable:") and p.points_px.shape == (0, 2)
    assert p.points_px.dtype == np.float64


def test_nan_points_dropped_finite_kept():
    assert pts("[[NaN, 1], [2, 3]]", "xy_pixels")[1] == [[2.0, 3.0]]
    assert parse_points("[Infinity, 3]", "xy_pixels", W, H).reason == "unparseable: non-finite coordinates"


def test_overlong_answer_is_refused():
    p = parse_points("[1, 2]" + " " * 200_000, "xy_pixels", W, H)
    assert not p.ok and p.reason.startswith("unparseable: answer too long")


def test_negative_points_returned_as_parsed():
    assert pts("[-5, 700]", "xy_pixels")[1] == [[-5.0, 700.0]]


def test_caller_errors_raise():
    with pytest.raises(ValueError):
        parse_points("[1, 2]", "pixels", W, H)
    with pytest.raises(ValueError):
        parse_points("[1, 2]", "xy_pixels", 0, H)
    with pytest.raises(ValueError):
        format_points([[1, 2]], "auto", W, H)
    with pytest.raises(ValueError):
        format_points([[np.nan, 2]], "molmo", W, H)


# ---------------------------------------------------------------- round trips

# Rounding of each written form, in pixels of a 640x480 image: Molmo 0.05 % -> 0.32 px; 0-1000
# integers -> 0.5/1000*640 = 0.32 px; RoboPoint 0.0005*640 = 0.32 px; xy_pixels 0.05 px;
# Qwen integer resized pixels -> 0.5 * 640/644 < 0.5 px.
ROUND_PX = {
    "molmo": 0.33,
    "molmo2": 0.33,
    "gemini": 0.33,
    "grid1000": 0.33,
    "qwen3": 0.33,
    "robopoint": 0.33,
    "xy_pixels": 0.051,
    "qwen": 0.5,
}


@pytest.mark.parametrize("fmt", [f for f in POINT_FORMATS if f != "auto"])
def test_round_trip_every_format(fmt):
    src = np.array([[320.0, 120.0], [10.5, 400.25], [639.0, 0.0]])
    text = format_points(src, fmt, W, H, label='a "mug"')
    back = parse_points(text, fmt, W, H)
    assert back.ok and back.format == fmt
    assert back.points_px.shape == (3, 2)
    assert np.max(np.abs(back.points_px - src)) <= ROUND_PX[fmt]
    one = parse_points(format_points(src[:1], fmt, W, H), fmt, W, H)
    assert np.max(np.abs(one.points_px - src[:1])) <= ROUND_PX[fmt]


def test_written_forms_by_hand():
    # pixel centre (320, 120) is the area position (320.5, 120.5): 50.078 %, 25.104 % -> 50.1, 25.1
    assert format_points([[320, 120]], "molmo", W, H, label="mug") == '<point x="50.1" y="25.1" alt="mug">mug</point>'
    assert format_points([[320, 120]], "molmo2", W, H, label="mug") == '<points coords="1 1 501 251">mug</points>'
    # (160.5/640, 240.5/480) = (0.25078, 0.50104) -> x 251, y 501 on 0-1000, y first
    assert format_points([[160, 240]], "gemini", W, H, label="mug") == '[{"point": [501, 251], "label": "mug"}]'
    assert format_points([[160, 240]], "grid1000", W, H) == "[(251, 501)]"
    assert format_points([[639, 479]], "grid1000", W, H) == "[(999, 999)]"  # 999.2 -> 999, never 1000
    assert format_points([[320, 120]], "robopoint", W, H) == "[(0.501, 0.251)]"
    # 1280x720 -> 1288x728: 640.5/1280*1288 = 644.503 -> 645; 360.5/720*728 = 364.506 -> 365
    assert (
        format_points([[640, 360]], "qwen", 1280, 720, label="c")
        == '```json\n[{"point_2d": [645, 365], "label": "c"}]\n```'
    )
    assert format_points([], "gemini", W, H) == "There are none."


# ---------------------------------------------------------------- adversarial answers (Breaker-A)


@pytest.mark.parametrize("fmt", ["qwen", "auto"])
def test_qwen_answer_on_an_image_qwen_cannot_resize_is_a_recorded_failure(fmt):
    # Qwen2.5-VL's smart_resize refuses a side under 28 px; the model's text must not make
    # parse_points raise (under auto the point_2d text itself selects Qwen).
    r = parse_points('{"point_2d": [5, 5]}', fmt, 20, 20)
    assert not r.ok and r.points_px.shape == (0, 2) and r.format == "qwen"
    assert r.reason.startswith("unparseable:") and "20x20" in r.reason
    # with the model size given, the same answer parses: (14, 7) of a 28x28 frame on a 20x20 image is
    # the position (10, 5) from the corner, pixel centre (9.5, 4.5)
    ok = parse_points('{"point_2d": [14, 7]}', fmt, 20, 20, model_size=(28, 28))
    assert ok.ok and ok.points_px.tolist() == [[9.5, 4.5]]


@pytest.mark.parametrize(
    "text,fmt",
    [
        ('<point x="1_000" y="50">m</point>', "molmo"),  # float() would read 1000 (-> 6400 px)
        ('<point x="\u0661\u0662" y="50">m</point>', "molmo"),  # Arabic-Indic 12
        ('<points coords="1 1 \u0661\u0660\u0660 \u0662\u0660\u0660">m</points>', "molmo2"),
        ("[(\u0660.5, 0.5)]", "robopoint"),
    ],
)
def test_numbers_must_be_ascii_as_the_formats_write_them(text, fmt):
    r = parse_points(text, fmt, W, H)
    assert not r.ok and r.reason.startswith("unparseable:")


def test_adversarial_answers_are_linear_not_quadratic():
    # "[" + "(" * 199000 made the tuple-list regex backtrack quadratically (four minutes). Run in
    # a subprocess with a generous bound: this catches a hang, it does not measure speed.
    import subprocess
    import sys

    # also: "(" + 199000 digits (the number pattern, 21 s at 32000), an unclosed fence followed by a
    # long language tag or by newlines (minutes at 199000)
    code = (
        "from pointlab.benchmark.points import parse_points\n"
        "n = 199000\n"
        "for t in ('[' + '(' * n, '(' + '1' * n + 'x', '```' + 'a' * n, '```' + '\\n' * n + 'x'):\n"
        "    for f in ('xy_pixels', 'robopoint', 'gemini'):\n"
        "        assert not parse_points(t, f, 640, 480).ok\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_tuples_inside_the_last_list_still_win():
    text = "I considered [(0.1, 0.1)] first, then [see (0.9, 0.9)] and finally [(0.5, 0.25), (0.75, 0.5)]"
    r = parse_points(text, "robopoint", W, H)
    assert r.points_px.tolist() == [[319.5, 119.5], [479.5, 239.5]]


@pytest.mark.parametrize("fmt", ["molmo", "auto"])
def test_molmo_tag_cut_off_by_the_token_limit_still_has_its_point(fmt):
    # the maintainers' extract_points needs only x="" y=""; 61.5 % of 640 = 393.6, 40.4 % of 480 = 193.92
    r = parse_points('<point x="61.5" y="40.4" alt="mu', fmt, W, H)
    assert r.ok and r.format == "molmo" and np.allclose(r.points_px, [[393.1, 193.42]])
    # a value cut in half is not read: y="5 could have been 55
    assert not parse_points('<point x="50" y="5', fmt, W, H).ok


@pytest.mark.parametrize(
    "text",
    [
        '```json\n[{"point": [500, 250]}]\n```',
        '``` json [{"point": [500, 250]}]```',
        '```[{"point": [500, 250]}]```',
        'Reasoning [{"point": [1, 1]}]\n```JSON\n[{"point": [500, 250]}]```',
    ],
)
def test_fenced_json_forms_after_the_fence_fix(text):
    assert parse_points(text, "gemini", W, H).points_px.tolist() == [
        [159.5, 239.5]
    ]  # x 250/1000*640 - 0.5, y 500/1000*480 - 0.5


# ---------------------------------------------------------------- the image-area convention (issue 12)


def test_gemini_999_is_the_last_column_not_outside():
    # 999/1000 of 320 px = 319.68 from the left edge: column floor(319.68) = 319, inside the image
    p = parse_points('[{"point": [500, 999]}]', "gemini", 320, 240)
    assert p.first.inside and p.first.u_px == pytest.approx(319.18)
    assert np.floor(p.first.u_px + 0.5) == 319


def test_molmo_31_1_percent_is_column_99():
    # 31.1 % of 320 px = 99.52 from the left edge: column 99 (the old corner mapping put it at 100)
    p = parse_points('<point x="31.1" y="50">a</point>', "molmo", 320, 240)
    assert np.floor(p.first.u_px + 0.5) == 99


def test_grid1000_is_lmms_evals_point_bench_answer():
    p = parse_points("[(250, 500), (999, 0)]", "grid1000", 640, 480)
    assert p.points_px.tolist() == [[159.5, 239.5], [638.86, -0.5]]  # 0.25*640 - .5; 0.999*640 - .5
    assert [e.inside for e in p.entries] == [True, True]


# ---------------------------------------------------------------- entries: what the model said, in order (issue 14 #4, #5)


def test_entries_keep_invalid_points_in_the_models_order():
    p = parse_points("[[NaN, NaN], [452, 148], [700, 10]]", "xy_pixels", 640, 480)
    assert [(e.valid, e.inside, e.reason and e.reason.split(":")[0]) for e in p.entries] == [
        (False, False, "non-finite coordinate"),
        (True, True, None),
        (True, False, "outside_image"),
    ]
    assert not p.first.valid and p.first.reason == "non-finite coordinate"
    assert p.points_px.tolist() == [[452.0, 148.0], [700.0, 10.0]]  # the finite points, as before
    assert p.valid_points_px.tolist() == [[452.0, 148.0]]


@pytest.mark.parametrize(
    "fmt,template",
    [
        ("xy_pixels", "[{n}, 3]"),
        ("gemini", '[{{"point": [{n}, 3]}}]'),
        ("qwen", '[{{"point_2d": [{n}, 3]}}]'),
        ("auto", '{{"point_2d": [{n}, 3]}}'),
        ("gemini", '[{{"box_2d": [{n}, 3, 5, 6]}}]'),
        ("molmo", '<point x="{n}" y="3">a</point>'),
        ("robopoint", "[({n}, 0.5)]"),
    ],
)
def test_a_number_too_large_for_a_float_is_an_invalid_entry_not_an_overflow_error(fmt, template):
    # float(10**400) raises OverflowError; json.loads gives such an int without complaint
    p = parse_points(template.format(n="1" + "0" * 400), fmt, 640, 480)
    assert not p.ok and p.points_px.shape == (0, 2)
    assert not p.first.valid and p.first.reason == "number too large for a float"


def test_first_of_an_unparseable_answer_carries_the_parse_failure():
    p = parse_points("I cannot see it.", "xy_pixels", 640, 480)
    assert p.entries == () and not p.first.valid and p.first.reason.startswith("unparseable: no [x, y] answer")


def test_qwen_point_outside_the_assumed_resize_names_the_resize():
    # a served checkpoint resizing 1920x1080 to 1932x1092 answers [1780, 1062]; a client that assumed the
    # processor class default (1316x728) maps it to (2596, 1575): outside, and the reason says why
    p = parse_points('{"point_2d": [1780, 1062]}', "qwen", 1920, 1080, qwen_max_pixels=QWEN_PROCESSOR_CLASS_MAX_PIXELS)
    assert not p.first.inside and "1316x728" in p.first.reason and "max_pixels=1003520" in p.first.reason
    # with the checkpoint's limits (the default) the same answer is inside: 1780*1920/1932 - 0.5 = 1768.4
    q = parse_points('{"point_2d": [1780, 1062]}', "qwen", 1920, 1080)
    assert q.first.inside and q.first.reason is None and q.first.u_px == pytest.approx(1780 * 1920 / 1932 - 0.5)


def test_an_entry_has_two_json_forms_the_run_records_and_the_trials():
    # written out by hand as pointlab wrote them before the one PointEntry: a run record's entries
    # (AgentAnswer.to_dict) carry "inside"; a stored trial and the ROS answer carry the four fields
    p = parse_points("[[100, 50], [5000, 20]]", "xy_pixels", 640, 480)
    outside = "outside_image: (5000, 20) is outside the 640x480 image"
    assert [e.to_dict() for e in p.entries] == [
        {"u_px": 100.0, "v_px": 50.0, "valid": True, "reason": None, "inside": True},
        {"u_px": 5000.0, "v_px": 20.0, "valid": True, "reason": outside, "inside": False},
    ]
    assert json.dumps(p.entries[1].model_dump()) == (
        '{"u_px": 5000.0, "v_px": 20.0, "valid": true, "reason": "%s"}' % outside
    )
    back = PointEntry.model_validate({"u_px": 5000.0, "v_px": 20.0, "valid": True, "reason": outside, "inside": False})
    assert back == p.entries[1] and back.usable and not back.inside  # a run record's entry reads back too


# ---------------------------------------------------------------- reasoning models (issue: decoy in <think>)


def test_a_qwen3_thinking_answer_is_read_at_its_answer_not_at_the_decoy_in_its_reasoning():
    # the shape Qwen3-VL-*-Thinking returns through an OpenAI-compatible server without a reasoning
    # parser: the reasoning in <think>...</think>, then the JSON answer (0-1000 grid, x first)
    text = (
        "<think>\nThe user wants the red mug. A first guess:\n"
        '```json\n[{"point_2d": [100, 900], "label": "mug"}]\n```\n'
        "but that mug is blue, so not that one. The red one is on the right.\n</think>\n\n"
        '[{"point_2d": [750, 500], "label": "red mug"}]'
    )
    p, xy = pts(text, "qwen3")
    # 750 / 1000 * 640 - 0.5 = 479.5 ; 500 / 1000 * 480 - 0.5 = 239.5 (area frame)
    assert p.ok and xy == [[479.5, 239.5]]


def test_a_thinking_template_that_opened_the_block_itself_leaves_only_the_close():
    # Qwen3 "thinking" chat templates put "<think>" in the prompt: the answer holds only "</think>"
    text = "Left of the bowl, maybe [40, 30]? No: the cube is at the far right.\n</think>\n[600, 200]"
    p, xy = pts(text, "xy_pixels")
    assert p.ok and xy == [[600.0, 200.0]]


def test_a_generation_cut_off_while_thinking_has_no_point():
    p, xy = pts("<think>The cube could be at [10, 20] or", "xy_pixels")
    assert not p.ok and xy == [] and p.reason.startswith("unparseable")


def test_molmo_point_tags_are_not_taken_for_reasoning():
    p, xy = pts('<think>[5, 5]</think><point x="50" y="25" alt="mug">mug</point>', "molmo")
    assert p.ok and xy == [[319.5, 119.5]]
