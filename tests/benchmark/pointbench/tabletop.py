"""A small Point-Bench dataset on real photos: uoc_tabletop frames 000000 and 000004 with masks drawn
programmatically (colour thresholds inside hand-chosen boxes, a hand-chosen polygon and ellipse).

Each mask was checked by eye on an overlay of the frame (teal bowl, white bowl, white-mug handle,
orange drill body, yellow toy block, pink cup, Clorox canister). Coordinates are pixels of the
640x480 colour frames. Nothing is written into the repository: everything goes to ``out``.
"""

from __future__ import annotations

import json
from typing import Any
from pathlib import Path

import cv2
import numpy as np
from PIL import Image


def _colour(im, box, h=None, s=(0, 255), v=(0, 255)):
    hsv = cv2.cvtColor(im, cv2.COLOR_RGB2HSV).astype(int)
    m = (hsv[..., 1] >= s[0]) & (hsv[..., 1] <= s[1]) & (hsv[..., 2] >= v[0]) & (hsv[..., 2] <= v[1])
    if h is not None:
        m &= (hsv[..., 0] >= h[0]) & (hsv[..., 0] <= h[1])
    x0, y0, x1, y1 = box
    inside = np.zeros_like(m)
    inside[y0 : y1 + 1, x0 : x1 + 1] = True
    m = cv2.morphologyEx((m & inside).astype(np.uint8), cv2.MORPH_CLOSE, np.ones((7, 7), np.uint8))
    _, lab, st, _ = cv2.connectedComponentsWithStats(m, connectivity=8)
    out = (lab == 1 + int(np.argmax(st[1:, cv2.CC_STAT_AREA]))).astype(np.uint8)
    cnts, _ = cv2.findContours(out, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    cv2.drawContours(out, cnts, -1, 1, thickness=-1)  # fill label/highlight holes
    return out.astype(bool)


def _poly(shape, pts):
    m = np.zeros(shape[:2], np.uint8)
    cv2.fillPoly(m, [np.array(pts, np.int32)], 1)
    return m.astype(bool)


def _ellipse(shape, c, axes):
    m = np.zeros(shape[:2], np.uint8)
    cv2.ellipse(m, c, axes, 0, 0, 360, 1, -1)
    return m.astype(bool)


def masks(tabletop: Path) -> dict[str, np.ndarray]:
    f0 = np.asarray(Image.open(tabletop / "000000-color.png").convert("RGB"))
    f4 = np.asarray(Image.open(tabletop / "000004-color.png").convert("RGB"))
    return {
        "teal_bowl": _colour(f0, (160, 305, 305, 440), h=(75, 100), s=(60, 255)),
        "white_bowl": _ellipse(f0.shape, (422, 374), (62, 56)),
        "mug_handle": _colour(f0, (330, 222, 352, 255), s=(0, 60), v=(150, 255)),
        "drill": _colour(f0, (312, 88, 425, 225), h=(3, 22), s=(140, 255)),
        "yellow_block": _colour(f4, (205, 225, 290, 365), h=(18, 35), s=(110, 255)),
        "pink_cup": _colour(f4, (415, 215, 520, 345), h=(135, 170), s=(60, 255)),
        "clorox": _poly(f4.shape, [(182, 32), (270, 15), (298, 200), (218, 218)]),
    }


F0, F4 = "000000-color.png", "000004-color.png"
REFERENCE_PX = [250.0, 400.0]  # on the table, below the yellow block

# (query, category, frame, mask keys, extra fields)
QUERIES: list[tuple[str, str, str, list[str], dict[str, Any]]] = [
    ("Point to the leftmost bowl.", "spatial", F0, ["teal_bowl"], {}),
    ("Point to the bowl on the right.", "spatial", F0, ["white_bowl"], {}),
    ("Point to the handle of the white mug.", "affordance", F0, ["mug_handle"], {}),
    ("Point to the pink cup you could pour water into.", "affordance", F4, ["pink_cup"], {}),
    ("Point to all the bowls.", "counting", F0, ["teal_bowl", "white_bowl"], {"instances": True}),
    ("Point to the yellow block and the pink cup.", "counting", F4, ["yellow_block", "pink_cup"], {"count": 2}),
    (
        "Point to the object closest to the marked point.",
        "steerable",
        F4,
        ["yellow_block"],
        {"reference_points_px": [REFERENCE_PX]},
    ),
    ("Point to the tool you would use to make a hole in wood.", "reasoning", F0, ["drill"], {}),
    ("Point to the container that holds cleaning wipes.", "reasoning", F4, ["clorox"], {}),
]

# Hand-chosen answers (pixels, checked on the overlays): True = inside the target by eye.
#   (230, 380) centre of the teal bowl; (420, 375) centre of the white bowl; (300, 250) white mug body
#   (not its handle); (465, 290) pink cup; (240, 348) orange front face of the yellow block;
#   (340, 115) orange drill body.
SCRIPTED = {
    "Point to the leftmost bowl.": ("[230, 380]", True),
    "Point to the bowl on the right.": ("[230, 380]", False),  # the left bowl
    "Point to the handle of the white mug.": ("[300, 250]", False),  # mug body
    "Point to the pink cup you could pour water into.": ("[465, 290]", True),
    "Point to all the bowls.": ("[[230, 380], [420, 375]]", True),
    "Point to the yellow block and the pink cup.": ("[[240, 348], [465, 290]]", True),
    "Point to the object closest to the marked point.": ("[240, 348]", True),
    "Point to the tool you would use to make a hole in wood.": ("[340, 115]", True),
    "Point to the container that holds cleaning wipes.": ("[465, 290]", False),  # the cup
}
# Per category by hand: spatial 1/2, affordance 1/2, counting 2/2, steerable 1/1, reasoning 1/2.
EXPECTED = {"spatial": 0.5, "affordance": 0.5, "counting": 1.0, "steerable": 1.0, "reasoning": 0.5}
EXPECTED_AVERAGE = (0.5 + 0.5 + 1.0 + 1.0 + 0.5) / 5  # 0.7


def write_source(tabletop: Path, out: Path) -> Path:
    """Masks as PNGs in ``out`` and ``out/queries.jsonl`` (images referenced in the shared folder)."""
    out.mkdir(parents=True, exist_ok=True)
    ms = masks(tabletop)
    for k, m in ms.items():
        Image.fromarray(m.astype(np.uint8) * 255).save(out / f"{k}.png")
    lines = []
    for q, cat, frame, keys, extra in QUERIES:
        d: dict[str, Any] = {"image": str(tabletop / frame), "query": q, "category": cat}
        if extra.get("instances"):
            d["instance_masks"] = [f"{k}.png" for k in keys]
        elif len(keys) > 1:
            union = np.logical_or.reduce([ms[k] for k in keys])
            name = "+".join(keys) + ".png"
            Image.fromarray(union.astype(np.uint8) * 255).save(out / name)
            d["mask"] = name
        else:
            d["mask"] = f"{keys[0]}.png"
        if "count" in extra:
            d["count"] = extra["count"]
        if "reference_points_px" in extra:
            d["reference_points_px"] = extra["reference_points_px"]
        lines.append(json.dumps(d))
    (out / "queries.jsonl").write_text("\n".join(lines) + "\n")
    return out / "queries.jsonl"
