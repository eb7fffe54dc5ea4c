"""Point-Bench reports: the mean +- std table and the bar chart of PointArena Fig. 3.

Fig. 3: success rate (%) per category (Spatial, Affordance, Counting, Steerable, Reasoning) and the
Average, one bar per model, error bars = standard deviation over the evaluation runs; a "Human"
bar is the upper-bound reference when human results are given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np

from ..figures import save_figure
from .dataset import CATEGORIES

__all__ = ["FIG3_COLUMNS", "results_table", "plot_fig3"]

FIG3_COLUMNS = CATEGORIES + ("average",)


def results_table(aggregates: Mapping[str, Mapping[str, dict]]) -> str:
    """Markdown table, one row per model: ``mean ± std`` success (%) per Fig. 3 column ("–" when a
    category has no items)."""
    head = "| model | " + " | ".join(c.capitalize() for c in FIG3_COLUMNS) + " |"
    lines = [head, "|---" * (len(FIG3_COLUMNS) + 1) + "|"]
    for model, agg in aggregates.items():
        cells = []
        for c in FIG3_COLUMNS:
            v = agg.get(c)
            cells.append("–" if v is None else f"{100 * v['mean']:.1f} ± {100 * v['std']:.1f}")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot_fig3(
    aggregates: Mapping[str, Mapping[str, dict]], path_stem: str | Path, *, title: str = "Point-Bench success rate"
) -> list[Path]:
    """Grouped bar chart like Fig. 3 written as ``<stem>.png`` and ``<stem>.svg``; returns both paths.

    ``aggregates`` is ``{model: run.aggregate_runs(...)}`` (a model named ``Human`` is drawn last,
    hatched). Bars are percent, error bars one standard deviation over runs.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = sorted(aggregates, key=lambda m: (m.lower() == "human", list(aggregates).index(m)))
    x = np.arange(len(FIG3_COLUMNS))
    width = 0.8 / max(1, len(models))
    fig, ax = plt.subplots(figsize=(max(7.0, 1.4 * len(FIG3_COLUMNS) + 0.3 * len(models)), 4.2), dpi=120)
    top = 105.0
    for k, m in enumerate(models):
        agg = aggregates[m]
        means = [100 * agg[c]["mean"] if c in agg else np.nan for c in FIG3_COLUMNS]
        stds = [100 * agg[c]["std"] if c in agg else 0.0 for c in FIG3_COLUMNS]
        top = max([top] + [a + b + 5 for a, b in zip(means, stds) if np.isfinite(a)])
        human = m.lower() == "human"
        ax.bar(
            x - 0.4 + width * (k + 0.5),
            means,
            width,
            yerr=stds,
            capsize=3,
            label=m,
            hatch="//" if human else None,
            color="0.75" if human else None,
            edgecolor="0.3",
            linewidth=0.5,
        )
    ax.set_xticks(x, [c.capitalize() for c in FIG3_COLUMNS])
    ax.set_ylabel("success rate (%)")
    ax.set_ylim(0, top)
    ax.set_title(title)
    ax.legend(fontsize=8, ncols=min(4, len(models)), loc="upper center", bbox_to_anchor=(0.5, -0.1), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path_stem)
