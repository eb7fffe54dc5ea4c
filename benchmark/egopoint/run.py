"""Running a model over EgoPoint-Bench (``pointlab bench run egopoint``, docs/harness.md).

The request is the released evaluation's (``eval_code/eval_real_qwen3vl.py`` of the EgoPoint-Bench
release): the image (``--images DIR`` joined with the entry's ``image_path``), then the text

- Multiple_Choice: ``{question}\\n{options one per line}\\nAnswer directly using the letters of the options given.``
- True_False: ``{question}\\nAnswer directly with 'True' or 'False'.``
- Open_Ended: ``{question}\\nPlease output the answer directly.``

(the released cap on new tokens, 20 or 128 for open-ended, is the agent's ``max_tokens`` here). An
entry whose image is missing is a recorded failure (the release writes ``IMAGE_NOT_FOUND``), never a
crash. Items are the released JSON array's entries in order, ``id`` = position unless an entry has
one (``scoring.release_records``), so ``pointlab score egopoint --gt pure_real_test.json --pred
run_1.jsonl`` scores the run's journal.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..prompts import image_to_data_url
from ..runner import answer_with_images, run_journaled
from ..runs import AnswerRecord, open_run

__all__ = ["egopoint_prompt", "run_egopoint"]

_KIND = {"TF": "True_False", "SCQ": "Multiple_Choice", "OQ": "Open_Ended"}


def egopoint_prompt(entry: Mapping[str, Any]) -> str:
    """The released text of one entry (module docstring)."""
    kind = str(entry.get("type") or _KIND.get(str(entry.get("question_type", "")).upper(), ""))
    question = str(entry.get("question", ""))
    if kind == "Multiple_Choice":
        options = entry.get("options", [])
        text = "\n".join(str(o) for o in options) if isinstance(options, list) else str(options)
        return f"{question}\n{text}\nAnswer directly using the letters of the options given."
    if kind == "True_False":
        return f"{question}\nAnswer directly with 'True' or 'False'."
    if kind == "Open_Ended":
        return f"{question}\nPlease output the answer directly."
    return question


def _image(images: Path, entry: Mapping[str, Any]) -> np.ndarray:
    from PIL import Image

    rel = str(entry.get("image_path") or "")
    path = (images / rel).resolve()
    if not rel or images.resolve() not in path.parents:  # a path in the data is never followed out
        raise FileNotFoundError(f"image_path {rel!r} is not under {images}")
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def run_egopoint(
    entries: Sequence[Mapping[str, Any]],
    agent: Any,
    out_dir: str | Path,
    *,
    images: str | Path,
    concurrency: int = 4,
    max_error_rate: float = 0.1,
    progress: bool = False,
    record: Mapping[str, Any] | None = None,
) -> dict:
    """Ask ``agent`` every entry (module docstring; ``entries`` with ``id``) and journal the answers in
    ``out_dir`` (resumable, as every ``bench run``). Returns ``{"asked", "cached", "errors"}``.

    Raises:
        runner.ErrorRateExceeded; ValueError: ``out_dir`` holds a run of another model or data file.
    """
    import asyncio

    settings = {"model": getattr(agent, "model", "")}
    if record and record.get("questions_sha256"):
        settings["questions_sha256"] = str(record["questions_sha256"])
    journal = open_run(
        out_dir,
        benchmark="egopoint",
        agent=agent,
        settings=settings,
        items=len(entries),
        max_error_rate=max_error_rate,
        scorer="egopoint",
        record=dict(record or {}),
    )
    root = Path(images)

    async def ask(e: Mapping[str, Any]) -> AnswerRecord:
        qid, t0 = str(e["id"]), time.perf_counter()
        prompt = egopoint_prompt(e)
        try:
            rgb = await asyncio.to_thread(_image, root, e)
        except (OSError, ValueError) as err:  # the release's IMAGE_NOT_FOUND, as a recorded failure
            return AnswerRecord(id=qid, run=1, prompt=prompt, error=f"image: {err}")
        url = image_to_data_url(agent.downscale(rgb), agent.image_encoding)
        return await answer_with_images(
            agent, item_id=qid, prompt=prompt, instruction=str(e.get("question", "")), image_urls=[url], t0=t0
        )

    return run_journaled(
        entries,
        ask,
        journal,
        agent=agent,
        concurrency=concurrency,
        max_error_rate=max_error_rate,
        progress=progress,
        label=f"egopoint {settings['model']}",
    )
