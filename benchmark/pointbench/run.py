"""Point-Bench runs: one agent over a dataset, several runs, async, cached and resumable.

PointArena sec. 4.1: every model answers every item three times (means and standard deviations
over runs), zero-shot, greedy where the API allows it. Here:

- ``concurrency`` requests in flight at most (``asyncio.Semaphore``);
- an answer with a transport error (after the agent's own retries) is retried ``retries`` more
  times with exponential backoff (``backoff_s``, doubling); the last error is recorded;
- every answer (raw text, parsed points, parse error, error, latency, attempts) is appended to
  ``<out>/run_<k>.jsonl`` as soon as it arrives, so a crashed or interrupted run resumes: a rerun
  skips items whose answer is already there without an error;
- ``run.json`` records what produced the answers (model, point format, prompt style, steer mode,
  temperature, dataset) - a run is data and ``pointlab score pointing`` can re-score any run file;
- a tqdm progress bar on stderr.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .dataset import BenchItem, DatasetError
from .scoring import score_item, summarize
from .steer import STEER_MODES, apply_steer

__all__ = ["RUN_RECORD_VERSION", "RunOptions", "run_pointing", "read_run_answers", "answers_to_scores",
           "aggregate_runs"]

log = logging.getLogger(__name__)
RUN_RECORD_VERSION = 1


@dataclass(frozen=True)
class RunOptions:
    """Options of a run (see module docstring). ``runs`` >= 1, ``concurrency`` >= 1."""

    runs: int = 3
    concurrency: int = 4
    retries: int = 2
    backoff_s: float = 0.5
    steer_mode: str = "describe"
    progress: bool = True

    def __post_init__(self) -> None:
        if self.runs < 1 or self.concurrency < 1 or self.retries < 0 or self.backoff_s < 0:
            raise ValueError("need runs >= 1, concurrency >= 1, retries >= 0, backoff_s >= 0")
        if self.steer_mode not in STEER_MODES:
            raise ValueError(f"steer mode must be one of {', '.join(STEER_MODES)}")


def _answer_dict(item: BenchItem, run: int, ans: Any, attempts: int) -> dict:
    pts = np.asarray(getattr(ans, "points_px", np.zeros((0, 2))), dtype=float).reshape(-1, 2)
    return {"id": item.id, "run": run, "raw_text": getattr(ans, "raw_text", "") or "",
            "points_px": pts.tolist(), "parse_error": getattr(ans, "parse_error", None),
            "error": getattr(ans, "error", None), "latency_s": getattr(ans, "latency_s", None),
            "attempts": attempts + int(getattr(ans, "attempts", 0) or 0),
            "point_format": getattr(ans, "point_format", ""), "prompt_style": getattr(ans, "prompt_style", "")}


def read_run_answers(path: str | Path) -> dict[str, dict]:
    """Answers of one run file by item id (a later line wins; a torn last line is ignored)."""
    out: dict[str, dict] = {}
    p = Path(path)
    if not p.exists():
        return out
    for line in p.read_text(encoding="utf-8").splitlines():
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a crash: that item is asked again
        if isinstance(d, dict) and "id" in d:
            out[str(d["id"])] = d
    return out


class _ImageCache:
    """Decoded (and steered) images, least recently used first out.

    Tasks are queued item by item (all runs of an item together), so a small cache serves every
    run of an item while the whole dataset never sits in memory (982 photos would be gigabytes).
    """

    def __init__(self, steer_mode: str, max_items: int):
        self.steer_mode = steer_mode
        self.max_items = max_items
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
        return apply_steer(rgb, item.query, item.reference_points_px, self.steer_mode)


async def _ask(agent: Any, item: BenchItem, run: int, images: _ImageCache, opts: RunOptions,
               sem: asyncio.Semaphore) -> dict:
    async with sem:
        try:
            rgb, instruction = await images.get(item)
        except DatasetError as e:
            return {"id": item.id, "run": run, "raw_text": "", "points_px": [], "parse_error": None,
                    "error": f"dataset: {e}", "latency_s": None, "attempts": 0}
        ans, extra = None, 0
        for attempt in range(opts.retries + 1):
            ans = await agent.point(rgb, instruction)  # Agent.point never raises
            if not getattr(ans, "error", None) or attempt == opts.retries:
                break
            extra += 1
            await asyncio.sleep(opts.backoff_s * (2 ** attempt))
        return _answer_dict(item, run, ans, extra)


async def _run_async(items: Sequence[BenchItem], agent: Any, out_dir: Path, opts: RunOptions) -> dict:
    from tqdm import tqdm

    sem = asyncio.Semaphore(opts.concurrency)
    images = _ImageCache(opts.steer_mode, max_items=2 * opts.concurrency + 4)
    done = {run: read_run_answers(out_dir / f"run_{run}.jsonl") for run in range(1, opts.runs + 1)}
    todo, cached = [], 0
    for it in items:  # item-major: the runs of one item share its decoded image
        for run in range(1, opts.runs + 1):
            if it.id in done[run] and not done[run][it.id].get("error"):
                cached += 1
            else:
                todo.append((it, run))
    files = {run: (out_dir / f"run_{run}.jsonl").open("a", encoding="utf-8") for run in range(1, opts.runs + 1)}
    errors = 0
    try:
        with tqdm(total=len(todo), desc=f"{getattr(agent, 'name', 'agent')}", unit="item", disable=not opts.progress,
                  leave=False) as bar:
            # tasks created in queue order start (and take the semaphore) in that order
            tasks = [asyncio.ensure_future(_ask(agent, it, run, images, opts, sem)) for it, run in todo]
            for fut in asyncio.as_completed(tasks):
                rec = await fut
                errors += bool(rec.get("error"))
                f = files[rec["run"]]
                f.write(json.dumps(rec) + "\n")
                f.flush()
                bar.update(1)
    finally:
        for f in files.values():
            f.close()
        if hasattr(agent, "aclose"):
            await agent.aclose()  # its HTTP clients belong to this event loop
    return {"asked": len(todo), "cached": cached, "errors": errors}


def answers_to_scores(items: Sequence[BenchItem], answers: dict[str, dict]) -> list:
    """Score one run's answers (``read_run_answers``) against the items."""
    scores = []
    for it in items:
        a = answers.get(it.id)
        if a is None:
            scores.append(score_item(it, None, failure="no_prediction"))
        elif a.get("error"):
            scores.append(score_item(it, None, failure="model_error", detail=a["error"]))
        elif not a.get("points_px"):
            scores.append(score_item(it, None, failure="unparseable" if a.get("parse_error") else "no_points",
                                     detail=a.get("parse_error")))
        else:
            scores.append(score_item(it, a["points_px"]))
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
        vals = np.array([v for v in vals if v is not None], dtype=float)
        if len(vals):
            out[name] = {"mean": float(vals.mean()), "std": float(vals.std(ddof=1)) if len(vals) > 1 else 0.0,
                         "runs": int(len(vals))}
    return out


def run_pointing(items: Sequence[BenchItem], agent: Any, out_dir: str | Path, *, options: RunOptions | None = None,
                 record: dict | None = None) -> dict:
    """Run ``agent`` over ``items`` ``options.runs`` times, score every run, aggregate.

    Args:
        items: the dataset.
        agent: an object with ``async point(image_rgb, instruction) -> AgentAnswer``.
        out_dir: run folder (created); holds ``run.json``, ``run_<k>.jsonl``, ``results.json``.
        options: ``RunOptions``.
        record: extra fields for ``run.json`` (model config, dataset path, ...).

    Returns: ``{"model", "runs": [summary per run], "aggregate": aggregate_runs(...), "asked", "cached",
    "errors", "out_dir"}`` (also written to ``results.json``).
    Raises: ValueError for a run folder holding another model's or setting's answers.
    """
    opts = options or RunOptions()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"version": RUN_RECORD_VERSION, "model": getattr(agent, "name", "agent"),
            "point_format": getattr(agent, "point_format", None), "prompt_style": getattr(agent, "prompt_style", None),
            "temperature": getattr(agent, "temperature", None), "steer_mode": opts.steer_mode,
            "items": len(items), **(record or {})}
    meta_path = out / "run.json"
    if meta_path.exists():
        old = json.loads(meta_path.read_text(encoding="utf-8"))
        keys = ("model", "point_format", "prompt_style", "steer_mode")
        if any(old.get(k) != meta.get(k) for k in keys):
            raise ValueError(f"{out} holds answers of another setting ({ {k: old.get(k) for k in keys} }); "
                             "use another --out")
    meta["updated_unix_s"] = time.time()
    meta_path.write_text(json.dumps(meta, indent=2), encoding="utf-8")
    stats = asyncio.run(_run_async(items, agent, out, opts)) if items else {"asked": 0, "cached": 0, "errors": 0}
    summaries, per_item = [], []
    for run in range(1, opts.runs + 1):
        scores = answers_to_scores(items, read_run_answers(out / f"run_{run}.jsonl"))
        summaries.append(summarize(scores))
        per_item.append([s.to_dict() for s in scores])
    result = {"model": meta["model"], "prompt_style": meta["prompt_style"], "steer_mode": opts.steer_mode,
              "runs": summaries, "aggregate": aggregate_runs(summaries), **stats, "out_dir": str(out)}
    (out / "results.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    (out / "items.json").write_text(json.dumps(per_item), encoding="utf-8")
    return result
