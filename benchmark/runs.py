"""Run records: what a benchmark run asked, what the model answered, and how it was read, as versioned
pydantic models with public read and write functions (STYLE.md: "runs are data").

- ``RunRecord`` (``run.json``): the model and its request settings as sent (``ModelClient.describe``:
  parameters, reasoning-model notes), point format, prompt style, steer mode, dataset, the parser
  and the rule set the run was scored with, the error-rate threshold and why a run stopped.
- ``AnswerRecord`` (one line of ``run_<k>.jsonl``): the raw text, the prompt text sent, the
  instruction, the parser and format, image and sent sizes, the parsed entries (for inspection) and
  the error of a failed call, with its HTTP status and the requests it cost.

``pointlab score pointing`` re-scores a run from ``raw_text`` with the parser named in the record, so a
parser or rule fix reaches every saved run; the stored points are never the source of a score.
Version 1 records (before ``version`` was written) read as version 2 with the new fields empty.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .records import dumps_json, replaced_on_success

from pointlab.benchmark.errors import BenchmarkError

__all__ = [
    "open_run",
    "RUN_RECORD_VERSION",
    "RunRecord",
    "AnswerRecord",
    "read_run_record",
    "write_run_record",
    "read_answers",
    "append_answer",
    "compact_answers",
    "RunRecordError",
]

RUN_RECORD_VERSION = 2
PARSER = "pointlab.benchmark.points.parse_points"


class RunRecordError(BenchmarkError, ValueError):
    """A run folder's ``run.json`` is missing, unreadable or not a run record."""


class AnswerRecord(BaseModel):
    """One answer of one run (a line of ``run_<k>.jsonl``)."""

    model_config = ConfigDict(extra="ignore")

    version: int = RUN_RECORD_VERSION
    id: str
    run: int = 1
    raw_text: str = ""
    prompt: str = ""
    instruction: str = ""
    point_format: str = ""
    prompt_style: str = ""
    parser: str = PARSER
    image_size: list[int] | None = None
    sent_size: list[int] | None = None
    points_px: list[list[float]] = Field(default_factory=list)
    entries: list[dict[str, Any]] = Field(default_factory=list)
    parse_error: str | None = None
    error: str | None = None
    status: int | None = None
    latency_s: float | None = None
    attempts: int = 0
    reasoning: str | None = None  # the model's reasoning (model_client.Completion.reasoning): never scored
    usage: dict[str, int] | None = None  # the server's token counts
    frames: list[int] | None = None  # video benchmarks: the frame indices sent, in order


class RunRecord(BaseModel):
    """``run.json`` of a run folder."""

    model_config = ConfigDict(extra="allow")

    version: int = RUN_RECORD_VERSION
    benchmark: str = "pointbench"
    model: str
    point_format: str | None = None
    prompt_style: str | None = None
    temperature: float | None = None
    steer_mode: str | None = None
    items: int = 0
    dataset: str | None = None
    agent: dict[str, Any] = Field(default_factory=dict)
    request: dict[str, Any] = Field(default_factory=dict)
    parser: str = PARSER
    rules: str = "pointlab"
    max_error_rate: float | None = None
    stopped: str | None = None
    updated_unix_s: float | None = None


def open_run(
    out_dir: str | Path,
    *,
    benchmark: str,
    agent: Any,
    settings: dict[str, str],
    items: int,
    max_error_rate: float,
    scorer: str,
    record: dict[str, Any] | None = None,
) -> Path:
    """Open (or resume) the run folder ``out_dir`` of a question-answering run and return its journal
    ``run_1.jsonl``: ``run.json`` is written with ``record`` and ``settings`` (``model`` and what must
    match for a resume: budget, sampler, the questions file's SHA-256, ...), ``parser`` naming the
    ``scorer`` that reads its answers, and without the pointing-only fields.

    Raises:
        ValueError: the folder holds a run of other ``settings`` (another model or questions file).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rr = out / "run.json"
    if rr.exists():
        old = read_run_record(rr)
        extra = old.model_extra or {}
        had = {k: old.model if k == "model" else str(extra.get(k)) for k in settings}
        if had != settings:
            raise ValueError(f"{out} holds a run of another setting ({had}); use another --out")
    write_run_record(
        rr,
        RunRecord(
            benchmark=benchmark,
            model=settings["model"],
            temperature=getattr(agent, "temperature", None),
            items=items,
            max_error_rate=max_error_rate,
            request=agent.describe() if hasattr(agent, "describe") else {},
            # the answers are read by the task's scorer (``pointlab score <scorer>``), not a point parser
            parser=f"scorer:{scorer}",
            **{**dict(record or {}), **{k: v for k, v in settings.items() if k != "model"}},
        ),
        exclude=POINTING_FIELDS,
    )
    return out / "run_1.jsonl"


def read_run_record(path: str | Path) -> RunRecord:
    """``run.json`` (a file or its folder) as a ``RunRecord``.

    Raises:
        RunRecordError: missing, not JSON, or not a run record.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "run.json"
    try:
        return RunRecord.model_validate(json.loads(p.read_text(encoding="utf-8")))
    except (OSError, ValueError, RecursionError) as e:  # ValidationError is a ValueError
        raise RunRecordError(f"{p}: not a readable run record ({type(e).__name__}: {str(e).splitlines()[0]})") from e


def write_run_record(path: str | Path, record: RunRecord, *, exclude: set[str] | None = None) -> Path:
    """Write ``record`` to ``path`` (a file or its folder), without the fields ``exclude``; returns the file."""
    p = Path(path)
    if p.is_dir():
        p = p / "run.json"
    p.write_text(dumps_json(record.model_dump(exclude=exclude), indent=2), encoding="utf-8")
    return p


# Fields of a pointing run that a question-answering run has no use for (its run.json leaves them out)
POINTING_FIELDS = {"point_format", "prompt_style", "steer_mode"}


def read_answers(path: str | Path) -> dict[str, AnswerRecord]:
    """The answers of one run file by item id (a later line wins; a torn or unreadable line is skipped,
    so an interrupted run resumes and asks that item again)."""
    out: dict[str, AnswerRecord] = {}
    p = Path(path)
    if not p.exists():
        return out
    for line in p.read_text(encoding="utf-8").split("\n"):  # JSON Lines: "\n" only (records._decoded_lines)
        try:
            rec = AnswerRecord.model_validate(json.loads(line))
        except (ValueError, RecursionError):  # ValidationError is a ValueError
            continue  # a line cut by a crash: that item is asked again
        out[rec.id] = rec
    return out


def compact_answers(path: str | Path) -> int:
    """Rewrite a run file with one line per item, the line that counts (the last, as
    :func:`read_answers` reads it; torn lines dropped), atomically (``records.replaced_on_success``).
    A resumed run appends a new answer for every item it asks again, so without this the file would
    hold both; ``score pointing`` reads a run file the same way either way. Returns the lines kept;
    a missing file is left missing (0)."""
    p = Path(path)
    if not p.exists():
        return 0
    answers = read_answers(p)
    with replaced_on_success(p) as tmp:
        with tmp.open("w", encoding="utf-8") as fh:
            for rec in answers.values():
                fh.write(dumps_json(rec.model_dump(), compact=True) + "\n")
    return len(answers)


def append_answer(fh, record: AnswerRecord) -> None:
    """Append one answer line to an open run file and flush it (a crash loses at most that line)."""
    fh.write(dumps_json(record.model_dump(), compact=True) + "\n")
    fh.flush()
