"""How many trials a Point-Act study needs, and how long it takes (``pointlab act plan``,
docs/statistics.md).

Absolute mode (each agent's success rate with its Wilson interval):

- **interval width**: the smallest ``n`` whose 95 % Wilson interval (``results.wilson_interval``) is
  at most ``width`` wide when the success rate is ``p`` (0.5, the widest, unless told);
- **separating a difference** ``D`` between two agents with power ``1 - beta`` at two-sided level
  ``alpha``: the two-proportion sample size without continuity correction (Fleiss, Levin and Paik
  2003, "Statistical Methods for Rates and Proportions", 3rd ed., eq. 4.14),
  ``n = (z_a sqrt(2 pbar qbar) + z_b sqrt(p1 q1 + p2 q2))^2 / D^2`` per agent, at ``p1, p2 = 0.5 +- D/2``
  (where the binomial variance is largest).

Pairwise mode (two agents act on the same instruction from the same start; the preference is
counted): with independent successes ``p1, p2`` an episode is decided (not a tie) with probability
``p1 q2 + p2 q1`` and A wins a decided one with ``pi = p1 q2 / (p1 q2 + p2 q1)``; the sign test on
decided episodes needs ``n_d = ((z_a / 2 + z_b sqrt(pi (1 - pi))) / (pi - 1/2))^2`` of them (the
normal approximation of the binomial test, as McNemar's test for paired proportions), so
``n_d / (p1 q2 + p2 q1)`` episodes per pair of agents. This counts only which agent succeeded; the
progress scores of RoboArena's protocol carry more information, so the figure is an upper bound.

``simulate_width`` and ``simulate_power`` check the plans by drawing studies with known success rates
(``pointlab act plan --validate``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist, median
from typing import Any, Literal, Sequence

import numpy as np

from pointlab.bridge.errors import BridgeError
from pointlab.bridge.study.results import wilson_interval

__all__ = [
    "PlanError",
    "wilson_width",
    "trials_for_width",
    "trials_to_separate",
    "episodes_to_separate",
    "Plan",
    "make_plan",
    "simulate_width",
    "simulate_power",
    "measured_trial_s",
]

Mode = Literal["absolute", "pairwise"]
_MAX_N = 1_000_000


class PlanError(BridgeError, ValueError):
    """A plan that cannot be made (a margin or width out of range)."""


def _z(q: float) -> float:
    return NormalDist().inv_cdf(q)


def wilson_width(n: int, p: float, alpha: float = 0.05) -> float:
    """Full width of the Wilson interval at ``n`` trials and rate ``p`` (the expected one: ``p`` need
    not be a multiple of 1/n)."""
    z = _z(1 - alpha / 2)
    return 2 * z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))


def trials_for_width(width: float, *, p: float = 0.5, alpha: float = 0.05) -> int:
    """Smallest ``n`` with ``wilson_width(n, p) <= width``. Raises PlanError for a width not in (0, 1)."""
    if not 0 < width < 1:
        raise PlanError(f"the interval width must be between 0 and 1 (a share), got {width}")
    lo, hi = 1, _MAX_N
    if wilson_width(hi, p, alpha) > width:
        raise PlanError(f"no study of at most {_MAX_N} trials reaches width {width}")
    while lo < hi:  # the width falls with n: bisect
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if wilson_width(mid, p, alpha) > width else (lo, mid)
    return lo


def _margin(diff: float) -> tuple[float, float]:
    if not 0 < diff < 1:
        raise PlanError(f"the margin must be between 0 and 1 (a difference of success rates), got {diff}")
    return 0.5 + diff / 2, 0.5 - diff / 2


def trials_to_separate(diff: float, *, power: float = 0.8, alpha: float = 0.05) -> int:
    """Trials per agent to tell two agents ``diff`` apart (module docstring, absolute mode)."""
    p1, p2 = _margin(diff)
    pbar = (p1 + p2) / 2
    za, zb = _z(1 - alpha / 2), _z(power)
    n = (za * math.sqrt(2 * pbar * (1 - pbar)) + zb * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))) ** 2 / diff**2
    return math.ceil(n - 1e-9)


def episodes_to_separate(diff: float, *, power: float = 0.8, alpha: float = 0.05) -> int:
    """Pairwise episodes per pair of agents to tell them ``diff`` apart (module docstring)."""
    p1, p2 = _margin(diff)
    a_wins, b_wins = p1 * (1 - p2), p2 * (1 - p1)
    decided = a_wins + b_wins
    pi = a_wins / decided
    za, zb = _z(1 - alpha / 2), _z(power)
    n_decided = ((za / 2 + zb * math.sqrt(pi * (1 - pi))) / (pi - 0.5)) ** 2
    return math.ceil(n_decided / decided - 1e-9)


@dataclass(frozen=True)
class Plan:
    """A study's size and time (``make_plan``).

    Attributes:
        mode, agents, margin, width, power, alpha: what was asked.
        per_agent: trials each agent runs (absolute), or its trials over all its pairs (pairwise).
        per_pair: episodes per pair of agents (pairwise; ``None`` in absolute mode).
        trials: robot trials in the whole study (a pairwise episode is two).
        trial_s: seconds one trial takes here (measured, or assumed: ``trial_s_source``).
        stations: stations running at once.
        hours: ``trials * trial_s / stations / 3600``.
    """

    mode: Mode
    agents: int
    margin: float | None
    width: float | None
    power: float
    alpha: float
    per_agent: int
    per_pair: int | None
    trials: int
    trial_s: float
    trial_s_source: str
    stations: int
    hours: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def make_plan(
    *,
    agents: int,
    mode: Mode = "absolute",
    margin: float | None = None,
    width: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    stations: int = 1,
    trial_s: float,
    trial_s_source: str = "given",
) -> Plan:
    """The size of a study of ``agents`` agents (module docstring): to separate ``margin`` (either mode)
    and/or to reach interval ``width`` per agent (absolute; the larger of the two wins).

    Raises:
        PlanError: neither ``margin`` nor ``width``; ``width`` in pairwise mode; fewer than 2 agents in
            pairwise mode; a value out of range.
    """
    if agents < 1 or stations < 1 or not trial_s > 0:
        raise PlanError("agents and stations must be at least 1 and the trial time positive")
    if margin is None and width is None:
        raise PlanError("give a margin to separate (--margin) or an interval width (--width)")
    if not 0 < power < 1 or not 0 < alpha < 1:
        raise PlanError("power and alpha must be between 0 and 1")
    per_pair = None
    if mode == "pairwise":
        if width is not None:
            raise PlanError("an interval width is for absolute mode; pairwise plans separate a margin")
        if agents < 2 or margin is None:
            raise PlanError("pairwise mode compares agents: give at least 2 agents and a margin")
        per_pair = episodes_to_separate(margin, power=power, alpha=alpha)
        pairs = agents * (agents - 1) // 2
        per_agent = per_pair * (agents - 1)  # every pair the agent is in
        trials = 2 * per_pair * pairs
    else:
        sizes = []
        if margin is not None:
            sizes.append(trials_to_separate(margin, power=power, alpha=alpha))
        if width is not None:
            sizes.append(trials_for_width(width, alpha=alpha))
        per_agent = max(sizes)
        trials = per_agent * agents
    return Plan(
        mode=mode,
        agents=agents,
        margin=margin,
        width=width,
        power=power,
        alpha=alpha,
        per_agent=per_agent,
        per_pair=per_pair,
        trials=trials,
        trial_s=trial_s,
        trial_s_source=trial_s_source,
        stations=stations,
        hours=round(trials * trial_s / stations / 3600, 2),
    )


def simulate_width(n: int, width: float, rates: Sequence[float], *, draws: int = 2000, seed: int = 0) -> float:
    """Share of ``draws`` simulated agents (true rate each of ``rates`` in turn) whose Wilson interval
    over ``n`` trials is at most ``width`` wide."""
    rng = np.random.default_rng(seed)
    ok = 0
    for i in range(draws):
        s = int(rng.binomial(n, rates[i % len(rates)]))
        lo, hi = wilson_interval(s, n) or (0.0, 1.0)
        ok += hi - lo <= width + 1e-12
    return ok / draws


def simulate_power(diff: float, *, mode: Mode, n: int, alpha: float = 0.05, draws: int = 2000, seed: int = 0) -> float:
    """Share of ``draws`` simulated comparisons of two agents at ``0.5 +- diff/2`` in which the test the
    plan assumes rejects equality: the two-proportion z-test on ``n`` trials each (absolute), or the
    sign test on the decided ones of ``n`` episodes (pairwise)."""
    p1, p2 = _margin(diff)
    rng = np.random.default_rng(seed)
    za = _z(1 - alpha / 2)
    hits = 0
    for _ in range(draws):
        a = rng.random(n) < p1
        b = rng.random(n) < p2
        if mode == "absolute":
            x1, x2 = a.mean(), b.mean()
            pooled = (x1 + x2) / 2
            se = math.sqrt(2 * pooled * (1 - pooled) / n)
            hits += se > 0 and abs(x1 - x2) / se > za
        else:  # each episode: both act; decided when exactly one succeeds
            wins, losses = int(np.sum(a & ~b)), int(np.sum(~a & b))
            d = wins + losses
            hits += d > 0 and abs(wins - d / 2) / math.sqrt(d / 4) > za
    return hits / draws


def measured_trial_s(trials: Sequence[dict]) -> float | None:
    """This installation's time per trial: the median gap between one participant's consecutive trials
    in a block (``created_unix_s``: the instruction, the agent, the motion, the judgement and the typing
    of the next one), over the given store rows; ``None`` with fewer than 5 such gaps."""
    by: dict[tuple, list[float]] = {}
    for t in trials:
        if t.get("participant_id") is None or t.get("created_unix_s") is None:
            continue
        by.setdefault((t["participant_id"], t.get("block")), []).append(float(t["created_unix_s"]))
    gaps = [b - a for times in by.values() for a, b in zip(sorted(times), sorted(times)[1:]) if b > a]
    return round(median(gaps), 1) if len(gaps) >= 5 else None
