"""The percentile summary every ``pointlab perf ...`` command reports."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["summarize", "ALL_KEYS"]

ALL_KEYS = ("n", "p50", "p90", "p99", "mean", "min", "max")


def summarize(
    values: Iterable[float], keys: Sequence[str] = ALL_KEYS, *, scale: float = 1.0, digits: int | None = None
) -> dict:
    """``keys`` of the sample ``values`` times ``scale`` (e.g. 1e3 for seconds -> ms): percentiles by
    numpy's linear interpolation, ``n``, ``mean``, ``min``, ``max``; rounded to ``digits`` when given.
    An empty sample gives ``n = 0`` and ``None`` for the rest."""
    a = np.asarray(list(values), dtype=np.float64) * scale
    if a.size == 0:
        return {k: 0 if k == "n" else None for k in keys}
    p50, p90, p99 = np.percentile(a, [50, 90, 99])
    stats = {"p50": p50, "p90": p90, "p99": p99, "mean": a.mean(), "min": a.min(), "max": a.max()}
    out: dict[str, float | None] = {}
    for k in keys:
        if k == "n":
            out[k] = int(a.size)
        else:
            v = float(stats[k])
            out[k] = round(v, digits) if digits is not None else v
    return out
