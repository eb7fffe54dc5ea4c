"""Simulated and real Point-Act studies side by side: how well the simulator ranks the agents, and
the real success rate estimated from many simulated trials and a few real ones.

- **Pearson r** and **MMRV** (mean maximum rank violation) of the per-agent success rates, as
  SimplerEnv defines them (Li et al. 2024, "Evaluating Real-World Robot Manipulation Policies in
  Simulation", arXiv:2405.05941, sec. 4; its released ``simpler_env/utils/metrics.py``): for each agent
  i, the largest real-rate gap ``|real_i - real_j|`` over the agents j whose order the simulator gets
  wrong (``(sim_i > sim_j) != (real_i > real_j)``, strict, as the released code: a tie on one side and
  an order on the other is a violation), averaged over the agents. 0 is a perfect ranking.
- **Prediction-powered inference** of an agent's real success rate (Angelopoulos et al. 2023,
  "Prediction-powered inference", Science 382; with the power tuning of PPI++, Angelopoulos, Duchi
  and Zrnic 2023, arXiv:2311.01453), as SureSim applies it to robot evaluation (Badithela et al. 2025,
  "Reliable and Scalable Robot Policy Evaluation with Imperfect Simulators", arXiv:2510.04354): real
  trials paired with the simulator's prediction for the same condition rectify the bias of many
  simulated trials. ``ppi_mean`` gives the same numbers as ``ppi_py.ppi_mean_ci`` (ppi-python 0.2.3,
  tested); its interval is the CLT one (SureSim also gives non-asymptotic ones: not done here).

Pairing in Point-Act (``compare_studies``): the condition of a trial is its agent and its instruction
(the scene is the study's). A real trial whose instruction the simulated study also ran for that agent
is *paired*: its prediction is the simulated success rate of that agent on that instruction. The
simulated trials whose instruction no real trial of the agent has are the *unlabeled* set, each with
its own outcome as the prediction. PPI assumes the real trials' conditions are drawn like the
unlabeled ones (the same instruction list for both studies, e.g. the demo script); it is unbiased
whatever the simulator's quality, and narrower than the real trials alone when the simulator tracks
the real outcomes.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any, Mapping, Sequence

import numpy as np

from pointlab.bridge.errors import BridgeError

__all__ = ["PPIEstimate", "ppi_mean", "pearson_r", "mmrv", "compare_studies", "SimRealError"]


class SimRealError(BridgeError, ValueError):
    """The inputs cannot give the statistic (empty, mismatched, not finite)."""


@dataclass(frozen=True)
class PPIEstimate:
    """A prediction-powered estimate of a mean with its two-sided ``1 - alpha`` interval.

    Attributes:
        estimate, low, high: the point estimate and the interval (for a success rate, 0..1; the
            interval is not clipped to it, as ``ppi_py``'s is not).
        lam: the power-tuning weight used (0: the real trials alone; 1: plain PPI).
        n, N: paired (labelled) and unlabeled sizes.
        classical_low, classical_high: the CLT interval of the real outcomes alone, for comparison.
    """

    estimate: float
    low: float
    high: float
    lam: float
    n: int
    N: int
    classical_low: float
    classical_high: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _vector(x: Sequence[float], name: str) -> np.ndarray:
    a = np.asarray(x, dtype=float).reshape(-1)
    if not np.all(np.isfinite(a)):
        raise SimRealError(f"{name} has a value that is not a finite number")
    return a


def ppi_mean(
    y: Sequence[float],
    yhat: Sequence[float],
    yhat_unlabeled: Sequence[float],
    *,
    alpha: float = 0.05,
    lam: float | None = None,
) -> PPIEstimate:
    """Prediction-powered estimate of ``E[Y]`` (module docstring).

    Args:
        y: the real outcomes (0/1 for success), shape ``(n,)``.
        yhat: the simulator's prediction for each of those trials, shape ``(n,)``.
        yhat_unlabeled: its predictions for conditions with no real trial, shape ``(N,)``.
        alpha: the interval's error level (0.05: a 95 % interval).
        lam: the power-tuning weight; ``None`` picks it from the data as PPI++ does (clipped to 0..1).

    Formulas (PPI++ sec. 2, the mean): ``theta = mean(lam * yhat_unlabeled) + mean(y - lam * yhat)``;
    ``se^2 = std(lam * yhat_unlabeled)^2 / N + std(y - lam * yhat)^2 / n`` (population std, as
    ``ppi_py``); ``lam* = cov(y, yhat) / ((1 + n / N) var(yhat, yhat_unlabeled))``, with the
    covariance over the n pairs (divided by n) and the variance over all n + N predictions (n + N - 1).

    Raises:
        SimRealError: fewer than 2 paired or 2 unlabeled values, lengths differ, a value not finite,
            ``alpha`` not in (0, 1).
    """
    Y, Yh, Yu = _vector(y, "y"), _vector(yhat, "yhat"), _vector(yhat_unlabeled, "yhat_unlabeled")
    n, N = Y.size, Yu.size
    if Yh.size != n:
        raise SimRealError(f"y has {n} values and yhat {Yh.size}: one prediction per real outcome")
    if n < 2 or N < 2:
        raise SimRealError(f"PPI needs at least 2 paired and 2 unlabeled values (got {n} and {N})")
    if not 0 < alpha < 1:
        raise SimRealError(f"alpha must be in (0, 1), got {alpha}")
    if lam is None:
        cov = float(np.mean((Y - Y.mean()) * (Yh - Yh.mean())))
        var = float(np.var(np.concatenate([Yh, Yu]), ddof=1))
        lam = 0.0 if var == 0 else min(1.0, max(0.0, cov / ((1 + n / N) * var)))
    estimate = float(np.mean(lam * Yu) + np.mean(Y - lam * Yh))
    se = math.sqrt(float(np.std(lam * Yu)) ** 2 / N + float(np.std(Y - lam * Yh)) ** 2 / n)
    z = NormalDist().inv_cdf(1 - alpha / 2)
    classical_se = float(np.std(Y)) / math.sqrt(n)
    return PPIEstimate(
        estimate=estimate,
        low=estimate - z * se,
        high=estimate + z * se,
        lam=float(lam),
        n=n,
        N=N,
        classical_low=float(Y.mean()) - z * classical_se,
        classical_high=float(Y.mean()) + z * classical_se,
    )


def pearson_r(sim: Sequence[float], real: Sequence[float]) -> float | None:
    """Pearson's correlation of two per-agent rate lists; ``None`` when it is undefined (fewer than 2
    agents, or either list constant). Raises SimRealError on lengths that differ."""
    s, r = _vector(sim, "sim"), _vector(real, "real")
    if s.size != r.size:
        raise SimRealError(f"{s.size} simulated rates and {r.size} real ones")
    if s.size < 2 or np.all(s == s[0]) or np.all(r == r[0]):
        return None
    return float(np.corrcoef(s, r)[0, 1])


def mmrv(sim: Sequence[float], real: Sequence[float]) -> float:
    """Mean maximum rank violation of per-agent rates (module docstring; SimplerEnv's definition, strict
    comparisons). Raises SimRealError on empty or mismatched lists."""
    s, r = _vector(sim, "sim"), _vector(real, "real")
    if s.size != r.size or s.size == 0:
        raise SimRealError(f"MMRV needs two rate lists of one non-zero length (got {s.size} and {r.size})")
    wrong = (s[:, None] > s[None, :]) != (r[:, None] > r[None, :])
    gaps = np.abs(r[:, None] - r[None, :]) * wrong
    return float(gaps.max(axis=1).mean())


def _outcome(row: Mapping[str, Any]) -> int | None:
    """1 / 0 for a judged trial (a refusal is a failure, as in every rate), ``None`` otherwise."""
    o = row.get("outcome")
    return 1 if o == "succeeded" else 0 if o == "failed" else None


def _key(instruction: Any) -> str:
    return " ".join(str(instruction or "").lower().split())


def compare_studies(
    sim_rows: Sequence[Mapping[str, Any]],
    real_rows: Sequence[Mapping[str, Any]],
    *,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Per-agent success in a simulated and a real study, their agreement, and PPI (module docstring).

    Args:
        sim_rows, real_rows: the two studies' trial rows (``Store.trials(study_id=...)``: ``agent``,
            ``instruction``, ``outcome``); only judged trials (succeeded / failed) count.
        alpha: the PPI interval's error level.

    Returns:
        ``{"agents": [{"agent", "sim_n", "sim_rate", "real_n", "real_rate", "paired", "ppi"
        (PPIEstimate as a dict, or None with "ppi_note")}], "pearson_r", "mmrv", "n_agents"}`` over
        the agents both studies judged; ``pearson_r`` / ``mmrv`` are ``None`` below 2 agents.
    """

    def judged(rows):
        out: dict[str, list[tuple[str, int]]] = {}
        for r in rows:
            o = _outcome(r)
            if o is not None:
                out.setdefault(str(r.get("agent")), []).append((_key(r.get("instruction")), o))
        return out

    sim, real = judged(sim_rows), judged(real_rows)
    agents = sorted(set(sim) & set(real))
    table = []
    for a in agents:
        by_instruction: dict[str, list[int]] = {}
        for k, o in sim[a]:
            by_instruction.setdefault(k, []).append(o)
        real_keys = {k for k, _ in real[a]}
        pairs = [(o, float(np.mean(by_instruction[k]))) for k, o in real[a] if k in by_instruction]
        unlabeled = [float(o) for k, o in sim[a] if k not in real_keys]
        row: dict[str, Any] = {
            "agent": a,
            "sim_n": len(sim[a]),
            "sim_rate": float(np.mean([o for _, o in sim[a]])),
            "real_n": len(real[a]),
            "real_rate": float(np.mean([o for _, o in real[a]])),
            "paired": len(pairs),
            "unlabeled": len(unlabeled),
            "ppi": None,
        }
        try:
            row["ppi"] = ppi_mean([p[0] for p in pairs], [p[1] for p in pairs], unlabeled, alpha=alpha).to_dict()
        except SimRealError as e:
            row["ppi_note"] = str(e)
        table.append(row)
    s = [r["sim_rate"] for r in table]
    rr = [r["real_rate"] for r in table]
    out: dict[str, Any] = {
        "agents": table,
        "n_agents": len(table),
        "pearson_r": pearson_r(s, rr) if len(table) >= 2 else None,
        "mmrv": mmrv(s, rr) if len(table) >= 2 else None,
        "alpha": alpha,
    }
    if len(table) < 3:  # two points always lie on a line: r is +-1 whatever the simulator is worth
        out["note"] = f"with {len(table)} agent(s) Pearson r and MMRV say little (r is +-1 for two agents)"
    return out
