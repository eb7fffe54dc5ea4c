"""Prompts per point format and the PointArena Table 1 prompt variants, as OpenAI chat messages.

Each point format carries its own instruction (PointArena sec. 4.1: models with their own
coordinate output — Molmo, Qwen2.5-VL, Gemini — are prompted in it; every other model gets the
standard ``[x, y]`` pixel format, here ``xy_pixels``, with the image size stated). The prompt styles
are the rows of PointArena Table 1 (sec. 4.4):

- ``default``: the instruction plus the format's own answer instruction;
- ``two_shot``: two worked examples (text-only chat turns whose answers are written in the
  format by ``format_points``) before the default prompt;
- ``cot``: "think step by step, then answer" around the default prompt;
- ``unparsed``: the raw user instruction only, no format instruction.

The user turn carries the image as a base64 data URL (JPEG quality 90 by default, or PNG).
``extract_instruction`` inverts the templates (the sim model server uses it to recover what the
user asked from a prompt built here).
"""

from __future__ import annotations

import base64
import re
import threading

import cv2
import numpy as np

from .points import POINT_FORMATS, format_points

__all__ = [
    "PROMPT_STYLES",
    "build_prompt",
    "build_messages",
    "check_format_and_style",
    "extract_instruction",
    "image_to_data_url",
    "data_url_to_image",
    "JPEG_QUALITY",
    "MAX_DATA_URL_PIXELS",
]

PROMPT_STYLES = ("default", "two_shot", "cot", "unparsed")
JPEG_QUALITY = 90

# The format's own answer instruction; ``{instruction}``, ``{width}``, ``{height}`` are filled in.
# Gemini: Google's Robotics-ER pointing prompt; RoboPoint: the suffix of its released prompts; grid1000:
# lmms-eval's Point-Bench suffix (prompt_suffix_type "0_999");
# Qwen2.5-VL: the cookbook's "output its point coordinates in JSON format"; xy_pixels: PointArena's
# standard [x, y] pixel format with the image size.
_TEMPLATES = {
    "molmo": "{instruction}\nPoint to the answer.",
    "molmo2": "{instruction}\nPoint to the answer.",
    "gemini": (
        "{instruction}\nPoint to the location that answers the instruction above. The answer should "
        'follow the json format: [{{"point": <point>, "label": <label1>}}, ...]. '
        "The points are in [y, x] format normalized to 0-1000."
    ),
    "qwen": (
        "{instruction}\nLocate the answer to the instruction above with points and output its point "
        'coordinates in JSON format: [{{"point_2d": [x, y], "label": "<label>"}}].'
    ),
    "grid1000": (
        "{instruction} Your answer should be formatted as a list of tuples, i.e. [(x1, y1), (x2, y2), ...], "
        "where each tuple contains the x and y coordinates of a point satisfying the conditions above. The "
        "coordinates should be integers between 0 and 999, representing the pixel locations scaled to a "
        "1000x1000 grid."
    ),
    "qwen3": (
        "{instruction}\nLocate the answer to the instruction above with points and output its point "
        'coordinates in JSON format: [{{"point_2d": [x, y], "label": "<label>"}}], with x and y normalized '
        "to the range [0, 1000]."
    ),
    "robopoint": (
        "{instruction} Your answer should be formatted as a list of tuples, i.e. [(x1, y1), (x2, y2), ...], "
        "where each tuple contains the x and y coordinates of a point satisfying the conditions above. "
        "The coordinates should be between 0 and 1, indicating the normalized pixel locations of the "
        "points in the image."
    ),
    "xy_pixels": (
        "{instruction}\nThe image is {width} pixels wide and {height} pixels high. Answer with the point as "
        "[x, y], where x is the horizontal and y the vertical pixel coordinate, origin at the top-left "
        "corner. If the instruction needs several points, answer with a list [[x1, y1], [x2, y2], ...]. "
        "Output only the coordinates."
    ),
}
_COT = (
    "{body}\nBefore answering, think step by step: describe the objects in the image that matter for the "
    "instruction and where they are, then decide which location answers it. Give the final answer, in "
    "the format asked for above, on the last line."
)

# Two worked examples: (instruction, label, points as fractions of width and height). The answers
# are written in the agent's format at the current image size, so they teach the exact syntax.
_SHOTS = (
    ("Point to the red apple on the table.", "red apple", [(0.25, 0.60)]),
    ("Point to every cup on the shelf.", "cup", [(0.62, 0.30), (0.80, 0.32)]),
)
_SHOT_INTRO = "Example ({n} of 2). The image (not shown) is {width} x {height} pixels. "


def check_format_and_style(fmt: str, style: str) -> None:
    """Raise ``ValueError`` for an unknown point format or prompt style, or ``auto`` with a style
    that asks for a format (``auto`` has no answer instruction)."""
    if style not in PROMPT_STYLES:
        raise ValueError(f"unknown prompt style {style!r}; use one of {', '.join(PROMPT_STYLES)}")
    if fmt not in POINT_FORMATS:
        raise ValueError(f"unknown point format {fmt!r}; use one of {', '.join(POINT_FORMATS)}")
    if fmt == "auto" and style != "unparsed":
        raise ValueError("point format 'auto' has no answer instruction; use prompt style 'unparsed'")


def build_prompt(instruction: str, fmt: str, style: str, *, width: int, height: int) -> str:
    """The final user text for ``instruction`` (the two_shot examples are separate turns, see ``build_messages``).

    Raises:
        ValueError: unknown format or style, or ``auto`` with a style other than ``unparsed``.
    """
    check_format_and_style(fmt, style)
    instruction = instruction.strip()
    if style == "unparsed":
        return instruction
    body = _TEMPLATES[fmt].format(instruction=instruction, width=width, height=height)
    return _COT.format(body=body) if style == "cot" else body


def image_to_data_url(image_rgb: np.ndarray, encoding: str = "jpeg") -> str:
    """``(H, W, 3)`` uint8 RGB -> ``data:image/jpeg;base64,...`` (quality ``JPEG_QUALITY``) or PNG.

    A read-only array (a cached image nobody may change: the arena's curated images) is encoded
    once per encoding: both models of a battle, and every battle on that image, get the kept URL
    (the encode was a tenth of an arena worker's time, ``pointlab perf arena``). Writable arrays are
    encoded on every call.

    Raises:
        ValueError: not an ``(H, W, 3)`` uint8 array, unknown encoding, or the encoder failed.
    """
    if _frozen(image_rgb):
        with _ENCODED_LOCK:
            held = _ENCODED.get((id(image_rgb), encoding))
        if held is not None and held[0] is image_rgb:
            return held[1]
        url = _encode(image_rgb, encoding)
        with _ENCODED_LOCK:
            if len(_ENCODED) >= 32:
                _ENCODED.clear()
            # the entry holds the array, so its id cannot be reused by another array while it is here
            _ENCODED[(id(image_rgb), encoding)] = (image_rgb, url)
        return url
    return _encode(image_rgb, encoding)


_ENCODED: dict[tuple[int, str], tuple[np.ndarray, str]] = {}
_ENCODED_LOCK = threading.Lock()


def _frozen(a: object) -> bool:
    """Whether nothing can change ``a``'s pixels: read-only, and so is every array it is a view of
    (a read-only view of a writable array changes with it)."""
    b = a
    while isinstance(b, np.ndarray):
        if b.flags.writeable:
            return False
        b = b.base
    return isinstance(a, np.ndarray)


def _encode(image_rgb: np.ndarray, encoding: str) -> str:
    img = np.asarray(image_rgb)
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        raise ValueError(f"image must be (H, W, 3) uint8 RGB, got {img.shape} {img.dtype}")
    bgr = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
    if encoding == "jpeg":
        ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
        mime = "image/jpeg"
    elif encoding == "png":
        ok, buf = cv2.imencode(".png", bgr)
        mime = "image/png"
    else:
        raise ValueError(f"unknown image encoding {encoding!r} (jpeg, png)")
    if not ok:
        raise ValueError("image encoding failed")
    return f"data:{mime};base64,{base64.b64encode(buf.tobytes()).decode('ascii')}"


_DATA_URL = re.compile(r"^data:(image/[\w.+-]+)?(;[\w=.-]+)*?;base64,(.*)$", re.S)


#: largest image a data URL may decode to (64 Mpx = 192 MB as RGB). A few hundred kilobytes of PNG
#: can claim 12000 x 12000 pixels; decoding that costs over a gigabyte before anything can refuse it.
MAX_DATA_URL_PIXELS = 64 * 2**20


def _check_image_header(raw: bytes) -> None:
    """Refuse an image whose header claims more than ``MAX_DATA_URL_PIXELS`` (read lazily by Pillow,
    nothing decoded). Formats Pillow does not know are left to OpenCV's own checks."""
    import io
    import warnings

    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():  # the size is checked below against our own limit
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(raw)) as im:
                w, h = im.size
    except Image.DecompressionBombError as e:  # Pillow's own, larger limit
        raise ValueError(f"image data URL is too large: {e}") from e
    except (UnidentifiedImageError, OSError, ValueError):
        return
    if w * h > MAX_DATA_URL_PIXELS:
        raise ValueError(f"image data URL is {w}x{h} pixels, over the {MAX_DATA_URL_PIXELS} pixel limit")


def data_url_to_image(url: str) -> np.ndarray:
    """Decode a ``data:image/...;base64,`` URL to ``(H, W, 3)`` uint8 RGB.

    Raises:
        ValueError: not a base64 data URL, no bytes, an image over ``MAX_DATA_URL_PIXELS``, or the
            bytes are not a decodable image.
    """
    m = _DATA_URL.match(url or "")
    if not m:
        raise ValueError("image_url must be a base64 data URL (data:image/...;base64,...)")
    try:
        raw = base64.b64decode(m.group(3), validate=False)
    except (ValueError, TypeError) as e:
        raise ValueError(f"bad base64 in image data URL: {e}") from e
    if not raw:  # cv2.imdecode asserts on an empty buffer (cv2.error, not ValueError)
        raise ValueError("image data URL holds no bytes")
    _check_image_header(raw)
    try:
        bgr = cv2.imdecode(np.frombuffer(raw, dtype=np.uint8), cv2.IMREAD_COLOR)
    except cv2.error as e:
        raise ValueError(f"image data URL does not hold a decodable image ({e})") from e
    if bgr is None:
        raise ValueError("image data URL does not hold a decodable image")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def build_messages(
    instruction: str, image_rgb: np.ndarray, fmt: str, style: str, *, width: int, height: int, encoding: str = "jpeg"
) -> list[dict]:
    """OpenAI chat messages asking a model to point for ``instruction`` on ``image_rgb``.

    Args:
        instruction: what the user asked (e.g. "pick up the red mug").
        image_rgb: ``(H, W, 3)`` uint8 RGB, the image as sent to the model.
        fmt: a point format (``auto`` only with style ``unparsed``).
        style: one of ``PROMPT_STYLES``.
        width, height: the size stated in the prompt and used for examples (the sent image's size).
        encoding: ``jpeg`` (quality 90) or ``png``.

    Returns:
        ``[{"role": "user", "content": [...]}, ...]``; the last user turn holds the image part then
        the text part. ``two_shot`` prepends two text-only user/assistant example turns.

    Raises:
        ValueError: as ``build_prompt`` and ``image_to_data_url``.
    """
    text = build_prompt(instruction, fmt, style, width=width, height=height)
    messages: list[dict] = []
    if style == "two_shot":
        for n, (shot, label, fractions) in enumerate(_SHOTS, start=1):
            pts = np.array([[fx * width, fy * height] for fx, fy in fractions])
            messages.append(
                {
                    "role": "user",
                    "content": _SHOT_INTRO.format(n=n, width=width, height=height)
                    + build_prompt(shot, fmt, "default", width=width, height=height),
                }
            )
            messages.append({"role": "assistant", "content": format_points(pts, fmt, width, height, label=label)})
    messages.append(
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": image_to_data_url(image_rgb, encoding)}},
                {"type": "text", "text": text},
            ],
        }
    )
    return messages


def _template_regex(template: str) -> re.Pattern:
    parts = re.split(r"(\{instruction\}|\{width\}|\{height\}|\{body\})", template.replace("{{", "{").replace("}}", "}"))
    out = []
    for p in parts:
        if p == "{instruction}":
            out.append(r"(?P<instruction>.+?)")
        elif p in ("{width}", "{height}"):
            out.append(r"\d+")
        elif p == "{body}":
            out.append(r"(?P<body>.+?)")
        else:
            out.append(re.escape(p))
    return re.compile("".join(out), re.S)


_TEMPLATE_RES = [_template_regex(t) for t in dict.fromkeys(_TEMPLATES.values())]
_COT_RE = _template_regex(_COT)


def extract_instruction(prompt_text: str) -> str:
    """The user instruction inside a prompt built by ``build_prompt`` (any format and style).

    Text that matches no template is returned stripped (the ``unparsed`` style, or a foreign prompt).
    """
    text = (prompt_text or "").strip()
    m = _COT_RE.fullmatch(text)
    if m:
        text = m.group("body").strip()
    for rx in _TEMPLATE_RES:
        m = rx.fullmatch(text)
        if m:
            return m.group("instruction").strip()
    return text
