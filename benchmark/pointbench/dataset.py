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
import functools
import json
import math
import operator
import zipfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..records import is_journal_line, json_error_text
from .maskcache import PackedMask, read_packed, write_packed
from .release import FileRef, ReleaseFiles, file_key, open_binary

from pointlab.benchmark.errors import BenchmarkError

__all__ = [
    "CATEGORIES",
    "CATEGORY_ALIASES",
    "MASK_THRESHOLD",
    "MASK_RULES",
    "BenchItem",
    "Prediction",
    "DatasetError",
    "normalise_category",
    "load_mask",
    "clear_mask_caches",
    "load_release",
    "load_gt_jsonl",
    "write_gt_jsonl",
    "load_dataset",
    "load_pred_jsonl",
    "item_to_gt_dict",
]

CATEGORIES = ("spatial", "affordance", "counting", "steerable", "reasoning")
# Names used in the release's folders and in Table 1 of the paper.
CATEGORY_ALIASES = {"affordable": "affordance", "steerability": "steerable", "count": "counting"}
MASK_THRESHOLD = 127  # a mask pixel is a target when its value is above this


class DatasetError(BenchmarkError, ValueError):
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
    image: FileRef  # a file, or a member of the release's zips
    query: str
    category: str
    width: int
    height: int
    mask: FileRef | None = None
    instance_masks: list[FileRef] = field(default_factory=list)
    count: int | None = None
    reference_points_px: list[tuple[float, float]] = field(default_factory=list)

    def target_mask(self, rule: str = "pointlab") -> np.ndarray:
        """Union target mask ``(H, W)`` bool (the union of instance masks when no mask file), read under
        mask rule ``rule`` (``MASK_RULES``).

        Raises: DatasetError (missing / unreadable mask, size different from the image).
        """
        if self.mask is not None:
            return load_mask(self.mask, self.width, self.height, rule=rule)
        if not self.instance_masks:
            raise DatasetError(f"item {self.id}: no mask and no instance masks")
        out = np.zeros((self.height, self.width), dtype=bool)
        for m in self.load_instance_masks(rule):
            out |= m
        return out

    def load_instance_masks(self, rule: str = "pointlab") -> list[np.ndarray]:
        """Instance masks, each ``(H, W)`` bool. Raises: DatasetError."""
        return [load_mask(p, self.width, self.height, rule=rule) for p in self.instance_masks]

    def packed_masks(self, rule: str = "pointlab") -> tuple[PackedMask | None, list[PackedMask]]:
        """``(union target mask, instance masks)`` bit-packed (``maskcache.PackedMask``), for scoring
        points without unpacking a mask; the union is ``None`` when the item has neither.

        Raises: DatasetError (as ``target_mask``)."""
        inst = [load_mask(p, self.width, self.height, rule=rule, packed=True) for p in self.instance_masks]
        if self.mask is not None:
            return load_mask(self.mask, self.width, self.height, rule=rule, packed=True), inst
        return (functools.reduce(operator.or_, inst) if inst else None), inst

    def load_image_rgb(self) -> np.ndarray:
        """The image as ``(H, W, 3)`` uint8 RGB. Raises: DatasetError."""
        try:
            with open_binary(self.image) as fh, Image.open(fh) as im:
                return np.asarray(im.convert("RGB"))
        except (OSError, UnidentifiedImageError, zipfile.BadZipFile) as e:  # BadZipFile: a bad CRC on read
            raise DatasetError(f"item {self.id}: cannot read image {self.image}: {e}") from e


@dataclass(frozen=True)
class Prediction:
    """One PRED line: raw text + format, or points already in pixels.

    Attributes:
        error: the model call failed (run files): scored as ``model_error``.
        problem: the line is unusable (a repeated id, points that are not numbers): scored 0 with it.
        sent_size: ``(width, height)`` of the image as the model saw it (run files), for absolute formats.
        qwen_pixels: ``(min_pixels, max_pixels)`` of the served Qwen checkpoint (run files).
    """

    id: str
    prediction: str | None = None
    format: str | None = None
    points_px: tuple[tuple[float, float], ...] | None = None
    error: str | None = None
    problem: str | None = None
    sent_size: tuple[int, int] | None = None
    qwen_pixels: tuple[int, int] | None = None


#: how a mask image becomes target pixels: ``pointlab`` (grey > 127, any colour channel > 127 with
#: alpha ignored, 1-bit masks by their bit), ``pointarena`` (model_evaluator.py's ``np.array(mask) > 127``,
#: any channel of 3-D arrays, alpha included), ``lmms-eval`` (``convert("L") > 127``); docs/scoring.md.
MASK_RULES = ("pointlab", "pointarena", "lmms-eval")


def _pointlab_mask(im: Image.Image) -> np.ndarray:
    if im.mode == "1":
        return np.array(im, dtype=bool)
    a = np.array(im)
    if im.mode in ("LA", "PA", "RGBA", "La", "RGBa"):
        a = a[..., :-1]  # the alpha channel says nothing about targets
    return a > MASK_THRESHOLD if a.ndim == 2 else np.any(a > MASK_THRESHOLD, axis=2)


@lru_cache(maxsize=1024)  # 125 kB a 1000 x 1000 mask: 128 MB at most
def _load_packed_cached(key: str, mtime_ns: int, rule: str = "pointlab", ref: Any = None) -> PackedMask:
    # memory first (this lru_cache), then the bit-packed disk cache of earlier runs, then the PNG
    from .reference import lmms_mask, pointarena_mask

    packed = read_packed(key, mtime_ns, rule)
    if packed is None:
        with open_binary(ref if ref is not None else Path(key)) as fh:
            if rule == "pointarena":
                m = pointarena_mask(fh)
            elif rule == "lmms-eval":
                m = lmms_mask(fh)
            else:
                with Image.open(fh) as im:
                    m = _pointlab_mask(im)
        packed = PackedMask.from_array(m)
        write_packed(key, mtime_ns, rule, packed)
    return packed


@lru_cache(maxsize=256)
def _load_mask_cached(key: str, mtime_ns: int, rule: str = "pointlab", ref: Any = None) -> np.ndarray:
    m = _load_packed_cached(key, mtime_ns, rule, ref).unpack()
    m.setflags(write=False)
    return m


def clear_mask_caches() -> None:
    """Empty the in-memory mask caches (the disk cache stays): what a new process starts with."""
    _load_packed_cached.cache_clear()
    _load_mask_cached.cache_clear()


@overload
def load_mask(
    path: str | FileRef,
    width: int | None = ...,
    height: int | None = ...,
    *,
    rule: str = ...,
    packed: Literal[False] = ...,
) -> np.ndarray: ...
@overload
def load_mask(
    path: str | FileRef, width: int | None = ..., height: int | None = ..., *, rule: str = ..., packed: Literal[True]
) -> PackedMask: ...
def load_mask(
    path: str | FileRef,
    width: int | None = None,
    height: int | None = None,
    *,
    rule: str = "pointlab",
    packed: bool = False,
) -> np.ndarray | PackedMask:
    """Read a mask image as ``(H, W)`` bool target pixels under ``rule`` (``MASK_RULES``; pointlab: grey
    value above 127, or any colour channel above 127 with alpha ignored, 1-bit masks by their bit).

    Cached by path, modification time and rule, in memory and bit-packed on disk (``maskcache``: a
    re-score in a new process reads no PNG); the array is read-only. ``packed=True`` returns the
    ``maskcache.PackedMask`` itself (``mask[r, c]`` without unpacking: what scoring a point needs).

    Raises: DatasetError (missing, unreadable, or not ``height x width`` when those are given).
    """
    p = path if isinstance(path, zipfile.Path) else Path(path)
    try:
        key, mtime = file_key(p)
        load = _load_packed_cached if packed else _load_mask_cached
        m = load(key, mtime, rule, p if isinstance(p, zipfile.Path) else None)
    except (OSError, UnidentifiedImageError, ValueError, zipfile.BadZipFile) as e:
        raise DatasetError(f"cannot read mask {p}: {e}") from e
    if width is not None and height is not None and m.shape != (height, width):
        raise DatasetError(f"mask {p} is {m.shape[1]}x{m.shape[0]}, image is {width}x{height}")
    return m


def _image_size(path: FileRef) -> tuple[int, int]:
    try:
        with open_binary(path) as fh, Image.open(fh) as im:
            return im.size
    except (OSError, UnidentifiedImageError, zipfile.BadZipFile) as e:  # BadZipFile: a bad CRC on read
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


def load_release(root: str | Path, data_file: str | Path | None = None) -> list[BenchItem]:
    """Load the release layout (see module docstring), or the Hugging Face release (``data.json`` beside
    ``selected_images.zip`` / ``selected_masks.zip``): every file is found by its basename, in the
    folders or the zips (``release.ReleaseFiles``, as lmms-eval does). Item ids are
    ``<category>/<image stem>`` (suffixed ``#n`` when an image carries several queries), in data.json order.

    Raises: DatasetError (missing data.json / image / mask, unknown category, bad entry).
    """
    root = Path(root)
    data = Path(data_file) if data_file is not None else root / "data.json"
    try:
        entries = json.loads(data.read_text(encoding="utf-8-sig"))
    except OSError as err:
        raise DatasetError(f"cannot read {data}: {err.strerror or err}") from err
    except (ValueError, RecursionError) as err:
        raise DatasetError(f"{data}: invalid JSON ({json_error_text(err)})") from err
    if not isinstance(entries, list):
        raise DatasetError(f"{data}: expected a list of entries")
    files = ReleaseFiles(root)
    pixmo = _pixmo_points(root)
    items, seen = [], set()
    for n, e in enumerate(entries):
        where = f"data.json[{n}]"
        if not isinstance(e, dict):
            raise DatasetError(f"{where}: expected an object")
        try:
            fname, raw_cat, query = e["image_filename"], e["category"], e["user_input"]
        except KeyError as missing:
            raise DatasetError(f"{where}: missing key {missing.args[0]!r}") from None
        cat = normalise_category(raw_cat)
        img = files.find(str(fname), root / "images" / str(raw_cat) / str(fname), root / "images" / cat / str(fname))
        if img is None:
            raise DatasetError(f"{where}: image {fname!r} not found under {root} (folders or zips)")
        w, h = _image_size(img)

        def _mask(name: Any) -> FileRef:
            ref = files.find(str(name), root / "masks" / str(name))
            if ref is None:
                raise DatasetError(f"{where}: mask {name!r} not found under {root} (folders or zips)")
            return ref

        mask = _mask(e["mask_filename"]) if e.get("mask_filename") else None
        inst = [_mask(f) for f in e.get("instance_mask_filenames") or []]
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
        if isinstance(count, str) and count.strip().isdecimal():  # digit text: what bare int() read before
            count = int(count)
        items.append(
            BenchItem(
                iid,
                _resolved(img),
                str(query),
                cat,
                w,
                h,
                _resolved(mask) if mask else None,
                [_resolved(p) for p in inst],
                _positive_int(count, "count", where) if count is not None else None,
                refs,
            )
        )
    return items


def _resolved(ref: FileRef) -> FileRef:
    return ref if isinstance(ref, zipfile.Path) else Path(ref).resolve()


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
            w, h = _positive_int(d["width"], "width", where), _positive_int(d["height"], "height", where)
            cat = normalise_category(d["category"])
            image = (p.parent / _path_text(d["image"], "image", where)).resolve()
        except DatasetError:
            raise
        except KeyError as k:
            raise DatasetError(f"{where}: missing key {k.args[0]!r}") from None
        except (TypeError, ValueError) as e:
            raise DatasetError(f"{where}: {e}") from None
        if iid in seen:
            raise DatasetError(f"{where}: duplicate id {iid!r}")
        seen.add(iid)
        mask = _mask_file(p.parent, d["mask"], "mask", where) if d.get("mask") else None
        inst_names = d.get("instance_masks") or []
        if not isinstance(inst_names, list):
            raise DatasetError(f"{where}: instance_masks must be a list of file names")
        inst: list[FileRef] = [_mask_file(p.parent, m, "instance_masks", where) for m in inst_names]
        if mask is None and not inst:
            raise DatasetError(f"{where}: no mask and no instance_masks")
        count = d.get("count")
        items.append(
            BenchItem(
                iid,
                image,
                str(d.get("query", "")),
                cat,
                w,
                h,
                mask,
                inst,
                _positive_int(count, "count", where) if count is not None else None,
                _points_list(d.get("reference_points_px"), where),
            )
        )
    return items


def _positive_int(value: Any, name: str, where: str) -> int:
    """A ground-truth size or count: a JSON integer (or a float with an integer value) >= 1.
    Raises: DatasetError naming the field (a bool, 320.9, 0, -1, 1e400, text)."""
    ok = (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and math.isfinite(value) and value.is_integer()
    )
    if not ok or value < 1:
        raise DatasetError(f"{where}: {name} must be a positive integer, got {value!r}"[:200])
    return int(value)


def _path_text(value: Any, name: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise DatasetError(f"{where}: {name} must be a file name (a string), got {type(value).__name__}")
    return value


def _mask_file(base: Path, value: Any, name: str, where: str) -> Path:
    """A mask path of a ground-truth line, checked to be a file at load time (a missing mask is a
    ground-truth error, exit 2, not a model failure). Raises: DatasetError."""
    path = (base / _path_text(value, name, where)).resolve()
    if not path.is_file():
        raise DatasetError(f"{where}: {name} {value!r} is not a file ({path})")
    return path


def _rel(path: FileRef, base: Path) -> str:
    if isinstance(path, zipfile.Path):  # (zipfile.Path has no relative_to: this was an AttributeError)
        raise DatasetError(f"{path} is a member of a zip: a GT JSONL names files (extract the release first)")
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def item_to_gt_dict(item: BenchItem, base: Path) -> dict:
    """One GT JSONL record for ``item`` with paths relative to ``base`` when below it."""
    d: dict[str, Any] = {
        "id": item.id,
        "image": _rel(item.image, base),
        "width": item.width,
        "height": item.height,
        "category": item.category,
        "query": item.query,
        "mask": _rel(item.mask, base) if item.mask else None,
    }
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


def _is_json_array(p: Path) -> bool:
    """The file starts with ``[`` (a release data.json), not a JSONL object per line."""
    try:
        with p.open("rb") as fh:
            head = fh.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return False
    return head.startswith(b"[")


def load_dataset(path: str | Path) -> list[BenchItem]:
    """A release folder (``data.json``, with image/mask folders or the Hugging Face zips), a ``data.json``
    file itself, a GT JSONL file, or a folder holding ``gt.jsonl``.

    Raises: DatasetError when none of these is found.
    """
    p = Path(path)
    if p.is_file() and _is_json_array(p):
        return load_release(p.parent, p)  # data.json given directly (score pointing --gt data.json)
    if p.is_file():
        return load_gt_jsonl(p)
    if (p / "data.json").exists():
        return load_release(p)
    if (p / "gt.jsonl").exists():
        return load_gt_jsonl(p / "gt.jsonl")
    raise DatasetError(f"{p}: no data.json, gt.jsonl, or GT JSONL file")


def _coord(c: Any) -> float:
    """A pixel coordinate of a PRED line: a number (NaN, infinity and an integer too large for a float are
    kept as non-finite values, scored as invalid points); anything else raises ``TypeError``."""
    if isinstance(c, bool) or not isinstance(c, (int, float)):
        raise TypeError(f"not a number: {c!r}")
    try:
        return float(c)
    except OverflowError:
        return math.inf


def _pixel_points(v: Any) -> tuple[tuple[float, float], ...]:
    """``[[u, v], ...]`` of numbers. Raises TypeError / IndexError for anything else."""
    return tuple((_coord(q[0]), _coord(q[1])) for q in v)


def _run_qwen_pixels(path: Path) -> tuple[int, int] | None:
    """The Qwen limits a run folder's ``run.json`` records for its agent (``None`` when absent)."""
    meta = path.parent / "run.json"
    try:
        agent = json.loads(meta.read_text(encoding="utf-8")).get("agent") or {}
        lo, hi = agent.get("qwen_min_pixels"), agent.get("qwen_max_pixels")
        return (int(lo), int(hi)) if lo and hi else None
    except (OSError, ValueError, AttributeError, TypeError):
        return None


def load_pred_jsonl(path: str | Path) -> dict[str, Prediction]:
    """PRED JSONL (or a JSON array of the same records) -> ``{id: Prediction}``; one bad line never stops
    the scoring of the others.

    Lines: ``{id, prediction, format}``, ``{id, points}`` or a run record ``{id, raw_text, point_format,
    error, sent_size?}`` (the run folder's ``run.json`` gives the agent's Qwen limits). ``points`` that are
    not ``[[u, v], ...]`` of numbers (text, a missing coordinate) and a repeated id become a ``Prediction``
    with ``problem`` set (scored 0 with it), except in a run file, where a later line of an item
    supersedes the earlier one as it did in the run (``runs.read_answers``); non-finite numbers (``NaN``, ``Infinity``, an integer too large
    for a float) are kept and score as invalid points. Lines that are not
    JSON or carry no id are skipped and listed in the returned mapping's ``unreadable``.

    Raises: DatasetError when the file cannot be read at all, or a line names a point format that does
    not exist (a setting of whoever wrote the file: every answer of it would read as unparseable).
    """
    from ..lmms import load_json_or_jsonl
    from ..points import POINT_FORMATS
    from ..records import Predictions, RecordError

    p = Path(path)
    try:
        good, bad = load_json_or_jsonl(p)  # JSONL, or a JSON array of the same records
    except RecordError as e:
        raise DatasetError(str(e)) from e
    out = Predictions()
    out.unreadable.extend(bad)
    where_of: dict[str, str] = {}
    run_answers: set[str] = set()  # ids whose first line is a run record (bench pointing's journal)
    qwen = _run_qwen_pixels(p)
    for where, d in good:
        if "id" not in d:
            out.unreadable.append(f"{where}: expected an object with an id")
            continue
        iid = str(d["id"])
        if iid in where_of and is_journal_line(d) and iid in run_answers:
            # a run file of bench pointing is a journal: an item asked again (after an error, or by a
            # resumed run cut before it compacted the file) has a later line, and that one counts, as
            # in the run itself (runs.read_answers)
            del out[iid]
        elif iid in where_of:
            # two answers for one item: which one counts is a guess, so neither does
            msg = f"duplicate id {iid!r} ({where_of[iid]} and {where})"
            out.problems[iid] = msg
            out[iid] = Prediction(iid, problem=msg)
            continue
        where_of[iid] = where
        if is_journal_line(d):
            run_answers.add(iid)
        fmt = d.get("point_format") if "raw_text" in d else d.get("format")
        if d.get("points") is None and fmt and str(fmt) not in POINT_FORMATS:
            # the writer's setting, not the model's text: every line would read as unparseable
            raise DatasetError(f"{where}: unknown point format {fmt!r}; use one of {', '.join(POINT_FORMATS)}")
        if d.get("points") is not None:
            try:
                out[iid] = Prediction(iid, points_px=_pixel_points(d["points"]))
            except (TypeError, ValueError, IndexError, OverflowError, KeyError):
                out[iid] = Prediction(iid, problem="points must be [[u, v], ...] of numbers")
        elif "raw_text" in d:  # a run record of pointlab bench pointing
            size = d.get("sent_size")
            try:
                sent = (int(size[0]), int(size[1])) if size else None
            except (TypeError, ValueError, IndexError, OverflowError):
                sent = None
            out[iid] = Prediction(
                iid,
                prediction=str(d.get("raw_text") or ""),
                format=str(d.get("point_format") or "auto"),
                error=d.get("error") or None,
                sent_size=sent,
                qwen_pixels=qwen,
            )
        elif "prediction" in d:
            out[iid] = Prediction(iid, prediction=str(d["prediction"] or ""), format=str(d.get("format") or "auto"))
        else:
            out[iid] = Prediction(iid, problem="needs 'prediction' (+ 'format'), 'points' or 'raw_text'")
    return out
