"""Pair sampling for Point-Battle.

``uniform``: every unordered pair equally likely (PointArena sec. 3.3 and its Limitations: pairs
are drawn uniformly at random). ``adaptive``: prefer pairs whose outcome is most uncertain (the
paper's future work, sec. 5): the weight of pair (i, j) is ``p_ij (1 - p_ij) / sqrt(1 + n_ij)`` with
``p_ij`` the Bradley-Terry win probability from the votes so far and ``n_ij`` their battles so far,
so evenly matched, rarely compared pairs come first; pairs never compared get ``p = 0.5``. A floor
of ``UNIFORM_MIX`` (10 %) of the uniform weight keeps every pair possible, so a wrong early
estimate is corrected. ``sampling_sim`` measures what this saves.

Sides are randomised in both modes so a model is not always "A".
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections import Counter
from typing import Sequence

__all__ = ["SAMPLERS", "UNIFORM_MIX", "sample_pair", "pair_weights", "cached_votes"]

SAMPLERS = ("uniform", "adaptive")
UNIFORM_MIX = 0.1
_VOTES_TTL_S = 2.0


def pair_weights(models: Sequence[str], votes: Sequence[dict]) -> dict[tuple[str, str], float]:
    """Adaptive weight per unordered pair (sorted names), normalised to sum 1 (see the module docstring)."""
    from pointlab.benchmark.ratings import Vote, bradley_terry  # scipy: imported on first use, not at start-up

    vs = [
        Vote(v["model_a"], v["model_b"], v["winner"])
        for v in votes
        if v["model_a"] in models and v["model_b"] in models and v["model_a"] != v["model_b"]
    ]
    decisive = [v for v in vs if v.winner in ("model_a", "model_b")]
    ratings = {m: r.rating for m, r in bradley_terry(decisive, bootstrap_rounds=0).items()} if decisive else {}
    games = Counter(tuple(sorted((v.model_a, v.model_b))) for v in vs)
    raw = {}
    for a, b in itertools.combinations(sorted(models), 2):
        ra, rb = ratings.get(a, 1000.0), ratings.get(b, 1000.0)
        p = 1.0 / (1.0 + 10 ** ((rb - ra) / 400.0))
        raw[(a, b)] = p * (1 - p) / math.sqrt(1 + games[(a, b)])
    total = sum(raw.values()) or 1.0
    n = len(raw)
    return {k: (1 - UNIFORM_MIX) * w / total + UNIFORM_MIX / n for k, w in raw.items()}


def sample_pair(models: Sequence[str], mode: str, rng: random.Random, votes: Sequence[dict] = ()) -> tuple[str, str]:
    """Two distinct models ``(model_a, model_b)`` in random sides.

    Raises: ValueError for fewer than two models or an unknown ``mode``.
    """
    if len(set(models)) < 2:
        raise ValueError("the arena needs at least two models")
    if mode == "uniform":
        a, b = rng.sample(sorted(set(models)), 2)
        return a, b
    if mode != "adaptive":
        raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {mode!r}")
    w = pair_weights(sorted(set(models)), votes)
    pairs = list(w)
    ((a, b),) = rng.choices(pairs, weights=[w[p] for p in pairs], k=1)
    return (a, b) if rng.random() < 0.5 else (b, a)


def cached_votes(arena) -> list[dict]:
    """The arena's counted votes, re-read at most every 2 s per process (adaptive sampling needs an
    estimate, not the latest vote; reading every vote for every battle would not scale). Blocking."""
    now = time.monotonic()
    hit = arena.cache.get("sampler_votes")
    if hit is None or now - hit[0] > _VOTES_TTL_S:
        hit = (now, arena.store.votes(include_flagged=arena.settings.include_flagged))
        arena.cache["sampler_votes"] = hit
    return hit[1]
