"""Saving matplotlib figures the way every pointlab report does: PNG and SVG side by side."""

from __future__ import annotations

from pathlib import Path

__all__ = ["save_figure"]


def save_figure(fig, path_stem: str | Path) -> list[Path]:
    """Write ``fig`` to ``<path_stem>.png`` and ``<path_stem>.svg`` (folders created), close it, and
    return both paths."""
    import matplotlib.pyplot as plt

    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    for f in out:
        fig.savefig(f, bbox_inches="tight")
    plt.close(fig)
    return out
