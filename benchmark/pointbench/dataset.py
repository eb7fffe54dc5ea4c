"""Point-Bench items: the release layout, the instance-mask form, GT / PRED JSONL files.

PointArena sec. 3.2: image-query pairs in five categories with pixel-level target masks.

Release layout (the PointArena repository): ``DIR/data.json`` is a list of entries
``{"image_filename", "mask_filename", "user_input", "category", "count"?}``; images live under
``DIR/images/<category>/<image_filename>`` and masks under ``DIR/masks/<mask_filename>``; a mask pixel
is a target when its value is above 127. Steerable reference points come from
``DIR/pixmo_metadata.csv`` (``image_filename``, ``points`` = JSON ``[{"x", "y"}]`` in percent of
width and height) when present, or from an entry's own ``reference_points_px`` ``[[u, v], ...]``.
The extended instance form adds ``instance_mask_filenames`` (one mask per target instance).

GT JSONL (one item a line, paths relative to the file): ``{id, image, width, height, category,
mask, instance_masks?, count?, query?, reference_points_px?}``.
PRED JSONL: ``{id, prediction, format}`` (raw model text and a point format or ``auto``) or
``{id, points}`` (original-image pixels ``[[u, v], ...]``). A run file of ``pointlab bench pointing``
(``run_<k>.jsonl``: ``{id, raw_text, point_format, error, ...}``) is read as PRED too, so a saved run
is re-scored from its raw answers without calling any model.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

__all__ = ["CATEGORIES", "CATEGORY_ALIASES", "MASK_THRESHOLD", "BenchItem", "Prediction", "DatasetError",
           "normalise_category", "load_mask", "load_release", "load_gt_jsonl", "write_gt_jsonl",
           "load_dataset", "load_pred_jsonl", "item_to_gt_dict"]

CATEGORIES = ("spatial", "affordance", "counting", "steerable", "reasoning")
# Names used in the release's folders and in Table 1 of the paper.
CATEGORY_ALIASES = {"affordable": "affordance", "steerability": "steerable", "count": "counting"}
MASK_THRESHOLD = 127  # a mask pixel is a target when its value is above this


class DatasetError(ValueError):
    """A dataset file is missing, malformed, or inconsistent (mask size differs from the image, ...)."""


def normalise_category(name: str) -> str:
    """Lower-case a category and map aliases (``affordable`` -> ``affordance``).

    Raises: DatasetError for a name outside the five categories.
    """
    c = str(name).strip().lower()
    c = CATEGORY_ALIASES.get(c, c)
    if c not in CATEGORIES:
        raise DatasetError(f"unknown category {name!r} (expected one of {', '.join(CATEGORIES)})")
    return c


@dataclass
class BenchItem:
    """One Point-Bench item.

    Attributes:
        id: unique item id.
        image: absolute path of the colour image.
        query: the instruction text.
        category: one of ``CATEGORIES``.
        width, height: image size in pixels.
        mask: path of the union target mask (``None`` when only instance masks are given).
        instance_masks: one mask path per target instance (may be empty).
        count: target count for counting items (``None`` otherwise).
        reference_points_px: steerable reference points ``[(u, v)]`` in original pixels.
    """

    id: str
    image: Path
    query: str
    category: str
    width: int
    height: int
    mask: Path | None = None
    instance_masks: list[Path] = field(default_factory=list)
    count: int | None = None
    reference_points_px: list[tuple[float, float]] = field(default_factory=list)

    def target_mask(self) -> np.ndarray:
        """Union target mask ``(H, W)`` bool (the union of instance masks when no mask file).

        Raises: DatasetError (missing / unreadable mask, size different from the image).
        """
        if self.mask is not None:
            return load_mask(self.mask, self.width, self.height)
        if not self.instance_masks:
            raise DatasetError(f"item {self.id}: no mask and no instance masks")
        out = np.zeros((self.height, self.width), dtype=bool)
        for m in self.load_instance_masks():
            out |= m
        return out

    def load_instance_masks(self) -> list[np.ndarray]:
        """Instance masks, each ``(H, W)`` bool. Raises: DatasetError."""
        return [load_mask(p, self.width, self.height) for p in self.instance_masks]

    def load_image_rgb(self) -> np.ndarray:
        """The image as ``(H, W, 3)`` uint8 RGB. Raises: DatasetError."""
        try:
            with Image.open(self.image) as im:
                return np.asarray(im.convert("RGB"))
        except (OSError, UnidentifiedImageError) as e:
            raise DatasetError(f"item {self.id}: cannot read image {self.image}: {e}") from e


@dataclass(frozen=True)
class Prediction:
    """One PRED line: raw text + format, or points already in pixels."""

    id: str
    prediction: str | None = None
    format: str | None = None
    points_px: tuple[tuple[float, float], ...] | None = None
    error: str | None = None  # the model call failed (run files): scored as ``model_error``


@lru_cache(maxsize=256)
def _load_mask_cached(path: str, mtime_ns: int) -> np.ndarray:
    with Image.open(path) as im:
        a = np.asarray(im.convert("L"))
    m = a > MASK_THRESHOLD
    m.setflags(write=False)
    return m


def load_mask(path: str | Path, width: int | None = None, height: int | None = None) -> np.ndarray:
    """Read a mask image as ``(H, W)`` bool, ``True`` where the grey value is above 127.

    Cached by path and modification time (runs score the same masks many times); the array is
    read-only.

    Raises: DatasetError (missing, unreadable, or not ``height x width`` when those are given).
    """
    p = Path(path)
    try:
        m = _load_mask_cached(str(p), p.stat().st_mtime_ns)
    except (OSError, UnidentifiedImageError) as e:
        raise DatasetError(f"cannot read mask {p}: {e}") from e
    if width is not None and height is not None and m.shape != (height, width):
        raise DatasetError(f"mask {p} is {m.shape[1]}x{m.shape[0]}, image is {width}x{height}")
    return m


def _image_size(path: Path) -> tuple[int, int]:
    try:
        with Image.open(path) as im:
            return im.size
    except (OSError, UnidentifiedImageError) as e:
        raise DatasetError(f"cannot read image {path}: {e}") from e


def _points_list(v: Any, where: str) -> list[tuple[float, float]]:
    try:
        pts = [(float(p[0]), float(p[1])) for p in (v or [])]
    except (TypeError, ValueError, IndexError):
        raise DatasetError(f"{where}: reference points must be [[u, v], ...]") from None
    return pts


def _pixmo_points(root: Path) -> dict[str, list[tuple[float, float]]]:
    """``pixmo_metadata.csv``: image_filename -> points in percent of width/height."""
    f = root / "pixmo_metadata.csv"
    if not f.exists():
        return {}
    out = {}
    with f.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            try:
                pts = json.loads(row.get("points") or "[]")
                out[row["image_filename"]] = [(float(p["x"]), float(p["y"])) for p in pts]
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                continue  # a malformed metadata row only loses that image's reference point
    return out


def load_release(root: str | Path) -> list[BenchItem]:
    """Load the release layout (see module docstring). Item ids are ``<category>/<image stem>``
    (suffixed ``#n`` when an image carries several queries).

    Raises: DatasetError (missing data.json / image / mask, unknown category, bad entry).
    """
    root = Path(root)
    try:
        entries = json.loads((root / "data.json").read_text(encoding="utf-8"))
    except OSError as e:
        raise DatasetError(f"cannot read {root / 'data.json'}: {e.strerror or e}") from e
    except json.JSONDecodeError as e:
        raise DatasetError(f"{root / 'data.json'}: invalid JSON ({e.msg})") from e
    if not isinstance(entries, list):
        raise DatasetError(f"{root / 'data.json'}: expected a list of entries")
    pixmo = _pixmo_points(root)
    items, seen = [], set()
    for n, e in enumerate(entries):
        where = f"data.json[{n}]"
        if not isinstance(e, dict):
            raise DatasetError(f"{where}: expected an object")
        try:
            fname, raw_cat, query = e["image_filename"], e["category"], e["user_input"]
        except KeyError as k:
            raise DatasetError(f"{where}: missing key {k.args[0]!r}") from None
        cat = normalise_category(raw_cat)
        img = root / "images" / str(raw_cat) / fname
        if not img.exists():
            img = root / "images" / cat / fname
        if not img.exists():
            raise DatasetError(f"{where}: image {img} not found")
        w, h = _image_size(img)
        mask = root / "masks" / e["mask_filename"] if e.get("mask_filename") else None
        inst = [root / "masks" / f for f in e.get("instance_mask_filenames") or []]
        for p in ([mask] if mask else []) + inst:
            if not p.exists():
                raise DatasetError(f"{where}: mask {p} not found")
        if mask is None and not inst:
            raise DatasetError(f"{where}: no mask_filename or instance_mask_filenames")
        refs = _points_list(e.get("reference_points_px"), where)
        if not refs and fname in pixmo:
            refs = [(x * w / 100.0, y * h / 100.0) for x, y in pixmo[fname]]
        base = f"{cat}/{Path(fname).stem}"
        iid, k = base, 1
        while iid in seen:
            k += 1
            iid = f"{base}#{k}"
        seen.add(iid)
        count = e.get("count")
        items.append(BenchItem(iid, img.resolve(), str(query), cat, w, h, mask.resolve() if mask else None,
                               [p.resolve() for p in inst], int(count) if count is not None else None, refs))
    return items


def _records(p: Path):
    """``(where, record)`` of a JSONL file (``benchmark.records``), errors as ``DatasetError``."""
    from ..records import RecordError, iter_jsonl

    try:
        yield from iter_jsonl(p)
    except RecordError as e:
        raise DatasetError(str(e)) from e


def load_gt_jsonl(path: str | Path) -> list[BenchItem]:
    """Load GT JSONL (paths relative to the file). Raises: DatasetError naming the line."""
    p = Path(path)
    items, seen = [], set()
    for where, d in _records(p):
        try:
            iid = str(d["id"])
            w, h = int(d["width"]), int(d["height"])
            cat = normalise_category(d["category"])
            image = (p.parent / d["image"]).resolve()
        except KeyError as k:
            raise DatasetError(f"{where}: missing key {k.args[0]!r}") from None
        except (TypeError, ValueError) as e:
            raise DatasetError(f"{where}: {e}") from None
        if iid in seen:
            raise DatasetError(f"{where}: duplicate id {iid!r}")
        seen.add(iid)
        mask = (p.parent / d["mask"]).resolve() if d.get("mask") else None
        inst = [(p.parent / m).resolve() for m in d.get("instance_masks") or []]
        if mask is None and not inst:
            raise DatasetError(f"{where}: no mask and no instance_masks")
        count = d.get("count")
        items.append(BenchItem(iid, image, str(d.get("query", "")), cat, w, h, mask, inst,
                               int(count) if count is not None else None,
                               _points_list(d.get("reference_points_px"), where)))
    return items


def _rel(path: Path, base: Path) -> str:
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def item_to_gt_dict(item: BenchItem, base: Path) -> dict:
    """One GT JSONL record for ``item`` with paths relative to ``base`` when below it."""
    d: dict[str, Any] = {"id": item.id, "image": _rel(item.image, base), "width": item.width,
                         "height": item.height, "category": item.category, "query": item.query,
                         "mask": _rel(item.mask, base) if item.mask else None}
    if item.instance_masks:
        d["instance_masks"] = [_rel(m, base) for m in item.instance_masks]
    if item.count is not None:
        d["count"] = item.count
    if item.reference_points_px:
        d["reference_points_px"] = [list(p) for p in item.reference_points_px]
    return d


def write_gt_jsonl(items: list[BenchItem], path: str | Path) -> Path:
    """Write GT JSONL for ``items`` (paths relative to the file's folder). Returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    base = p.parent.resolve()
    p.write_text("".join(json.dumps(item_to_gt_dict(i, base)) + "\n" for i in items), encoding="utf-8")
    return p


def load_dataset(path: str | Path) -> list[BenchItem]:
    """A release folder (``data.json``), a GT JSONL file, or a folder holding ``gt.jsonl``.

    Raises: DatasetError when none of these is found.
    """
    p = Path(path)
    if p.is_file():
        return load_gt_jsonl(p)
    if (p / "data.json").exists():
        return load_release(p)
    if (p / "gt.jsonl").exists():
        return load_gt_jsonl(p / "gt.jsonl")
    raise DatasetError(f"{p}: no data.json, gt.jsonl, or GT JSONL file")


def load_pred_jsonl(path: str | Path) -> dict[str, Prediction]:
    """PRED JSONL -> ``{id: Prediction}``.

    ``points`` that are not ``[[u, v], ...]`` of finite numbers (``NaN``, ``Infinity``, text) become a
    ``format="invalid_points"`` prediction, scored as ``unparseable``.

    Raises: DatasetError naming the line (invalid JSON, no id, an id already seen, neither
    prediction nor points).
    """
    out = {}
    for where, d in _records(Path(path)):
        if "id" not in d:
            raise DatasetError(f"{where}: expected an object with an id")
        iid = str(d["id"])
        if iid in out:
            # two answers for one item: which one counts is a guess, so refuse (as score vsi does)
            raise DatasetError(f"{where}: duplicate id {iid!r}")
        if d.get("points") is not None:
            try:
                pts = tuple((float(q[0]), float(q[1])) for q in d["points"])
                if not all(math.isfinite(c) for q in pts for c in q):
                    raise ValueError("non-finite point coordinate")
            except (TypeError, ValueError, IndexError):
                # malformed points are a recorded failure at scoring time, not a crash
                out[iid] = Prediction(iid, prediction=json.dumps(d["points"]), format="invalid_points")
                continue
            out[iid] = Prediction(iid, points_px=pts)
        elif "raw_text" in d:  # a run record of pointlab bench pointing
            out[iid] = Prediction(iid, prediction=str(d.get("raw_text") or ""),
                                  format=str(d.get("point_format") or "auto"), error=d.get("error") or None)
        elif "prediction" in d:
            out[iid] = Prediction(iid, prediction=str(d["prediction"] or ""), format=str(d.get("format") or "auto"))
        else:
            raise DatasetError(f"{where}: needs 'prediction' (+ 'format'), 'points' or 'raw_text'")
    return out
