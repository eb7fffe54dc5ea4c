"""The results page's charts (PointArena Fig. 7): per-agent success with 95% Wilson bars, the
participants' judgement beside the automatic check, and the SUS distribution per agent (Fig. 7b).

Both are drawn with matplotlib to SVG text from ``study_results.agent_results`` rows, so the page,
an export and a paper use the same numbers.
"""

from __future__ import annotations

import io

__all__ = ["success_svg", "sus_svg", "pairwise_svg", "success_figure", "sus_figure", "pairwise_figure", "save_figure"]


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    return buf.getvalue()


def save_figure(fig, stem) -> list:
    """Write ``fig`` as ``stem.svg`` and ``stem.png`` (200 dpi); returns both paths."""
    from pathlib import Path

    out = []
    for fmt, kw in (("svg", {}), ("png", {"dpi": 200})):
        path = Path(f"{stem}.{fmt}")
        # SVG without its creation date: the same study gives the same bytes (a bundle's checksums)
        meta = {"Date": None} if fmt == "svg" else {"Software": None}
        fig.savefig(path, format=fmt, bbox_inches="tight", metadata=meta, **kw)
        out.append(path)
    return out


def _figure(n_agents: int):
    # matplotlib.figure.Figure, not pyplot: no global state, so two requests may draw at once
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(4.0, 1.6 * n_agents + 1.5), 3.2))
    return fig, fig.subplots()


def success_svg(rows: list[dict]) -> str:
    """``success_figure`` as SVG text."""
    return _svg(success_figure(rows))


def sus_svg(rows: list[dict]) -> str:
    """``sus_figure`` as SVG text."""
    return _svg(sus_figure(rows))


def success_figure(rows: list[dict]):
    """Bars of ``success_rate`` (participants) and ``auto_success_rate`` (automatic check) per agent,
    each with its 95% Wilson interval as an error bar; aborted trials are left out (as in the rates)."""
    import numpy as np

    fig, ax = _figure(len(rows))
    x = np.arange(len(rows))
    for off, key, ci_key, label, color in (
        (-0.18, "success_rate", "ci95", "participants", "#1f6feb"),
        (0.18, "auto_success_rate", "auto_ci95", "automatic check", "#8c959f"),
    ):
        vals = [r.get(key) if r.get(key) is not None else 0.0 for r in rows]
        lo = [v - r[ci_key][0] if r.get(ci_key) else 0.0 for v, r in zip(vals, rows)]
        hi = [r[ci_key][1] - v if r.get(ci_key) else 0.0 for v, r in zip(vals, rows)]
        ax.bar(x + off, vals, 0.34, yerr=[lo, hi], capsize=4, label=label, color=color)
    ax.set_xticks(x, [f"{r['agent']}\n(n={r['n_judged']}, aborted {r['n_aborted']})" for r in rows], fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success rate (95% Wilson)")
    # under the axes, not inside: a bar at 100 % would sit under a legend in the plot area (and
    # above them it would meet the title on a one-agent figure)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2, frameon=False)
    ax.set_title("Point-Act success per agent", fontsize=10)
    return fig


def _points_over_box(ax, data: list[list[float]]) -> None:
    """Each list of ``data`` at x = its index: a box plot, and every value as a point (slightly spread)."""
    import numpy as np

    if any(data):
        ax.boxplot([d if d else [np.nan] for d in data], positions=range(len(data)), widths=0.5)
    for i, d in enumerate(data):
        if d:
            jitter = np.linspace(-0.08, 0.08, len(d)) if len(d) > 1 else [0.0]
            ax.scatter(np.full(len(d), i) + jitter, d, s=14, color="#1f6feb", zorder=3)


def sus_figure(rows: list[dict]):
    """Each agent's SUS scores (0-100) as points over a box plot (Fig. 7b)."""

    fig, ax = _figure(len(rows))
    data = [r.get("sus") or [] for r in rows]
    _points_over_box(ax, data)
    ax.set_xticks(range(len(rows)), [f"{r['agent']}\n(n={len(r.get('sus') or [])})" for r in rows], fontsize=8)
    ax.set_ylim(0, 100)
    ax.set_ylabel("SUS score")
    ax.set_title("System Usability Scale per agent", fontsize=10)
    return fig


def pairwise_svg(results: dict) -> str:
    """``pairwise_figure`` as SVG text."""
    return _svg(pairwise_figure(results))


def pairwise_figure(results: dict):
    """A pairwise study (``bridge.study.pairwise_results.pairwise_results``): left, each agent's
    Bradley-Terry-with-ties rating with its 95 % bootstrap interval, best first; right, each agent's
    progress scores (0-100) as points over a box plot."""
    import numpy as np
    from matplotlib.figure import Figure

    ratings = results["ratings"]["ratings"]
    progress = results["progress"]
    order = sorted(ratings, key=lambda a: -ratings[a]["rating"]) + [a for a in progress if a not in ratings]
    fig = Figure(figsize=(max(7.0, 2.2 * len(order) + 2.0), 3.4))
    left, right = fig.subplots(1, 2)
    rated = [a for a in order if a in ratings]
    if rated:
        x = np.arange(len(rated))
        vals = np.array([ratings[a]["rating"] for a in rated])
        lo = vals - np.array([ratings[a]["ci_low"] for a in rated])
        hi = np.array([ratings[a]["ci_high"] for a in rated]) - vals
        left.errorbar(x, vals, yerr=[lo, hi], fmt="o", capsize=4, color="#1f6feb")
        left.set_xticks(x, [f"{a}\n({ratings[a]['episodes']} ep.)" for a in rated], fontsize=8)
    left.axhline(1000, color="#8c959f", lw=0.8, ls=":")
    left.set_ylabel("rating (Bradley-Terry with ties, 95% CI)")
    left.set_title("Pairwise rating", fontsize=10)
    data = [progress.get(a, {}).get("values") or [] for a in order]
    _points_over_box(right, data)
    right.set_xticks(range(len(order)), [f"{a}\n(n={len(d)})" for a, d in zip(order, data)], fontsize=8)
    right.set_ylim(-2, 102)
    right.set_ylabel("progress (0-100)")
    right.set_title("Progress per agent", fontsize=10)
    fig.tight_layout()
    return fig
