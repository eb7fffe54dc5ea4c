"""Pair sampling for Point-Battle.

``uniform``: every unordered pair equally likely (PointArena sec. 3.3 and its Limitations: pairs
are drawn uniformly at random). ``adaptive``: prefer pairs whose outcome is most uncertain (the
paper's future work, sec. 5): the weight of pair (i, j) is ``p_ij (1 - p_ij) / sqrt(1 + n_ij)`` with
``p_ij`` the Bradley-Terry win probability from the votes so far and ``n_ij`` their battles so far,
so evenly matched, rarely compared pairs come first; pairs never compared get ``p = 0.5``.
Sides are randomised in both modes so a model is not always "A".
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from typing import Sequence

from pointlab.benchmark.ratings import Vote, bradley_terry

__all__ = ["SAMPLERS", "sample_pair", "pair_weights"]

SAMPLERS = ("uniform", "adaptive")


def pair_weights(models: Sequence[str], votes: Sequence[dict]) -> dict[tuple[str, str], float]:
    """Adaptive weight per unordered pair (sorted names), see the module docstring."""
    vs = [Vote(v["model_a"], v["model_b"], v["winner"]) for v in votes
          if v["model_a"] in models and v["model_b"] in models]
    ratings = {m: r.rating for m, r in bradley_terry(vs, bootstrap_rounds=0).items()} if vs else {}
    games = Counter(tuple(sorted((v.model_a, v.model_b))) for v in vs)
    out = {}
    for a, b in itertools.combinations(sorted(models), 2):
        ra, rb = ratings.get(a, 1000.0), ratings.get(b, 1000.0)
        p = 1.0 / (1.0 + 10 ** ((rb - ra) / 400.0))
        out[(a, b)] = p * (1 - p) / math.sqrt(1 + games[(a, b)])
    return out


def sample_pair(models: Sequence[str], mode: str, rng: random.Random,
                votes: Sequence[dict] = ()) -> tuple[str, str]:
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
    (a, b), = rng.choices(pairs, weights=[w[p] for p in pairs], k=1)
    return (a, b) if rng.random() < 0.5 else (b, a)
