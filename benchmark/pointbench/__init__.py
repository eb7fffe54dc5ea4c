"""Point-Bench (PointArena sec. 3.1-3.2, 4.1): mask-scored pointing over five categories.

``dataset`` reads the release layout, the instance-mask form and GT / PRED JSONL; ``scoring`` applies
the paper's rules; ``build`` makes a dataset from a folder of images and masks; ``run`` drives a
model over a dataset (async, cached, resumable); ``report`` aggregates runs and draws Fig. 3.
"""

from .dataset import (
    CATEGORIES,
    BenchItem,
    DatasetError,
    Prediction,
    load_dataset,
    load_gt_jsonl,
    load_mask,
    load_pred_jsonl,
    load_release,
    write_gt_jsonl,
)
from .scoring import item_record, point_score, score_item, score_points, score_prediction, score_predictions, summarize

__all__ = [
    "CATEGORIES",
    "BenchItem",
    "DatasetError",
    "Prediction",
    "load_dataset",
    "load_gt_jsonl",
    "load_mask",
    "load_pred_jsonl",
    "load_release",
    "write_gt_jsonl",
    "point_score",
    "item_record",
    "score_item",
    "score_points",
    "score_prediction",
    "score_predictions",
    "summarize",
]
