"""The demo script end to end on the sim (camera -> oracle -> deprojection -> Arm -> judge), and the
scene's difficulty for a noisy pointer."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pointlab.perception.deproject import deproject_pixel
from pointlab.robot.arm import Arm, MotionConfig
from pointlab.sim_mock.arm import SimArmDriver
from pointlab.sim_mock.camera import SimCamera
from pointlab.sim_mock.demo import DEMO_SCRIPT, demo_script, write_demo_script
from pointlab.sim_mock.oracle import SceneOracle
from pointlab.sim_mock.world import SimWorld


def test_script_shape(tmp_path):
    assert len(DEMO_SCRIPT) >= 10
    actions = [item["expected"]["action"] for item in DEMO_SCRIPT]
    assert actions == ["pick", "place"] * (len(DEMO_SCRIPT) // 2)
    world = SimWorld()
    for item in DEMO_SCRIPT:
        exp = item["expected"]
        for key in ("object", "container", "near"):
            if key in exp:
                assert world.scene.resolve(exp[key]) is not None, exp[key]
    path = write_demo_script(tmp_path / "demo.jsonl")
    lines = path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == demo_script()


@pytest.mark.slow
def test_oracle_runs_the_demo_script_through_the_real_pipeline():
    world = SimWorld()
    cam = SimCamera(world=world, fps=0, seed=7).connect()
    oracle = SceneOracle(world)
    cal = world.calibration(translation_noise_m=0.003, rotation_noise_deg=0.2, seed=1)  # a real-ish calibration
    arm = Arm(SimArmDriver(world=world, time_scale=0.0), motion=MotionConfig(grip_settle_s=0.0))
    arm.connect()
    outcomes = []
    for item in DEMO_SCRIPT:
        frame = cam.read()
        [(u, v)] = oracle.points(item["instruction"], frame.width, frame.height)
        d = deproject_pixel(frame, u, v)
        assert d.valid, (item, d.reason)
        target = cal.camera_to_base(d.point_m)
        (arm.pick if item["expected"]["action"] == "pick" else arm.place)(target)
        outcomes.append(world.judge(item["expected"]))
    assert sum(ok for ok, _ in outcomes) >= len(DEMO_SCRIPT) - 1, outcomes


def test_a_25_px_noisy_pointer_misses_often():
    """Pixel noise of sigma 25 px (the sim-noisy agent) should fail most picks: the point, taken
    through depth and the calibration, must land within the grasp tolerance of the object."""
    world = SimWorld()
    frame = SimCamera(world=world, fps=0, seed=3).connect().read()
    oracle = SceneOracle(world)
    cal = world.calibration()
    rng = np.random.default_rng(0)
    tries = hits = 0
    for o in world.scene.objects:
        if o.is_container:
            continue
        [(u, v)] = oracle.points(f"pick up the {o.name}", 640, 480)
        for du, dv in rng.normal(0.0, 25.0, size=(40, 2)):
            tries += 1
            d = deproject_pixel(frame, u + du, v + dv)
            if not d.valid:
                continue
            p = cal.camera_to_base(d.point_m)
            tcp = p - [0.0, 0.0, world.tool.grasp_depth_m]
            hits += world.grasp_candidate(tcp) == o.name
    rate = hits / tries
    assert 0.05 < rate < 0.6, rate
