"""Point formats: parse what models write into original-image pixels, and write points back.

Every model family writes points its own way (the Molmo, Gemini Robotics-ER, Qwen2.5-VL and
RoboPoint model cards; PointArena sec. 4.1: a standard ``[x, y]`` pixel format for models without
their own, the model's own format for Molmo, Qwen2.5-VL and Gemini). The format names below are used
everywhere (agents config, CLI, prediction files). Verified syntaxes and their sources are listed in
``docs/models.md``.

=============  ==========================================================================  =========
name           what the model writes                                                       frame
=============  ==========================================================================  =========
``molmo``      ``<point x="61.5" y="40.4" alt="..">..</point>``,                            percent
               ``<points x1="" y1="" x2="" y2="" alt="..">..</points>``                     0-100
``molmo2``     ``<points coords="1 1 073 160 2 173 600">label</points>``: an image/frame   0-1000
               index, then ``index x y`` triplets (x, y zero-padded integers); groups of
               several images/frames are separated by ``;``, tab, ``,`` or ``:``
``gemini``     JSON ``[{"point": [y, x], "label": ..}]`` (**y first**); a                   0-1000
               ``"box_2d": [ymin, xmin, ymax, xmax]`` answer counts as its centre
``grid1000``   ``[(x, y), ...]`` integers on a 1000 x 1000 grid (lmms-eval's Point-Bench    0-1000
               prompt: "integers between 0 and 999 ... scaled to a 1000x1000 grid")
``qwen``       JSON ``[{"point_2d": [x, y], "label": ..}]`` (also ``bbox_2d`` -> centre) or  the resized
               Qwen's XML ``<points x1="" y1="" alt="">..</points>``                       image
``qwen3``      Qwen3-VL / Qwen2-VL: the same JSON, x first, on a 0-1000 grid               0-1000
``robopoint``  ``[(x, y), ...]``                                                           0-1
``xy_pixels``  ``[x, y]``, ``[[x, y], ...]``, ``{"point": [x, y]}``, ``{"x": x, "y": y}``,    pixels
               or a list of those objects
=============  ==========================================================================  =========

``auto`` accepts forms that identify themselves: Molmo 2 ``coords=``, Molmo ``<point(s) x..>``
tags (read as Molmo percent; Qwen's XML form must be named ``qwen``), and ``point_2d`` (read as
Qwen2.5-VL resized pixels); and bare JSON ``[x, y]`` / ``[[x, y], ...]`` lists, read as ``xy_pixels``
(PointArena sec. 4.1: the standard answer format of models without their own; Gemini writes objects,
never bare lists). It never guesses between ``gemini`` and ``xy_pixels`` for an object:
``{"point": [a, b]}`` under ``auto`` is ``"unparseable: ambiguous, name the format"``.

Conventions (docs/models.md "Pixel conventions"):

- Output pixels ``(u, v)`` = (column, row) of the ORIGINAL image, float64, continuous with pixel
  centres at integers (docs/architecture.md): pixel column ``c`` covers ``[c - 0.5, c + 0.5)``.
- **Area frames** (Molmo percent, Molmo 2 / Gemini / grid1000 per mille, RoboPoint 0-1, and Qwen's
  resized image) span the image's area ``[0, W) x [0, H)``: a value ``x`` on a frame ``S`` wide is
  the position ``x * W / S`` from the left edge, i.e. ``u = x * W / S - 0.5``, and it lies in pixel
  column ``floor(x * W / S)``. So Gemini ``x = 999`` on a 320-px image is column 319 (inside), and
  Molmo ``x = 31.1`` is column 99. PointArena's reference evaluator maps these the same way
  (``int(x / 1000 * W)``).
- **Pixel frames** (``xy_pixels``): a value names a pixel centre, ``u = x`` (with ``model_size``,
  centre to centre: ``u = (x + 0.5) * W / w_sent - 0.5``).
- Every number the model wrote is kept as an **entry** in the model's order (``ParsedPoints.entries``):
  two finite numbers are a valid entry (``inside`` when within the image area, else its reason says
  ``outside_image: ...``); a number that overflows a float or a non-finite value is an invalid entry
  with its reason. ``points_px`` holds the valid entries (outside-the-image points included, as the
  scorer and targeting refuse them); ``first`` answers "is the first point valid, and if not why"
  (PointArena sec. 4.1: the first point is the answer).
- Reasoning blocks (``<think>...</think>``, ``<thinking>``, ``<reasoning>``; an unclosed one runs to
  the end) are dropped before anything is read (``extract.strip_reasoning``): a reasoning model that
  mentions a decoy point while thinking is read at its answer, not at the decoy.
- Reasoning text around the answer is tolerated: code fences are preferred, then JSON values found
  anywhere in the text; when several JSON answers appear the last one wins (a chain-of-thought
  answer comes after its reasoning), except that several bare ``[x, y]`` pairs are all kept.
- Nothing here raises on model text: a failure is ``ParsedPoints(ok=False, reason="unparseable: ...")``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from pydantic import BaseModel, ConfigDict

from .extract import strip_reasoning

__all__ = [
    "POINT_FORMATS",
    "AREA_FRAME_FORMATS",
    "PointEntry",
    "ParsedPoints",
    "parse_points",
    "format_points",
    "smart_resize",
    "qwen_model_size",
    "inside_image",
    "MAX_ANSWER_CHARS",
    "QWEN_FACTOR",
    "QWEN_MIN_PIXELS",
    "QWEN_MAX_PIXELS",
    "QWEN_PROCESSOR_CLASS_MAX_PIXELS",
]

POINT_FORMATS = ("molmo", "molmo2", "gemini", "grid1000", "qwen", "qwen3", "robopoint", "xy_pixels", "auto")
#: formats whose frame spans the image area [0, W) (module docstring); ``xy_pixels`` names pixel centres.
AREA_FRAME_FORMATS = frozenset({"molmo", "molmo2", "gemini", "grid1000", "qwen", "qwen3", "robopoint"})

# Qwen2.5-VL: patch_size 14 x merge_size 2 = factor 28. The limits a served model uses are the
# checkpoint's preprocessor_config.json (Qwen/Qwen2.5-VL-*-Instruct: min_pixels 3136, max_pixels
# 12845056; vLLM and SGLang resize with them), not the Qwen2VLImageProcessor class defaults
# (max_pixels 28*28*1280 = 1003520), which a client assuming them gets wrong above ~1 MP.
QWEN_FACTOR = 28
QWEN_MIN_PIXELS = 56 * 56
QWEN_MAX_PIXELS = 12845056
QWEN_PROCESSOR_CLASS_MAX_PIXELS = 28 * 28 * 1280

# Longer answers are refused rather than scanned (a runaway generation, a corrupt prediction file).
MAX_ANSWER_CHARS = 200_000

# "\d+(?:\.\d*)?" rather than "\d+\.?\d*": the same numbers, but a long digit run that fails to
# match (a "(" then 32000 digits) no longer backtracks quadratically (21 s)
_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|NaN|inf|Infinity)"

REASON_OVERFLOW = "number too large for a float"
REASON_NON_FINITE = "non-finite coordinate"


class _Overflow(float):
    """A JSON integer too large for a float (``float(10**400)`` raises ``OverflowError``)."""


_OVERFLOW = _Overflow("inf")


class PointEntry(BaseModel):
    """One point as the model gave it, in the model's order: the one point-entry type of pointlab (the
    parser's entries, the ROS ``PointAnswer.points``, a stored trial's ``points``).

    Attributes:
        u_px, v_px: original-image pixels (float; ``(u, v)`` = column, row), or ``None`` where the model's
            number was not a finite float (overflow, NaN, infinity).
        valid: the model wrote a point: two finite numbers.
        reason: why it is not valid (``"number too large for a float"``, ``"non-finite coordinate"``); for a
            valid point outside the image, ``"outside_image: ..."`` (with the frame it was read in, and for
            Qwen the resize assumed); ``None`` for a valid point inside the image (or, for an entry made
            from bare pixels without an image size, ``bridge.trials.targeting.entries_from_points``, one
            not checked against the image yet).

    Its JSON (``model_dump``) is these four fields; ``to_dict`` (run records) adds ``inside``.
    """

    model_config = ConfigDict(frozen=True)

    u_px: float | None
    v_px: float | None
    valid: bool = True
    reason: str | None = None

    @property
    def usable(self) -> bool:
        """Valid and both coordinates finite numbers: what targeting may act on (a point outside the image
        is then refused there, ``outside_image``)."""
        return (
            self.valid
            and self.u_px is not None
            and self.v_px is not None
            and math.isfinite(self.u_px)
            and math.isfinite(self.v_px)
        )

    @property
    def pixel(self) -> tuple[float, float] | None:
        """``(u_px, v_px)`` when ``usable``, else ``None``."""
        u, v = self.u_px, self.v_px
        return (
            (u, v) if self.valid and u is not None and v is not None and math.isfinite(u) and math.isfinite(v) else None
        )

    @property
    def inside(self) -> bool:
        """Usable and inside the image area (no ``outside_image`` reason): what a mask can score."""
        return self.usable and self.reason is None

    def to_dict(self) -> dict:
        """The run records' form: the four fields and ``inside``."""
        return {**self.model_dump(), "inside": self.inside}


@dataclass(frozen=True)
class ParsedPoints:
    """The result of parsing one model answer.

    Attributes:
        points_px: ``(N, 2)`` float64, ``(u, v)`` original-image pixels of the FINITE entries, in the
            model's order (points outside the image included). Empty when not ok.
        ok: at least one finite point was found.
        format: the format actually used (for ``auto``, the detected one; ``"auto"`` if none).
        reason: ``None`` when ok, else ``"unparseable: <why>"``.
        entries: every point the model wrote, in order, invalid ones included (``PointEntry``).
    """

    points_px: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.float64))
    ok: bool = False
    format: str = "auto"
    reason: str | None = None
    entries: tuple[PointEntry, ...] = ()

    @property
    def first(self) -> PointEntry:
        """The model's first point (PointArena sec. 4.1: the answer of a non-counting item), or, when it
        wrote none, an invalid entry whose reason is the parse failure. ``first.valid`` is False for a
        non-finite or overflowing first point, whatever follows it; ``first.inside`` also needs it inside
        the image (``first.reason`` then says ``outside_image: ...``)."""
        if self.entries:
            return self.entries[0]
        return PointEntry(u_px=None, v_px=None, valid=False, reason=self.reason or "unparseable: no point")

    @property
    def valid_points_px(self) -> np.ndarray:
        """``(K, 2)`` float64 of the entries inside the image only (``PointEntry.inside``), in order."""
        good = [(e.u_px, e.v_px) for e in self.entries if e.inside]
        return np.asarray(good, dtype=np.float64).reshape(-1, 2)

    def to_dict(self) -> dict:
        """JSON-ready dict (points as lists of floats; entries with their validity and reasons)."""
        return {
            "points": [[float(u), float(v)] for u, v in self.points_px],
            "ok": self.ok,
            "format": self.format,
            "reason": self.reason,
            "entries": [e.to_dict() for e in self.entries],
        }


def inside_image(u: float, v: float, width: int, height: int) -> bool:
    """``(u, v)`` lies in the area of the pixels ``0..W-1`` x ``0..H-1``: ``-0.5 <= u < W - 0.5`` and the same
    for ``v`` (docs/architecture.md); False for non-finite values."""
    return math.isfinite(u) and math.isfinite(v) and -0.5 <= u < width - 0.5 and -0.5 <= v < height - 0.5


# --------------------------------------------------------------------------------------------
# Qwen2.5-VL resize


def smart_resize(
    height: int,
    width: int,
    factor: int = QWEN_FACTOR,
    min_pixels: int = QWEN_MIN_PIXELS,
    max_pixels: int = QWEN_MAX_PIXELS,
) -> tuple[int, int]:
    """Qwen2-VL / Qwen2.5-VL processor resize: ``(height, width) -> (h_bar, w_bar)``.

    Same arithmetic as ``transformers.models.qwen2_vl.image_processing_qwen2_vl.smart_resize``: both
    sides rounded (Python ``round``, half to even) to multiples of ``factor``; if the area exceeds
    ``max_pixels`` both sides are scaled by ``beta = sqrt(h*w / max_pixels)`` and floored to
    multiples of ``factor``; if below ``min_pixels`` scaled up and ceiled.

    Raises:
        ValueError: a side shorter than ``factor`` or an aspect ratio above 200 (as the original).
    """
    if height < factor or width < factor:
        raise ValueError(f"height:{height} or width:{width} must be larger than factor:{factor}")
    if max(height, width) / min(height, width) > 200:
        raise ValueError(
            f"absolute aspect ratio must be smaller than 200, got {max(height, width) / min(height, width)}"
        )
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def qwen_model_size(
    width: int, height: int, *, min_pixels: int = QWEN_MIN_PIXELS, max_pixels: int = QWEN_MAX_PIXELS
) -> tuple[int, int]:
    """The ``(width, height)`` Qwen2.5-VL sees for an original ``width x height`` image (see ``smart_resize``)."""
    h, w = smart_resize(height, width, QWEN_FACTOR, min_pixels, max_pixels)
    return w, h


# --------------------------------------------------------------------------------------------
# Text helpers (never raise)

# Linear on unclosed fences: the language tag is possessive ("*+", Python 3.11) and the body keeps
# its leading whitespace (JSON ignores it). "[..]*\s*\n?(.*?)```" backtracked quadratically over a
# long tag or run of newlines after an unclosed fence (9 s for 32000 newlines).
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*+(.*?)```", re.S)
# The tag may be cut off by the token limit ('<point x="61.5" y="40.4" alt="mu'): the Molmo
# maintainers' extract_points needs only the x/y attributes, so the end of the text closes a tag too.
_TAG = re.compile(r"<(points?|tracks)\b([^<>]*?)(?:/?>|\Z)", re.I)
_ATTR = re.compile(r"""([A-Za-z_][\w-]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>/]+))""")
_TUPLE = re.compile(rf"\(\s*({_NUM})\s*,\s*({_NUM})\s*\)", re.A)


_NUM_STR = re.compile(rf"(?:{_NUM})", re.A | re.I)


def _num(s: Any) -> float | None:
    """A float from a JSON value or string; None when it is not a number.

    A JSON integer too large for a float gives the ``_OVERFLOW`` marker (an infinite float subclass)
    instead of raising ``OverflowError``. Strings must be ASCII numbers (``_NUM``): Python's ``float``
    would also take ``"1_000"`` and non-ASCII digits (``"١٢"``), which no model format writes.
    """
    if isinstance(s, bool):
        return None
    if isinstance(s, int):
        try:
            return float(s)
        except OverflowError:
            return _OVERFLOW
    if isinstance(s, float):
        return s
    if isinstance(s, str) and _NUM_STR.fullmatch(s.strip()):
        value = float(s.strip())  # a long digit string gives inf, never an exception
        if math.isinf(value) and not re.search(r"inf", s, re.I):
            return _OVERFLOW  # "1e999" or 400 digits: a number too large, not an infinity the model wrote
        return value
    return None


def _json_values(text: str) -> list[Any]:
    """Every top-level JSON value (list or object) in ``text``, in order.

    Code fences are searched first: if any fence holds JSON, only fenced values count (the
    answer, not the prose around it).
    """
    fenced = [v for body in _FENCE.findall(text) for v in _scan_json(body)]
    return fenced if fenced else _scan_json(text)


_PAIRS = {"[": "]", "{": "}"}
_MAX_JSON_DEPTH = 32  # a points answer nests 3-4 deep; deeper spans are not tried (and cannot blow the stack)


def _bracket_spans(text: str) -> list[tuple[int, int, int]]:
    """Balanced ``[...]`` / ``{...}`` spans as ``(start, end, depth)``, outer spans before inner ones.

    One linear pass (strings are skipped inside brackets), so garbage such as ``[[[[...`` costs
    O(n) instead of one failed JSON decode per bracket.
    """
    spans: list[tuple[int, int, int]] = []
    stack: list[list] = []  # [start, opening char, deepest depth inside]
    in_str = esc = False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and stack:
            in_str = True
        elif ch in _PAIRS:
            stack.append([i, ch, 0])
        elif ch in "]}":
            if stack and _PAIRS[stack[-1][1]] == ch:
                start, _, inner = stack.pop()
                spans.append((start, i + 1, inner + 1))
                if stack:
                    stack[-1][2] = max(stack[-1][2], inner + 1)
            else:  # a stray closer: whatever was open cannot be JSON
                stack.clear()
    spans.sort()
    return spans


def _scan_json(text: str) -> list[Any]:
    out: list[Any] = []
    pos = 0
    for start, end, depth in _bracket_spans(text):
        if start < pos or depth > _MAX_JSON_DEPTH:
            continue
        try:
            value = json.loads(text[start:end])
        except (ValueError, RecursionError):
            continue
        out.append(value)
        pos = end
    return out


def _is_pair(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 2 and all(_num(c) is not None for c in v)


def _pair(a: Any, b: Any) -> tuple[float, float] | None:
    """``(_num(a), _num(b))``, or ``None`` unless both are numbers (callers have checked or matched
    them as numbers: the ``None`` is for the type, never taken)."""
    x, y = _num(a), _num(b)
    return None if x is None or y is None else (x, y)


def _pairs(items: Any) -> list[tuple[float, float]]:
    """``_pair`` of each two-item entry of ``items``, the non-numbers left out."""
    return [p for a, b in items if (p := _pair(a, b)) is not None]


def _pick_json_answer(
    values: list[Any], extract: Callable[[Any], list[tuple[float, float]]]
) -> list[tuple[float, float]]:
    """Apply ``extract`` to the JSON values; keep all when they are bare pairs, else the last hit."""
    hits = [(v, pts) for v in values if (pts := extract(v))]
    if not hits:
        return []
    if len(hits) > 1 and all(_is_pair(v) for v, _ in hits):
        return [p for _, pts in hits for p in pts]
    return hits[-1][1]


# --------------------------------------------------------------------------------------------
# Per-format readers. Each returns raw (x, y) numbers in the format's own frame, x first, in the
# model's order; ``_finish`` maps them into original pixels.


def _molmo_raw(text: str) -> list[tuple[float, float]]:
    """Molmo 1 tags -> (x%, y%) pairs, in order; skips Molmo 2 ``coords=`` tags."""
    out: list[tuple[float, float]] = []
    for m in _TAG.finditer(text):
        attrs = {
            k.lower(): (a if a is not None and a != "" else b if b else c) for k, a, b, c in _ATTR.findall(m.group(2))
        }
        if "coords" in attrs:
            continue
        if "x" in attrs and "y" in attrs:
            x, y = _num(attrs["x"]), _num(attrs["y"])
            if x is not None and y is not None:
                out.append((x, y))
        idx = sorted({int(k[1:]) for k in attrs if re.fullmatch(r"x\d{1,6}", k)})
        for i in idx:
            x, y = _num(attrs.get(f"x{i}")), _num(attrs.get(f"y{i}"))
            if x is not None and y is not None:
                out.append((x, y))
    return out


_COORDS = re.compile(r"""<(?:points|tracks)\b[^<>]*?\bcoords\s*=\s*["']([^"']*)["']""", re.I)
_GROUP_SEP = re.compile(r"[;\t,:]")
_TRIPLET = re.compile(r"(\d+)\s+(\d{3,4})\s+(\d{3,4})", re.A)  # ASCII digits, as Molmo 2's [0-9]


def _molmo2_raw(text: str) -> list[tuple[float, float]]:
    """Molmo 2 ``coords="FRAME IDX X Y IDX X Y ...;FRAME ..."`` -> (x, y) on 0-1000, in order.

    Each group starts with the image index (or a video timestamp), then ``index x y`` triplets.
    When a group's token count is not ``1 + 3k`` the official triplet pattern
    (``index`` + zero-padded 3-4 digit ``x`` ``y``) is used to salvage what it can.
    """
    out: list[tuple[float, float]] = []
    for m in _COORDS.finditer(text):
        for group in _GROUP_SEP.split(m.group(1)):
            toks = group.split()
            if len(toks) >= 4 and (len(toks) - 1) % 3 == 0 and all(_num(t) is not None for t in toks):
                out.extend(_pairs((toks[k + 1], toks[k + 2]) for k in range(1, len(toks), 3)))
            elif toks:
                out.extend(_pairs((t.group(2), t.group(3)) for t in _TRIPLET.finditer(" ".join(toks[1:]))))
    return out


def _objects(v: Any) -> list[dict]:
    if isinstance(v, dict):
        return [v]
    if isinstance(v, list):
        return [o for o in v if isinstance(o, dict)]
    return []


def _centre(a: float, b: float) -> float:
    s = a + b  # inf + -inf is NaN: a non-finite coordinate either way
    return s / 2 if math.isfinite(s) or not (isinstance(a, _Overflow) or isinstance(b, _Overflow)) else _OVERFLOW


def _key_pairs(
    v: Any, point_key: str, box_key: str | None, box_centre: Callable[[list[float]], tuple[float, float]]
) -> list[tuple[float, float]]:
    """(a, b) pairs from objects holding ``point_key`` (a pair) or ``box_key`` (4 numbers -> centre)."""
    out: list[tuple[float, float]] = []
    for o in _objects(v):
        p = o.get(point_key)
        if _is_pair(p):
            out.extend(_pairs([p]))
        elif isinstance(p, list) and p and all(_is_pair(q) for q in p):
            out.extend(_pairs(p))
        elif box_key is not None:
            b = o.get(box_key)
            if isinstance(b, list) and len(b) == 4:
                nums = [n for c in b if (n := _num(c)) is not None]
                if len(nums) == 4:
                    out.append(box_centre(nums))
    return out


def _box_centre(b: list[float]) -> tuple[float, float]:
    return _centre(b[0], b[2]), _centre(b[1], b[3])


def _gemini_raw(text: str) -> list[tuple[float, float]]:
    """Gemini ``point: [y, x]`` / ``box_2d: [ymin, xmin, ymax, xmax]`` -> (x, y) on 0-1000."""

    def extract(v: Any) -> list[tuple[float, float]]:
        return [(x, y) for y, x in _key_pairs(v, "point", "box_2d", _box_centre)]

    return _pick_json_answer(_json_values(text), extract)


def _qwen_raw(text: str) -> list[tuple[float, float]]:
    """Qwen ``point_2d: [x, y]`` / ``bbox_2d`` centre, or Qwen XML ``<points x1 y1>`` -> (x, y) model pixels."""

    def extract(v: Any) -> list[tuple[float, float]]:
        return _key_pairs(v, "point_2d", "bbox_2d", _box_centre)

    pts = _pick_json_answer(_json_values(text), extract)
    return pts if pts else _molmo_raw(text)


def _bare_pairs(v: Any) -> list[tuple[float, float]]:
    """A JSON ``[a, b]`` or ``[[a, b], ...]`` of numbers (no object keys), else ``[]``."""
    if _is_pair(v):
        return _pairs([v])
    if isinstance(v, list) and v and all(_is_pair(q) for q in v):
        return _pairs(v)
    return []


def _xy_extract(v: Any) -> list[tuple[float, float]]:
    pts = _bare_pairs(v)
    if pts:
        return pts
    pts = _key_pairs(v, "point", None, lambda b: (0.0, 0.0))
    if not pts:  # {"x": .., "y": ..} objects, a common GPT-style answer
        pts = [
            (x, y) for o in _objects(v) if (x := _num(o.get("x"))) is not None and (y := _num(o.get("y"))) is not None
        ]
    if not pts and isinstance(v, dict):
        for key in ("points", "point_px", "answer"):
            if key in v:
                return _xy_extract(v[key])
    return pts


def _xy_raw(text: str) -> list[tuple[float, float]]:
    """``[x, y]`` pairs / lists of pairs / ``{"point": [x, y]}`` objects; ``(x, y)`` tuples as a fallback."""
    pts = _pick_json_answer(_json_values(text), _xy_extract)
    return pts if pts else _tuples(text)


# innermost [...] spans; the "holds a (" test is done in Python: a regex [^\[\]]*\([^\[\]]*\]
# backtracks quadratically on "[((((..." (200 k characters took four minutes)
_BRACKET_LIST = re.compile(r"\[([^\[\]]*)\]")


def _tuples(text: str) -> list[tuple[float, float]]:
    """``(a, b)`` tuples: those inside the last ``[...]`` list holding tuples, else all in the text."""
    lists = [body for m in _BRACKET_LIST.finditer(text) if "(" in (body := m.group(1))]
    for body in reversed(lists):
        found = _pairs(_TUPLE.findall(body))
        if found:
            return found
    return _pairs(_TUPLE.findall(text))


def _tuple_raw(text: str) -> list[tuple[float, float]]:
    """RoboPoint / grid ``[(x, y), ...]``; JSON ``[[x, y]]`` pairs tolerated."""
    pts = _tuples(text)
    return pts if pts else _pick_json_answer(_json_values(text), _xy_extract)


# --------------------------------------------------------------------------------------------
# Mapping into original pixels


def _finish(
    raw: list[tuple[float, float]],
    fmt: str,
    width: int,
    height: int,
    frame: tuple[float, float],
    area: bool,
    empty_reason: str,
) -> ParsedPoints:
    """Entries and points of ``raw`` (x, y) read in a ``frame`` (w, h): area frames map
    ``u = x * W / w - 0.5``, pixel frames ``u = (x + 0.5) * W / w - 0.5`` (module docstring)."""
    fw, fh = frame
    sx, sy = width / fw, height / fh
    entries: list[PointEntry] = []
    for x, y in raw:
        if isinstance(x, _Overflow) or isinstance(y, _Overflow):
            entries.append(PointEntry(u_px=None, v_px=None, valid=False, reason=REASON_OVERFLOW))
            continue
        if not (math.isfinite(x) and math.isfinite(y)):
            entries.append(PointEntry(u_px=None, v_px=None, valid=False, reason=REASON_NON_FINITE))
            continue
        if area:
            u, v = x * sx - 0.5, y * sy - 0.5
        else:
            u, v = (x + 0.5) * sx - 0.5, (y + 0.5) * sy - 0.5
        if not (math.isfinite(u) and math.isfinite(v)):  # 1e308 * 2: finite model numbers, infinite pixels
            entries.append(PointEntry(u_px=None, v_px=None, valid=False, reason=REASON_NON_FINITE))
        elif inside_image(u, v, width, height):
            entries.append(PointEntry(u_px=u, v_px=v))
        else:
            where = f"({x:g}, {y:g}) in a {fw:g}x{fh:g} frame" if (fw, fh) != (width, height) else f"({x:g}, {y:g})"
            entries.append(
                PointEntry(u_px=u, v_px=v, reason=f"outside_image: {where} is outside the {width}x{height} image")
            )
    finite = [(e.u_px, e.v_px) for e in entries if e.u_px is not None]
    if not finite:
        if entries:
            why = REASON_OVERFLOW if all(e.reason == REASON_OVERFLOW for e in entries) else "non-finite coordinates"
        else:
            why = empty_reason
        return ParsedPoints(np.zeros((0, 2), dtype=np.float64), False, fmt, f"unparseable: {why}", tuple(entries))
    return ParsedPoints(np.asarray(finite, dtype=np.float64).reshape(-1, 2), True, fmt, None, tuple(entries))


# format -> (raw reader, frame (w, h) or None for the caller's, area frame?, reason when nothing was found)
_READERS: dict[str, tuple[Callable[[str], list], tuple[float, float] | None, bool, str]] = {
    "molmo": (_molmo_raw, (100.0, 100.0), True, "no Molmo <point>/<points> tag"),
    "molmo2": (_molmo2_raw, (1000.0, 1000.0), True, 'no Molmo 2 <points coords="..."> tag'),
    "gemini": (_gemini_raw, (1000.0, 1000.0), True, 'no JSON [{"point": [y, x]}] answer'),
    "grid1000": (_tuple_raw, (1000.0, 1000.0), True, "no [(x, y), ...] answer"),
    "robopoint": (_tuple_raw, (1.0, 1.0), True, "no [(x, y), ...] answer"),
    "qwen": (_qwen_raw, None, True, 'no {"point_2d": [x, y]} answer'),
    "qwen3": (_qwen_raw, (1000.0, 1000.0), True, 'no {"point_2d": [x, y]} answer'),
    "xy_pixels": (_xy_raw, None, False, "no [x, y] answer"),
}


def _model_frame(
    fmt: str, width: int, height: int, model_size: tuple[int, int] | None, qwen_pixels: tuple[int, int]
) -> tuple[float, float]:
    """``(width, height)`` of the pixel frame absolute coordinates (``qwen``, ``xy_pixels``) refer to."""
    if model_size is not None:
        return float(model_size[0]), float(model_size[1])
    if fmt == "qwen":
        w, h = qwen_model_size(width, height, min_pixels=qwen_pixels[0], max_pixels=qwen_pixels[1])
        return float(w), float(h)
    return float(width), float(height)


def _parse_named(
    text: str, fmt: str, width: int, height: int, model_size: tuple[int, int] | None, qwen_pixels: tuple[int, int]
) -> ParsedPoints:
    reader, frame, area, empty = _READERS[fmt]
    if frame is None:
        try:
            frame = _model_frame(fmt, width, height, model_size, qwen_pixels)
        except ValueError as e:  # Qwen's resize refuses the image (a side < 28 px, aspect > 200)
            return ParsedPoints(
                np.zeros((0, 2), dtype=np.float64),
                False,
                fmt,
                f"unparseable: no Qwen2.5-VL model size for a {width}x{height} image ({e}); pass model_size",
            )
    out = _finish(reader(text), fmt, width, height, frame, area, empty)
    if fmt == "qwen" and model_size is None:
        out = _flag_qwen_resize(out, frame, qwen_pixels)
    return out


def _flag_qwen_resize(parsed: ParsedPoints, frame: tuple[float, float], qwen_pixels: tuple[int, int]) -> ParsedPoints:
    """Name the assumed resize in the reason of a Qwen point outside the image: a served checkpoint
    with other ``min_pixels``/``max_pixels`` sees another frame, and its correct points land outside."""
    note = (
        f" under the assumed Qwen2.5-VL resize to {frame[0]:g}x{frame[1]:g} (min_pixels={qwen_pixels[0]}, "
        f"max_pixels={qwen_pixels[1]}; set qwen_min_pixels/qwen_max_pixels to the served checkpoint's)"
    )
    entries = tuple(
        e.model_copy(update={"reason": e.reason + note}) if e.reason and e.reason.startswith("outside_image") else e
        for e in parsed.entries
    )
    return ParsedPoints(parsed.points_px, parsed.ok, parsed.format, parsed.reason, entries)


def _detect(text: str) -> str | None:
    if _COORDS.search(text):
        return "molmo2"
    if _molmo_raw(text):
        return "molmo"
    if re.search(r"""["']point_2d["']""", text):
        return "qwen"
    return None


def parse_points(
    text: str,
    fmt: str,
    width: int,
    height: int,
    *,
    model_size: tuple[int, int] | None = None,
    qwen_min_pixels: int = QWEN_MIN_PIXELS,
    qwen_max_pixels: int = QWEN_MAX_PIXELS,
) -> ParsedPoints:
    """Parse a model answer into original-image pixels (conventions in the module docstring).

    Args:
        text: the raw model answer (any string; ``None`` is treated as empty).
        fmt: one of ``POINT_FORMATS``.
        width, height: original image size, pixels (> 0).
        model_size: ``(width, height)`` of the image frame that ABSOLUTE coordinates refer to
            (``qwen``, ``xy_pixels``); default: for ``qwen`` the Qwen2.5-VL ``smart_resize`` of the
            original with ``qwen_min_pixels`` / ``qwen_max_pixels`` (the served checkpoint's limits;
            default those of the released Qwen2.5-VL checkpoints), for ``xy_pixels`` the original.
            Ignored by the normalised formats.

    Returns:
        ``ParsedPoints``; ``ok=False`` with ``reason="unparseable: ..."`` when no finite point parsed,
        or when Qwen coordinates need a resize the processor refuses for this image (a side under
        28 px) and no ``model_size`` is given. A Qwen point outside the image names the assumed
        resize in its entry's reason.

    Raises:
        ValueError: ``fmt`` is not a known format, or ``width``/``height``/``model_size``/Qwen pixel
            limits are not positive (caller errors, never the model's text).
    """
    if fmt not in POINT_FORMATS:
        raise ValueError(f"unknown point format {fmt!r}; use one of {', '.join(POINT_FORMATS)}")
    if width <= 0 or height <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    if model_size is not None and (model_size[0] <= 0 or model_size[1] <= 0):
        raise ValueError(f"model_size must be positive, got {model_size}")
    if qwen_min_pixels <= 0 or qwen_max_pixels < qwen_min_pixels:
        raise ValueError(f"need 0 < qwen_min_pixels <= qwen_max_pixels, got {qwen_min_pixels}, {qwen_max_pixels}")
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if len(text) > MAX_ANSWER_CHARS:
        return ParsedPoints(
            np.zeros((0, 2), dtype=np.float64),
            False,
            fmt,
            f"unparseable: answer too long ({len(text)} characters > {MAX_ANSWER_CHARS})",
        )
    # reasoning mentions candidate points on the way to the answer: never read them
    text = strip_reasoning(text)
    qwen_pixels = (int(qwen_min_pixels), int(qwen_max_pixels))
    if fmt != "auto":
        return _parse_named(text, fmt, width, height, model_size, qwen_pixels)
    found = _detect(text)
    if found is None and _pick_json_answer(_json_values(text), _bare_pairs):
        found = "xy_pixels"  # PointArena sec. 4.1's standard answer: [x, y] pixels
    if found is not None:
        return _parse_named(text, found, width, height, model_size, qwen_pixels)
    ambiguous = _pick_json_answer(_json_values(text), _xy_extract)
    why = (
        "ambiguous, name the format (gemini [y, x] on 0-1000 or xy_pixels [x, y] in pixels)"
        if ambiguous
        else "no self-identifying point form (auto reads Molmo tags, Molmo 2 coords, point_2d)"
    )
    return ParsedPoints(np.zeros((0, 2), dtype=np.float64), False, "auto", f"unparseable: {why}")


# --------------------------------------------------------------------------------------------
# Writing points (the sim oracle answers in a chosen format)


def _esc(label: str) -> str:
    return label.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def format_points(
    points_px: Any,
    fmt: str,
    width: int,
    height: int,
    *,
    model_size: tuple[int, int] | None = None,
    label: str = "target",
    qwen_min_pixels: int = QWEN_MIN_PIXELS,
    qwen_max_pixels: int = QWEN_MAX_PIXELS,
) -> str:
    """Write original-image pixel points as a model of format ``fmt`` would (inverse of ``parse_points``).

    Precision: Molmo 1 decimal of a percent, Molmo 2, Gemini, grid1000 and qwen3 integers on 0-1000 (at
    most 999, so a point inside the image stays inside), Qwen integer resized pixels, RoboPoint 3
    decimals, ``xy_pixels`` 1 decimal; ``parse_points`` of the result gives the points back within
    that rounding. Empty ``points_px`` gives ``"There are none."``.

    Args:
        points_px: ``(N, 2)`` array-like of ``(u, v)`` original pixels.
        fmt: a format of ``POINT_FORMATS`` other than ``auto``.
        width, height: original image size, pixels.
        model_size, qwen_min_pixels, qwen_max_pixels: as in ``parse_points`` (``qwen``, ``xy_pixels``).
        label: the object label written where the format has one.

    Raises:
        ValueError: ``fmt`` is ``auto`` or unknown, bad sizes, or non-finite / wrongly shaped points.
    """
    if fmt not in POINT_FORMATS or fmt == "auto":
        raise ValueError(f"cannot write format {fmt!r}; use one of {', '.join(POINT_FORMATS[:-1])}")
    if width <= 0 or height <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    pts = np.asarray(points_px, dtype=np.float64).reshape(-1, 2) if np.size(points_px) else np.zeros((0, 2))
    if not np.all(np.isfinite(pts)):
        raise ValueError("points must be finite")
    if len(pts) == 0:
        return "There are none."
    # area-frame positions: the pixel area [0, W) as a fraction of the width
    fx, fy = (pts[:, 0] + 0.5) / width, (pts[:, 1] + 0.5) / height
    if fmt == "molmo":
        xs, ys = fx * 100.0, fy * 100.0
        if len(pts) == 1:
            return f'<point x="{xs[0]:.1f}" y="{ys[0]:.1f}" alt="{_esc(label)}">{_esc(label)}</point>'
        attrs = " ".join(f'x{i + 1}="{x:.1f}" y{i + 1}="{y:.1f}"' for i, (x, y) in enumerate(zip(xs, ys)))
        return f'<points {attrs} alt="{_esc(label)}">{_esc(label)}</points>'
    if fmt in ("molmo2", "gemini", "grid1000", "qwen3"):
        # nearest per-mille boundary, at most 999 so a point inside the image stays inside
        xs = np.clip(np.rint(fx * 1000.0), 0, 999).astype(int)
        ys = np.clip(np.rint(fy * 1000.0), 0, 999).astype(int)
        if fmt == "molmo2":
            trip = " ".join(f"{i + 1} {x:03d} {y:03d}" for i, (x, y) in enumerate(zip(xs, ys)))
            return f'<points coords="1 {trip}">{_esc(label)}</points>'
        if fmt == "gemini":
            return json.dumps([{"point": [int(y), int(x)], "label": label} for x, y in zip(xs, ys)])
        if fmt == "qwen3":
            return json.dumps([{"point_2d": [int(x), int(y)], "label": label} for x, y in zip(xs, ys)])
        return "[" + ", ".join(f"({x}, {y})" for x, y in zip(xs, ys)) + "]"
    if fmt == "robopoint":
        return "[" + ", ".join(f"({x:.3f}, {y:.3f})" for x, y in zip(fx, fy)) + "]"
    mw, mh = _model_frame(fmt, width, height, model_size, (qwen_min_pixels, qwen_max_pixels))
    if fmt == "qwen":
        xs = np.clip(np.rint(fx * mw), 0, mw - 1).astype(int)
        ys = np.clip(np.rint(fy * mh), 0, mh - 1).astype(int)
        body = json.dumps([{"point_2d": [int(x), int(y)], "label": label} for x, y in zip(xs, ys)])
        return f"```json\n{body}\n```"
    xs, ys = fx * mw - 0.5, fy * mh - 0.5
    if len(pts) == 1:
        return f"[{xs[0]:.1f}, {ys[0]:.1f}]"
    return "[" + ", ".join(f"[{x:.1f}, {y:.1f}]" for x, y in zip(xs, ys)) + "]"
