"""``pointlab perf pinpoint`` runs end to end on a small scene (timings are reported, never asserted)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pointlab.benchmark.pinpoint.perf import synthetic_scene
from pointlab.bridge.cli import app


def test_synthetic_scene_has_the_requested_size():
    s = synthetic_scene(n_objects=45, n_vertices=90_000, seed=1)
    assert len(s.objects) == 45
    assert abs(sum(len(o.vertices) for o in s.objects) - 90_000) < 0.05 * 90_000


@pytest.mark.slow
def test_perf_command_small():
    r = CliRunner().invoke(
        app, ["perf", "pinpoint", "--objects", "30", "--vertices", "30000", "--repeat", "1", "--ssp-answers", "60"]
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["generation"]["scene"]["objects"] == 30 and doc["ssp_scoring"]["answers"] == 60
    assert doc["generation"]["pair_distance"]["ratio_naive_subsample_over_kdtree"] > 0
    r = CliRunner().invoke(app, ["perf", "pinpoint", "--objects", "3"])
    assert r.exit_code == 2
