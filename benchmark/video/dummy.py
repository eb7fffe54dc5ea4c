"""Dummy videos (ReVSI sec. 5 "Controlled diagnostics", App. B.5): inputs that keep or remove
visual evidence, to tell grounded answers from scene priors.

* ``query_dropped``: every frame showing a queried object is removed (by a visibility table),
  then the budget is sampled from the frames that remain, with the same sampler. The queried
  objects never appear, so e.g. a count's ground truth becomes 0.
* ``first_frame_repeated``: the budget's first frame, repeated as many times as the budget has frames.
* ``black``: as many black frames (same size as the video) as the budget has frames.

A dummy video is a list of *slots*: the source frame index shown in each output frame, or ``None``
for a black frame; :func:`render_dummy` turns it into images.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .errors import VideoBenchError
from .frames import FrameSource
from .sampling import SAMPLERS, FrameSelection
from .visibility import VisibilityTable

__all__ = ["DUMMY_KINDS", "DummyVideo", "make_dummy", "render_dummy"]

DUMMY_KINDS = ("query_dropped", "first_frame_repeated", "black")


@dataclass(frozen=True)
class DummyVideo:
    """``slots[k]`` is the source frame index of output frame ``k``, ``None`` for black."""

    kind: str
    budget: int | str
    sampler: str
    slots: tuple[int | None, ...]
    query_objects: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "budget": self.budget,
            "sampler": self.sampler,
            "frames": list(self.slots),
            "num_frames": len(self.slots),
            "query_objects": list(self.query_objects),
        }


def make_dummy(
    kind: str,
    selection: FrameSelection,
    *,
    visibility: VisibilityTable | None = None,
    query_objects: Sequence[str] = (),
) -> DummyVideo:
    """Build one dummy video for the budget of ``selection``.

    Args:
        kind: one of ``DUMMY_KINDS``.
        selection: the real budget's frames (its sampler, budget and total are reused).
        visibility: required for ``query_dropped``.
        query_objects: ids or labels the question asks about (``query_dropped``).
    Raises:
        ValueError: unknown kind; ``query_dropped`` without a table or query objects.
        VideoBenchError: every frame shows a queried object (or is unannotated), nothing remains.
    """
    if kind == "first_frame_repeated":
        slots: list[int | None] = [selection.indices[0]] * selection.num_frames
    elif kind == "black":
        slots = [None] * selection.num_frames
    elif kind == "query_dropped":
        if visibility is None or not query_objects:
            raise ValueError("query_dropped needs a visibility table and the queried objects")
        # unannotated frames (shows() is None) cannot be certified free of the queried objects
        kept = [i for i in range(selection.total) if visibility.shows(i, query_objects) is False]
        if not kept:
            raise VideoBenchError(f"no frame is free of {list(query_objects)}; no query-dropped video")
        n = len(kept) if selection.budget == "all" else int(selection.budget)
        positions = SAMPLERS[selection.sampler](len(kept), n)
        slots = [kept[p] for p in positions]
    else:
        raise ValueError(f"unknown dummy kind {kind!r}; choose from {DUMMY_KINDS}")
    return DummyVideo(kind, selection.budget, selection.sampler, tuple(slots), tuple(query_objects))


def render_dummy(source: FrameSource, dummy: DummyVideo) -> list[np.ndarray]:
    """The dummy's frames as (H, W, 3) uint8 RGB images (black frames take the video's size)."""
    real = sorted({s for s in dummy.slots if s is not None})
    images = dict(zip(real, source.read_many(real))) if real else {}
    if any(s is None for s in dummy.slots):
        shape = (next(iter(images.values())) if images else source.read(0)).shape
        black = np.zeros(shape, dtype=np.uint8)
    return [images[s] if s is not None else black for s in dummy.slots]
