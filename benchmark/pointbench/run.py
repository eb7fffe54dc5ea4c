"""Point-Bench runs: one agent over a dataset, several runs, async, cached and resumable.

PointArena sec. 4.1: every model answers every item three times (means and standard deviations
over runs), zero-shot, greedy where the API allows it. Here:

- the answers are asked by the shared runner (``benchmark.runner.ask_all``): ``concurrency`` in
  flight, each journaled to ``<out>/run_<k>.jsonl`` as it arrives and compacted to one line per item
  at the end, the ``max_error_rate`` stop (``ErrorRateExceeded``); a rerun skips items whose answer
  is already there without an error;
- retries are the one model client's (``model_client``: 408, 429, 5xx and timeouts, never another
  4xx); nothing retries on top of it, so an answer costs at most ``max_retries + 1`` requests;
- every answer is a ``runs.AnswerRecord``: raw text, prompt, parser, entries, error with its HTTP
  status, latency, attempts, reasoning, token counts;
- ``run.json`` (``runs.RunRecord``) records what produced the answers, and every run is scored from the
  raw text under the chosen rule set, so ``pointlab score pointing`` re-scores any run file;
- a tqdm progress bar on stderr.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..runner import ErrorRateExceeded, ask_all, to_ask
from ..runs import RUN_RECORD_VERSION, AnswerRecord, RunRecord, read_answers, write_run_record
from ..runs import read_run_record, RunRecordError
from .dataset import BenchItem, DatasetError, Prediction
from ..scorers import ItemScore
from .scoring import item_record, score_prediction, summarize
from .steer import STEER_MODES, apply_steer


__all__ = [
    "RUN_RECORD_VERSION",
    "RunOptions",
    "ErrorRateExceeded",
    "run_pointing",
    "read_run_answers",
    "answers_to_scores",
    "aggregate_runs",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOptions:
    """Options of a run (see module docstring). ``runs`` >= 1, ``concurrency`` >= 1,
    ``0 <= max_error_rate <= 1``; ``rules`` the rule set the runs are scored with."""

    runs: int = 3
    concurrency: int = 4
    steer_mode: str = "describe"
    progress: bool = True
    max_error_rate: float = 0.1
    rules: str = "pointlab"

    def __post_init__(self) -> None:
        if self.runs < 1 or self.concurrency < 1 or not 0.0 <= self.max_error_rate <= 1.0:
            raise ValueError("need runs >= 1, concurrency >= 1, 0 <= max_error_rate <= 1")
        if self.steer_mode not in STEER_MODES:
            raise ValueError(f"steer mode must be one of {', '.join(STEER_MODES)}")
        from ..scorers import check_rules

        check_rules(self.rules)


def _answer_record(item: BenchItem, run: int, instruction: str, ans: Any) -> AnswerRecord:
    pts = np.asarray(getattr(ans, "points_px", np.zeros((0, 2))), dtype=float).reshape(-1, 2)
    entries = [e.to_dict() if hasattr(e, "to_dict") else dict(e) for e in (getattr(ans, "entries", None) or [])]
    sent = getattr(ans, "sent_size", None)
    return AnswerRecord(
        id=item.id,
        run=run,
        raw_text=getattr(ans, "raw_text", "") or "",
        prompt=getattr(ans, "prompt", "") or "",
        instruction=instruction,
        point_format=getattr(ans, "point_format", "") or "",
        prompt_style=getattr(ans, "prompt_style", "") or "",
        image_size=[item.width, item.height],
        sent_size=list(sent) if sent else None,
        points_px=pts.tolist(),
        entries=entries,
        parse_error=getattr(ans, "parse_error", None),
        error=getattr(ans, "error", None),
        status=getattr(ans, "status", None),
        latency_s=getattr(ans, "latency_s", None),
        attempts=int(getattr(ans, "attempts", 0) or 0),
        reasoning=getattr(ans, "reasoning", None),
        usage=getattr(ans, "usage", None),
    )


def read_run_answers(path: str | Path) -> dict[str, dict]:
    """Answers of one run file by item id, as dicts (a later line wins; a torn last line is ignored)."""
    return {k: v.model_dump() for k, v in read_answers(path).items()}


class _ImageCache:
    """Decoded (and steered) images, least recently used first out.

    Tasks are queued item by item (all runs of an item together), so a small cache serves every
    run of an item while the whole dataset never sits in memory (982 photos would be gigabytes).
    """

    def __init__(self, steer_mode: str, max_items: int, sent_size: Any = None):
        self.steer_mode = steer_mode
        self.max_items = max_items
        self.sent_size = sent_size  # the agent's ``sent_size(w, h)``: a described point is in sent pixels
        self._cache: OrderedDict[str, asyncio.Future] = OrderedDict()

    async def get(self, item: BenchItem) -> tuple[np.ndarray, str]:
        fut = self._cache.get(item.id)
        if fut is None:
            # one load per item even when several runs ask at once
            fut = asyncio.ensure_future(asyncio.to_thread(self._load, item))
            self._cache[item.id] = fut
            while len(self._cache) > self.max_items:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(item.id)
        try:
            return await asyncio.shield(fut)
        except DatasetError:
            self._cache.pop(item.id, None)
            raise

    def _load(self, item: BenchItem) -> tuple[np.ndarray, str]:
        rgb = item.load_image_rgb()
        sent = None if self.sent_size is None else tuple(self.sent_size(rgb.shape[1], rgb.shape[0]))
        return apply_steer(rgb, item.query, item.reference_points_px, self.steer_mode, sent_size=sent)


async def _ask(agent: Any, item: BenchItem, run: int, images: _ImageCache) -> AnswerRecord:
    try:
        rgb, instruction = await images.get(item)
    except DatasetError as e:
        return AnswerRecord(id=item.id, run=run, error=f"dataset: {e}", image_size=[item.width, item.height])
    ans = await agent.point(rgb, instruction)  # Agent.point never raises; its client retries
    return _answer_record(item, run, instruction, ans)


async def _run_async(items: Sequence[BenchItem], agent: Any, out_dir: Path, opts: RunOptions) -> dict:
    images = _ImageCache(
        opts.steer_mode, max_items=2 * opts.concurrency + 4, sent_size=getattr(agent, "sent_size", None)
    )
    journals = {run: out_dir / f"run_{run}.jsonl" for run in range(1, opts.runs + 1)}
    done = {run: read_answers(p) for run, p in journals.items()}
    todo, cached = [], 0
    for it in items:  # item-major: the runs of one item share its decoded image
        for run in range(1, opts.runs + 1):
            if to_ask(done[run], it.id):
                todo.append((it, run))
            else:
                cached += 1
    try:
        errors = await ask_all(
            todo,
            lambda entry: _ask(agent, entry[0], entry[1], images),
            journals,
            concurrency=opts.concurrency,
            max_error_rate=opts.max_error_rate,
            progress=opts.progress,
            label=f"{getattr(agent, 'name', 'agent')}",
        )
    finally:
        if hasattr(agent, "aclose"):
            await agent.aclose()  # its HTTP clients belong to this event loop
    return {"asked": len(todo), "cached": cached, "errors": errors}


def answers_to_scores(
    items: Sequence[BenchItem],
    answers: Mapping[str, AnswerRecord | dict],
    *,
    rules: str = "pointlab",
    qwen_pixels: tuple[int, int] | None = None,
) -> list[ItemScore]:
    """Score one run's answers against the items from their RAW TEXT (never the stored points), under ``rules``."""
    scores = []
    for it in items:
        a = answers.get(it.id)
        if a is None:
            scores.append(score_prediction(it, None, rules=rules))
            continue
        a = a if isinstance(a, AnswerRecord) else AnswerRecord.model_validate(a)
        pred = Prediction(
            it.id,
            prediction=a.raw_text,
            format=a.point_format or "auto",
            error=a.error or None,
            sent_size=(a.sent_size[0], a.sent_size[1]) if a.sent_size else None,  # (w, h) as the run wrote it
            qwen_pixels=qwen_pixels,
        )
        scores.append(score_prediction(it, pred, rules=rules))
    return scores


def aggregate_runs(summaries: Sequence[dict]) -> dict:
    """Mean and standard deviation over runs of each category's accuracy, the average and overall.

    The standard deviation is the sample one (``ddof=1``; 0 for a single run), in accuracy units
    (fractions). Returns ``{name: {"mean", "std", "runs"}}`` with names the categories present plus
    ``average`` and ``overall``.
    """
    names = [c for c, v in summaries[0]["categories"].items() if v["n"]] if summaries else []
    out = {}
    for name in names + ["average", "overall"]:
        vals = [(s["categories"][name]["accuracy"] if name in s["categories"] else s[name]) for s in summaries]
        arr = np.array([v for v in vals if v is not None], dtype=float)
        if len(arr):
            out[name] = {
                "mean": float(arr.mean()),
                "std": float(arr.std(ddof=1)) if len(arr) > 1 else 0.0,
                "runs": int(len(arr)),
            }
    return out


def run_pointing(
    items: Sequence[BenchItem],
    agent: Any,
    out_dir: str | Path,
    *,
    options: RunOptions | None = None,
    record: dict | None = None,
) -> dict:
    """Run ``agent`` over ``items`` ``options.runs`` times, score every run, aggregate.

    Args:
        items: the dataset.
        agent: an object with ``async point(image_rgb, instruction) -> AgentAnswer`` (and, for model
            agents, ``describe()``: the request settings recorded in ``run.json``).
        out_dir: run folder (created); holds ``run.json``, ``run_<k>.jsonl``, ``results.json``.
        options: ``RunOptions``.
        record: extra fields for ``run.json`` (model config, dataset path, ...).

    Returns: ``{"model", "rules", "runs": [summary per run], "aggregate": aggregate_runs(...), "asked",
    "cached", "errors", "out_dir"}`` (also written to ``results.json``).
    Raises: ValueError for a run folder holding another model's or setting's answers;
        ``ErrorRateExceeded`` when the run stopped on errors (its answers are kept, ``run.json`` says why).
    """
    opts = options or RunOptions()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    extra = dict(record or {})
    agent_cfg = extra.pop("agent", {})
    describe = getattr(agent, "describe", None)
    meta = RunRecord(
        model=getattr(agent, "name", "agent"),
        point_format=getattr(agent, "point_format", None),
        prompt_style=getattr(agent, "prompt_style", None),
        temperature=getattr(agent, "temperature", None),
        steer_mode=opts.steer_mode,
        items=len(items),
        agent=agent_cfg,
        request=describe() if callable(describe) else {},
        rules=opts.rules,
        max_error_rate=opts.max_error_rate,
        dataset=extra.pop("dataset", None),
        **extra,
    )
    meta_path = out / "run.json"
    if meta_path.exists():
        try:
            old = read_run_record(meta_path)
        except RunRecordError as e:
            raise ValueError(str(e)) from e
        keys = ("model", "point_format", "prompt_style", "steer_mode")
        if any(getattr(old, k) != getattr(meta, k) for k in keys):
            raise ValueError(
                f"{out} holds answers of another setting ({ {k: getattr(old, k) for k in keys} }); use another --out"
            )
    meta.updated_unix_s = time.time()
    write_run_record(meta_path, meta)
    try:
        stats = asyncio.run(_run_async(items, agent, out, opts)) if items else {"asked": 0, "cached": 0, "errors": 0}
    except ErrorRateExceeded as e:
        meta.stopped = str(e)
        write_run_record(meta_path, meta)
        raise
    qwen_min, qwen_max = agent_cfg.get("qwen_min_pixels"), agent_cfg.get("qwen_max_pixels")
    qwen = (qwen_min, qwen_max) if qwen_min and qwen_max else None
    summaries, per_item = [], []
    for run in range(1, opts.runs + 1):
        scores = answers_to_scores(items, read_answers(out / f"run_{run}.jsonl"), rules=opts.rules, qwen_pixels=qwen)
        summaries.append(summarize(scores))
        per_item.append([item_record(s, opts.rules) for s in scores])
    result = {
        "model": meta.model,
        "prompt_style": meta.prompt_style,
        "steer_mode": opts.steer_mode,
        "rules": opts.rules,
        "runs": summaries,
        "aggregate": aggregate_runs(summaries),
        **stats,
        "out_dir": str(out),
        "request_notes": meta.request.get("request_notes", []),
    }
    from ..records import dumps_json

    (out / "results.json").write_text(dumps_json(result, indent=2), encoding="utf-8")
    (out / "items.json").write_text(dumps_json(per_item), encoding="utf-8")
    return result
