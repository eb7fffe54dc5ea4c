"""Mean Relative Accuracy (MRA), the numeric-answer metric of VSI-Bench and ReVSI (ReVSI sec. 6
"Evaluation metrics"; VSI-Bench sec. 3).

MRA = (1/10) * sum over theta in C of 1[ |pred - gt| / |gt| <= 1 - theta ],
C = {0.50, 0.55, ..., 0.95}. The ten thresholds are written out below: computing them by float
stepping yields 10 or 11 values depending on rounding (VSI-Bench's ``np.linspace`` call gets 10 only
because ``(0.95 - 0.5) / 0.05 + 2`` rounds down to 10.99...).

Rules we fix (documented in docs/video.md):

* An error on a tolerance counts (``<=``, as the reference code of VSI-Bench and ReVSI: "within a
  dynamic threshold"), and a relative error within ``BOUNDARY_EPS`` of a tolerance counts as on it,
  so ``gt=5, pred=6`` (error 0.2) passes theta 0.8 although the reference code's
  ``1 - np.linspace(...)[6]`` is 0.19999999999999984 (``reference_mra`` keeps that float arithmetic
  for ``--rules reference``).
* Ground truth 0 (counts on ReVSI dummy videos, sec. 5): exact match, 1.0 when ``pred == 0``
  else 0.0 (a relative error is undefined there).
* A missing or non-finite prediction scores 0.0.
"""

from __future__ import annotations

import math

__all__ = [
    "MRA_THRESHOLDS",
    "MRA_TOLERANCES",
    "BOUNDARY_EPS",
    "mean_relative_accuracy",
    "relative_error",
    "reference_mra",
]

#: confidence thresholds theta, written out (ReVSI / VSI-Bench C = {0.5, 0.55, ..., 0.95}).
MRA_THRESHOLDS: tuple[float, ...] = (0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90, 0.95)
#: the matching relative-error tolerances 1 - theta, written out so no subtraction rounds them.
MRA_TOLERANCES: tuple[float, ...] = (0.50, 0.45, 0.40, 0.35, 0.30, 0.25, 0.20, 0.15, 0.10, 0.05)
#: relative errors this close to a tolerance are treated as equal to it (inside).
BOUNDARY_EPS = 1e-9


def relative_error(pred: float, gt: float) -> float:
    """``|pred - gt| / |gt|``; ``inf`` for ``gt == 0`` and ``pred != 0``, 0.0 when both are 0."""
    if gt == 0:
        return 0.0 if pred == 0 else math.inf
    return abs(pred - gt) / abs(gt)


def mean_relative_accuracy(pred: float | None, gt: float) -> float:
    """MRA of one numeric prediction in [0, 1] (multiples of 0.1).

    Args:
        pred: the parsed prediction (any unit, the same as ``gt``), or ``None`` when unparseable.
        gt: ground truth; 0 is scored by exact match (see module docstring).

    Raises:
        ValueError: ``gt`` is not a finite number.
    """
    if gt is None or not math.isfinite(float(gt)):
        raise ValueError(f"ground truth must be a finite number, got {gt!r}")
    if pred is None or not math.isfinite(float(pred)):
        return 0.0
    if gt == 0:
        return 1.0 if pred == 0 else 0.0
    err = relative_error(float(pred), float(gt))
    hits = sum(1 for tol in MRA_TOLERANCES if err <= tol + BOUNDARY_EPS)
    return hits / len(MRA_TOLERANCES)


def reference_mra(pred: float, gt: float) -> float:
    """MRA exactly as lmms-eval's vsibench / revsi ``mean_relative_accuracy`` computes it:
    ``(abs(pred - gt) / gt <= 1 - np.linspace(0.5, 0.95, int((0.95 - 0.5) / 0.05 + 2))).mean()`` in floats.

    Raises what the reference raises: ``ZeroDivisionError`` for ``gt == 0``, ``TypeError`` for ``None``.
    """
    import numpy as np

    conf = np.linspace(0.5, 0.95, int((0.95 - 0.5) / 0.05 + 2))
    return float((abs(pred - gt) / gt <= 1 - conf).mean())
