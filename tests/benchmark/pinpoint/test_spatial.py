"""Spatial representation pieces: the pruned KD-tree shortest distance, and the relation rules."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import cKDTree

from pointlab.benchmark.pinpoint.spatial import Neighbour, SceneIndex, relation_of
from pointlab.benchmark.scenes import Scene, SceneObject


def test_shortest_equals_a_plain_kdtree_query():
    rng = np.random.default_rng(0)
    for trial in range(20):
        a = rng.normal(size=(int(rng.integers(5, 3000)), 3)) * rng.uniform(0.01, 1.0) + rng.uniform(-1, 1, 3)
        b = rng.normal(size=(int(rng.integers(5, 3000)), 3)) * rng.uniform(0.01, 1.0) + rng.uniform(-1, 1, 3)
        scene = Scene(
            "s", "scannet", [SceneObject.from_vertices("a", "cup", a), SceneObject.from_vertices("b", "table", b)]
        )
        expected = cKDTree(b).query(a, k=1)[0].min()
        assert SceneIndex(scene).shortest(0, 1) == pytest.approx(expected, abs=1e-12)


def _n(level, *, overlap=False, contact=False, shortest=0.1, label="box"):
    obj = SceneObject.from_vertices("x", label, np.zeros((1, 3)))
    return Neighbour(
        obj=obj,
        centroid_dist_m=0.5,
        shortest_m=shortest,
        xy_sep_m=0.1,
        z_offset_m=0.0,
        level=level,
        contact=contact,
        xy_overlap=overlap,
        support_gap_m=None,
    )


@pytest.mark.parametrize(
    "n,support,shares,expected",
    [
        (_n("above", overlap=True, contact=True), True, False, "on"),
        (_n("same", contact=True, label="wall"), True, False, "attached_to"),
        (_n("same", contact=True, label="whiteboard"), False, False, "attached_to"),
        (_n("above", overlap=True, contact=True), False, False, "on"),
        (_n("above", overlap=True, shortest=0.2), False, False, "above"),
        (_n("above", overlap=False), False, False, "side_above"),
        (_n("below", overlap=True, shortest=0.03), False, False, "under"),
        (_n("below", overlap=True, shortest=0.30), False, False, "under"),
        (_n("below", overlap=True, shortest=0.31), False, False, "below"),
        (_n("below", overlap=False), False, False, "side_below"),
        (_n("same", shortest=0.10), False, False, "next_to"),
        (_n("same", shortest=0.15), False, False, "near"),
        (_n("same", shortest=0.15), False, True, "next_to"),  # sharing the support doubles the next_to range
        (_n("same", shortest=0.21), False, True, "near"),
    ],
)
def test_relation_rules(n, support, shares, expected):
    assert relation_of(n, is_support=support, shares_support=shares) == expected
