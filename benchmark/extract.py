"""Answer extraction from free model text, shared by every QA benchmark (VSI-Bench/ReVSI, EgoPoint,
PinpointQA).

Models wrap answers in reasoning, markdown and units: ``"<think>...</think> B"``, ``"**B**"``,
``"B) chair"``, ``"3.5 m"``, ``"three"``. Two parser levels are offered and both are reported by
the scorers (VSI-Bench, Yang et al. 2024, and its lmms-eval task, which extract answers leniently):

* **strict** follows VSI-Bench's lmms-eval rule: the first whitespace token of the answer, with
  trailing "." removed (we also drop markdown ``*``/``_``/backticks and brackets), must be the
  answer itself (a letter, or a number).
* **lenient** searches the answer: "answer is B", "(B)", a lone option letter, the option text,
  the first number anywhere, number words ("three"), and length units converted on request.

Every function first reduces the text to its *answer part* (:func:`answer_part`): reasoning inside
``<think>...</think>`` is dropped, and when an explicit marker such as ``Answer:`` or
``Final answer:`` appears, only the text after the last marker is kept. All functions return
``None`` for an answer they cannot read (never raise on model text).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

__all__ = [
    "PARSERS",
    "answer_part",
    "strip_reasoning",
    "split_reasoning",
    "extract_yes_no",
    "parse_yes_no_strict",
    "extract_choice_letter",
    "parse_choice_strict",
    "parse_choice_lenient",
    "extract_number",
    "parse_number_strict",
    "parse_number_lenient",
    "words_to_number",
]

#: the parser levels the scorers report.
PARSERS = ("strict", "lenient")

_THINK_CLOSE = re.compile(r"</(think|thinking|reasoning)>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)
_THINK_CLOSE_OF = {name: re.compile(f"</{name}>", re.IGNORECASE) for name in ("think", "thinking", "reasoning")}
_ANSWER_TAG = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.IGNORECASE | re.DOTALL)
# "Answer:", "Final answer:", "**Answer**:", "The final answer is:" (colon required for the plain
# word "answer" so that "the answer depends" is not a marker).
# (adjacent optional "\s*" runs are folded into one each: "answer" + 4000 spaces made the old
# pattern backtrack cubically)
_ANSWER_MARKER = re.compile(
    r"(?:final\s+answer|answer)(?:\s*(?:\*\*|__))?\s*[:：](?:\s*(?:\*\*|__))?"
    r"|final\s+answer\s+is\b",
    re.IGNORECASE,
)
_MARKDOWN = re.compile(r"[*_`]+")


def split_reasoning(text: str | None) -> tuple[str, str]:
    """``(reasoning, rest)`` of a model answer: the text inside its reasoning blocks (joined by blank
    lines; what precedes a closing tag left without its opening one included) and the text outside
    them (:func:`strip_reasoning`). ``("", text)`` when there is no reasoning; ``None`` or a non-string
    gives ``("", "")``.

    One left-to-right pass: a regex ``<think>.*?</think>`` rescans to the end of the text from every
    unclosed opening tag, which is quadratic (``"<think>" * 28000`` took 20 s).
    """
    if not isinstance(text, str):
        return "", ""
    inside: list[str] = []
    out: list[str] = []
    pos = 0
    while True:
        m = _THINK_OPEN.search(text, pos)
        if m is None:
            out.append(text[pos:])
            break
        out.append(text[pos : m.start()])
        close = _THINK_CLOSE_OF[m.group(1).lower()].search(text, m.end())
        if close is None:  # cut off while reasoning: the rest is reasoning
            inside.append(text[m.end() :])
            break
        inside.append(text[m.end() : close.start()])
        out.append(" ")
        pos = close.end()
    rest = "".join(out)
    closes = list(_THINK_CLOSE.finditer(rest))
    if closes:  # the opening tag was in the prompt template
        inside.insert(0, rest[: closes[-1].start()])
        rest = rest[closes[-1].end() :]
    return "\n\n".join(x.strip() for x in inside if x.strip()), rest


def strip_reasoning(text: str | None) -> str:
    """``text`` without its reasoning: every ``<think>``/``<thinking>``/``<reasoning>`` block dropped
    (an unclosed one runs to the end: a generation cut off mid-reasoning has no answer), and when a
    closing tag is left without its opening one (servers that send the opening tag in the prompt
    template, as Qwen3 "thinking" chat templates do) only what follows the last close. Not stripped
    of spaces; ``None`` or a non-string gives ``""``.

    Reasoning mentions candidate answers and points on the way ("not the mug at [120, 80] but ..."),
    so nothing in it may be read as the answer (Qwen3 model card: the thinking content precedes
    ``</think>``; DeepSeek-R1 and QwQ write the same tags).
    """
    return split_reasoning(text)[1]


def answer_part(text: str | None) -> str:
    """The part of ``text`` that holds the answer: reasoning blocks removed (an unclosed
    ``<think>`` runs to the end: a cut-off generation has no answer), text after the last
    ``Answer:`` marker (or inside ``<answer>...</answer>``) when there is one; stripped.

    ``None`` or a non-string gives ``""``.
    """
    t = strip_reasoning(text)
    tags = _ANSWER_TAG.findall(t)
    if tags and tags[-1].strip():
        t = tags[-1]
    markers = list(_ANSWER_MARKER.finditer(t))
    if markers and t[markers[-1].end() :].strip():
        t = t[markers[-1].end() :]
    return t.strip()


def _clean_token(tok: str) -> str:
    # markdown emphasis and brackets around a token: "**B**", "(B)", "B)", "[B]", "B.", "B:"
    return _MARKDOWN.sub("", tok).strip().strip("()[]{}<>\"'").rstrip(".,:;!?").strip("()[]{}<>\"'")


def _first_token(t: str) -> str:
    # the first whitespace token once markdown is gone ("** **C**" -> "C")
    words = _MARKDOWN.sub("", t).split()
    return _clean_token(words[0]) if words else ""


# ---------------------------------------------------------------- yes / no

_YES = {"yes", "true", "correct", "right", "y"}
_NO = {"no", "false", "incorrect", "wrong", "n"}
_YES_NO_WORD = re.compile(r"\b(?:(not)\s+)?(yes|no|true|false|correct|incorrect)\b", re.IGNORECASE)


def extract_yes_no(text: str | None) -> str | None:
    """``"yes"`` or ``"no"`` from a model answer, ``None`` when it holds neither.

    True/False answers map onto the same two values ("true" -> "yes", "false" -> "no") so that
    True/False and Yes/No questions are scored the same way everywhere (EgoPoint-Bench sec. 4.2,
    PinpointQA App. B exact match). The answer's first token decides when it is a yes/no word
    ("No, it is not." -> "no"); otherwise the first yes/no/true/false/correct/incorrect word in
    the answer part does, negated by a "not" just before it ("Not correct." -> "no").
    """
    t = answer_part(text)
    if not t:
        return None
    first = _clean_token(t.split()[0]).lower()
    if first in _YES:
        return "yes"
    if first in _NO:
        return "no"
    m = _YES_NO_WORD.search(_MARKDOWN.sub("", t))
    if m is None:
        return None
    positive = m.group(2).lower() in _YES
    if m.group(1):  # "not correct", "Not true" say no; "not incorrect" says yes
        positive = not positive
    return "yes" if positive else "no"


def parse_yes_no_strict(text: str | None) -> str | None:
    """Strict yes/no parser: the first token of the answer part (markdown and punctuation removed)
    must be yes/no/true/false; ``"No, it is not."`` -> ``"no"``, ``"I think yes"`` -> ``None``."""
    return {"yes": "yes", "true": "yes", "no": "no", "false": "no"}.get(_first_token(answer_part(text)).lower())


# ---------------------------------------------------------------- multiple choice


def _letter_set(letters: str | Sequence[str]) -> list[str]:
    out = [str(x).strip().upper() for x in letters]
    if not out or any(len(x) != 1 or not x.isalpha() for x in out):
        raise ValueError(f"letters must be single letters, got {letters!r}")
    return out


def parse_choice_strict(text: str | None, letters: str | Sequence[str] = "ABCD") -> str | None:
    """Strict multiple-choice parser (VSI-Bench lmms-eval ``fuzzy_matching``): the first token of
    the answer part, markdown and brackets removed, must be one of ``letters``.

    ``"B"``, ``"B."``, ``"B)"``, ``"(B)"``, ``"**B**"``, ``"B. chair"`` -> ``"B"``;
    ``"The answer is B"`` -> ``None``. Raises ``ValueError`` only for a bad ``letters`` argument.
    """
    allowed = _letter_set(letters)
    t = answer_part(text)
    if not t:
        return None
    tok = _first_token(t)
    # "B." with the letter glued to the option text ("B.chair") is still letter B
    m = re.fullmatch(r"([A-Za-z])(?:[.):](?:\S*))?", tok)
    if m is None:
        return None
    letter = m.group(1).upper()
    # a lower-case single letter is accepted only when it cannot be an English word ("a", "i")
    if m.group(1).islower() and letter in {"A", "I"}:
        return None
    return letter if letter in allowed else None


# the keyword is case-insensitive, the letter must be a capital ("the answer is a chair" is not A)
# each whitespace run is matched by one quantifier only: "answer" + 4000 spaces + "x" took 150 s
# with "\s*(is)?\s*(option\s*)?[\s...]*" (three adjacent runs backtrack cubically)
_EXPLICIT = re.compile(
    r"(?i:answer|option|choice)(?:\s*(?i:is|would\s+be|:|=))?(?:\s*(?i:option))?[\s*_`(\[]*([A-Z])\b(?![\w'-])"
)
_BRACKETED = re.compile(r"[(\[]\s*([A-Z])\s*[)\]]")
_LINE_START = re.compile(r"(?m)^[ \t]*[*_`]*([A-Z])[*_`]*[ \t]*[.):]")  # one line: no rescans over blank lines
_BOLD = re.compile(r"(?:\*\*|__)\s*\(?([A-Z])\)?[.)]?\s*(?:\*\*|__)")
_LONE = re.compile(r"(?<![\w'-])([A-Z])(?![\w'-])")


def parse_choice_lenient(
    text: str | None, letters: str | Sequence[str] = "ABCD", options: Sequence[str] | None = None
) -> str | None:
    """Lenient multiple-choice parser: an explicit "answer/option/choice is X" (the last one),
    else the strict reading, else (in this order) a bracketed "(X)", "X." / "X)" at a line start, a bold **X**,
    the one option text the answer names (``options`` as in the released data, e.g.
    ``["A. chair", "B. table"]`` or bare ``["chair", "table"]``), else a lone capital letter when
    exactly one of ``letters`` appears alone. ``None`` when nothing or several letters qualify.
    """
    allowed = _letter_set(letters)
    t = answer_part(text)
    if not t:
        return None
    # an explicit statement beats the first token ("A chair ..., so the answer is C"); the last
    # one wins ("not A ... so the answer is B")
    explicit = [x for x in (m.group(1).upper() for m in _EXPLICIT.finditer(t)) if x in allowed]
    if explicit:
        return explicit[-1]
    strict = parse_choice_strict(t, allowed)
    if strict is not None:
        return strict
    for pattern in (_BRACKETED, _LINE_START, _BOLD):
        found = [x for x in (m.group(1).upper() for m in pattern.finditer(t)) if x in allowed]
        if found:
            return found[-1]
    if options:
        by_text = _match_option_text(t, allowed, options)
        if by_text is not None:
            return by_text
    lone = {m.group(1) for m in _LONE.finditer(t)} & set(allowed)
    # "A" alone is usually the article; count it only when no other letter competes and the
    # answer is short (a bare "A" is strict-parsed above).
    if len(lone) == 1:
        letter = lone.pop()
        if letter != "A" or len(t.split()) <= 3:
            return letter
    return None


def _match_option_text(t: str, allowed: list[str], options: Sequence[str]) -> str | None:
    low = f" {re.sub(r'[^a-z0-9]+', ' ', t.lower())} "
    hits = []
    for i, opt in enumerate(options):
        m = re.match(r"\s*([A-Za-z])[.)]\s*(.*)", str(opt))
        letter, body = (m.group(1).upper(), m.group(2)) if m else (allowed[i] if i < len(allowed) else None, str(opt))
        body_norm = re.sub(r"[^a-z0-9]+", " ", body.lower()).strip()
        if letter in allowed and body_norm and f" {body_norm} " in low:
            hits.append((letter, body_norm))
    if not hits:
        return None
    # one option named, or one whose text contains every other hit ("red chair" vs "chair")
    hits.sort(key=lambda h: -len(h[1]))
    top_letter, top_body = hits[0]
    if all(f" {body} " in f" {top_body} " for _, body in hits[1:]):
        return top_letter
    return None


def extract_choice_letter(
    text: str | None, letters: str | Sequence[str] = "ABCD", options: Sequence[str] | None = None
) -> str | None:
    """The option letter a model answer names (lenient reading, see :func:`parse_choice_lenient`),
    upper case, or ``None``. Raises ``ValueError`` only for a bad ``letters`` argument."""
    return parse_choice_lenient(text, letters, options)


# ---------------------------------------------------------------- numbers

_UNITS_WORDS = {
    "zero": 0,
    "none": 0,
    "one": 1,
    "a": 1,
    "an": 1,
    "single": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS_WORDS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_NUMBER_WORD = re.compile(
    r"\b(?:(?:" + "|".join(_TENS_WORDS) + r")(?:[\s-]+(?:one|two|three|four|five|six|seven|eight|nine))?"
    r"|(?:(?:a\s+)?dozen)|(?:" + "|".join(k for k in _UNITS_WORDS if k not in {"a", "an", "single", "none"}) + r"))"
    r"(?:\s+hundred(?:\s+(?:and\s+)?\w+(?:-\w+)?)?)?\b",
    re.IGNORECASE,
)

# metres per unit, for converting a length the model wrote in another unit
_LENGTH_M = {
    "m": 1.0,
    "meter": 1.0,
    "meters": 1.0,
    "metre": 1.0,
    "metres": 1.0,
    "cm": 0.01,
    "centimeter": 0.01,
    "centimeters": 0.01,
    "centimetre": 0.01,
    "centimetres": 0.01,
    "mm": 0.001,
    "millimeter": 0.001,
    "millimeters": 0.001,
    "millimetre": 0.001,
    "millimetres": 0.001,
    "km": 1000.0,
    "in": 0.0254,
    "inch": 0.0254,
    "inches": 0.0254,
    "ft": 0.3048,
    "foot": 0.3048,
    "feet": 0.3048,
}
_NUMBER_TEXT = r"[-+]?(?:(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"
# a number, not inside a word or an identifier ("frame_00003", "v2"), with the word after it
_NUMBER = re.compile(r"(?<![\w.])(" + _NUMBER_TEXT + r")(?:\s*([A-Za-z]+)\b)?")


def words_to_number(phrase: str) -> float | None:
    """An English number phrase to its value: ``"three"`` -> 3, ``"twenty-one"`` -> 21,
    ``"two hundred and five"`` -> 205, ``"a dozen"`` -> 12; ``None`` when it is not one."""
    tokens = [w for w in re.split(r"[\s-]+", phrase.strip().lower()) if w and w != "and"]
    if not tokens:
        return None
    total, current, seen = 0, 0, False
    for w in tokens:
        if w in _UNITS_WORDS:
            current += _UNITS_WORDS[w]
        elif w in _TENS_WORDS:
            current += _TENS_WORDS[w]
        elif w == "dozen":
            current = max(current, 1) * 12
        elif w == "hundred":
            current = max(current, 1) * 100
        elif w == "thousand":
            total += max(current, 1) * 1000
            current = 0
        else:
            return None
        seen = True
    return float(total + current) if seen else None


def _to_float(s: str) -> float | None:
    try:
        v = float(s.replace(",", ""))
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def parse_number_strict(text: str | None) -> float | None:
    """Strict numeric parser (VSI-Bench lmms-eval ``to_float(fuzzy_matching(pred))``): the first
    token of the answer part, markdown removed and a unit glued to it ignored (``"3.5m"``), must
    be a number. ``"3.5 m"`` -> 3.5; ``"about 3"`` -> ``None``; ``"three"`` -> ``None``."""
    t = answer_part(text)
    if not t:
        return None
    tok = _first_token(t)
    m = re.fullmatch(r"(" + _NUMBER_TEXT + r")[A-Za-z²³]*", tok)
    return _to_float(m.group(1)) if m else None


def parse_number_lenient(text: str | None, unit: str | None = None) -> float | None:
    """Lenient numeric parser: the first number in the answer part, digits (``"about 3.5 m"``,
    ``"1,200"``) or English words (``"three"``, ``"twenty-one"``), whichever comes first.

    With ``unit`` (``"m"`` or ``"cm"``; a length unit of :data:`_LENGTH_M`), a number followed by
    a length unit is converted into ``unit`` (``"120 cm"`` with ``unit="m"`` -> 1.2; ``"in"`` is
    inches only when no word follows it: ``"5 in total"`` is 5); a number without a unit is
    returned as written. ``"None"`` / ``"There are none."`` alone is 0. ``None`` when the text
    holds no number.
    Raises ``ValueError`` for an unknown ``unit``.
    """
    if unit is not None and unit not in _LENGTH_M:
        raise ValueError(f"unknown length unit {unit!r}")
    t = _MARKDOWN.sub("", answer_part(text))
    if not t:
        return None
    best: tuple[int, float, str | None, int] | None = None  # (start, value, word after, end of that word)
    m = _NUMBER.search(t)
    if m is not None:
        v = _to_float(m.group(1))
        if v is not None:
            best = (m.start(), v, m.group(2), m.end())
    w = _NUMBER_WORD.search(t)
    if w is not None and (best is None or w.start() < best[0]):
        v = words_to_number(w.group(0))
        if v is not None:
            after = re.match(r"\s*([A-Za-z]+)\b", t[w.end() :])
            best = (w.start(), v, after.group(1) if after else None, w.end() + (after.end() if after else 0))
    if best is None:
        # "None." / "There are none" is a count of zero (ReVSI counts on dummy videos, gt 0)
        return 0.0 if _NONE_ANSWER.fullmatch(t.strip().rstrip(".!")) else None
    _, value, unit_word, end = best
    if unit is not None and unit_word is not None and _is_length_unit(unit_word, t[end:]):
        value = value * _LENGTH_M[unit_word.lower()] / _LENGTH_M[unit]
    return value


# "in" is a preposition far more often than inches: "5 in total", "3 in the room"
_PREPOSITION_AFTER_IN = re.compile(r"\s+[A-Za-z]")
_NONE_ANSWER = re.compile(r"(?:there\s+(?:are|is)\s+)?none(?:\s+(?:at\s+all|visible|of\s+them))?", re.IGNORECASE)


def _is_length_unit(word: str, rest: str) -> bool:
    """``word`` (written after a number) is a length unit; ``in`` only when no word follows it."""
    w = word.lower()
    if w not in _LENGTH_M:
        return False
    return not (w == "in" and _PREPOSITION_AFTER_IN.match(rest))


def extract_number(text: str | None, unit: str | None = None, *, strict: bool = False) -> float | None:
    """A number from a model answer: :func:`parse_number_strict` when ``strict`` else
    :func:`parse_number_lenient` (with optional length-unit conversion into ``unit``)."""
    return parse_number_strict(text) if strict else parse_number_lenient(text, unit)
