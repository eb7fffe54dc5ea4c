"""``generate_dataset``: scenes on disk to a PinpointQA dataset folder.

Pipeline (sec. 3.2): read scenes -> per scene, targets and their intermediate representations ->
TPV / NRI / FSD / SSP records -> App. A.4 quality checks (failures excluded and counted) -> a
scene-level 6:2:2 split stratified by source and task -> files:

- ``train.jsonl``, ``val.jsonl``, ``test.jsonl``: the answer keys, records with the released field names
  plus ``split`` (what ``pointlab score pinpoint --gt`` reads);
- ``train_questions.jsonl``, ``val_questions.jsonl``, ``test_questions.jsonl``: the same records without
  the answers (``QUESTION_FIELDS`` only), the files to hand to a model runner;
- ``representations.jsonl``: the intermediate spatial representation of every target (audit trail);
- ``summary.json``: counts per task, source and split, dropped items per reason, and the settings.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from ..records import question_view, replaced_on_success
from ..scenes import Scene, SceneFormatError, load_scenes
from .generate import GenerationStats, generate_scene
from .quality import RELEASED_FIELDS, check_record
from .split import SPLITS, split_scenes

__all__ = ["generate_dataset", "generate_records", "QUESTION_FIELDS"]

#: what a model runner is given of a record (``records.question_view``): the released fields but the
#: answer and its target label, plus the split
QUESTION_FIELDS = tuple(f for f in RELEASED_FIELDS if f not in ("answer", "target")) + ("split",)

log = logging.getLogger(__name__)


def generate_records(scenes: list[Scene], seed: int = 0) -> tuple[list[dict], list[dict], dict]:
    """Generate and quality-check the records of ``scenes``.

    Returns ``(records, representations, stats)``; ``stats`` holds ``scenes``,
    ``scenes_with_targets``, ``targets``, ``dropped`` (generation) and ``quality_failures``.
    """
    stats = GenerationStats()
    records, reps = [], []
    quality: Counter = Counter()
    seen: set[tuple[str, str]] = set()
    for scene in scenes:
        key = (scene.scene_id, scene.variant)
        if key in seen:  # the same scene given twice would repeat question ids
            log.warning(
                "scene %s%s given more than once; using the first",
                scene.scene_id,
                f" ({scene.variant})" if scene.variant else "",
            )
            stats.drop("duplicate_scene")
            continue
        seen.add(key)
        recs, r = generate_scene(scene, seed=seed, stats=stats)
        reps.extend(r)
        for rec in recs:
            problems = check_record(rec)
            if problems:
                quality.update(problems)
                log.info("excluded %s: %s", rec["id"], problems)
                continue
            records.append(rec)
    return (
        records,
        reps,
        {
            "scenes": stats.scenes,
            "scenes_with_targets": stats.scenes_with_targets,
            "targets": stats.targets,
            "dropped": dict(stats.dropped),
            "quality_failures": dict(quality),
        },
    )


def _write(tmp: Path, text: str) -> None:
    tmp.write_text(text, encoding="utf-8")


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def generate_dataset(
    scene_paths: Sequence[Path | str], out_dir: Path | str, seed: int = 0, sources: set[str] | None = None
) -> dict:
    """Generate a dataset folder (see module docstring) and return its summary.

    Args:
        scene_paths: anything ``benchmark.scenes.load_scenes`` reads.
        out_dir: created if needed; existing files of the same names are replaced, all at the end
            (each written under a temporary name, then renamed): a failed run leaves them as they were.
        seed: seeds negatives, distractors, answer letters and the split.
        sources: keep only scenes of these source datasets (None: all).
    Raises:
        SceneFormatError: a scene path is missing or malformed, no scene was found, or a source in
            ``sources`` matches no scene (nothing is written then).
    """
    t0 = time.perf_counter()
    scenes: list[Scene] = []
    for p in scene_paths:
        scenes.extend(load_scenes(p))
    if sources:
        present = {s.source_dataset for s in scenes}
        unknown = sorted(set(sources) - present)
        if unknown:  # refused before anything is written: a typo must not replace the splits with nothing
            raise SceneFormatError(
                f"--sources {', '.join(unknown)}: no scene of that source; the scenes have "
                f"{', '.join(sorted(present)) or 'none'}"
            )
        scenes = [s for s in scenes if s.source_dataset in sources]
    if not scenes:
        raise SceneFormatError(f"no scenes in {', '.join(str(p) for p in scene_paths)}")
    records, reps, stats = generate_records(scenes, seed)
    assignment = split_scenes(records, seed=seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by_split: dict[str, list[dict]] = {k: [] for k in SPLITS}
    for rec in records:
        rec["split"] = assignment[rec["scene_id"]]
        by_split[rec["split"]].append(rec)
    # every file is written under a temporary name first and renamed into place at the end, so a
    # run that fails leaves the previous outputs as they were
    staged = [(out / f"{k}.jsonl", rows) for k, rows in by_split.items()]
    staged += [
        (out / f"{k}_questions.jsonl", [question_view(r, QUESTION_FIELDS) for r in rows])
        for k, rows in by_split.items()
    ]
    staged.append((out / "representations.jsonl", reps))
    counts_task = Counter(r["task"] for r in records)
    counts_source_task: dict[str, dict] = {}
    for r in records:
        counts_source_task.setdefault(r["source_dataset"], Counter())[r["task"]] += 1
    counts_split_task: dict[str, dict] = {k: dict(Counter(r["task"] for r in v)) for k, v in by_split.items()}
    summary = {
        "n_records": len(records),
        "per_task": {t: counts_task.get(t, 0) for t in ("TPV", "NRI", "FSD", "SSP")},
        "per_source_task": {s: dict(c) for s, c in sorted(counts_source_task.items())},
        "per_split_task": counts_split_task,
        "scenes_per_split": dict(Counter(assignment.values())),
        "tpv_answers": dict(Counter(r["answer"] for r in records if r["task"] == "TPV")),
        "nri_answer_letters": dict(sorted(Counter(r["answer"] for r in records if r["task"] == "NRI").items())),
        **stats,
        "seed": seed,
        "sources": sorted(sources) if sources else None,
        "scene_paths": [str(p) for p in scene_paths],
        "out_dir": str(out),
        "elapsed_s": time.perf_counter() - t0,
    }
    files = [(path, _jsonl(rows)) for path, rows in staged]
    files.append((out / "summary.json", json.dumps(summary, indent=2) + "\n"))
    with ExitStack() as stack:  # every file written before any is renamed into place
        for path, text in files:
            _write(stack.enter_context(replaced_on_success(path)), text)
    return summary
