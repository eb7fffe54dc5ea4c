"""The demo arena's curated images: the sim tabletop rendered in a few layouts, with a mask per object.

A test double for a lab's curated photos (registered as ``sim`` in the ``pointlab.arena_demo_sets``
entry-point group, looked up by ``pointlab.ui.arena.curated``). ``write_demo_set(out_dir)`` renders
``layouts`` arrangements of the default scene (layout 0 is the default scene; the others move the
objects to seeded positions on the table, no two footprints overlapping) with the MuJoCo sim camera
(no sensor noise) and writes, per layout:

- ``tabletop_<k>.png``: the colour image, 640 x 480 RGB;
- ``masks/tabletop_<k>__<object>.png``: the object's visible pixels, 255 = object, 0 = not (the
  Point-Bench mask convention: value > 127 is target);
- one manifest ``arena_images.json``: ``[{"image", "targets": [{"names": [name, aliases...],
  "mask"}]}]`` with paths relative to ``out_dir``.

Rendering is deterministic (a clean camera, a fixed seed), so a rerun rewrites the same files; the
masks are MuJoCo's segmentation of the same frame; the manifest is written last (its presence marks
a complete set).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from .camera import SimCamera
from .physics import ROBOT_LABEL
from .world import SimWorld

__all__ = ["write_demo_set", "MANIFEST"]

MANIFEST = "arena_images.json"
# table area the objects are placed in (base frame, metres): in front of the base, in the camera view
_X_RANGE_M, _Y_RANGE_M = (0.20, 0.40), (-0.22, 0.22)


def _layout(world: SimWorld, rng: np.random.Generator) -> None:
    placed: list[tuple[float, float, float]] = []
    for obj in list(world.objects.values()):
        r = obj.half_width_m + 0.01
        for _ in range(200):
            x, y = rng.uniform(*_X_RANGE_M), rng.uniform(*_Y_RANGE_M)
            if all((x - px) ** 2 + (y - py) ** 2 > (r + pr) ** 2 for px, py, pr in placed):
                break
        placed.append((x, y, r))
        world.set_object_pose(obj.name, (x, y, 0.0), float(rng.uniform(-45, 45)))


def write_demo_set(out_dir: str | Path, layouts: int = 4, seed: int = 7) -> Path:
    """Render the demo set into ``out_dir`` (created) and return the manifest's path."""
    out = Path(out_dir)
    (out / "masks").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    entries = []
    for k in range(layouts):
        world = SimWorld()
        try:
            if k:
                _layout(world, rng)
            with SimCamera(world=world, fps=0, noise=False) as cam:
                frame = cam.read()
            masks = world.masks(frame)
        finally:
            world.close()
        image = f"tabletop_{k}.png"
        Image.fromarray(frame.color).save(out / image)
        targets = []
        for name, mask in masks.items():
            if name == ROBOT_LABEL or not mask.any():
                continue
            rel = f"masks/tabletop_{k}__{name.replace(' ', '_')}.png"
            Image.fromarray(mask.astype(np.uint8) * 255).save(out / rel)
            targets.append({"names": list(world.scene.spec(name).names), "mask": rel})
        entries.append({"image": image, "targets": targets})
    manifest = out / MANIFEST
    manifest.write_text(json.dumps(entries, indent=1), encoding="utf-8")
    return manifest
