"""Build a Point-Bench dataset from a folder of images and masks.

Input: a queries JSONL file, one item a line, paths relative to ``src``::

    {"image": "kitchen.jpg", "query": "Point to the kettle handle", "category": "affordance",
     "mask": "kitchen_handle.png"}
    {"image": "cups.png", "query": "Point to all cups", "category": "counting",
     "instance_masks": ["cup1.png", "cup2.png"], "count": 2}
    {"image": "desk.png", "query": "Point to the item closest to the marked point", "category": "steerable",
     "mask": "desk_stapler.png", "reference_points_px": [[120, 88]]}

Output (``out``): the release layout (``data.json``, ``images/<category>/``, ``masks/``) plus
``gt.jsonl`` for ``pointlab score pointing``. Every mask is checked: same size as its image,
at least one target pixel (value > 127); counting needs ``count`` or instance masks, and when both
are given they agree; a steerable item needs a reference point.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path


from .dataset import BenchItem, DatasetError, _image_size, load_mask, load_release, normalise_category, write_gt_jsonl

__all__ = ["build_dataset"]


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if not dst.exists():
        shutil.copyfile(src, dst)
    elif dst.read_bytes() != src.read_bytes():
        raise DatasetError(f"{dst} already exists with other content (two sources share a file name)")


def build_dataset(src: str | Path, queries: str | Path, out: str | Path) -> list[BenchItem]:
    """Check every item and write the dataset to ``out``; returns the items as loaded back.

    Raises: DatasetError naming the line and the problem.
    """
    src, out = Path(src), Path(out)
    qpath = Path(queries)
    try:
        lines = qpath.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise DatasetError(f"cannot read {qpath}: {e.strerror or e}") from e
    entries = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{qpath}:{n}"
        try:
            d = json.loads(line)
            image, query, cat = src / d["image"], str(d["query"]).strip(), normalise_category(d["category"])
        except json.JSONDecodeError as e:
            raise DatasetError(f"{where}: invalid JSON ({e.msg})") from None
        except KeyError as k:
            raise DatasetError(f"{where}: missing key {k.args[0]!r}") from None
        except DatasetError as e:
            raise DatasetError(f"{where}: {e}") from None
        if not query:
            raise DatasetError(f"{where}: empty query")
        if not image.exists():
            raise DatasetError(f"{where}: image {image} not found")
        w, h = _image_size(image)
        masks = [src / d["mask"]] if d.get("mask") else []
        inst = [src / m for m in d.get("instance_masks") or []]
        if not masks and not inst:
            raise DatasetError(f"{where}: needs 'mask' or 'instance_masks'")
        for m in masks + inst:
            arr = load_mask(m, w, h) if m.exists() else None
            if arr is None:
                raise DatasetError(f"{where}: mask {m} not found")
            if not arr.any():
                raise DatasetError(f"{where}: mask {m.name} has no target pixel (value > 127)")
        count = d.get("count")
        if cat == "counting":
            if count is None and not inst:
                raise DatasetError(f"{where}: a counting item needs 'count' or 'instance_masks'")
            if count is not None and inst and int(count) != len(inst):
                raise DatasetError(f"{where}: count {count} but {len(inst)} instance masks")
        refs = d.get("reference_points_px") or []
        if cat == "steerable" and not refs:
            raise DatasetError(f"{where}: a steerable item needs 'reference_points_px'")
        entry = {"image_filename": image.name, "user_input": query, "category": cat}
        if masks:
            entry["mask_filename"] = masks[0].name
        if inst:
            entry["instance_mask_filenames"] = [m.name for m in inst]
        if count is not None:
            entry["count"] = int(count)
        if refs:
            entry["reference_points_px"] = [[float(u), float(v)] for u, v in refs]
        entries.append((entry, image, masks + inst))
    if not entries:
        raise DatasetError(f"{qpath}: no items")
    for entry, image, ms in entries:
        _copy(image, out / "images" / entry["category"] / image.name)
        for m in ms:
            _copy(m, out / "masks" / m.name)
    (out / "data.json").write_text(json.dumps([e for e, _, _ in entries], indent=1), encoding="utf-8")
    items = load_release(out)
    write_gt_jsonl(items, out / "gt.jsonl")
    return items
