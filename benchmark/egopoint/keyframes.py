"""Clarity-aware keyframe selection (EgoPoint-Bench App. C.1.1 "Clarity-Aware Frame Selection").

Three complementary sharpness metrics are computed per frame of a candidate window:

1. **Laplacian variance**: variance of the 3x3 Laplacian of the gray image (focus blur).
2. **High-frequency spectral energy**: share of the image's spectral energy (DC removed) at radial
   frequencies above ``hf_cutoff`` of the Nyquist frequency (motion blur removes it).
3. **Edge density**: share of pixels that are Canny edges (structural sharpness).

Each metric is min-max normalised over the window, and the clarity score is their weighted sum
with every weight 1.0 (App. C.1.1); the highest-scoring frames are the candidates. A window with
one frame, or a metric that is equal on every frame, normalises that metric to 0 for all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

__all__ = ["ClarityMetrics", "clarity_metrics", "clarity_scores", "select_keyframes", "DEFAULT_WEIGHTS"]

DEFAULT_WEIGHTS = (1.0, 1.0, 1.0)  # App. C.1.1: "all weighting coefficients set to 1.0"


@dataclass(frozen=True)
class ClarityMetrics:
    """Raw metrics of one frame (before normalisation over the window)."""

    laplacian_var: float
    hf_energy: float
    edge_density: float

    def to_dict(self) -> dict:
        return asdict(self)


def _gray(img: np.ndarray) -> np.ndarray:
    import cv2

    a = np.asarray(img)
    if a.ndim == 3 and a.shape[2] == 3:
        a = cv2.cvtColor(a.astype(np.uint8), cv2.COLOR_RGB2GRAY)
    elif a.ndim != 2:
        raise ValueError(f"expected (H, W) gray or (H, W, 3) RGB, got shape {a.shape}")
    return a.astype(np.uint8)


@lru_cache(maxsize=8)
def _high_mask(h: int, w: int, cutoff: float) -> np.ndarray:
    # radial frequency of each rfft2 bin as a fraction of Nyquist (1.0 at the band edge)
    fy = np.fft.fftfreq(h) * 2.0
    fx = np.fft.rfftfreq(w) * 2.0
    return np.sqrt(fy[:, None] ** 2 + fx[None, :] ** 2) > cutoff


def clarity_metrics(
    img: np.ndarray, *, hf_cutoff: float = 0.25, canny_low: int = 100, canny_high: int = 200
) -> ClarityMetrics:
    """The three metrics of one (H, W, 3) uint8 RGB (or (H, W) gray) frame.

    Args:
        hf_cutoff: radial frequency, as a fraction of Nyquist, above which energy counts as high.
        canny_low, canny_high: Canny hysteresis thresholds.
    Raises:
        ValueError: not an image shape.
    """
    import cv2

    g = _gray(img)
    lap = float(cv2.Laplacian(g, cv2.CV_64F, ksize=1).var())
    power = np.abs(np.fft.rfft2(g.astype(np.float32))) ** 2
    power[0, 0] = 0.0  # the mean brightness is not detail
    # rfft2 keeps half the spectrum: columns 1..W/2-1 stand for two conjugate bins each
    weight = np.full(power.shape[1], 2.0, dtype=np.float64)
    weight[0] = 1.0
    if g.shape[1] % 2 == 0:
        weight[-1] = 1.0
    total = float((power.sum(axis=0) * weight).sum())
    # Parseval: total = (pixels)^2 * variance; below a 1e-3 gray-level spread there is no detail
    if total <= g.size * g.size * 1e-6:
        hf = 0.0
    else:
        hf = float((np.where(_high_mask(*g.shape, hf_cutoff), power, 0.0).sum(axis=0) * weight).sum() / total)
    edges = cv2.Canny(g, canny_low, canny_high)
    return ClarityMetrics(lap, hf, float(np.count_nonzero(edges)) / edges.size)


def _minmax(x: np.ndarray) -> np.ndarray:
    span = x.max() - x.min()
    return (x - x.min()) / span if span > 0 else np.zeros_like(x)


def clarity_scores(
    frames: Sequence[np.ndarray], weights: Sequence[float] = DEFAULT_WEIGHTS, **metric_kwargs
) -> tuple[np.ndarray, list[ClarityMetrics]]:
    """Clarity score of every frame of a window: the weighted sum of the min-max normalised
    metrics, in [0, sum(weights)]. Returns ``(scores (N,) float64, raw metrics)``.

    Raises:
        ValueError: an empty window, or not three weights.
    """
    if len(frames) == 0:
        raise ValueError("no frames to score")
    if len(weights) != 3:
        raise ValueError(f"need three weights (Laplacian, spectrum, edges), got {len(weights)}")
    raw = [clarity_metrics(f, **metric_kwargs) for f in frames]
    m = np.array([[r.laplacian_var, r.hf_energy, r.edge_density] for r in raw], dtype=np.float64)
    norm = np.column_stack([_minmax(m[:, j]) for j in range(3)])
    return norm @ np.asarray(weights, dtype=np.float64), raw


def select_keyframes(frames: Sequence[np.ndarray], top_k: int = 1, **kwargs) -> list[int]:
    """Positions (in ``frames``) of the ``top_k`` clearest frames, best first; ties keep the
    earlier frame. Raises ``ValueError`` for ``top_k < 1`` or an empty window."""
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    scores, _ = clarity_scores(frames, **kwargs)
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return order[:top_k]
