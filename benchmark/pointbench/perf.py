"""``pointlab perf score``: throughput of Point-Bench mask scoring and of Bradley-Terry with bootstrap.

Measured, never asserted in tests (DEVELOPERS.md). Each measurement reports percentiles over
repeats and a ratio against an in-run baseline measured the same way on the same machine:

- mask scoring at 1000 x 1000 pixels: items per second for a full ``score_item`` (PNG mask decode,
  threshold, rule) with every mask cache empty; baseline: decoding the same PNG alone (PIL), so the
  ratio shows what the scoring adds on top of reading the mask; also the rule alone on a decoded mask,
  and a re-score as a new process does it: memory cache empty, the bit-packed disk cache
  (``maskcache``) warm (target: 5,000 items/s);
- Bradley-Terry: seconds for 100 bootstrap rounds on 100,000 votes (target < 10 s); baseline: the
  point fit alone (aggregation + one maximum-likelihood fit).
"""

from __future__ import annotations

import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
from PIL import Image
from pointlab.benchmark.perfstats import summarize

__all__ = ["perf_score"]


def _pct(xs: list[float]) -> dict:
    return summarize(xs, ("p50", "p90", "p99", "min", "max", "n"))


def _time(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


@contextmanager
def _cache_env(value: str) -> Iterator[None]:
    """``POINTLAB_CACHE_DIR`` set to ``value`` for the block (the mask cache reads it on every load)."""
    before = os.environ.get("POINTLAB_CACHE_DIR")
    os.environ["POINTLAB_CACHE_DIR"] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("POINTLAB_CACHE_DIR", None)
        else:
            os.environ["POINTLAB_CACHE_DIR"] = before


def _mask_items(tmp: Path, n: int, side_px: int, rng: np.random.Generator) -> list:
    from .dataset import BenchItem

    img = tmp / "img.png"
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(img)
    yy, xx = np.mgrid[0:side_px, 0:side_px]
    items = []
    for k in range(n):
        cx, cy = rng.uniform(0.2 * side_px, 0.8 * side_px, 2)
        r = rng.uniform(0.05 * side_px, 0.18 * side_px)
        m = ((xx - cx) ** 2 + (yy - cy) ** 2 < r * r).astype(np.uint8) * 255
        p = tmp / f"mask_{k}.png"
        Image.fromarray(m).save(p)
        items.append(BenchItem(f"i{k}", img, "q", "spatial", side_px, side_px, p))
    return items


def perf_score(
    *,
    items: int = 50,
    side_px: int = 1000,
    votes: int = 100_000,
    models: int = 20,
    rounds: int = 100,
    repeat: int = 5,
    seed: int = 0,
) -> dict:
    """Run both measurements; returns the JSON document printed by ``pointlab perf score``."""
    from ..ratings import Vote, bradley_terry
    from .dataset import clear_mask_caches, load_mask
    from .scoring import score_item, score_points

    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(prefix="pointlab-perf-") as d:
        its = _mask_items(Path(d), items, side_px, rng)
        pts = rng.uniform(0, side_px, (items, 2))

        def full() -> None:
            clear_mask_caches()
            for it, p in zip(its, pts):
                score_item(it, [p])

        def cold() -> None:  # every mask decoded from its PNG: no disk cache
            with _cache_env("off"):
                full()

        def rescore() -> None:  # a new process re-scoring: memory empty, the packed disk cache warm
            with _cache_env(str(Path(d) / "cache")):
                full()

        def decode_only() -> None:
            for it in its:
                with Image.open(it.mask) as im:
                    np.asarray(im.convert("L"))

        with _cache_env("off"):  # never into the user's own cache: these masks are deleted after the run
            masks = [load_mask(it.mask) for it in its]

        def rule_only() -> None:
            for m, p in zip(masks, pts):
                score_points([p], "spatial", m)

        full_s, base_s, rule_s = _time(cold, repeat), _time(decode_only, repeat), _time(rule_only, repeat)
        rescore()  # fills the disk cache
        re_s = _time(rescore, repeat)
    mask = {
        "items_per_run": items,
        "mask_px": [side_px, side_px],
        "items_per_s": _pct([items / t for t in full_s]),
        "rescore_items_per_s": _pct([items / t for t in re_s]),
        "rescore_target_items_per_s": 5000,
        "ratio_rescore_over_decode_speed": float(np.median(base_s) / np.median(re_s)),
        "baseline_png_decode_items_per_s": _pct([items / t for t in base_s]),
        "rule_only_items_per_s": _pct([items / t for t in rule_s]),
        "ratio_full_over_decode_time": float(np.median(full_s) / np.median(base_s)),
    }

    names = [f"model_{i:02d}" for i in range(models)]
    strength = np.linspace(300, -300, models)
    a = rng.integers(0, models, votes)
    b = (a + rng.integers(1, models, votes)) % models
    p_a = 1 / (1 + 10 ** ((strength[b] - strength[a]) / 400))
    u = rng.random(votes)
    winner = np.where(u < 0.9 * p_a, "model_a", np.where(u < 0.9, "model_b", "both_good"))
    vs = [Vote(names[i], names[j], w) for i, j, w in zip(a, b, winner)]
    bt_s = _time(lambda: bradley_terry(vs, bootstrap_rounds=rounds, seed=seed), repeat)
    fit_s = _time(lambda: bradley_terry(vs, bootstrap_rounds=0), repeat)
    bt = {
        "votes": votes,
        "models": models,
        "bootstrap_rounds": rounds,
        "seconds": _pct(bt_s),
        "baseline_point_fit_seconds": _pct(fit_s),
        "ratio_bootstrap_over_point_fit": float(np.median(bt_s) / np.median(fit_s)),
        "target_s": 10.0,
        "meets_target": bool(np.percentile(bt_s, 90) < 10.0),
    }
    return {"mask_scoring": mask, "bradley_terry": bt, "repeat": repeat}
