"""Across stages (PointArena sec. 4.3, Fig. 5b): how Point-Bench accuracy, Point-Battle ratings and
Point-Act success agree, model by model.

For each pair of stages, over the models present in both, a least-squares line ``y = a + b x`` and
its coefficient of determination ``R^2 = 1 - SS_res / SS_tot`` (for a line with intercept this is
the squared Pearson correlation). The paper reports R^2 = 0.85 (Battle vs Bench, five models) and
R^2 = 0.92 (Act vs Bench, three agents). Fewer than three common models give ``r2 = None``: a
line through two points always fits perfectly and says nothing.

Inputs per stage are ``{model: value}``: Point-Bench as the Fig. 3 "Average" (fraction), Point-Battle
as a rating (``pointlab ratings`` output), Point-Act as a success rate (fraction).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .figures import save_figure

from pointlab.benchmark.errors import BenchmarkError

__all__ = ["STAGES", "CrossStageError", "fit_pair", "cross_stage_report", "plot_fig5b", "load_stage_file"]

STAGES = ("point_bench", "point_battle", "point_act")
LABELS = {
    "point_bench": "Point-Bench accuracy (%)",
    "point_battle": "Point-Battle rating",
    "point_act": "Point-Act success (%)",
}
_PERCENT = {"point_bench", "point_act"}


class CrossStageError(BenchmarkError, ValueError):
    """A stage file is unreadable or malformed."""


def fit_pair(x: Mapping[str, float], y: Mapping[str, float]) -> dict:
    """Line fit over the models in both: ``{"models", "n", "slope", "intercept", "r2"}`` (``r2`` and
    the line ``None`` below three models or when x or y is constant)."""
    models = sorted(set(x) & set(y))
    out: dict = {"models": models, "n": len(models), "slope": None, "intercept": None, "r2": None}
    if len(models) < 3:
        return out
    xs = np.array([x[m] for m in models], dtype=float)
    ys = np.array([y[m] for m in models], dtype=float)
    sxx = float(((xs - xs.mean()) ** 2).sum())
    syy = float(((ys - ys.mean()) ** 2).sum())
    if sxx == 0 or syy == 0:
        return out
    slope = float(((xs - xs.mean()) * (ys - ys.mean())).sum() / sxx)
    intercept = float(ys.mean() - slope * xs.mean())
    ss_res = float(((ys - (intercept + slope * xs)) ** 2).sum())
    out.update(slope=slope, intercept=intercept, r2=1.0 - ss_res / syy)
    return out


def cross_stage_report(stages: Mapping[str, Mapping[str, float]]) -> dict:
    """``{"stages": {stage: {model: value}}, "pairs": {"x_vs_y": fit_pair(...)}}`` for every pair of
    the given stages (names from ``STAGES``, in that order)."""
    names = [s for s in STAGES if s in stages]
    pairs = {f"{b}_vs_{a}": dict(fit_pair(stages[a], stages[b]), x=a, y=b) for a, b in itertools.combinations(names, 2)}
    return {"stages": {s: dict(stages[s]) for s in names}, "pairs": pairs}


def plot_fig5b(report: dict, path_stem: str | Path) -> list[Path]:
    """One scatter panel per pair (points labelled by model, fitted line, R^2 in the title), written
    as ``<stem>.png`` and ``<stem>.svg``. Fractions are drawn as percent."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = list(report["pairs"].values())
    fig, axes = plt.subplots(1, max(1, len(pairs)), figsize=(4.6 * max(1, len(pairs)), 4.0), dpi=120, squeeze=False)
    for ax, p in zip(axes[0], pairs):
        sx = 100.0 if p["x"] in _PERCENT else 1.0
        sy = 100.0 if p["y"] in _PERCENT else 1.0
        xs = np.array([report["stages"][p["x"]][m] for m in p["models"]]) * sx
        ys = np.array([report["stages"][p["y"]][m] for m in p["models"]]) * sy
        ax.scatter(xs, ys, zorder=3)
        for m, u, v in zip(p["models"], xs, ys):
            ax.annotate(m, (u, v), textcoords="offset points", xytext=(4, 4), fontsize=8)
        if p["slope"] is not None and len(xs):
            grid = np.linspace(xs.min(), xs.max(), 50)
            ax.plot(grid, (p["intercept"] + p["slope"] * grid / sx) * sy, "--", color="0.4")
        r2 = "n/a (< 3 models)" if p["r2"] is None else f"{p['r2']:.2f}"
        ax.set_title(f"R² = {r2}  (n = {p['n']})")
        ax.set_xlabel(LABELS[p["x"]])
        ax.set_ylabel(LABELS[p["y"]])
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path_stem)


def load_stage_file(path: str | Path, stage: str) -> dict[str, float]:
    """Read one stage's ``{model: value}``.

    Accepted: a Point-Bench run folder or its ``results.json`` (``model`` + ``aggregate.average.mean``);
    ``pointlab ratings`` output (``{model: {"rating": ...}}``); Point-Act per-agent results
    (``bridge.study.results.agent_results``: a list, or ``{"agents": [...]}``, of
    ``{"agent", "success_rate"}``; agents without judged trials are skipped); a plain
    ``{model: number}`` JSON.

    Raises: CrossStageError.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise CrossStageError(f"cannot read {stage} file {p}: {e}") from None
    if isinstance(d, dict) and "aggregate" in d and "model" in d:
        try:
            return {str(d["model"]): float(d["aggregate"]["average"]["mean"])}
        except (KeyError, TypeError, ValueError):
            raise CrossStageError(f"{p}: Point-Bench results without an average") from None
    if isinstance(d, dict) and isinstance(d.get("agents"), list):
        d = d["agents"]
    if isinstance(d, list):
        try:
            return {
                str(r.get("agent", r.get("model"))): float(r["success_rate"])
                for r in d
                if isinstance(r, dict) and r.get("success_rate") is not None
            }
        except (KeyError, TypeError, ValueError):
            raise CrossStageError(f"{p}: expected [{{agent, success_rate}}, ...]") from None
    if not isinstance(d, dict):
        raise CrossStageError(f"{p}: expected a JSON object")
    out = {}
    for m, v in d.items():
        val: Any = v.get("rating") if isinstance(v, dict) else v  # any JSON value: float() decides
        try:
            out[str(m)] = float(val)
        except (TypeError, ValueError):
            raise CrossStageError(f"{p}: value for {m!r} is not a number") from None
    return out
