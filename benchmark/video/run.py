"""Running a model over VSI-Bench / ReVSI questions: frames at a budget, lmms-eval's prompt, the shared
runner's journal and resume, and the score of the run.

- **Questions**: records with ``id``, ``question_type``, ``question``, ``options``, ``scene_name``
  (``pointlab video generate``'s ``questions.jsonl``, or the released files); a record's own
  ``frame_indices`` (generated for a budget) are used as given, else ``sample_frames`` picks
  ``budget`` frames of the video with ``sampler`` (``nested``: the ReVSI budgets nest).
- **Video**: one video or frame folder for every question (``video``), or a folder laid out as
  lmms-eval's ``<dataset>/<scene_name>.mp4`` (or a frame folder of that name) (``videos``).
- **Prompt**: lmms-eval's ``vsibench_doc_to_text``: "These are frames of a video.", the question, then
  for multiple choice ``Options:`` with the options and "Answer with the option's letter from the
  given choices directly.", else "Please answer the question using a single word or phrase." The
  frames come first, one image part each (what lmms-eval's OpenAI-compatible model sends).
- **Run folder**: ``run.json`` (``runs.RunRecord``: benchmark, model and request settings, budget,
  sampler, questions file and its SHA-256) and ``run_1.jsonl`` (``runs.AnswerRecord`` per question,
  the raw answer, its reasoning and token counts); ``pointlab score vsi --gt answers.jsonl --pred
  run_1.jsonl`` scores the raw answers (a later line of a question supersedes an earlier one).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Callable

from ..prompts import image_to_data_url
from ..runner import answer_with_images, run_journaled
from ..runs import AnswerRecord, open_run
from .errors import VideoBenchError
from .frames import open_frames
from .sampling import parse_budget, sample_frames
from .scoring import MC_TASKS, REVSI_MC_TASKS

__all__ = ["PRE_PROMPT", "MC_POST_PROMPT", "NA_POST_PROMPT", "vsi_prompt", "run_vsi"]

PRE_PROMPT = "These are frames of a video."
MC_POST_PROMPT = "Answer with the option's letter from the given choices directly."
NA_POST_PROMPT = "Please answer the question using a single word or phrase."


def vsi_prompt(q: Mapping[str, Any]) -> str:
    """The text lmms-eval's VSI-Bench task sends for question record ``q`` (module docstring)."""
    question = str(q.get("question", ""))
    if str(q.get("question_type")) in MC_TASKS | REVSI_MC_TASKS and q.get("options"):
        options = "Options:\n" + "\n".join(str(o) for o in q["options"])
        return "\n".join([PRE_PROMPT, question, options, MC_POST_PROMPT])
    return PRE_PROMPT + "\n" + question + "\n" + NA_POST_PROMPT


def _video_of(q: Mapping[str, Any], video: Path | None, videos: Path | None) -> Path:
    if video is not None:
        return video
    assert videos is not None
    base = videos / str(q.get("dataset", "")) / str(q.get("scene_name", ""))
    for p in (base.with_suffix(".mp4"), base, videos / f"{q.get('scene_name', '')}.mp4"):
        if p.exists():
            return p
    raise VideoBenchError(f"question {q.get('id')}: no video {base}.mp4 under {videos}")


class _Frames:
    """Decoded frames of one video at a time (questions of a scene run together). The last frames read
    are kept, read-only: the questions of a scene at one budget share their frames, so they are decoded
    once, and ``prompts.image_to_data_url`` encodes a read-only frame once for all of them."""

    def __init__(self) -> None:
        self._path: Path | None = None
        self._source: Any = None
        self._last: tuple[tuple[int, ...], list] = ((), [])

    def _open(self, path: Path) -> Any:
        if path != self._path:
            self.close()
            self._source, self._path = open_frames(path), path
        return self._source

    def read(self, path: Path, indices: Sequence[int]) -> list:
        source = self._open(path)
        key = tuple(indices)
        if key != self._last[0]:
            frames = source.read_many(key)
            for f in frames:
                f.setflags(write=False)
            self._last = (key, frames)
        return self._last[1]

    def total(self, path: Path) -> int:
        return int(self._open(path).total)

    def close(self) -> None:
        if self._source is not None:
            self._source.close()
        self._source, self._path, self._last = None, None, ((), [])


def run_vsi(
    questions: Sequence[Mapping[str, Any]],
    agent: Any,
    out_dir: str | Path,
    *,
    video: str | Path | None = None,
    videos: str | Path | None = None,
    budget: int | str = 16,
    sampler: str = "nested",
    concurrency: int = 4,
    max_error_rate: float = 0.1,
    progress: bool = False,
    record: Mapping[str, Any] | None = None,
    benchmark: str = "vsibench",
    prompt_of: Callable[[Mapping[str, Any]], str] | None = None,
    video_of: Callable[[Mapping[str, Any], Path | None, Path | None], Path] | None = None,
) -> dict:
    """Ask ``agent`` (an ``OpenAIAgent``: its client, request settings and image size and encoding)
    every question (module docstring) and journal the answers in ``out_dir``; ``benchmark`` names the
    task in ``run.json`` (``vsibench``, ``revsi``, ``pinpointqa``). ``prompt_of`` builds a question's
    text (default: lmms-eval's VSI-Bench prompt), ``video_of`` finds its video under ``videos``
    (default: lmms-eval's ``<dataset>/<scene_name>.mp4``): another video QA task brings its own.

    Returns ``{"asked", "cached", "errors"}``. Raises: ``runner.ErrorRateExceeded``; ValueError when
    ``out_dir`` holds a run of another model, budget, sampler or questions file, or neither / both of ``video`` and
    ``videos`` are given.
    """
    import asyncio

    if (video is None) == (videos is None):
        raise ValueError("give the video of the questions or the folder of videos (one of them)")
    settings = {"model": getattr(agent, "model", ""), "budget": str(budget), "sampler": sampler}
    if record and record.get("questions_sha256"):
        settings["questions_sha256"] = str(record["questions_sha256"])  # another question file: another run
    journal = open_run(
        out_dir,
        benchmark=benchmark,
        agent=agent,
        settings=settings,
        items=len(questions),
        max_error_rate=max_error_rate,
        scorer="pinpoint" if benchmark == "pinpointqa" else "vsi",
        record=dict(record or {}),
    )
    frames = _Frames()
    lock = asyncio.Lock()
    vpath = None if video is None else Path(video)
    vdir = None if videos is None else Path(videos)

    async def ask(q: Mapping[str, Any]) -> AnswerRecord:
        qid, t0 = str(q["id"]), time.perf_counter()
        prompt = (prompt_of or vsi_prompt)(q)
        try:
            path = (video_of or _video_of)(q, vpath, vdir)
            async with lock:  # one decoder at a time; questions of one video run together
                indices = q.get("frame_indices")
                if not indices:
                    total = await asyncio.to_thread(frames.total, path)
                    # a question's own budget wins over --budget, as its own frames do (a generated
                    # record at budget "all" has no frame list: it means every frame)
                    own = q.get("budget")
                    b = parse_budget(own) if own is not None else budget
                    indices = list(sample_frames(total, b, q.get("sampler") or sampler).indices)
                sent = [int(i) for i in indices]
                rgbs = await asyncio.to_thread(frames.read, path, sent)
            urls = [image_to_data_url(agent.downscale(rgb), agent.image_encoding) for rgb in rgbs]
        except (VideoBenchError, OSError, ValueError) as e:
            return AnswerRecord(id=qid, run=1, prompt=prompt, error=f"frames: {e}")
        return await answer_with_images(
            agent,
            item_id=qid,
            prompt=prompt,
            instruction=str(q.get("question", "")),
            image_urls=urls,
            t0=t0,
            frames=sent,
        )

    return run_journaled(
        questions,
        ask,
        journal,
        agent=agent,
        concurrency=concurrency,
        max_error_rate=max_error_rate,
        progress=progress,
        label=f"{benchmark} {settings['model']}",
        close=frames.close,
    )


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file (a run records which questions file it answered)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
