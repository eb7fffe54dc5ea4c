"""EgoPoint-Bench: scoring (TF / single choice / open-ended judge), Point-Sim geometry, clarity-aware
keyframe selection. See docs/video.md."""

from .keyframes import ClarityMetrics, clarity_metrics, clarity_scores, select_keyframes
from .pointsim import (
    RayCheck,
    intrinsics_from_vfov,
    look_at_rotation,
    optical_pose,
    project_point,
    ray_cast_valid,
    rodrigues_alignment,
    target_box_2d,
)
from .scoring import DEIXIS_LEVELS, DIMENSIONS, QUESTION_TYPES, score_egopoint, validate_oq_verdict

__all__ = [
    "ClarityMetrics",
    "clarity_metrics",
    "clarity_scores",
    "select_keyframes",
    "RayCheck",
    "intrinsics_from_vfov",
    "look_at_rotation",
    "optical_pose",
    "project_point",
    "ray_cast_valid",
    "rodrigues_alignment",
    "target_box_2d",
    "DEIXIS_LEVELS",
    "DIMENSIONS",
    "QUESTION_TYPES",
    "score_egopoint",
    "validate_oq_verdict",
]
