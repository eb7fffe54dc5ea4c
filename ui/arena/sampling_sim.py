"""How many votes adaptive pair sampling saves over uniform sampling (PointArena sec. 5: "an
adaptive sampling strategy that dynamically selects model pairs with similar performance").

Simulation: ``n_models`` models with known Bradley-Terry strengths (Elo-scale ratings evenly
spaced over ``spread`` points), synthetic voters who pick the better side with the BT probability
``1 / (1 + 10 ** ((r_b - r_a) / 400))`` and say "both good"/"both bad" with probability
``tie_rate`` (excluded from the fit, as PointArena does). Battles are drawn by ``uniform`` or
``adaptive`` (``sampling.pair_weights``, re-estimated every ``refresh`` votes, as the arena's
2-second cache does). Every ``checkpoint`` votes the ratings are fitted (``benchmark.ratings``
Bradley-Terry) and compared with the true order by Spearman's rank correlation. Reported per
sampler: the median (over ``repeats`` seeds) of the first vote count at which the correlation
reaches each target, and the mean correlation at fixed budgets.
"""

from __future__ import annotations

import random
from typing import Sequence

import numpy as np

from .sampling import pair_weights, sample_pair

__all__ = ["simulate", "compare_samplers"]


def simulate(
    sampler: str,
    ratings: Sequence[float],
    n_votes: int,
    *,
    seed: int,
    checkpoint: int = 25,
    refresh: int = 25,
    tie_rate: float = 0.15,
) -> list[tuple[int, float]]:
    """``[(votes so far, Spearman rho of fitted vs true ratings)]`` at every checkpoint."""
    from scipy.stats import spearmanr

    from pointlab.benchmark.ratings import Vote, bradley_terry

    models = [f"m{k}" for k in range(len(ratings))]
    true = dict(zip(models, ratings))
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    votes: list[dict] = []
    weights = None
    out = []
    for n in range(1, n_votes + 1):
        if sampler == "adaptive":
            if weights is None or n % refresh == 1:
                weights = pair_weights(models, votes)
            pairs = list(weights)
            a, b = rng.choices(pairs, weights=[weights[p] for p in pairs], k=1)[0]
            a, b = (a, b) if rng.random() < 0.5 else (b, a)
        else:
            a, b = sample_pair(models, "uniform", rng)
        u = nrng.random()
        if u < tie_rate:
            w = "both_good" if nrng.random() < 0.5 else "both_bad"
        else:
            p = 1.0 / (1.0 + 10 ** ((true[b] - true[a]) / 400.0))
            w = "model_a" if nrng.random() < p else "model_b"
        votes.append({"model_a": a, "model_b": b, "winner": w})
        if n % checkpoint == 0:
            fit = bradley_terry([Vote(v["model_a"], v["model_b"], v["winner"]) for v in votes], bootstrap_rounds=0)
            est = [fit[m].rating if m in fit else 1000.0 for m in models]
            rho = float(spearmanr(est, ratings).statistic)
            out.append((n, rho if np.isfinite(rho) else 0.0))
    return out


def compare_samplers(
    *,
    n_models: int = 8,
    spread: float = 400.0,
    n_votes: int = 2000,
    repeats: int = 20,
    targets: Sequence[float] = (0.8, 0.9, 0.95),
    budgets: Sequence[int] = (250, 500, 1000, 2000),
    checkpoint: int = 25,
    tie_rate: float = 0.15,
    seed: int = 0,
) -> dict:
    """Run both samplers ``repeats`` times on the same seeds (see the module docstring).

    Returns ``{"setup", "uniform": {...}, "adaptive": {...}, "saving": {target: 1 - adaptive/uniform}}``
    where each sampler has ``votes_to_rho`` ``{target: median votes (None: not reached in n_votes)}``
    and ``rho_at`` ``{budget: mean rho}``.
    """
    ratings = list(np.linspace(1000 - spread / 2, 1000 + spread / 2, n_models))
    res: dict = {
        "setup": {
            "models": n_models,
            "rating_spread": spread,
            "votes": n_votes,
            "repeats": repeats,
            "tie_rate": tie_rate,
            "checkpoint": checkpoint,
        }
    }
    for sampler in ("uniform", "adaptive"):
        curves = [
            simulate(sampler, ratings, n_votes, seed=seed + r, checkpoint=checkpoint, tie_rate=tie_rate)
            for r in range(repeats)
        ]
        reach = {}
        for t in targets:
            firsts = [next((n for n, rho in c if rho >= t), None) for c in curves]
            got = [f for f in firsts if f is not None]
            reach[str(t)] = float(np.median(got)) if len(got) * 2 > len(firsts) else None
        at = {
            str(b): round(float(np.mean([dict(c).get(b, np.nan) for c in curves])), 3) for b in budgets if b <= n_votes
        }
        res[sampler] = {"votes_to_rho": reach, "rho_at": at}
    res["saving"] = {
        t: (
            None
            if res["uniform"]["votes_to_rho"][t] in (None, 0) or res["adaptive"]["votes_to_rho"][t] is None
            else round(1 - res["adaptive"]["votes_to_rho"][t] / res["uniform"]["votes_to_rho"][t], 3)
        )
        for t in res["uniform"]["votes_to_rho"]
    }
    return res
