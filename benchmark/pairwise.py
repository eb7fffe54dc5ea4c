"""Ratings and pair sampling for pairwise (A/B) robot episodes: two agents act on one instruction from
the same start; the outcome is ``A``, ``B`` or ``tie``, with a 0-100 progress score for each half.

- ``davidson``: Bradley-Terry with ties (Davidson 1970, "On extending the Bradley-Terry model to
  accommodate ties in paired comparison experiments", JASA 65(329):317-328):
  ``P(i beats j) = pi_i / D``, ``P(tie) = nu sqrt(pi_i pi_j) / D``, ``D = pi_i + pi_j + nu sqrt(pi_i pi_j)``,
  fitted by maximum likelihood (log-strengths centred on 0, a tiny L2 term for a model that never
  lost), reported on the arena's scale (``400 log10(pi) + 1000``) with 95 % bootstrap intervals over
  episodes. With no ties it is the plain Bradley-Terry model.
- ``bucketed``: the task-aware model of RoboArena (Atreya et al. 2025, "RoboArena: Distributed
  Real-World Evaluation of Generalist Robot Policies", arXiv:2506.18123, sec. 4): in task bucket t
  agent p succeeds with ``s_pt = sigmoid(theta_p - tau_t + psi_pt)``; an episode is won by A with
  ``s_A (1 - s_B)``, by B with ``s_B (1 - s_A)``, and tied otherwise (both succeed or both fail).
  RoboArena's buckets are latent (fitted by EM); here a bucket is the instruction's category (pick,
  place, relation, count, ...), known for every episode, so the likelihood is maximised directly.
  ``tau`` is centred on 0 and ``psi`` has an L2 penalty (the offsets stay small unless the data say
  otherwise). ``theta`` is an agent's log-odds of success at average difficulty.
- ``next_pair``: ``uniform`` (the least-compared pair, ties broken at random) or ``adaptive`` (the pair
  whose outcome is most uncertain under the current Davidson fit, weighted towards pairs with few
  episodes: ``p (1 - p) / (1 + n_ij)``, an uncertainty-sampling rule in the spirit of
  information-gain pair selection). The fit that chooses is a MAP fit with a N(0, 1) prior on the
  log-strengths (``ADAPTIVE_PRIOR``): with the maximum-likelihood fit an agent that has only lost gets
  an unbounded strength, every pair of it looks settled and is never drawn again, so an unlucky start
  is never corrected (measured: 58 % of simulated four-agent studies ranked right after 144 episodes
  with the plain fit, 90 % with the prior; docs/statistics.md, "Which mode to use").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Literal, Sequence

import numpy as np
from scipy.optimize import minimize

from pointlab.benchmark.errors import BenchmarkError

__all__ = ["Episode", "PairwiseError", "davidson", "bucketed", "next_pair"]

Outcome = Literal["A", "B", "tie"]
_SCALE = 400 / math.log(10)  # log-strength -> rating points (the arena's scale)
ADAPTIVE_PRIOR = 1.0  # next_pair's adaptive rule: L2 weight on log-strengths, a N(0, 1) prior


class PairwiseError(BenchmarkError, ValueError):
    """Episodes that cannot be rated (an unknown outcome, an agent against itself)."""


@dataclass(frozen=True)
class Episode:
    """One A/B episode: the two agents as shown (``a``, ``b``), its ``outcome`` and its task bucket."""

    a: str
    b: str
    outcome: Outcome
    bucket: str = "all"


def _check(episodes: Sequence[Episode]) -> list[str]:
    for e in episodes:
        if e.outcome not in ("A", "B", "tie"):
            raise PairwiseError(f"outcome must be A, B or tie, got {e.outcome!r}")
        if e.a == e.b:
            raise PairwiseError(f"an episode of {e.a!r} against itself")
    return sorted({m for e in episodes for m in (e.a, e.b)})


_Y = {"A": 0, "B": 1, "tie": 2}


def _cells(*columns: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """The distinct rows of ``columns`` (integer codes) and how often each occurs: the likelihood is a
    sum over these cells, and a bootstrap resample is a multinomial draw over them."""
    stacked = np.stack(columns, axis=1)
    uniq, counts = np.unique(stacked, axis=0, return_counts=True)
    return [uniq[:, k] for k in range(uniq.shape[1])], counts.astype(float)


def _davidson_nll(
    x: np.ndarray, i: np.ndarray, j: np.ndarray, y: np.ndarray, w: np.ndarray, reg: float
) -> tuple[float, np.ndarray]:
    """Davidson's penalised negative log-likelihood over the cells ``(i, j, y)`` weighted by ``w`` and
    its exact gradient; ``x`` = log-strengths, then log nu."""
    beta, log_nu = x[:-1], x[-1]
    bi, bj = beta[i], beta[j]
    bt = log_nu + 0.5 * (bi + bj)
    log_d = np.logaddexp(np.logaddexp(bi, bj), bt)
    ll = np.where(y == 0, bi, np.where(y == 1, bj, bt)) - log_d
    pi, pj, pt = np.exp(bi - log_d), np.exp(bj - log_d), np.exp(bt - log_d)
    tie = (y == 2).astype(float)
    d_bi = (y == 0) + 0.5 * tie - (pi + 0.5 * pt)  # d ll / d beta_i
    d_bj = (y == 1) + 0.5 * tie - (pj + 0.5 * pt)
    n = beta.size
    g_beta = -(np.bincount(i, w * d_bi, n) + np.bincount(j, w * d_bj, n)) + reg * beta
    g_nu = -float((w * (tie - pt)).sum())
    return float(-(w * ll).sum() + 0.5 * reg * beta @ beta), np.append(g_beta, g_nu)


def _fit_davidson(n: int, i, j, y, w, reg: float) -> np.ndarray:
    res = minimize(_davidson_nll, np.zeros(n + 1), args=(i, j, y, w, reg), jac=True, method="L-BFGS-B")
    x = res.x.copy()
    x[:-1] -= x[:-1].mean()
    return x


def davidson(episodes: Sequence[Episode], *, bootstrap_rounds: int = 200, seed: int = 0, reg: float = 1e-6) -> dict:
    """Davidson's Bradley-Terry with ties (module docstring).

    Returns:
        ``{"ratings": {agent: {"rating", "ci_low", "ci_high", "episodes"}}, "nu": tie parameter,
        "episodes": n}``; ratings average 1000 and ``rating_i - rating_j = 400 log10(pi_i / pi_j)``.

    Raises:
        PairwiseError: a bad outcome or an agent against itself.
    """
    models = _check(episodes)
    if not episodes:
        return {"ratings": {}, "nu": None, "episodes": 0}
    idx = {m: k for k, m in enumerate(models)}
    n = len(models)
    i0 = np.array([idx[e.a] for e in episodes])
    j0 = np.array([idx[e.b] for e in episodes])
    (i, j, y), counts = _cells(i0, j0, np.array([_Y[e.outcome] for e in episodes]))
    point = _fit_davidson(n, i, j, y, counts, reg)
    rng = np.random.default_rng(seed)
    # resampling episodes with replacement = a multinomial draw over the cells
    draws = rng.multinomial(len(episodes), counts / counts.sum(), size=bootstrap_rounds)
    boots = [_fit_davidson(n, i, j, y, w.astype(float), reg)[:-1] for w in draws]
    lo, hi = np.percentile(np.array(boots), [2.5, 97.5], axis=0) if boots else (point[:-1], point[:-1])
    games = np.bincount(i0, minlength=n) + np.bincount(j0, minlength=n)
    return {
        "ratings": {
            m: {
                "rating": float(1000 + _SCALE * point[k]),
                "ci_low": float(1000 + _SCALE * lo[k]),
                "ci_high": float(1000 + _SCALE * hi[k]),
                "episodes": int(games[k]),
            }
            for k, m in enumerate(models)
        },
        "nu": float(math.exp(point[-1])),
        "episodes": len(episodes),
    }


def _sig(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _bucketed_nll(x, P: int, T: int, a, b, t, y, w, psi_reg: float) -> tuple[float, np.ndarray]:
    """The bucketed model's penalised negative log-likelihood over the cells ``(a, b, t, y)`` weighted
    by ``w``, and its exact gradient (a numerical one costs P + T + P T evaluations per step: 2 s per
    fit with 100 bootstrap rounds on the results page). ``x`` = theta (P), tau before centring (T),
    psi (P x T, row-major)."""
    theta, tau, psi = x[:P], x[P : P + T] - x[P : P + T].mean(), x[P + T :].reshape(P, T)
    sa = _sig(theta[a] - tau[t] + psi[a, t])
    sb = _sig(theta[b] - tau[t] + psi[b, t])
    tie = sa * sb + (1 - sa) * (1 - sb)
    p = np.where(y == 0, sa * (1 - sb), np.where(y == 1, sb * (1 - sa), tie))
    p_safe = np.clip(p, 1e-12, None)
    # d log p / d z for z_A = theta_A - tau_t + psi_At and z_B likewise
    ga = np.where(y == 0, 1 - sa, np.where(y == 1, -sa, sa * (1 - sa) * (2 * sb - 1) / p_safe))
    gb = np.where(y == 0, -sb, np.where(y == 1, 1 - sb, sb * (1 - sb) * (2 * sa - 1) / p_safe))
    da, db = -w * ga, -w * gb  # d nll / d z
    g_theta = np.bincount(a, da, P) + np.bincount(b, db, P) + 2e-6 * theta
    g_psi = np.zeros((P, T))
    np.add.at(g_psi, (a, t), da)
    np.add.at(g_psi, (b, t), db)
    g_psi += psi_reg * psi
    h = -(np.bincount(t, da, T) + np.bincount(t, db, T))  # d nll / d tau; tau is centred: project
    value = -(w * np.log(p_safe)).sum() + 0.5 * psi_reg * (psi**2).sum() + 1e-6 * theta @ theta
    return float(value), np.concatenate([g_theta, h - h.mean(), g_psi.ravel()])


def bucketed(episodes: Sequence[Episode], *, psi_reg: float = 1.0, bootstrap_rounds: int = 100, seed: int = 0) -> dict:
    """The task-aware model (module docstring) with the buckets of the episodes.

    Returns:
        ``{"agents": {agent: {"theta", "ci_low", "ci_high", "success": {bucket: P(success)}}},
        "buckets": {bucket: {"tau", "episodes"}}, "episodes": n}``.

    Raises:
        PairwiseError: a bad outcome or an agent against itself.
    """
    models = _check(episodes)
    buckets = sorted({e.bucket for e in episodes})
    if not episodes:
        return {"agents": {}, "buckets": {}, "episodes": 0}
    mi = {m: k for k, m in enumerate(models)}
    bi = {b: k for k, b in enumerate(buckets)}
    P, T = len(models), len(buckets)
    (a, b, t, y), cell_counts = _cells(
        np.array([mi[e.a] for e in episodes]),
        np.array([mi[e.b] for e in episodes]),
        np.array([bi[e.bucket] for e in episodes]),
        np.array([_Y[e.outcome] for e in episodes]),
    )

    def unpack(x):
        return x[:P], x[P : P + T] - x[P : P + T].mean(), x[P + T :].reshape(P, T)

    def fit(w, x0=None):
        start = np.zeros(P + T + P * T) if x0 is None else x0
        return minimize(_bucketed_nll, start, args=(P, T, a, b, t, y, w, psi_reg), jac=True, method="L-BFGS-B").x

    x = fit(cell_counts)
    theta, tau, psi = unpack(x)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(len(episodes), cell_counts / cell_counts.sum(), size=bootstrap_rounds)
    boots = [unpack(fit(w.astype(float), x))[0] for w in draws]
    lo, hi = np.percentile(np.array(boots), [2.5, 97.5], axis=0) if boots else (theta, theta)
    counts = np.bincount(np.array([bi[e.bucket] for e in episodes]), minlength=T)
    return {
        "agents": {
            m: {
                "theta": float(theta[k]),
                "ci_low": float(lo[k]),
                "ci_high": float(hi[k]),
                "success": {bk: float(_sig(theta[k] - tau[q] + psi[k, q])) for q, bk in enumerate(buckets)},
            }
            for k, m in enumerate(models)
        },
        "buckets": {bk: {"tau": float(tau[q]), "episodes": int(counts[q])} for q, bk in enumerate(buckets)},
        "episodes": len(episodes),
    }


def next_pair(
    agents: Sequence[str],
    episodes: Sequence[Episode],
    *,
    rule: Literal["uniform", "adaptive"] = "uniform",
    rng: np.random.Generator | None = None,
) -> tuple[str, str]:
    """The next pair to compare (module docstring), in random A/B order.

    Raises:
        PairwiseError: fewer than two agents, or an unknown rule.
    """
    if len(set(agents)) < 2:
        raise PairwiseError("pairwise episodes need at least two agents")
    if rule not in ("uniform", "adaptive"):
        raise PairwiseError(f"pair sampling must be uniform or adaptive, got {rule!r}")
    rng = rng or np.random.default_rng()
    pairs = list(combinations(sorted(set(agents)), 2))
    n = {p: 0 for p in pairs}
    for e in episodes:
        key = tuple(sorted((e.a, e.b)))
        if key in n:
            n[key] += 1
    if rule == "uniform" or not episodes:
        low = min(n.values())
        choices = [p for p in pairs if n[p] == low]
    else:
        # the fit that chooses has a N(0, 1) prior on log-strengths (module docstring): without it an
        # agent that has only lost (or only won) gets an unbounded strength, its pairs look settled and
        # are never drawn again, and an early unlucky run is never corrected
        fit = davidson(episodes, bootstrap_rounds=0, reg=ADAPTIVE_PRIOR)["ratings"]
        score = {}
        for p in pairs:
            ri = fit.get(p[0], {"rating": 1000.0})["rating"]
            rj = fit.get(p[1], {"rating": 1000.0})["rating"]
            q = 1 / (1 + 10 ** ((rj - ri) / 400))
            score[p] = q * (1 - q) / (1 + n[p])
        best = max(score.values())
        choices = [p for p in pairs if math.isclose(score[p], best, rel_tol=1e-9)]
    pair = choices[int(rng.integers(len(choices)))]
    return (pair[0], pair[1]) if rng.random() < 0.5 else (pair[1], pair[0])
