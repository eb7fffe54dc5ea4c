"""Point-Bench under ``--rules reference``: the authors' released evaluators, rule for rule.

Written from reading the released code (not copied): PointArena's ``model_evaluator.py`` (OpenAI /
Claude / Grok / Gemini / Qwen readers, ``is_point_in_mask``, ``load_mask``, the counting check) and
``molmo_evaluator.py`` (Molmo's ``extract_points``), pointarena/pointarena at dcd82f2; and lmms-eval's
``tasks/pointbench/utils.py`` (``_text_to_points``, ``_binary_score``, ``_load_mask``) and
``tasks/_task_utils/point_format.py`` (``parse_point2d``) at 75571cfe for the answer forms only lmms-eval
asks for (``grid1000``, ``robopoint``, ``qwen3``).

A reader returns ``RefAnswer``: the list the evaluator would go on with -- points as the evaluator
holds them (pixel numbers, possibly malformed) -- and, for the lmms-eval forms, integer pixels already.
``ref_score`` then applies the evaluator's checks: no points fails; a non-counting item keeps only the
first point (every reader truncates to it); a counting item needs ``len(points) == count`` (count
defaults to 1 in PointArena, 0 in lmms-eval) and every point inside the mask; a point is
``mask[int(y), int(x)]`` after a bounds check on the truncated pixel; anything the evaluator would
raise on (a point that is not ``{"point": [x, y]}``, ``int(NaN)``, a string) fails the item as its
``except`` does ("Processing error").

Where the released code has no reader (Molmo 2, ``auto``) the pointlab reader is used (documented in
docs/scoring.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["REFERENCE_READERS", "RefAnswer", "reference_answer", "ref_score", "pointarena_mask", "lmms_mask"]

_PAIR = re.compile(r"\[(\d+\.?\d*),\s*(\d+\.?\d*)\]")
_NUMBER_PAIRS = re.compile(r"(\d+\.?\d*)\s*[,\s]\s*(\d+\.?\d*)")
_QWEN_XML = (
    re.compile(r'<points\s+x1=["\'"]?(\d+\.?\d*)["\'"]?\s+y1=["\'"]?(\d+\.?\d*)["\'"]?.*?>.*?</points>'),
    re.compile(r'<points\s+x=["\'"]?(\d+\.?\d*)["\'"]?\s+y=["\'"]?(\d+\.?\d*)["\'"]?.*?>.*?</points>'),
    re.compile(r"<points\s+(\d+\.?\d*)\s+(\d+\.?\d*)>.*?</points>"),
)
_QWEN_ATTRS = re.compile(r'(?:x|x1)[=:" ]+(\d+\.?\d*)[ ",]*(?:y|y1)[=:" ]+(\d+\.?\d*)')
_POINT_2D = re.compile(r'"point_2d":\s*\[(\d+\.?\d*),\s*(\d+\.?\d*)\]')
_MOLMO = (
    re.compile(r"Click\(([0-9]+\.[0-9]), ?([0-9]+\.[0-9])\)"),
    re.compile(r"\(([0-9]+\.[0-9]),? ?([0-9]+\.[0-9])\)"),
    re.compile(r'x\d*="\s*([0-9]+(?:\.[0-9]+)?)"\s+y\d*="\s*([0-9]+(?:\.[0-9]+)?)"'),
)
_MOLMO_P = re.compile(r"(?:\d+|p)\s*=\s*([0-9]{3})\s*,\s*([0-9]{3})")
_LMMS_TUPLE = re.compile(r"\(([-+]?\d*\.?\d+)\s*,\s*([-+]?\d*\.?\d+)\)")
_LMMS_POINT2D = re.compile(r"[\[\(]\s*([-+]?\d+\.?\d*)\s*,\s*([-+]?\d+\.?\d*)\s*[\]\)]")


class _Raise(Exception):
    """The released code would raise here; its caller's ``except`` turns the item into a failure."""


@dataclass
class RefAnswer:
    """What the released evaluator holds after reading an answer.

    Attributes:
        points: the list it goes on with: ``{"point": [x, y]}`` dicts (PointArena) or ``(px, py)`` integer
            pixels (lmms-eval), possibly malformed entries, in order; ``[]`` when it returned nothing.
        evaluator: ``"pointarena"`` or ``"lmms-eval"``.
        reader: the reader used (``openai``, ``gemini``, ``qwen``, ``molmo``, ``text_to_points``, ...).
    """

    points: list[Any]
    evaluator: str
    reader: str
    notes: list[str] = field(default_factory=list)


def _first_if_not_counting(points: list, category: str) -> list:
    # every PointArena reader: "If not counting category and more than one point was returned, limit to first"
    return [points[0]] if category != "counting" and len(points) > 1 else points


def _json_span(content: str) -> str | None:
    """``content[find('['):rfind(']') + 1]`` as the readers take it (``None`` when there is no ``[``)."""
    start = content.find("[")
    if start == -1:
        return None
    return content[start : content.rfind("]") + 1]


def _openai(content: str, width: int, height: int, category: str) -> list:
    """call_openai / call_claude / call_grok: the JSON list between the first [ and the last ]."""
    span = _json_span(content)
    if span is None:
        return []
    try:
        points = json.loads(span)
        return _first_if_not_counting(points, category)
    except Exception:  # json errors, len() of a number, points[0] of a dict: the reader's except returns []
        return []


def _gemini(content: str, width: int, height: int, category: str) -> list:
    """call_gemini: [y, x] on 0-1000 in {"point"} objects, regex pairs on the span as a fallback."""
    span = _json_span(content)
    if span is None:
        return []
    try:
        raw = json.loads(span)
        points = []
        for item in raw:
            if isinstance(item, dict) and "point" in item:
                if isinstance(item["point"], list) and len(item["point"]) == 2:
                    y, x = item["point"]
                    points.append({"point": [(x / 1000.0) * width, (y / 1000.0) * height]})
        if not points:
            for y_str, x_str in _PAIR.findall(span):
                points.append({"point": [(float(x_str) / 1000.0) * width, (float(y_str) / 1000.0) * height]})
        return _first_if_not_counting(points, category)
    except Exception:  # a string coordinate (x / 1000.0), an int too large for a float: []
        return []


def _json_items(raw: Any, keys: tuple[str, ...]) -> list:
    """The readers' JSON fallback: ``[x, y]`` pairs and objects holding a pair under the first of ``keys``
    they have (the released if/elif chains), as ``{"point": [float, float]}``. Raises as ``float()`` does."""
    points = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, list) and len(item) == 2:
            points.append({"point": [float(item[0]), float(item[1])]})
        elif isinstance(item, dict):
            key = next((k for k in keys if k in item), None)
            value = item.get(key) if key else None
            if isinstance(value, list) and len(value) == 2:
                points.append({"point": [float(value[0]), float(value[1])]})
    return points


def _qwen(content: str, width: int, height: int, category: str) -> list:
    """call_qwen: XML <points>, attribute-like pairs, then JSON forms; raw pixels (no resize mapping)."""
    try:
        points = []
        for rx in _QWEN_XML:
            for m in rx.findall(content):
                points.append({"point": [float(m[0]), float(m[1])]})
        if points:
            return _first_if_not_counting(points, category)
        pairs = _QWEN_ATTRS.findall(content)
        if pairs:
            return _first_if_not_counting([{"point": [float(x), float(y)]} for x, y in pairs], category)
        span = _json_span(content)
        if span is None:
            pairs = _NUMBER_PAIRS.findall(content)
            return _first_if_not_counting([{"point": [float(x), float(y)]} for x, y in pairs], category)
        found = _POINT_2D.findall(span) or _PAIR.findall(span)
        if found:
            return _first_if_not_counting([{"point": [float(x), float(y)]} for x, y in found], category)
        try:
            points = _json_items(json.loads(span), ("point_2d", "point"))
            if points:
                return _first_if_not_counting(points, category)
        except Exception:
            pass
        pairs = _NUMBER_PAIRS.findall(content)  # "as a last resort": the first pair only
        return [{"point": [float(pairs[0][0]), float(pairs[0][1])]}] if pairs else []
    except Exception:
        return []


def _molmo(content: str, width: int, height: int, category: str) -> list:
    """molmo_evaluator.call_molmo: extract_points (percent, a point above 100 dropped), then JSON pixels."""
    try:
        found = []
        for rx in _MOLMO:
            for a, b in rx.findall(content):
                p = np.array([float(a), float(b)])
                if np.max(p) > 100:
                    continue
                found.append(p / 100.0 * np.array([width, height]))
        for a, b in _MOLMO_P.findall(content):
            p = np.array([int(a) / 10.0, int(b) / 10.0])
            if np.max(p) > 100:
                continue
            found.append(p / 100.0 * np.array([width, height]))
        if found:
            return _first_if_not_counting([{"point": [float(p[0]), float(p[1])]} for p in found], category)
        span = _json_span(content)
        if span is None:
            return []
        pairs = _PAIR.findall(span)
        if pairs:
            return _first_if_not_counting([{"point": [float(x), float(y)]} for x, y in pairs], category)
        try:
            points = _json_items(json.loads(span), ("point",))
            if points:
                return _first_if_not_counting(points, category)
            nums = re.findall(r"\d+\.?\d*", span)
            if len(nums) >= 2:
                pts = [{"point": [float(nums[i]), float(nums[i + 1])]} for i in range(0, len(nums) - 1, 2)]
                return _first_if_not_counting(pts, category)
            return []
        except Exception:
            return []
    except Exception:
        return []


def _lmms_text_to_points(text: str, width: int, height: int, category: str) -> list[tuple[int, int] | None]:
    """lmms-eval pointbench ``_text_to_points``: (x, y) tuples; both in [0, 1] -> normalised, both in
    [0, 1000] -> per mille, else pixels; ``int(round(...))``."""
    out: list[tuple[int, int] | None] = []  # None: a number lmms-eval's int32 array refuses
    for xr, yr in _LMMS_TUPLE.findall(text):
        x, y = float(xr), float(yr)
        if 0.0 <= x <= 1.0 and 0.0 <= y <= 1.0:
            out.append((int(round(x * width)), int(round(y * height))))
        elif 0.0 <= x <= 1000.0 and 0.0 <= y <= 1000.0:
            out.append((int(round((x / 1000.0) * width)), int(round((y / 1000.0) * height))))
        else:
            try:
                out.append((int(round(x)), int(round(y))))
            except (OverflowError, ValueError):  # round(inf) raises: lmms-eval would crash; the item fails
                out.append(None)
    # np.array(points, dtype=np.int32) in lmms-eval: a pixel beyond int32 raises there; the item fails here
    return [p if p is None or max(abs(p[0]), abs(p[1])) < 2**31 else None for p in out]


def _lmms_point2d(text: str, width: int, height: int, category: str) -> list[tuple[int, int] | None]:
    """lmms-eval ``parse_point2d`` (the pointbench_json task): integers on 0-1000 (``int(x / 1000 * W)``),
    numbers with a dot as 0-1 (``int(x * W)``)."""
    out: list[tuple[int, int] | None] = []  # None: a number lmms-eval's int32 array refuses
    for xs, ys in _LMMS_POINT2D.findall(text):
        xf, yf = float(xs), float(ys)
        try:
            if "." in xs or "." in ys:
                out.append((int(xf * width), int(yf * height)))
            else:
                out.append((int(xf / 1000 * width), int(yf / 1000 * height)))
        except (OverflowError, ValueError):
            out.append(None)
    return out


#: point format -> (evaluator, reader name, reader)
REFERENCE_READERS = {
    "xy_pixels": ("pointarena", "openai", _openai),
    "gemini": ("pointarena", "gemini", _gemini),
    "qwen": ("pointarena", "qwen", _qwen),
    "molmo": ("pointarena", "molmo", _molmo),
    "grid1000": ("lmms-eval", "text_to_points", _lmms_text_to_points),
    "robopoint": ("lmms-eval", "text_to_points", _lmms_text_to_points),
    "qwen3": ("lmms-eval", "parse_point2d", _lmms_point2d),
}


def reference_answer(text: str, fmt: str, width: int, height: int, category: str) -> RefAnswer | None:
    """The released evaluator's reading of ``text`` (``None`` when it has no reader for ``fmt``)."""
    if fmt not in REFERENCE_READERS:
        return None
    evaluator, name, reader = REFERENCE_READERS[fmt]
    return RefAnswer(reader(text or "", width, height, category), evaluator, name)


def pixel_points_answer(points_px: Any) -> RefAnswer:
    """A PRED ``{"points": [[u, v], ...]}`` line as PointArena holds pixel points (``{"point": [x, y]}``)."""
    return RefAnswer([{"point": [float(u), float(v)]} for u, v in points_px], "pointarena", "pixels")


def _pa_pixel(point: Any, width: int, height: int) -> tuple[int, int] | None:
    """``is_point_in_mask``'s pixel of one point: ``(int(x), int(y))`` or ``None`` outside the image.
    Raises ``_Raise`` where the released code raises (not ``{"point": [x, y]}``, NaN, infinity, text)."""
    if point is None:
        return None  # "Invalid mask or point": False, not an exception
    try:
        x, y = point["point"]
        px, py = int(x), int(y)
    except Exception as e:  # TypeError, KeyError, ValueError (int(NaN), int("1.5")), OverflowError (int(inf))
        raise _Raise(f"{type(e).__name__}: {e}") from None
    if py < 0 or py >= height or px < 0 or px >= width:
        return None
    return px, py


def ref_score(
    answer: RefAnswer, category: str, mask: np.ndarray, count: int | None
) -> tuple[bool, str, list, str | None]:
    """Score ``answer`` as the released evaluator does: ``(success, reason, points_used, detail)``.

    ``reason`` uses pointlab's vocabulary: ``hit`` / ``all_targets``, ``no_points``, ``count_mismatch``,
    ``outside_image``, ``miss`` / ``point_outside_targets``, ``unparseable`` (the evaluator raised).
    """
    height, width = mask.shape
    points = answer.points
    if not points:
        return False, "no_points", [], None
    if answer.evaluator == "lmms-eval":
        expected = int(count or 0)
        check = points if category == "counting" else points[:1]
        used = [list(p) if p is not None else None for p in check]
        for p in check:
            if p is None:
                return False, "unparseable", used, "a coordinate lmms-eval cannot round (infinite)"
            pix = _lmms_pixel(p, width, height)
            if pix is None:
                return False, "outside_image", used, None
            x, y = pix
            if not mask[y, x]:
                return False, ("point_outside_targets" if category == "counting" else "miss"), used, None
        if category == "counting" and len(points) != expected:
            return False, "count_mismatch", used, f"expected {expected}, got {len(points)}"
        return True, ("all_targets" if category == "counting" else "hit"), used, None
    # PointArena: the readers already kept only the first point of a non-counting answer
    expected = count if count is not None else 1
    used = [_jsonable(p) for p in points]
    if category == "counting" and len(points) != expected:
        return False, "count_mismatch", used, f"Count mismatch: expected {expected}, got {len(points)}"
    try:
        for p in points:
            pix = _pa_pixel(p, width, height)
            if pix is None:
                return False, "outside_image", used, None
            if not mask[pix[1], pix[0]]:
                return False, ("point_outside_targets" if category == "counting" else "miss"), used, None
    except _Raise as e:
        return False, "unparseable", used, f"Processing error: {e}"
    return True, ("all_targets" if category == "counting" else "hit"), used, None


def point_pixel(point: Any, width: int, height: int, evaluator: str) -> tuple[int, int] | None:
    """The mask pixel ``(x, y)`` the released ``evaluator`` ("pointarena" or "lmms-eval") tests for one
    point as ``ref_score`` holds it, or ``None`` when it tests none (outside the image, or where it raises):
    for per-point fractions (``scoring.lmms_metrics``) under ``--rules reference``."""
    if evaluator == "lmms-eval":
        ok = isinstance(point, (list, tuple)) and len(point) == 2
        return _lmms_pixel(point, width, height) if ok else None
    try:
        return _pa_pixel(point, width, height)
    except _Raise:
        return None


def _lmms_pixel(point: Any, width: int, height: int) -> tuple[int, int] | None:
    """lmms-eval's pixel of one of its (already rounded) integer points, or ``None`` outside the image."""
    x, y = point
    return (int(x), int(y)) if 0 <= x < width and 0 <= y < height else None


def _jsonable(p: Any) -> Any:
    try:
        json.dumps(p, allow_nan=False)
        return p
    except (TypeError, ValueError):
        return repr(p)


def pointarena_mask(path_or_file: Any) -> np.ndarray:
    """``load_mask`` of model_evaluator.py: ``np.array(Image.open(mask))``; 2-D: ``> 127``; 3-D: any channel
    ``> 127`` (an alpha channel counts). Raises ``OSError`` / ``ValueError`` for an unreadable mask."""
    from PIL import Image

    with Image.open(path_or_file) as im:
        a = np.array(im)
    if a.ndim == 2:
        return a > 127
    if a.ndim == 3:
        return np.any(a > 127, axis=2)
    raise ValueError(f"Unexpected mask shape: {a.shape}")


def lmms_mask(path_or_file: Any) -> np.ndarray:
    """lmms-eval ``_load_mask``: ``convert("L") > 127``."""
    from PIL import Image

    with Image.open(path_or_file) as im:
        return np.array(im.convert("L")) > 127
