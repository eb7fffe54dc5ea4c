"""Video spatial tasks under frame budgets (ReVSI / VSI-Bench): frame reading and sampling, dummy
videos, answerability, question generation from 3D boxes, MRA and scoring. See docs/video.md."""

from .dummy import DUMMY_KINDS, DummyVideo, make_dummy, render_dummy
from .errors import FrameSourceError, RecordError, SceneDataError, VideoBenchError
from .frames import FrameSource, open_frames, write_video
from .generate import TASKS, GenerationConfig, expand_budgets, generate_questions
from .mra import MRA_THRESHOLDS, mean_relative_accuracy
from .sampling import SAMPLERS, FrameSelection, nested_indices, sample_frames, uniform_indices
from .scoring import score_vsi, score_vsi_item
from .visibility import BoxVisibility, VisibilityTable, box_visibility, table_from_poses

__all__ = [
    "VideoBenchError",
    "FrameSourceError",
    "RecordError",
    "SceneDataError",
    "MRA_THRESHOLDS",
    "mean_relative_accuracy",
    "score_vsi",
    "score_vsi_item",
    "FrameSource",
    "open_frames",
    "write_video",
    "SAMPLERS",
    "FrameSelection",
    "nested_indices",
    "sample_frames",
    "uniform_indices",
    "DUMMY_KINDS",
    "DummyVideo",
    "make_dummy",
    "render_dummy",
    "VisibilityTable",
    "BoxVisibility",
    "box_visibility",
    "table_from_poses",
    "TASKS",
    "GenerationConfig",
    "expand_budgets",
    "generate_questions",
]
