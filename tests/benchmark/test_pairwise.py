"""Pairwise (A/B) episode ratings and pair sampling (benchmark/pairwise.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pointlab.benchmark.pairwise import Episode, PairwiseError, bucketed, davidson, next_pair
from pointlab.benchmark.ratings import Vote, bradley_terry


def test_davidson_on_two_agents_is_the_closed_form():
    """Two agents, a = 6 wins of A, b = 3 of B, t = 4 ties: the model is saturated, so its MLE
    reproduces the shares: pi_A / pi_B = a / b and nu = t / sqrt(a b) (Davidson 1970, by hand:
    P(A) = r^2 / (r^2 + nu r + 1) with r = sqrt(pi_A / pi_B)). Rating gap = 400 log10(6 / 3) = 120.41;
    nu = 4 / sqrt(18) = 0.9428."""
    eps = [Episode("x", "y", "A")] * 6 + [Episode("x", "y", "B")] * 3 + [Episode("y", "x", "tie")] * 4
    got = davidson(eps, bootstrap_rounds=0)
    r = got["ratings"]
    assert r["x"]["rating"] - r["y"]["rating"] == pytest.approx(400 * math.log10(2), abs=0.05)
    assert got["nu"] == pytest.approx(4 / math.sqrt(18), abs=1e-3)
    assert (r["x"]["rating"] + r["y"]["rating"]) / 2 == pytest.approx(1000, abs=1e-6)


def test_without_ties_davidson_is_plain_bradley_terry():
    rng = np.random.default_rng(3)
    names = ["a", "b", "c", "d"]
    strength = {"a": 1.0, "b": 0.4, "c": 0.0, "d": -0.8}
    eps, votes = [], []
    for _ in range(400):
        i, j = rng.choice(4, 2, replace=False)
        x, y = names[i], names[j]
        win = rng.random() < 1 / (1 + math.exp(strength[y] - strength[x]))
        eps.append(Episode(x, y, "A" if win else "B"))
        votes.append(Vote(x, y, "model_a" if win else "model_b"))
    ours = davidson(eps, bootstrap_rounds=0)["ratings"]
    theirs = bradley_terry(votes, bootstrap_rounds=0)
    for m in names:
        assert ours[m]["rating"] == pytest.approx(theirs[m].rating, abs=0.5), m


@pytest.mark.slow  # 3000 episodes and a bootstrap of a 11-parameter fit
def test_the_bucketed_model_recovers_known_abilities_and_difficulties():
    """Three agents of known log-odds (1.5, 0.5, -0.5) on two buckets of known difficulty (pick
    -0.5: easier, relation +0.5: harder), 3000 simulated episodes: the fit finds each within 0.25 and
    the harder bucket's lower success rates."""
    rng = np.random.default_rng(11)
    theta = {"p": 1.5, "q": 0.5, "r": -0.5}
    tau = {"pick": -0.5, "relation": 0.5}
    eps = []
    for _ in range(3000):
        a, b = rng.choice(list(theta), 2, replace=False)
        bk = "pick" if rng.random() < 0.5 else "relation"
        sa = rng.random() < 1 / (1 + math.exp(-(theta[a] - tau[bk])))
        sb = rng.random() < 1 / (1 + math.exp(-(theta[b] - tau[bk])))
        eps.append(Episode(str(a), str(b), "A" if sa and not sb else "B" if sb and not sa else "tie", bk))
    got = bucketed(eps, bootstrap_rounds=20)
    mean_theta = sum(theta.values()) / 3
    for m, t in theta.items():
        # (only differences are identified against tau's centring; compare centred values)
        fitted = got["agents"][m]["theta"] - sum(a["theta"] for a in got["agents"].values()) / 3
        assert fitted == pytest.approx(t - mean_theta, abs=0.25), m
        assert got["agents"][m]["ci_low"] <= got["agents"][m]["theta"] <= got["agents"][m]["ci_high"]
    assert got["buckets"]["relation"]["tau"] - got["buckets"]["pick"]["tau"] == pytest.approx(1.0, abs=0.3)
    assert got["agents"]["p"]["success"]["pick"] > got["agents"]["p"]["success"]["relation"]


def test_pair_sampling():
    agents = ["a", "b", "c"]
    rng = np.random.default_rng(0)
    # uniform: the least-compared pair
    eps = [Episode("a", "b", "A")] * 5 + [Episode("a", "c", "A")] * 5
    assert set(next_pair(agents, eps, rng=rng)) == {"b", "c"}
    # adaptive: a pair with a clear winner and many episodes is not chosen again; a close, rarely
    # compared pair is
    eps = [Episode("a", "b", "A")] * 30 + [Episode("b", "c", "A"), Episode("c", "b", "A"), Episode("a", "c", "A")] * 3
    picks = [frozenset(next_pair(agents, eps, rule="adaptive", rng=rng)) for _ in range(8)]
    assert frozenset({"a", "b"}) not in picks
    with pytest.raises(PairwiseError):
        next_pair(["a"], [])
    with pytest.raises(PairwiseError):
        davidson([Episode("a", "a", "A")])
    with pytest.raises(PairwiseError):
        davidson([Episode("a", "b", "win")])


def test_the_bucketed_models_gradient_is_the_likelihoods_own():
    from scipy.optimize import approx_fprime

    from pointlab.benchmark.pairwise import _bucketed_nll

    rng = np.random.default_rng(3)
    P, T, n = 3, 2, 40
    a = rng.integers(0, P, n)
    b = (a + 1 + rng.integers(0, P - 1, n)) % P
    t, y, w = rng.integers(0, T, n), rng.integers(0, 3, n), rng.integers(1, 4, n).astype(float)
    for _ in range(5):
        x = rng.normal(0, 1.5, P + T + P * T)
        value, grad = _bucketed_nll(x, P, T, a, b, t, y, w, 1.0)
        numeric = approx_fprime(x, lambda z: _bucketed_nll(z, P, T, a, b, t, y, w, 1.0)[0], 1e-6)
        assert np.allclose(grad, numeric, atol=1e-4, rtol=1e-4)


def test_davidsons_gradient_is_the_likelihoods_own():
    from scipy.optimize import approx_fprime

    from pointlab.benchmark.pairwise import _davidson_nll

    rng = np.random.default_rng(5)
    n, m = 4, 50
    i = rng.integers(0, n, m)
    j = (i + 1 + rng.integers(0, n - 1, m)) % n
    y, w = rng.integers(0, 3, m), rng.integers(1, 4, m).astype(float)
    for _ in range(5):
        x = rng.normal(0, 1.0, n + 1)
        _, grad = _davidson_nll(x, i, j, y, w, 1e-6)
        numeric = approx_fprime(x, lambda z: _davidson_nll(z, i, j, y, w, 1e-6)[0], 1e-6)
        assert np.allclose(grad, numeric, atol=1e-4, rtol=1e-4)
