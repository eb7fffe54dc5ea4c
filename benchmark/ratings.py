"""Arena ratings from pairwise votes: online Elo and Bradley-Terry with bootstrap intervals.

PointArena sec. 3.3 / 4.1 (Point-Battle): Elo ratings from head-to-head votes, "both good" and "both
bad" excluded; Chatbot Arena practice (Chiang et al. 2024, sec. 4; FastChat's ``elo_analysis.py``):
online Elo starts at 1000 with base 10 and scale 400 and a small K (PointArena used K=2);
Bradley-Terry is fitted by maximum likelihood (logistic regression without intercept) and mapped to
``scale * beta / ln(base) + start``; 95 % intervals come from bootstrap resampling of battles; the
rank of a model is ``1 + number of models whose lower bound is above its upper bound``.

Votes are ``{"model_a", "model_b", "winner"}`` with ``winner`` one of ``VOTE_WINNERS``. Ties
("both_good", "both_bad") are excluded (``ties="exclude"``, PointArena) or count as half a win for
each side (``ties="half"``, FastChat).

Vectorisation: Bradley-Terry only needs, per ordered pair of models, how often each outcome
happened, so votes are aggregated into "cells" ``(i, j, score_i)`` with counts; a bootstrap round
(resampling battles with replacement) is a multinomial draw over those cells.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Literal, Sequence

import numpy as np
from scipy.optimize import minimize

from pointlab.benchmark.errors import BenchmarkError

__all__ = [
    "VOTE_WINNERS",
    "TIE_WINNERS",
    "Vote",
    "Rating",
    "RatingsInputError",
    "load_votes_jsonl",
    "parse_vote",
    "elo_online",
    "elo_ratings",
    "bradley_terry",
    "interval_ranks",
    "compute_ratings",
]

VOTE_WINNERS = ("model_a", "model_b", "both_good", "both_bad")
TIE_WINNERS = ("both_good", "both_bad")
TiesRule = Literal["exclude", "half"]


class RatingsInputError(BenchmarkError, ValueError):
    """A vote file or vote record is malformed (missing key, unknown winner, a model against itself)."""


@dataclass(frozen=True)
class Vote:
    """One battle outcome. ``winner`` is one of ``VOTE_WINNERS``."""

    model_a: str
    model_b: str
    winner: str


@dataclass
class Rating:
    """One model's rating, its 95 % bootstrap interval, interval-aware rank and games counted."""

    rating: float
    ci_low: float
    ci_high: float
    rank: int
    games: int

    def to_dict(self) -> dict:
        return asdict(self)


def parse_vote(obj: object, where: str = "vote") -> Vote:
    """Validate one vote record (a dict) and return a ``Vote``.

    Raises:
        RatingsInputError: not a dict, missing keys, unknown winner, or ``model_a == model_b``.
    """
    if not isinstance(obj, dict):
        raise RatingsInputError(f"{where}: expected an object, got {type(obj).__name__}")
    try:
        a, b, w = obj["model_a"], obj["model_b"], obj["winner"]
    except KeyError as e:
        raise RatingsInputError(f"{where}: missing key {e.args[0]!r}") from None
    if not isinstance(a, str) or not isinstance(b, str) or not a or not b:
        raise RatingsInputError(f"{where}: model names must be non-empty strings")
    if a == b:
        raise RatingsInputError(f"{where}: a model cannot battle itself ({a!r})")
    if w not in VOTE_WINNERS:
        raise RatingsInputError(f"{where}: winner {w!r} is not one of {', '.join(VOTE_WINNERS)}")
    return Vote(a, b, w)


def load_votes_jsonl(path: str | Path) -> list[Vote]:
    """Read votes, one JSON object a line, in vote order (blank lines skipped).

    Raises:
        RatingsInputError: unreadable file, invalid JSON or an invalid vote (message names the line).
    """
    from .records import RecordError, iter_jsonl

    try:
        return [parse_vote(obj, where) for where, obj in iter_jsonl(path)]
    except RecordError as e:
        raise RatingsInputError(str(e)) from e


def _check_params(
    *, start: float, base: float, scale: float, k: float | None = None, bootstrap_rounds: int | None = None
) -> None:
    """Refuse parameters that make ``1 / (1 + base ** (d / scale))`` NaN, constant or undefined.

    ``k`` and ``scale`` finite and > 0, ``base`` finite and > 1 (``base == 1`` makes every expected
    score 0.5 whatever the ratings; ``ln(base) <= 0`` breaks the Bradley-Terry mapping), ``start``
    finite, ``bootstrap_rounds`` an integer >= 0 (0: no bootstrap, zero-width intervals).
    """

    def finite(name: str, value: float) -> float:
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise RatingsInputError(f"{name} must be a finite number, got {value!r}") from None
        if not math.isfinite(v):
            raise RatingsInputError(f"{name} must be a finite number, got {value!r}")
        return v

    finite("start", start)
    if finite("base", base) <= 1.0:
        raise RatingsInputError(f"base must be a finite number > 1, got {base!r}")
    if finite("scale", scale) <= 0.0:
        raise RatingsInputError(f"scale must be a finite number > 0, got {scale!r}")
    if k is not None and finite("k", k) <= 0.0:
        raise RatingsInputError(f"k must be a finite number > 0, got {k!r}")
    if bootstrap_rounds is not None and (
        isinstance(bootstrap_rounds, bool) or not isinstance(bootstrap_rounds, int) or bootstrap_rounds < 0
    ):
        raise RatingsInputError(f"bootstrap_rounds must be an integer >= 0, got {bootstrap_rounds!r}")


def _check_ties(ties: str) -> None:
    if ties not in ("exclude", "half"):
        raise RatingsInputError(f"ties must be 'exclude' or 'half', got {ties!r}")


def _encode(votes: Sequence[Vote], ties: TiesRule) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Models (sorted) and per-vote arrays ``a_idx, b_idx, score_a`` (1, 0 or 0.5), ties applied."""
    _check_ties(ties)
    models = sorted({v.model_a for v in votes} | {v.model_b for v in votes})
    index = {m: i for i, m in enumerate(models)}
    score_of = {"model_a": 1.0, "model_b": 0.0}
    a, b, s = [], [], []
    for v in votes:
        if v.winner in TIE_WINNERS:
            if ties == "exclude":
                continue
            sc = 0.5
        else:
            sc = score_of[v.winner]
        a.append(index[v.model_a])
        b.append(index[v.model_b])
        s.append(sc)
    return models, np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64), np.asarray(s, dtype=np.float64)


def elo_online(
    votes: Sequence[Vote],
    *,
    start: float = 1000.0,
    k: float = 2.0,
    base: float = 10.0,
    scale: float = 400.0,
    ties: TiesRule = "exclude",
) -> dict[str, float]:
    """Online Elo in vote order (order-dependent by design).

    For each vote: ``E_a = 1 / (1 + base ** ((R_b - R_a) / scale))``, ``R_a += k (S_a - E_a)``,
    ``R_b += k ((1 - S_a) - (1 - E_a))``, with ``S_a`` 1 (a won), 0 (b won) or 0.5 (a tie under
    ``ties="half"``). Models seen only in excluded votes keep ``start``.

    Returns: ``{model: rating}``.
    Raises: RatingsInputError for an unknown ``ties`` rule, or ``k``/``scale`` not finite > 0,
    ``base`` not finite > 1, ``start`` not finite.
    """
    _check_params(start=start, base=base, scale=scale, k=k)
    models, a, b, s = _encode(votes, ties)
    r = _elo_rounds(len(models), a[None, :], b[None, :], s[None, :], start, k, base, scale)[0]
    return {m: float(r[i]) for i, m in enumerate(models)}


def _elo_rounds(
    n_models: int, a: np.ndarray, b: np.ndarray, s: np.ndarray, start: float, k: float, base: float, scale: float
) -> np.ndarray:
    """Run online Elo for R independent vote sequences at once: ``a, b, s`` are ``(R, N)``.

    One Python step per vote position, vectorised over the R sequences (bootstrap rounds).
    """
    rounds = a.shape[0]
    r = np.full((rounds, n_models), float(start))
    rows = np.arange(rounds)
    for t in range(a.shape[1]):
        ia, ib, sa = a[:, t], b[:, t], s[:, t]
        ra, rb = r[rows, ia], r[rows, ib]
        ea = 1.0 / (1.0 + base ** ((rb - ra) / scale))
        delta = k * (sa - ea)
        r[rows, ia] = ra + delta
        r[rows, ib] = rb - delta
    return r


def _bt_fit(
    n_models: int,
    ci: np.ndarray,
    cj: np.ndarray,
    cs: np.ndarray,
    counts: np.ndarray,
    reg: float,
    x0: np.ndarray | None = None,
) -> np.ndarray:
    """Bradley-Terry log-strengths (natural log-odds units, mean 0) from aggregated cells.

    ``counts`` is ``(C,)`` for one fit or ``(R, C)`` for R independent fits over the same cells
    (bootstrap rounds; returns ``(R, n_models)``). Each fit minimises
    ``-sum c (s log sig(d) + (1 - s) log sig(-d)) + reg/2 |beta|^2`` with ``d = beta_i - beta_j``.
    The R problems are separable, so they are solved as one L-BFGS problem over ``R * n_models``
    parameters: one optimiser run instead of R (the Python overhead per run dominates otherwise).
    The tiny L2 term fixes the gauge (the likelihood is shift invariant) and keeps a model that
    never lost finite; it is negligible otherwise.
    """
    from scipy.sparse import csr_matrix

    w = np.atleast_2d(np.asarray(counts, dtype=np.float64))
    rounds, n_cells = w.shape
    rows = np.arange(n_cells)
    # (C, n) signed incidence: d = beta @ D.T, grad = g_cell @ D
    inc = csr_matrix(
        (np.r_[np.ones(n_cells), -np.ones(n_cells)], (np.r_[rows, rows], np.r_[ci, cj])), shape=(n_cells, n_models)
    )
    inc_t = inc.T.tocsr()

    def f(flat: np.ndarray) -> tuple[float, np.ndarray]:
        beta = flat.reshape(rounds, n_models)
        d = (inc @ beta.T).T  # (R, C)
        # log sig(d) = -logaddexp(0, -d): stable for large |d|
        nll = float(np.sum(w * (cs * np.logaddexp(0.0, -d) + (1.0 - cs) * np.logaddexp(0.0, d))))
        p = 0.5 * (1.0 + np.tanh(0.5 * d))  # sigmoid(d) without overflow
        grad = (inc_t @ (w * (p - cs)).T).T
        return nll + 0.5 * reg * float(flat @ flat), (grad + reg * beta).ravel()

    start = np.zeros((rounds, n_models)) if x0 is None else np.broadcast_to(x0, (rounds, n_models))
    res = minimize(
        f,
        np.ascontiguousarray(start, dtype=np.float64).ravel(),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 1000, "gtol": 1e-8, "ftol": 1e-15},
    )
    beta = res.x.reshape(rounds, n_models)
    beta = beta - beta.mean(axis=1, keepdims=True)
    return beta[0] if np.ndim(counts) == 1 else beta


def _cells(n_models: int, a: np.ndarray, b: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, ...]:
    """Aggregate votes into unique cells ``(i, j, s)`` and their counts."""
    key = (a * n_models + b) * 3 + np.rint(s * 2).astype(np.int64)  # s in {0, .5, 1} -> 0, 1, 2
    uniq, counts = np.unique(key, return_counts=True)
    code = uniq % 3
    pair = uniq // 3
    return pair // n_models, pair % n_models, code / 2.0, counts


def interval_ranks(ci_low: Sequence[float], ci_high: Sequence[float]) -> list[int]:
    """Rank = 1 + number of models whose lower bound is strictly above this model's upper bound."""
    lo = np.asarray(ci_low, dtype=float)
    hi = np.asarray(ci_high, dtype=float)
    return [int(1 + np.sum(lo > hi[i])) for i in range(len(hi))]


def _games(n_models: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.bincount(a, minlength=n_models) + np.bincount(b, minlength=n_models)


def _assemble(models: list[str], point: np.ndarray, boots: np.ndarray, games: np.ndarray) -> dict[str, Rating]:
    if boots.shape[0] > 0:
        lo, hi = np.percentile(boots, [2.5, 97.5], axis=0)
    else:
        lo, hi = point.copy(), point.copy()
    ranks = interval_ranks(lo, hi)
    return {
        m: Rating(float(point[i]), float(lo[i]), float(hi[i]), ranks[i], int(games[i])) for i, m in enumerate(models)
    }


def bradley_terry(
    votes: Sequence[Vote],
    *,
    ties: TiesRule = "exclude",
    start: float = 1000.0,
    base: float = 10.0,
    scale: float = 400.0,
    bootstrap_rounds: int = 100,
    seed: int = 0,
    reg: float = 1e-6,
) -> dict[str, Rating]:
    """Bradley-Terry ratings by maximum likelihood with bootstrap 95 % intervals.

    ``rating = scale * beta / ln(base) + start`` with the log-strengths ``beta`` centred on 0, so
    ratings average ``start`` and ``P(i beats j) = 1 / (1 + base ** ((R_j - R_i) / scale))``.
    Intervals are the 2.5 / 97.5 percentiles over ``bootstrap_rounds`` resamplings of the counted
    battles (with replacement, same number of battles), drawn with ``numpy.random.default_rng(seed)``.

    Returns: ``{model: Rating}``; empty when no vote counts.
    Raises: RatingsInputError for an unknown ``ties`` rule, negative ``bootstrap_rounds``, ``scale``
    not finite > 0, ``base`` not finite > 1 or ``start`` not finite.
    """
    _check_params(start=start, base=base, scale=scale, bootstrap_rounds=bootstrap_rounds)
    models, a, b, s = _encode(votes, ties)
    n = len(models)
    if n == 0 or a.size == 0:
        return {m: Rating(start, start, start, 1, 0) for m in models}
    ci, cj, cs, counts = _cells(n, a, b, s)
    to_rating = scale / math.log(base)
    beta = _bt_fit(n, ci, cj, cs, counts, reg)
    point = beta * to_rating + start
    rng = np.random.default_rng(seed)
    boots = np.empty((0, n))
    if bootstrap_rounds:
        # resampling battles with replacement = a multinomial draw over the cells
        draws = rng.multinomial(int(counts.sum()), counts / counts.sum(), size=bootstrap_rounds)
        # warm start from the point fit: a resample's optimum is close to it
        boots = _bt_fit(n, ci, cj, cs, draws, reg, beta) * to_rating + start
    return _assemble(models, point, boots, _games(n, a, b))


def elo_ratings(
    votes: Sequence[Vote],
    *,
    ties: TiesRule = "exclude",
    start: float = 1000.0,
    k: float = 2.0,
    base: float = 10.0,
    scale: float = 400.0,
    bootstrap_rounds: int = 100,
    seed: int = 0,
) -> dict[str, Rating]:
    """Online Elo (vote order) with bootstrap 95 % intervals.

    The point rating is online Elo over the votes in their order. Each bootstrap round resamples the
    counted battles with replacement in a random order and reruns online Elo (Chatbot Arena's
    practice); the interval is the 2.5 / 97.5 percentile over rounds.

    Raises: RatingsInputError for an unknown ``ties`` rule, negative ``bootstrap_rounds``, ``k`` or
    ``scale`` not finite > 0, ``base`` not finite > 1 or ``start`` not finite.
    """
    _check_params(start=start, base=base, scale=scale, k=k, bootstrap_rounds=bootstrap_rounds)
    models, a, b, s = _encode(votes, ties)
    n = len(models)
    point = _elo_rounds(n, a[None, :], b[None, :], s[None, :], start, k, base, scale)[0]
    boots = np.empty((0, n))
    if bootstrap_rounds and a.size:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, a.size, size=(bootstrap_rounds, a.size))
        boots = _elo_rounds(n, a[idx], b[idx], s[idx], start, k, base, scale)
    return _assemble(models, point, boots, _games(n, a, b))


def compute_ratings(
    votes: Iterable[Vote],
    method: str = "bt",
    *,
    ties: TiesRule = "exclude",
    k: float = 2.0,
    start: float = 1000.0,
    base: float = 10.0,
    scale: float = 400.0,
    bootstrap_rounds: int = 100,
    seed: int = 0,
) -> dict[str, dict]:
    """``{model: {rating, ci_low, ci_high, rank, games}}`` by ``method`` ``"elo"`` or ``"bt"``.

    Raises: RatingsInputError for an unknown method or ties rule, or a degenerate parameter
    (``k``/``scale`` not finite > 0, ``base`` not finite > 1, ``start`` not finite, rounds < 0).
    """
    # k is checked for both methods: a NaN --k with --method bt is still a mistake worth reporting
    _check_params(start=start, base=base, scale=scale, k=k, bootstrap_rounds=bootstrap_rounds)
    votes = list(votes)
    if method == "bt":
        out = bradley_terry(
            votes, ties=ties, start=start, base=base, scale=scale, bootstrap_rounds=bootstrap_rounds, seed=seed
        )
    elif method == "elo":
        out = elo_ratings(
            votes, ties=ties, start=start, k=k, base=base, scale=scale, bootstrap_rounds=bootstrap_rounds, seed=seed
        )
    else:
        raise RatingsInputError(f"method must be 'elo' or 'bt', got {method!r}")
    return {m: r.to_dict() for m, r in sorted(out.items(), key=lambda kv: -kv[1].rating)}
