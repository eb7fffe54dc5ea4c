"""Point formats: parse what models write into original-image pixels, and write points back.

Every model family writes points its own way (FIELD_NOTES "How models write points"; PointArena
sec. 4.1: a standard ``[x, y]`` pixel format for models without their own, the model's own format for
Molmo, Qwen2.5-VL and Gemini). The format names below are used everywhere (agents config, CLI,
prediction files). Verified syntaxes and their sources are listed in ``docs/models.md``.

=============  ==========================================================================  =========
name           what the model writes                                                       scale
=============  ==========================================================================  =========
``molmo``      ``<point x="61.5" y="40.4" alt="..">..</point>``,                            percent
               ``<points x1="" y1="" x2="" y2="" alt="..">..</points>``                     0-100
``molmo2``     ``<points coords="1 1 073 160 2 173 600">label</points>``: an image/frame   0-1000
               index, then ``index x y`` triplets (x, y zero-padded integers); groups of
               several images/frames are separated by ``;``, tab, ``,`` or ``:``
``gemini``     JSON ``[{"point": [y, x], "label": ..}]`` (**y first**); a                   0-1000
               ``"box_2d": [ymin, xmin, ymax, xmax]`` answer counts as its centre
``qwen``       JSON ``[{"point_2d": [x, y], "label": ..}]`` (also ``bbox_2d`` -> centre) or  pixels of
               Qwen's XML ``<points x1="" y1="" alt="">..</points>``                       the resized
                                                                                           image
``robopoint``  ``[(x, y), ...]``                                                           0-1
``xy_pixels``  ``[x, y]``, ``[[x, y], ...]``, ``{"point": [x, y]}``, ``{"x": x, "y": y}``,    pixels
               or a list of those objects
=============  ==========================================================================  =========

``auto`` accepts only forms that identify themselves: Molmo 2 ``coords=``, Molmo ``<point(s) x..>``
tags (read as Molmo percent; Qwen's XML form must be named ``qwen``), and ``point_2d`` (read as
Qwen2.5-VL resized pixels). It never guesses between ``gemini`` and ``xy_pixels``: a bare
``{"point": [a, b]}`` or ``[a, b]`` under ``auto`` is ``"unparseable: ambiguous, name the format"``.

Conventions:

- Output pixels ``(u, v)`` = (column, row) of the ORIGINAL image, float64. Normalised scales map
  linearly onto ``[0, W] x [0, H]`` (``u = x / 1000 * W`` etc.), exactly as the models' own reference
  code does (Molmo ``extract_points``, Molmo 2 ``_points_from_num_str``, Gemini's cookbook).
- Points outside the image (negative, beyond ``W``/``H``, > 100 %) are returned as parsed; the scorer
  or the targeting step decides what to do with them (PointArena sec. 4.1: such a point fails).
  Non-finite values (NaN, inf) are dropped.
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

__all__ = ["POINT_FORMATS", "ParsedPoints", "parse_points", "format_points", "smart_resize",
           "qwen_model_size", "MAX_ANSWER_CHARS", "QWEN_FACTOR", "QWEN_MIN_PIXELS", "QWEN_MAX_PIXELS"]

POINT_FORMATS = ("molmo", "molmo2", "gemini", "qwen", "robopoint", "xy_pixels", "auto")

# Qwen2.5-VL image processor defaults (transformers Qwen2VLImageProcessor: patch_size 14 x
# merge_size 2 = factor 28; min_pixels 56*56; max_pixels 28*28*1280).
QWEN_FACTOR = 28
QWEN_MIN_PIXELS = 56 * 56
QWEN_MAX_PIXELS = 28 * 28 * 1280

# Longer answers are refused rather than scanned (a runaway generation, a corrupt prediction file).
MAX_ANSWER_CHARS = 200_000

# "\d+(?:\.\d*)?" rather than "\d+\.?\d*": the same numbers, but a long digit run that fails to
# match (a "(" then 32000 digits) no longer backtracks quadratically (21 s)
_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|NaN|inf|Infinity)"


@dataclass(frozen=True)
class ParsedPoints:
    """The result of parsing one model answer.

    Attributes:
        points_px: ``(N, 2)`` float64, ``(u, v)`` in original-image pixels, in the model's order
            (the first point is the one PointArena scores for non-counting tasks). Empty when not ok.
        ok: at least one finite point was found.
        format: the format actually used (for ``auto``, the detected one; ``"auto"`` if none).
        reason: ``None`` when ok, else ``"unparseable: <why>"``.
    """

    points_px: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.float64))
    ok: bool = False
    format: str = "auto"
    reason: str | None = None

    def to_dict(self) -> dict:
        """JSON-ready dict (points as lists of floats)."""
        return {"points": [[float(u), float(v)] for u, v in self.points_px], "ok": self.ok,
                "format": self.format, "reason": self.reason}


# --------------------------------------------------------------------------------------------
# Qwen2.5-VL resize

def smart_resize(height: int, width: int, factor: int = QWEN_FACTOR, min_pixels: int = QWEN_MIN_PIXELS,
                 max_pixels: int = QWEN_MAX_PIXELS) -> tuple[int, int]:
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
        raise ValueError(f"absolute aspect ratio must be smaller than 200, got {max(height, width) / min(height, width)}")
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


def qwen_model_size(width: int, height: int, *, min_pixels: int = QWEN_MIN_PIXELS,
                    max_pixels: int = QWEN_MAX_PIXELS) -> tuple[int, int]:
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
    """A finite-or-not float from a JSON value or string; None when it is not a number.

    Strings must be ASCII numbers (``_NUM``): Python's ``float`` would also take ``"1_000"`` and
    non-ASCII digits (``"١٢"``), which no model format writes.
    """
    if isinstance(s, bool):
        return None
    if isinstance(s, (int, float)):
        return float(s)
    if isinstance(s, str) and _NUM_STR.fullmatch(s.strip()):
        return float(s.strip())
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


def _finish(raw: list[tuple[float, float]], fmt: str, empty_reason: str) -> ParsedPoints:
    finite = [(u, v) for u, v in raw if math.isfinite(u) and math.isfinite(v)]
    if not finite:
        why = "non-finite coordinates" if raw else empty_reason
        return ParsedPoints(np.zeros((0, 2), dtype=np.float64), False, fmt, f"unparseable: {why}")
    return ParsedPoints(np.asarray(finite, dtype=np.float64).reshape(-1, 2), True, fmt, None)


def _pick_json_answer(values: list[Any], extract: Callable[[Any], list[tuple[float, float]]]) -> list[tuple[float, float]]:
    """Apply ``extract`` to the JSON values; keep all when they are bare pairs, else the last hit."""
    hits = [(v, pts) for v in values if (pts := extract(v))]
    if not hits:
        return []
    if len(hits) > 1 and all(_is_pair(v) for v, _ in hits):
        return [p for _, pts in hits for p in pts]
    return hits[-1][1]


# --------------------------------------------------------------------------------------------
# Per-format readers. Each returns raw (a, b) numbers in the format's own units and order
# converted to (u, v) original pixels by the caller-specific scale.

def _molmo_raw(text: str) -> list[tuple[float, float]]:
    """Molmo 1 tags -> (x%, y%) pairs, in order; skips Molmo 2 ``coords=`` tags."""
    out: list[tuple[float, float]] = []
    for m in _TAG.finditer(text):
        attrs = {k.lower(): (a if a is not None and a != "" else b if b else c)
                 for k, a, b, c in _ATTR.findall(m.group(2))}
        if "coords" in attrs:
            continue
        if "x" in attrs and "y" in attrs:
            x, y = _num(attrs["x"]), _num(attrs["y"])
            if x is not None and y is not None:
                out.append((x, y))
        idx = sorted({int(k[1:]) for k in attrs if re.fullmatch(r"x\d+", k)})
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
                for k in range(1, len(toks), 3):
                    out.append((float(toks[k + 1]), float(toks[k + 2])))
            elif toks:
                for t in _TRIPLET.finditer(" ".join(toks[1:])):
                    out.append((float(t.group(2)), float(t.group(3))))
    return out


def _objects(v: Any) -> list[dict]:
    if isinstance(v, dict):
        return [v]
    if isinstance(v, list):
        return [o for o in v if isinstance(o, dict)]
    return []


def _key_pairs(v: Any, point_key: str, box_key: str | None, box_centre: Callable[[list[float]], tuple[float, float]]
               ) -> list[tuple[float, float]]:
    """(a, b) pairs from objects holding ``point_key`` (a pair) or ``box_key`` (4 numbers -> centre)."""
    out: list[tuple[float, float]] = []
    for o in _objects(v):
        p = o.get(point_key)
        if _is_pair(p):
            out.append((_num(p[0]), _num(p[1])))  # type: ignore[arg-type]
        elif isinstance(p, list) and p and all(_is_pair(q) for q in p):
            out.extend((_num(q[0]), _num(q[1])) for q in p)  # type: ignore[misc]
        elif box_key is not None:
            b = o.get(box_key)
            if isinstance(b, list) and len(b) == 4 and all(_num(c) is not None for c in b):
                out.append(box_centre([_num(c) for c in b]))  # type: ignore[misc]
    return out


def _gemini_raw(text: str) -> list[tuple[float, float]]:
    """Gemini ``point: [y, x]`` / ``box_2d: [ymin, xmin, ymax, xmax]`` -> (x, y) on 0-1000."""
    def extract(v: Any) -> list[tuple[float, float]]:
        yx = _key_pairs(v, "point", "box_2d", lambda b: ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2))
        return [(x, y) for y, x in yx]
    return _pick_json_answer(_json_values(text), extract)


def _qwen_raw(text: str) -> list[tuple[float, float]]:
    """Qwen ``point_2d: [x, y]`` / ``bbox_2d`` centre, or Qwen XML ``<points x1 y1>`` -> (x, y) model pixels."""
    def extract(v: Any) -> list[tuple[float, float]]:
        return _key_pairs(v, "point_2d", "bbox_2d", lambda b: ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2))
    pts = _pick_json_answer(_json_values(text), extract)
    return pts if pts else _molmo_raw(text)


def _xy_extract(v: Any) -> list[tuple[float, float]]:
    if _is_pair(v):
        return [(_num(v[0]), _num(v[1]))]  # type: ignore[list-item]
    if isinstance(v, list) and v and all(_is_pair(q) for q in v):
        return [(_num(q[0]), _num(q[1])) for q in v]  # type: ignore[misc]
    pts = _key_pairs(v, "point", None, lambda b: (0.0, 0.0))
    if not pts:  # {"x": .., "y": ..} objects, a common GPT-style answer
        pts = [(x, y) for o in _objects(v) if (x := _num(o.get("x"))) is not None and (y := _num(o.get("y"))) is not None]
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
        found = [(float(a), float(b)) for a, b in _TUPLE.findall(body)]
        if found:
            return found
    return [(float(a), float(b)) for a, b in _TUPLE.findall(text)]


def _robopoint_raw(text: str) -> list[tuple[float, float]]:
    """RoboPoint ``[(x, y), ...]`` on 0-1; JSON ``[[x, y]]`` pairs tolerated."""
    pts = _tuples(text)
    return pts if pts else _pick_json_answer(_json_values(text), _xy_extract)


# --------------------------------------------------------------------------------------------
# Public API

def _scale(raw: list[tuple[float, float]], sx: float, sy: float) -> list[tuple[float, float]]:
    return [(x * sx, y * sy) for x, y in raw]


def _model_frame(fmt: str, width: int, height: int, model_size: tuple[int, int] | None) -> tuple[float, float]:
    """``(width, height)`` of the pixel frame absolute coordinates refer to."""
    if model_size is not None:
        return float(model_size[0]), float(model_size[1])
    if fmt == "qwen":
        w, h = qwen_model_size(width, height)
        return float(w), float(h)
    return float(width), float(height)


def _parse_named(text: str, fmt: str, width: int, height: int, model_size: tuple[int, int] | None) -> ParsedPoints:
    if fmt == "molmo":
        return _finish(_scale(_molmo_raw(text), width / 100.0, height / 100.0), fmt, "no Molmo <point>/<points> tag")
    if fmt == "molmo2":
        return _finish(_scale(_molmo2_raw(text), width / 1000.0, height / 1000.0), fmt, 'no Molmo 2 <points coords="..."> tag')
    if fmt == "gemini":
        return _finish(_scale(_gemini_raw(text), width / 1000.0, height / 1000.0), fmt, 'no JSON [{"point": [y, x]}] answer')
    if fmt == "robopoint":
        return _finish(_scale(_robopoint_raw(text), float(width), float(height)), fmt, "no [(x, y), ...] answer")
    try:
        mw, mh = _model_frame(fmt, width, height, model_size)
    except ValueError as e:  # Qwen's resize refuses the image (a side < 28 px, aspect > 200)
        return ParsedPoints(np.zeros((0, 2), dtype=np.float64), False, fmt,
                            f"unparseable: no Qwen2.5-VL model size for a {width}x{height} image ({e}); pass model_size")
    if fmt == "qwen":
        return _finish(_scale(_qwen_raw(text), width / mw, height / mh), fmt, 'no {"point_2d": [x, y]} answer')
    if fmt == "xy_pixels":
        return _finish(_scale(_xy_raw(text), width / mw, height / mh), fmt, "no [x, y] answer")
    raise AssertionError(fmt)


def _detect(text: str) -> str | None:
    if _COORDS.search(text):
        return "molmo2"
    if _molmo_raw(text):
        return "molmo"
    if re.search(r"""["']point_2d["']""", text):
        return "qwen"
    return None


def parse_points(text: str, fmt: str, width: int, height: int, *,
                 model_size: tuple[int, int] | None = None) -> ParsedPoints:
    """Parse a model answer into original-image pixels.

    Args:
        text: the raw model answer (any string; ``None`` is treated as empty).
        fmt: one of ``POINT_FORMATS``.
        width, height: original image size, pixels (> 0).
        model_size: ``(width, height)`` of the image frame that ABSOLUTE coordinates refer to
            (``qwen``, ``xy_pixels``); default: for ``qwen`` the Qwen2.5-VL ``smart_resize`` of the
            original with the processor defaults, for ``xy_pixels`` the original. Ignored by the
            normalised formats.

    Returns:
        ``ParsedPoints``; ``ok=False`` with ``reason="unparseable: ..."`` when nothing parsed, or when
        Qwen coordinates (named ``qwen`` or detected by ``auto``) need a resize the Qwen2.5-VL
        processor refuses for this image (a side under 28 px) and no ``model_size`` is given.

    Raises:
        ValueError: ``fmt`` is not a known format, or ``width``/``height``/``model_size`` are not
            positive (caller errors, never the model's text).
    """
    if fmt not in POINT_FORMATS:
        raise ValueError(f"unknown point format {fmt!r}; use one of {', '.join(POINT_FORMATS)}")
    if width <= 0 or height <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    if model_size is not None and (model_size[0] <= 0 or model_size[1] <= 0):
        raise ValueError(f"model_size must be positive, got {model_size}")
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if len(text) > MAX_ANSWER_CHARS:
        return ParsedPoints(np.zeros((0, 2), dtype=np.float64), False, fmt,
                            f"unparseable: answer too long ({len(text)} characters > {MAX_ANSWER_CHARS})")
    if fmt != "auto":
        return _parse_named(text, fmt, width, height, model_size)
    found = _detect(text)
    if found is not None:
        return _parse_named(text, found, width, height, model_size)
    ambiguous = _pick_json_answer(_json_values(text), _xy_extract)
    why = ("ambiguous, name the format (gemini [y, x] on 0-1000 or xy_pixels [x, y] in pixels)" if ambiguous
           else "no self-identifying point form (auto reads Molmo tags, Molmo 2 coords, point_2d)")
    return ParsedPoints(np.zeros((0, 2), dtype=np.float64), False, "auto", f"unparseable: {why}")


# --------------------------------------------------------------------------------------------
# Writing points (the sim oracle answers in a chosen format)

def _esc(label: str) -> str:
    return label.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def format_points(points_px: Any, fmt: str, width: int, height: int, *,
                  model_size: tuple[int, int] | None = None, label: str = "target") -> str:
    """Write original-image pixel points as a model of format ``fmt`` would (inverse of ``parse_points``).

    Precision: Molmo 1 decimal of a percent, Molmo 2 and Gemini integers on 0-1000, Qwen integer
    resized pixels, RoboPoint 3 decimals, ``xy_pixels`` 1 decimal; ``parse_points`` of the result
    gives the points back within that rounding. Empty ``points_px`` gives ``"There are none."``.

    Args:
        points_px: ``(N, 2)`` array-like of ``(u, v)`` original pixels.
        fmt: a format of ``POINT_FORMATS`` other than ``auto``.
        width, height: original image size, pixels.
        model_size: as in ``parse_points`` (``qwen``, ``xy_pixels``).
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
    u, v = pts[:, 0], pts[:, 1]
    if fmt == "molmo":
        xs, ys = u / width * 100.0, v / height * 100.0
        if len(pts) == 1:
            return f'<point x="{xs[0]:.1f}" y="{ys[0]:.1f}" alt="{_esc(label)}">{_esc(label)}</point>'
        attrs = " ".join(f'x{i + 1}="{x:.1f}" y{i + 1}="{y:.1f}"' for i, (x, y) in enumerate(zip(xs, ys)))
        return f'<points {attrs} alt="{_esc(label)}">{_esc(label)}</points>'
    if fmt == "molmo2":
        xs, ys = np.rint(u / width * 1000.0).astype(int), np.rint(v / height * 1000.0).astype(int)
        trip = " ".join(f"{i + 1} {x:03d} {y:03d}" for i, (x, y) in enumerate(zip(xs, ys)))
        return f'<points coords="1 {trip}">{_esc(label)}</points>'
    if fmt == "gemini":
        xs, ys = np.rint(u / width * 1000.0).astype(int), np.rint(v / height * 1000.0).astype(int)
        return json.dumps([{"point": [int(y), int(x)], "label": label} for x, y in zip(xs, ys)])
    if fmt == "robopoint":
        return "[" + ", ".join(f"({x:.3f}, {y:.3f})" for x, y in zip(u / width, v / height)) + "]"
    mw, mh = _model_frame(fmt, width, height, model_size)
    if fmt == "qwen":
        xs, ys = np.rint(u * mw / width).astype(int), np.rint(v * mh / height).astype(int)
        body = json.dumps([{"point_2d": [int(x), int(y)], "label": label} for x, y in zip(xs, ys)])
        return f"```json\n{body}\n```"
    xs, ys = u * mw / width, v * mh / height
    if len(pts) == 1:
        return f"[{xs[0]:.1f}, {ys[0]:.1f}]"
    return "[" + ", ".join(f"[{x:.1f}, {y:.1f}]" for x, y in zip(xs, ys)) + "]"
