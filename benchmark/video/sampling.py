"""Frame samplers under a frame budget (ReVSI sec. 5 and App. B.5; VSI-Bench).

* ``uniform``: ``n`` indices evenly spaced over ``0..total-1`` with both endpoints included
  (what VSI-Bench used), rounded to the nearest frame.
* ``nested``: ReVSI's fixed subsets. The 64-frame set is uniform over the whole video; the 32-frame
  set is uniform over the 64 chosen frames (positions, endpoints included), the 16-frame set uniform
  over the 32. So 16 is a subset of 32, which is a subset of 64, and all span the same first and
  last frame. A budget not in the chain is drawn uniformly from the smallest chain set above it.
* ``all``: every frame.

A budget at or above the number of available frames gives all of them. The sampler name, the
budget and the chosen indices travel together in a ``FrameSelection`` so that every question and
every run records them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

__all__ = [
    "FrameSelection",
    "NESTED_CHAIN",
    "SAMPLERS",
    "uniform_indices",
    "uniform_subset",
    "nested_indices",
    "sample_frames",
    "parse_budget",
    "nested_selections",
]

#: ReVSI's nested budgets, largest first (App. B.5).
NESTED_CHAIN: tuple[int, ...] = (64, 32, 16)


@dataclass(frozen=True)
class FrameSelection:
    """Frames chosen for one budget. ``budget`` is an int or ``"all"``; ``indices`` ascending."""

    sampler: str
    budget: int | str
    indices: tuple[int, ...]
    total: int

    @property
    def num_frames(self) -> int:
        return len(self.indices)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["indices"] = list(self.indices)
        d["num_frames"] = self.num_frames
        return d


def parse_budget(value: str | int | float) -> int | str:
    """``"all"`` or a positive frame count (``"16"`` -> 16). Raises ``ValueError`` otherwise."""
    if isinstance(value, str) and value.strip().lower() == "all":
        return "all"
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"budget must be a positive integer or 'all', got {value!r}")
    try:
        n = int(value)
    except (TypeError, ValueError) as e:
        raise ValueError(f"budget must be a positive integer or 'all', got {value!r}") from e
    if n < 1:
        raise ValueError(f"budget must be a positive integer or 'all', got {value!r}")
    return n


def uniform_subset(items: Sequence[int], n: int) -> list[int]:
    """``n`` elements of ``items`` at uniformly spaced positions, first and last included.

    ``n >= len(items)`` returns all of them; ``n == 1`` returns the first. Positions are
    ``round(k * (len-1) / (n-1))`` (half to even, as numpy rounds), which never repeats a
    position when ``n <= len``. Raises ``ValueError`` for ``n < 1``.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    items = list(items)
    if n >= len(items):
        return items
    if n == 1:
        return items[:1]
    pos = np.rint(np.linspace(0, len(items) - 1, n)).astype(int)
    return [items[p] for p in pos]


def uniform_indices(total: int, n: int) -> list[int]:
    """``n`` frame indices evenly spaced over ``0..total-1``, endpoints included (VSI-Bench)."""
    if total < 1:
        raise ValueError(f"total must be >= 1, got {total}")
    return uniform_subset(range(total), n)


def nested_indices(total: int, n: int, chain: Sequence[int] = NESTED_CHAIN) -> list[int]:
    """ReVSI's recursive uniform sampling: go down ``chain`` (largest first), each set uniform over
    the previous one; a budget not in the chain is then drawn uniformly from the last set."""
    if total < 1:
        raise ValueError(f"total must be >= 1, got {total}")
    current = list(range(total))
    for c in sorted(chain, reverse=True):
        if c < n:
            break
        current = uniform_subset(current, c)
    return uniform_subset(current, n)


def _all(total: int, n: int) -> list[int]:
    return list(range(total))


SAMPLERS: dict[str, Callable[[int, int], list[int]]] = {
    "uniform": uniform_indices,
    "nested": nested_indices,
    "all": _all,
}


def sample_frames(total: int, budget: int | str, sampler: str = "nested") -> FrameSelection:
    """Choose the frames of one budget.

    Args:
        total: frames available (>= 1).
        budget: a positive int or ``"all"`` (``"all"`` always uses the ``all`` sampler).
        sampler: a key of ``SAMPLERS``.
    Raises:
        ValueError: unknown sampler, bad budget or ``total < 1``.
    """
    b = parse_budget(budget)
    name = "all" if b == "all" else sampler
    if name not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}; choose from {sorted(SAMPLERS)}")
    if total < 1:
        raise ValueError(f"total must be >= 1, got {total}")
    idx = SAMPLERS[name](total, total if b == "all" else int(b))
    return FrameSelection(sampler=name, budget=b, indices=tuple(idx), total=total)


def nested_selections(
    total: int, budgets: Sequence[int | str] = (16, 32, 64, "all"), sampler: str = "nested"
) -> dict[str, FrameSelection]:
    """``{str(budget): FrameSelection}`` for several budgets of one video."""
    return {str(parse_budget(b)): sample_frames(total, b, sampler) for b in budgets}
