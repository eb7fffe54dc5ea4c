"""Video spatial tasks under frame budgets (ReVSI / VSI-Bench): frame reading and sampling, dummy
videos, answerability, question generation from 3D boxes, MRA and scoring. See docs/video.md."""

from .errors import FrameSourceError, RecordError, SceneDataError, VideoBenchError
from .mra import MRA_THRESHOLDS, mean_relative_accuracy
from .scoring import score_vsi, score_vsi_item

__all__ = ["VideoBenchError", "FrameSourceError", "RecordError", "SceneDataError", "MRA_THRESHOLDS",
           "mean_relative_accuracy", "score_vsi", "score_vsi_item"]
