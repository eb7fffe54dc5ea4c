"""CLI of the video spatial tasks and EgoPoint-Bench: ``pointlab video frames|generate``,
``pointlab score vsi|egopoint``, ``pointlab perf video``. Thin: parse, call one library function,
print its JSON, map library errors to exit codes (2 bad input, 1 runtime failure)."""

from __future__ import annotations

from pathlib import Path

import typer

from pointlab.bridge.cligroups import fail, perf_app, print_json, score_app, video_app


@score_app.command("vsi")
def score_vsi_cmd(
    gt: Path = typer.Option(..., "--gt", help="ground-truth JSONL (id, question_type, options, ground_truth, ...)"),
    pred: Path = typer.Option(..., "--pred", help='predictions JSONL, one {"id", "prediction"} per line'),
) -> None:
    """Score VSI-Bench / ReVSI predictions: {"items": [{id, question_type, score, ...}], "summary": {...}}."""
    from .video.errors import VideoBenchError
    from .video.records import predictions_by_id, read_jsonl
    from .video.scoring import score_vsi

    try:
        result = score_vsi(read_jsonl(gt), predictions_by_id(read_jsonl(pred)))
    except VideoBenchError as e:
        fail(str(e))
    print_json(result)
