"""Failure attribution: at which stage a failed trial failed (PointArena sec. 3.4 / 4.3 asks how much
of Point-Act's score is pointing and how much is the robot; this separates them).

Rules, in order, for a trial that did not succeed:

1. aborted (e-stop, fault, agent or camera error, operator) -> ``aborted``;
2. refused before any motion -> the refusal's stage: ``no_point`` (no point), ``pointing`` (the
   first point is invalid or outside the image), ``depth`` (no depth), ``reach`` (outside the
   envelope, or the inverse kinematics has no solution);
3. the first point lies outside the intended object's mask (``TrialResult.point_on_target`` is
   False) -> ``pointing`` (the arm did what it was told, at the wrong place). The mask comes from the
   simulator's segmentation of the frame the agent saw, or on real frames from the operator's click
   on the intended object (``mask_from_click``); unknown (``None``): this rule is skipped;
4. otherwise the execution failed: ``grasp`` for a pick, ``place`` for a place.
"""

from __future__ import annotations

import numpy as np

from pointlab.bridge.trials.outcomes import FailureStage
from pointlab.bridge.trials.record import TrialResult

__all__ = ["failure_stage", "settle", "point_in_mask", "mask_from_click"]

_REFUSAL_TO_STAGE: dict[str, FailureStage] = {
    "no_point": "no_point",
    "invalid_point": "pointing",
    "outside_image": "pointing",
    "no_depth": "depth",
    "workspace": "reach",
    "unreachable": "reach",
}


def point_in_mask(mask: np.ndarray, u: float, v: float) -> bool:
    """Whether pixel ``(u, v)`` (original-image pixels, centres at integers) lies in ``mask``
    (``(H, W)`` bool); a point off the image is outside."""
    h, w = mask.shape
    col, row = int(np.floor(u + 0.5)), int(np.floor(v + 0.5))
    return 0 <= col < w and 0 <= row < h and bool(mask[row, col])


def failure_stage(trial: TrialResult) -> FailureStage | None:
    """The stage a trial failed at (module docstring), ``None`` for a success or an unjudged trial."""
    if trial.outcome == "aborted" or trial.abort is not None:
        return "aborted"
    if trial.outcome != "failed":
        return None
    if trial.robot_outcome == "refused" and trial.refusal is not None:
        return _REFUSAL_TO_STAGE.get(trial.refusal.code, "aborted")
    if not trial.points_px:
        return "no_point"
    if trial.point_on_target is False:
        return "pointing"
    return "grasp" if trial.action == "pick" else "place"


def settle(trial: TrialResult, succeeded: bool | None) -> TrialResult:
    """Set ``outcome`` and ``failure_stage`` from a judgement (``None``: not judged yet). An aborted
    trial stays aborted whatever the judgement; a refused trial cannot have succeeded."""
    if trial.abort is not None:
        trial.outcome = "aborted"
    elif succeeded is not None:
        trial.outcome = "succeeded" if succeeded and trial.robot_outcome == "done" else "failed"
    trial.failure_stage = failure_stage(trial)
    return trial


def mask_from_click(rgb: np.ndarray, u: float, v: float, *, box_frac: float = 0.2, iterations: int = 4) -> np.ndarray:
    """A mask of the object at the operator's click ``(u, v)`` on ``rgb`` (``(H, W, 3)`` uint8 RGB):
    OpenCV GrabCut seeded with the clicked pixel as sure foreground inside a box of ``box_frac`` of
    the image's larger side around it. Returns ``(H, W)`` bool (at least the clicked pixel).

    Raises:
        ValueError: the click is outside the image.
    """
    import cv2

    h, w = rgb.shape[:2]
    col, row = int(np.floor(u + 0.5)), int(np.floor(v + 0.5))
    if not (0 <= col < w and 0 <= row < h):
        raise ValueError(f"click ({u}, {v}) is outside the {w}x{h} image")
    half = max(4, int(box_frac * max(h, w) / 2))
    x0, y0, x1, y1 = max(0, col - half), max(0, row - half), min(w, col + half), min(h, row + half)
    mask = np.full((h, w), cv2.GC_BGD, np.uint8)
    mask[y0:y1, x0:x1] = cv2.GC_PR_FGD
    mask[max(0, row - 2) : row + 3, max(0, col - 2) : col + 3] = cv2.GC_FGD
    bgd, fgd = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
    try:
        cv2.grabCut(np.ascontiguousarray(rgb[:, :, ::-1]), mask, None, bgd, fgd, iterations, cv2.GC_INIT_WITH_MASK)  # type: ignore[call-overload]  # cv2 stubs: rect may be None (unused with a mask)
    except cv2.error:
        pass  # a uniform box: keep the seed
    out = (mask == cv2.GC_FGD) | (mask == cv2.GC_PR_FGD)
    # the connected region that holds the click
    n, labels = cv2.connectedComponents(out.astype(np.uint8))
    if n > 1 and labels[row, col] > 0:
        out = labels == labels[row, col]
    out[row, col] = True
    return out
