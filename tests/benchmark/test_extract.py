"""Answer extraction: hand-written model answers and the value a reader would take from each."""

import pytest

from pointlab.benchmark.extract import (
    answer_part,
    extract_choice_letter,
    extract_number,
    extract_yes_no,
    parse_choice_lenient,
    parse_choice_strict,
    parse_number_lenient,
    parse_number_strict,
    words_to_number,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<think>The chair is left of the sofa, so not B.</think> C", "C"),
        ("<think>\nlet me look at frame 3... A or B?\n</think>\n\n**B**", "**B**"),
        ("Reasoning: the table is 2 m away, the sofa 4 m.\nAnswer: sofa", "sofa"),
        ("Step 1 ... Final answer: 3.5 m", "3.5 m"),
        ("<answer>D</answer>", "D"),
        ("okay so I think</think>A", "A"),
        ("the answer depends on the view", "the answer depends on the view"),
        (None, ""),
    ],
)
def test_answer_part(text, expected):
    assert answer_part(text) == expected


@pytest.mark.parametrize(
    "text, strict, lenient",
    [
        ("B", "B", "B"),
        ("B)", "B", "B"),
        ("(B)", "B", "B"),
        ("**B**", "B", "B"),
        ("B. table", "B", "B"),
        ("b", "B", "B"),
        ("The answer is B.", None, "B"),
        ("I would pick option (C) because it is closest.", None, "C"),
        ("<think>A seems wrong; the stove is farther.</think>\nAnswer: D", "D", "D"),
        ("Looking at the frames, the sofa is closest.\n**Answer:** **C**", "C", "C"),
        ("E", None, None),  # not an allowed letter
        ("A or B, hard to say", "A", "A"),  # strict takes the first token, as lmms-eval does
        ("I cannot tell from these frames.", None, None),
        ("", None, None),
    ],
)
def test_choice_strict_and_lenient(text, strict, lenient):
    assert parse_choice_strict(text, "ABCD") == strict
    assert parse_choice_lenient(text, "ABCD") == lenient


def test_choice_by_option_text():
    options = ["A. chair", "B. sofa", "C. tv", "D. stove"]
    assert extract_choice_letter("It is the sofa.", options=options) == "B"
    assert extract_choice_letter("Either the sofa or the tv.", options=options) is None
    assert extract_choice_letter("It is the sofa.") is None


def test_choice_letters_a_to_e_and_bad_letters():
    assert extract_choice_letter("E)", letters="ABCDE") == "E"
    with pytest.raises(ValueError):
        extract_choice_letter("A", letters=["AB"])


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Yes", "yes"),
        ("yes.", "yes"),
        ("**No**", "no"),
        ("No, it is not edible.", "no"),
        ("True", "yes"),
        ("false", "no"),
        ("<think>no idea... yes?</think>No", "no"),
        ("I think the answer is yes.", "yes"),
        ("Answer: False", "no"),
        ("It is hard to know", None),
        ("", None),
        (None, None),
        ("Nothing here", None),
    ],
)
def test_yes_no(text, expected):
    assert extract_yes_no(text) == expected


@pytest.mark.parametrize(
    "text, strict, lenient",
    [
        ("3.5", 3.5, 3.5),
        ("3.5 m", 3.5, 3.5),
        ("3.5m", 3.5, 3.5),
        ("**4**", 4.0, 4.0),
        ("three", None, 3.0),
        ("There are three chairs.", None, 3.0),
        ("About 2.4 meters", None, 2.4),
        ("1,200 cm", 1200.0, 1200.0),
        ("-0.5", -0.5, -0.5),
        ("<think>maybe 7 or 8 chairs</think>\n5", 5.0, 5.0),
        ("I count twenty-one books", None, 21.0),
        ("scene frame_00003 shows 2 chairs", None, 2.0),
        ("no number here", None, None),
    ],
)
def test_numbers(text, strict, lenient):
    assert parse_number_strict(text) == strict
    assert parse_number_lenient(text) == lenient


def test_number_unit_conversion():
    assert parse_number_lenient("120 cm", unit="m") == pytest.approx(1.2)
    assert parse_number_lenient("1.5 meters", unit="cm") == pytest.approx(150.0)
    assert parse_number_lenient("3 ft", unit="m") == pytest.approx(0.9144)
    assert parse_number_lenient("85", unit="cm") == 85.0  # no unit written: as is
    assert extract_number("two metres", unit="cm") == pytest.approx(200.0)
    assert extract_number("3.5 m", strict=True) == 3.5
    with pytest.raises(ValueError):
        parse_number_lenient("3", unit="parsec")


def test_words_to_number():
    assert words_to_number("two hundred and five") == 205.0
    assert words_to_number("a dozen") == 12.0
    assert words_to_number("zero") == 0.0
    assert words_to_number("chair") is None


def test_article_is_not_a_number_or_a_letter():
    assert parse_number_lenient("I see a chair") is None
    assert parse_number_lenient("a dozen chairs") == 12.0
    assert parse_choice_lenient("A chair and a table are visible, so the answer is C") == "C"
    assert parse_choice_lenient("The answer is a chair, option B") == "B"
    assert parse_choice_lenient("The answer is a chair") is None


def test_yes_no_strict():
    from pointlab.benchmark.extract import parse_yes_no_strict

    assert parse_yes_no_strict("No, it is not.") == "no"
    assert parse_yes_no_strict("**True**") == "yes"
    assert parse_yes_no_strict("I think yes") is None
    assert parse_yes_no_strict(None) is None


# ---------------------------------------------------------------- adversarial answers (Breaker-A)


@pytest.mark.parametrize(
    "text,unit,expected",
    [
        ("5 in total", "cm", 5.0),  # was 12.7 (5 inches)
        ("I count 5 in the room", "m", 5.0),  # was 0.127
        ("12 in the room", "cm", 12.0),
        ("12 in", "cm", 30.48),  # inches when nothing follows: 12 * 2.54
        ("It is 12 in.", "cm", 30.48),
        ("3 m in length", "cm", 300.0),
    ],
)
def test_in_is_inches_only_at_the_end(text, unit, expected):
    assert parse_number_lenient(text, unit) == pytest.approx(expected)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("None", 0.0),
        ("none.", 0.0),
        ("There are none.", 0.0),
        ("**None**", 0.0),
        ("none of them: 5", 5.0),  # a number still wins
        ("I see no chairs", None),
        ("no idea", None),
    ],
)
def test_none_alone_is_a_count_of_zero(text, expected):
    # ReVSI scores counts on dummy videos against ground truth 0: "None." is the right answer there
    assert parse_number_lenient(text) == expected
    assert parse_number_strict(text) is None  # strict (VSI-Bench) reads only a leading number


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Not correct.", "no"),
        ("That is not true", "no"),
        ("not incorrect", "yes"),
        ("It is correct", "yes"),
    ],
)
def test_negated_yes_no_words(text, expected):
    assert extract_yes_no(text) == expected


@pytest.mark.parametrize("text", ["<think>I count 5 chairs, so", "<think>It is option B because"])
def test_cut_off_reasoning_has_no_answer(text):
    # a generation that stopped inside <think> has no answer; reading "5" from the reasoning is wrong
    assert answer_part(text) == ""
    assert parse_number_lenient(text) is None and parse_choice_lenient(text) is None


def test_many_unclosed_think_tags_are_linear_not_quadratic():
    # "<think>" * 28000 made the block regex rescan to the end from every tag (20 s; 60000: minutes).
    # Subprocess with a generous bound: this catches a hang, it does not measure speed.
    import subprocess
    import sys

    code = (
        "from pointlab.benchmark.extract import parse_number_lenient, parse_choice_lenient\n"
        "t = '<think>' * 60000 + ' 5'\n"
        "assert parse_number_lenient(t) is None and parse_choice_lenient(t) is None\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<think>a</think><THINK>b</THINK> C", "C"),
        ("<think><think>nested</think></think> D", "D"),
        ("<reasoning>x</think> still reasoning", ""),
        ("B <think>cut off", "B"),
    ],
)
def test_reasoning_blocks_by_hand(text, expected):
    assert answer_part(text) == expected


def test_long_whitespace_after_answer_is_linear_not_cubic():
    # "answer" + 4000 spaces + "x" took 150 s: three adjacent optional whitespace runs in the
    # explicit-answer pattern backtracked cubically. Subprocess with a generous bound (a hang check).
    import subprocess
    import sys

    code = (
        "from pointlab.benchmark.extract import parse_choice_lenient, parse_number_lenient, answer_part\n"
        "for t in ['answer' + ' ' * 6000 + 'x', 'Answer' + ' ' * 6000 + ': B', '\\n' * 200000 + 'x']:\n"
        "    parse_choice_lenient(t, 'ABCD', ['A. x', 'B. y']); parse_number_lenient(t)\n"
        "assert parse_choice_lenient('Answer' + ' ' * 6000 + ': B') == 'B'\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The answer is option C", "C"),
        ("Answer: ** B **", "B"),
        ("choice = (D)", "D"),
        ("  C) sofa\nbecause", "C"),
        ("**Answer:**\n\nB", "B"),
    ],
)
def test_explicit_and_line_start_forms_still_read(text, expected):
    assert parse_choice_lenient(text) == expected
