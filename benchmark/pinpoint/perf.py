"""``pointlab perf pinpoint``: generation time on a large synthetic mesh scene and SSP scoring throughput.

Measured, never asserted in tests. Each figure has percentiles over repeats (or items) and a ratio
against an in-run baseline measured on the same machine in the same run:

- generation: wall time of ``generate_scene`` on a synthetic mesh scene (default 300 objects,
  1,000,000 vertices: tables with small objects on them, chairs, a floor), ``repeat`` times with
  cold caches; per target-neighbour pair, the KD-tree shortest distance (``SceneIndex.shortest``)
  against the baseline of a naive all-pairs distance matrix on a subsample of at most
  ``naive_points`` points per object -- the ratio, and the naive time extrapolated to the full
  point counts (all pairs scale with n_a * n_b);
- SSP scoring: per-answer time of ``score_ssp`` over 10,000 answers of mixed shapes (exact,
  fenced, JSON in prose, wrong relations / distances, unparseable); baseline: ``json.loads`` of
  the same texts (the least any JSON scorer does).
"""

from __future__ import annotations

import json
import time

import numpy as np
from pointlab.benchmark.perfstats import summarize

from ..scenes.model import Scene, SceneObject
from .generate import generate_scene
from .spatial import SceneIndex, build_representation, valid_targets
from .ssp import score_ssp
from .vocabulary import TARGET_VARIANTS

__all__ = ["synthetic_scene", "perf_pinpoint"]


def _pct(xs) -> dict:
    return summarize(xs, ("p50", "p90", "p99", "min", "max", "mean", "n"))


def _box_points(rng: np.random.Generator, lo: np.ndarray, hi: np.ndarray, n: int) -> np.ndarray:
    """``n`` random points on the surface of the axis-aligned box [lo, hi], faces by area."""
    ext = hi - lo
    areas = np.array(
        [ext[1] * ext[2], ext[1] * ext[2], ext[0] * ext[2], ext[0] * ext[2], ext[0] * ext[1], ext[0] * ext[1]]
    )
    face = rng.choice(6, size=n, p=areas / areas.sum())
    pts = lo + rng.random((n, 3)) * ext
    axis = face // 2
    side = face % 2
    pts[np.arange(n), axis] = np.where(side == 1, hi[axis], lo[axis])
    return pts


def synthetic_scene(n_objects: int = 300, n_vertices: int = 1_000_000, seed: int = 0) -> Scene:
    """A mesh scene of ``n_objects`` objects and about ``n_vertices`` vertices: a floor, tables on a
    3 m grid (each with small objects on its top, one vocabulary label each, so every small object
    is a valid target) and chairs beside them. Half the vertices go to the floor and tables."""
    rng = np.random.default_rng(seed)
    n_tables = max(1, n_objects // 15)
    n_chairs = n_tables
    n_small = n_objects - 1 - n_tables - n_chairs
    big_share = n_vertices // 2 // (n_tables + 1)
    small_share = max(50, (n_vertices - big_share * (n_tables + 1)) // max(1, n_small + n_chairs))
    side = int(np.ceil(np.sqrt(n_tables)))
    objects = [
        SceneObject.from_vertices(
            "floor",
            "floor",
            _box_points(rng, np.array([-1.0, -1.0, -0.01]), np.array([3.0 * side, 3.0 * side, 0.0]), big_share),
        )
    ]
    labels = [v for v in TARGET_VARIANTS if v not in {"phone", "smartphone", "mobile phone"}]
    k_small = 0
    for t in range(n_tables):
        cx, cy = 3.0 * (t % side), 3.0 * (t // side)
        lo, hi = np.array([cx - 0.8, cy - 0.5, 0.0]), np.array([cx + 0.8, cy + 0.5, 0.75])
        objects.append(SceneObject.from_vertices(f"table{t}", "table", _box_points(rng, lo, hi, big_share)))
        objects.append(
            SceneObject.from_vertices(
                f"chair{t}",
                "chair",
                _box_points(
                    rng, np.array([cx - 0.25, cy - 1.1, 0.0]), np.array([cx + 0.25, cy - 0.6, 0.9]), small_share
                ),
            )
        )
        per_table = n_small // n_tables + (1 if t < n_small % n_tables else 0)
        for _ in range(per_table):
            size = rng.uniform(0.04, 0.15, 3)
            c = np.array([cx + rng.uniform(-0.7, 0.7), cy + rng.uniform(-0.4, 0.4)])
            lo = np.array([c[0] - size[0] / 2, c[1] - size[1] / 2, 0.75])
            label = labels[k_small % len(labels)] if k_small < len(labels) else f"item {k_small}"
            objects.append(
                SceneObject.from_vertices(f"s{k_small}", label, _box_points(rng, lo, lo + size, small_share))
            )
            k_small += 1
    return Scene(scene_id="perf0000", source_dataset="scannetpp", objects=objects[:n_objects])


def _naive_min(a: np.ndarray, b: np.ndarray, chunk: int = 256) -> float:
    best = np.inf
    for s in range(0, len(a), chunk):
        d = np.sqrt(((a[s : s + chunk, None, :] - b[None, :, :]) ** 2).sum(axis=2)).min()
        best = min(best, float(d))
    return best


def _ssp_cases(n: int, rng: np.random.Generator) -> list[tuple[str, str]]:
    gt = {
        "target": "mouse",
        "support_surface": "table",
        "references": [
            {"object": "keyboard", "relation": "next_to", "distance_cm": 3.0},
            {"object": "monitor", "relation": "under", "distance_cm": 24.5},
        ],
    }
    gt_text = json.dumps(gt)
    out = []
    for k in range(n):
        kind = k % 6
        p = json.loads(gt_text)
        if kind == 1:
            p["references"][0]["relation"] = "near"
        elif kind == 2:
            p["references"][1]["distance_cm"] = float(rng.uniform(0, 60))
        elif kind == 3:
            p["support_surface"] = "Desk"
            p["references"].reverse()
        text = json.dumps(p)
        if kind == 4:
            text = "Here is the answer:\n```json\n" + text + "\n```"
        elif kind == 5:
            text = (
                "The mouse is on the table, right next to the keyboard."
                if k % 12 == 5
                else "I think the structure is " + text + " and that is all."
            )
        out.append((gt_text, text))
    return out


def perf_pinpoint(
    *,
    n_objects: int = 300,
    n_vertices: int = 1_000_000,
    repeat: int = 3,
    ssp_answers: int = 10_000,
    naive_points: int = 1000,
    seed: int = 0,
) -> dict:
    """Run both measurements; returns the JSON document printed by ``pointlab perf pinpoint``."""
    rng = np.random.default_rng(seed)
    scene = synthetic_scene(n_objects, n_vertices, seed)
    n_verts = int(sum(len(o.vertices) for o in scene.objects if o.vertices is not None))  # (all have them)
    gen_s, n_records = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        recs, _ = generate_scene(scene, seed=seed)
        gen_s.append(time.perf_counter() - t0)
        n_records = len(recs)

    # per-pair distances: the KD-tree path against naive all-pairs on a subsample
    idx = SceneIndex(scene)
    pairs = []
    for i in valid_targets(scene):
        d = np.linalg.norm(idx.centroids - scene.objects[i].centroid, axis=1)
        pairs += [(i, int(j)) for j in np.flatnonzero(d <= 1.0) if int(j) != i]
    pairs = pairs[:200]
    kd_s, naive_s, naive_full_est_s = [], [], []
    for i, j in pairs:
        idx.tree(i), idx.tree(j)  # trees are built once per object in generation too; time the queries
        t0 = time.perf_counter()
        idx.shortest(i, j)
        kd_s.append(time.perf_counter() - t0)
        a, b = idx.points(i), idx.points(j)
        sa = a[rng.choice(len(a), size=min(naive_points, len(a)), replace=False)]
        sb = b[rng.choice(len(b), size=min(naive_points, len(b)), replace=False)]
        t0 = time.perf_counter()
        _naive_min(sa, sb)
        dt = time.perf_counter() - t0
        naive_s.append(dt)
        naive_full_est_s.append(dt * (len(a) * len(b)) / (len(sa) * len(sb)))
    tree_build_s = []
    for k in range(min(20, len(scene.objects))):
        t0 = time.perf_counter()
        SceneIndex(scene).tree(k)
        tree_build_s.append(time.perf_counter() - t0)

    # SSP scoring throughput
    cases = _ssp_cases(ssp_answers, rng)
    score_s, parse_s = [], []
    for gt_text, text in cases:
        t0 = time.perf_counter()
        score_ssp(gt_text, text)
        score_s.append(time.perf_counter() - t0)
    for _, text in cases:
        t0 = time.perf_counter()
        try:
            json.loads(text)
        except ValueError:
            pass
        parse_s.append(time.perf_counter() - t0)
    reps = [build_representation(SceneIndex(scene), i) for i in valid_targets(scene)[:1]]
    return {
        "generation": {
            "scene": {
                "objects": len(scene.objects),
                "vertices": n_verts,
                "targets": len(valid_targets(scene)),
                "records": n_records,
                "example_target": reps[0].target.label if reps else None,
            },
            "wall_s": _pct(gen_s),
            "pair_distance": {
                "pairs": len(pairs),
                "kdtree_query_s": _pct(kd_s),
                "naive_subsample_s": _pct(naive_s),
                "naive_subsample_points": naive_points,
                "naive_full_estimate_s": _pct(naive_full_est_s),
                "ratio_naive_subsample_over_kdtree": float(np.mean(naive_s) / np.mean(kd_s)),
                "ratio_naive_full_estimate_over_kdtree": float(np.mean(naive_full_est_s) / np.mean(kd_s)),
            },
            "tree_build_s": _pct(tree_build_s),
        },
        "ssp_scoring": {
            "answers": len(cases),
            "per_answer_s": _pct(score_s),
            "answers_per_s": float(len(score_s) / sum(score_s)),
            "baseline_json_loads_per_answer_s": _pct(parse_s),
            "ratio_score_over_json_loads": float(np.mean(score_s) / np.mean(parse_s)),
        },
        "settings": {"repeat": repeat, "seed": seed},
    }
