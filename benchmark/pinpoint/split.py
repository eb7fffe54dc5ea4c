"""Scene-level 6:2:2 train / val / test split, stratified by source dataset and task (sec. 4.1).

All questions of a scene go to one split (no leakage across splits). Within each source dataset,
scenes are placed one at a time, largest first (ties in a seeded random order), into the split
where it least increases sum over (split, task) of (placed[split][task] / total[task] - ratio[split])^2
(the usual greedy for multi-label stratification).
This keeps each source's per-task proportions close to 6:2:2 (a greedy balance, not an exact
partition: with few scenes the ratios are only approximate).
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

__all__ = ["SPLITS", "SPLIT_RATIOS", "split_scenes"]

SPLITS = ("train", "val", "test")
SPLIT_RATIOS = {"train": 0.6, "val": 0.2, "test": 0.2}


def split_scenes(records: list[dict], seed: int = 0, ratios: dict[str, float] | None = None) -> dict[str, str]:
    """``{scene_id: split}`` for the scenes of ``records`` (each with ``scene_id``,
    ``source_dataset`` and ``task``).

    Raises:
        ValueError: ratios that are not positive or do not name exactly train/val/test.
    """
    ratios = dict(SPLIT_RATIOS if ratios is None else ratios)
    if set(ratios) != set(SPLITS) or any(v <= 0 for v in ratios.values()):
        raise ValueError(f"ratios must give train, val and test positive shares, got {ratios}")
    total_ratio = sum(ratios.values())
    ratios = {k: v / total_ratio for k, v in ratios.items()}
    per_scene: dict[str, Counter] = defaultdict(Counter)
    source: dict[str, str] = {}
    for r in records:
        per_scene[r["scene_id"]][r["task"]] += 1
        source[r["scene_id"]] = r["source_dataset"]
    rng = np.random.default_rng(seed)
    out: dict[str, str] = {}
    for src in sorted(set(source.values())):
        scenes = sorted(s for s in per_scene if source[s] == src)
        order = rng.permutation(len(scenes))
        scenes = [scenes[k] for k in order]
        scenes.sort(key=lambda s: -sum(per_scene[s].values()))  # stable: ties keep the random order
        totals: Counter[str] = Counter()
        for s in scenes:
            totals.update(per_scene[s])
        placed: dict[str, Counter[str]] = {k: Counter() for k in SPLITS}
        for s in scenes:

            def cost_if(k: str) -> float:
                # squared distance of every (split, task) share from its target, with s placed in k;
                # only the rows of k change, so compare the change of k's row
                before = sum((placed[k][t] / totals[t] - ratios[k]) ** 2 for t in per_scene[s])
                after = sum(((placed[k][t] + n) / totals[t] - ratios[k]) ** 2 for t, n in per_scene[s].items())
                return after - before

            best = min(SPLITS, key=cost_if)
            out[s] = best
            placed[best].update(per_scene[s])
    return out
