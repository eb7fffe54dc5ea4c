"""Running a model over PinpointQA questions (``pointlab bench run pinpointqa``, docs/harness.md).

The protocol of PinpointQA sec. 4.1: 64 RGB frames sampled uniformly from the scene's video are the
only visual input; the text is the question and the task instruction giving the answer format (for
NRI, the four options between them, as the released records hold them: ``A. label``). Greedy
decoding is the agent's default temperature 0. The paper's exact chat template is not released: the
text is ``question``, the options one per line, then ``instruction``, each on its own line, after
the frames (documented choice; the answers are read by the same scorer as released predictions).

Videos: ``--video`` (every question about one scene), or ``--videos DIR`` holding
``DIR/<source_dataset>/<scene_id>.mp4``, ``DIR/<scene_id>.mp4`` or a frame folder ``DIR/<scene_id>/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..video.errors import VideoBenchError

__all__ = ["pinpoint_prompt", "pinpoint_video", "BUDGET", "SAMPLER"]

BUDGET = 64  # frames per question (sec. 4.1)
SAMPLER = "uniform"


def pinpoint_prompt(q: Mapping[str, Any]) -> str:
    """The question's text (module docstring)."""
    lines = [str(q.get("question", "")).strip()]
    lines += [str(c) for c in (q.get("choices") or [])]
    if q.get("instruction"):
        lines.append(str(q["instruction"]).strip())
    return "\n".join(lines)


def pinpoint_video(q: Mapping[str, Any], video: Path | None, videos: Path | None) -> Path:
    """The video (or frame folder) of question ``q``. Raises VideoBenchError when none is found."""
    if video is not None:
        return video
    assert videos is not None
    scene = str(q.get("scene_id", ""))
    for p in (videos / str(q.get("source_dataset", "")) / f"{scene}.mp4", videos / f"{scene}.mp4", videos / scene):
        if scene and p.exists():
            return p
    raise VideoBenchError(f"question {q.get('id')}: no video of scene {scene!r} under {videos}")
