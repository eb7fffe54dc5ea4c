"""``pointlab perf sim`` runs end to end (structure only: timings are measured by the command,
never asserted by tests)."""

import json

import pytest
from typer.testing import CliRunner

from pointlab.bridge.cli import app
from pointlab.sim_mock.perf import percentiles_ms


def test_percentiles_ms_by_hand():
    p = percentiles_ms([0.001, 0.002, 0.003, 0.004, 0.005])
    assert (p["p50"], p["min"], p["max"], p["n"]) == (3.0, 1.0, 5.0, 5)
    assert p["p90"] == 4.6  # linear interpolation: 4 + 0.6 * (5 - 4) ms


@pytest.mark.slow
def test_cli_perf_sim_short():
    r = CliRunner().invoke(app, ["perf", "sim", "--frames", "3", "--ik-calls", "2"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    cam = out["camera"]
    assert cam["size"] == [640, 480] and cam["baseline_full_render"]["frame_ms"]["n"] == 3
    for case in ("static", "arm_moving_no_depth", "masks"):
        assert cam[case]["frame_ms"]["n"] == 3 and cam[case]["speedup_vs_baseline_p50"] > 0
        assert isinstance(cam[case]["p90_under_30fps_budget"], bool)
    assert out["ik"]["seeded_ms"]["n"] == 2
    assert out["physics"]["placed_in_bowl"] is True and out["physics"]["real_time_factor"] > 0
    assert CliRunner().invoke(app, ["perf", "sim", "--frames", "0"]).exit_code == 2
