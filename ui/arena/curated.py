"""The arena's curated images, with the target masks they carry (for the sim agents, promotion to
Point-Bench candidates and the demo).

Three sources, one shape (``CuratedSet``: ordered ``{name: CuratedImage}``):

- a **manifest** ``arena_images.json`` in a folder: ``[{"image": "x.png", "targets": [{"names":
  ["red cube", ...], "mask": "masks/x_red.png"}]}]`` (paths relative to the folder; mask value
  > 127 = target, the Point-Bench convention);
- a **folder of images**, optionally with a folder of masks matched by file stem and one label
  for all of them (``from_folder(images, masks=..., names=("hand",))``: the hand masks of
  ``pointing/robot_view_pointing``);
- the **demo set**: rendered on first use by the plugin registered under ``sim`` in the
  ``pointlab.arena_demo_sets`` entry-point group (the sim tabletop with a mask per object), into a
  folder that is reused afterwards.

Decoded RGB is cached per image (curated images are few and read on every battle).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np

from ..imageguard import ImageLimits, ImageRejected, decode_image

from pointlab.ui.errors import UiError

__all__ = ["CuratedImage", "CuratedSet", "CuratedSetError", "DEMO_GROUP", "IMAGE_SUFFIXES", "MANIFEST"]

DEMO_GROUP = "pointlab.arena_demo_sets"
MANIFEST = "arena_images.json"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
# curated files are ours, not uploads: generous limits, still bounded
_CURATED_LIMITS = ImageLimits(max_bytes=64 * 1024 * 1024, max_side_px=8192, max_pixels=8192 * 8192)


class CuratedSetError(UiError, ValueError):
    """A curated folder, manifest or demo set is missing or malformed."""


@dataclass(frozen=True)
class CuratedImage:
    """One curated image: ``name`` (file name, unique in the set), ``path``, ``targets`` =
    ``({"names": [...], "mask": Path}, ...)``."""

    name: str
    path: Path
    targets: tuple[dict, ...] = ()


@dataclass
class CuratedSet:
    images: dict[str, CuratedImage] = field(default_factory=dict)
    _cache: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __len__(self) -> int:
        return len(self.images)

    def get(self, name: str) -> CuratedImage | None:
        return self.images.get(name)

    def rgb(self, name: str) -> tuple[np.ndarray, str]:
        """``((H, W, 3) uint8 RGB, sha256 of the file)`` of a curated image, cached. Blocking.

        Raises: KeyError (unknown name), CuratedSetError (unreadable file).
        """
        img = self.images[name]
        key = (str(img.path), img.path.stat().st_mtime_ns if img.path.exists() else 0)
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None:
            return hit
        try:
            d = decode_image(img.path.read_bytes(), _CURATED_LIMITS)
        except (OSError, ImageRejected) as e:
            raise CuratedSetError(f"curated image {img.path} unreadable: {e}") from None
        d.rgb.setflags(write=False)
        with self._lock:
            self._cache[key] = (d.rgb, d.sha256)
        return d.rgb, d.sha256

    def sim_entries(self) -> list[dict]:
        """``[{"image", "targets": [{"names", "mask"}]}]`` with absolute paths (the ``arena`` sim server's input)."""
        return [
            {"image": str(i.path), "targets": [{"names": list(t["names"]), "mask": str(t["mask"])} for t in i.targets]}
            for i in self.images.values()
        ]

    @classmethod
    def from_manifest(cls, path: str | Path) -> "CuratedSet":
        p = Path(path)
        try:
            rows = json.loads(p.read_text(encoding="utf-8"))
            out = cls()
            for r in rows:
                img = p.parent / r["image"]
                targets = tuple(
                    {"names": tuple(str(n) for n in t["names"]), "mask": p.parent / t["mask"]}
                    for t in r.get("targets") or []
                )
                out._add(img, targets)
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as e:
            raise CuratedSetError(f"{p}: not a curated-image manifest ({type(e).__name__}: {e})") from None
        return out

    @classmethod
    def from_folder(
        cls, folder: str | Path, *, masks: str | Path | None = None, names: tuple[str, ...] = ()
    ) -> "CuratedSet":
        """A folder's images (its manifest when it has one); with ``masks``, the mask of the same
        stem becomes each image's target named ``names``."""
        d = Path(folder)
        if not d.is_dir():
            raise CuratedSetError(f"{d} is not a folder of curated images")
        if masks is None and (d / MANIFEST).exists():
            return cls.from_manifest(d / MANIFEST)
        by_stem = {}
        if masks is not None:
            md = Path(masks)
            if not md.is_dir():
                raise CuratedSetError(f"{md} is not a folder of masks")
            if not names:
                raise CuratedSetError("masks need a label (the names an instruction uses for the target)")
            by_stem = {m.stem: m for m in sorted(md.iterdir()) if m.suffix.lower() in IMAGE_SUFFIXES}
        out = cls()
        for p in sorted(d.iterdir(), key=lambda q: q.name):
            if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file():
                m = by_stem.get(p.stem)
                out._add(p, ({"names": tuple(names), "mask": m},) if m is not None else ())
        return out

    @classmethod
    def demo(cls, folder: str | Path, source: str = "sim") -> "CuratedSet":
        """The demo set rendered into ``folder`` on first use (see the module docstring).

        Raises: CuratedSetError when no plugin is registered under ``source``.
        """
        d = Path(folder)
        if not (d / MANIFEST).exists():
            for ep in entry_points(group=DEMO_GROUP):
                if ep.name == source:
                    ep.load()(d)
                    break
            else:
                raise CuratedSetError(f"no demo image set registered as {source!r} (group {DEMO_GROUP})")
        return cls.from_manifest(d / MANIFEST)

    def _add(self, path: Path, targets: tuple) -> None:
        name = path.name
        if name in self.images:
            raise CuratedSetError(f"two curated images are named {name}")
        self.images[name] = CuratedImage(
            name, path.resolve(), tuple({"names": t["names"], "mask": Path(t["mask"]).resolve()} for t in targets)
        )
