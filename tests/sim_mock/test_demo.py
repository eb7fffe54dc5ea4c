"""The demo script end to end on the sim (camera -> oracle -> deprojection -> Arm -> judge), and the
scene's difficulty for a noisy pointer."""

from __future__ import annotations

import json

import numpy as np

from pointlab.perception.deproject import deproject_pixel
import pytest

from pointlab.robot.arm import Arm, MotionConfig
from pointlab.robot.errors import RobotError
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
        for key in ("object", "container", "on", "near"):
            if key in exp:
                assert world.scene.resolve(exp[key]) is not None, exp[key]
    path = write_demo_script(tmp_path / "demo.jsonl")
    lines = path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == demo_script()


def _run_demo(noise_px: float, seed: int = 0) -> list[tuple[bool, str | None]]:
    """The demo script through the real pipeline (sim camera, oracle on the JPEG'd image, pixel
    noise as the sim-noisy agent adds it, deprojection, a calibration 3 mm / 0.2 deg off, Arm
    pick/place on the MuJoCo arm, the physics' judgement)."""
    import cv2

    world = SimWorld()
    cam = SimCamera(world=world, fps=0, seed=7).connect()
    oracle = SceneOracle(world)
    cal = world.calibration(translation_noise_m=0.003, rotation_noise_deg=0.2, seed=1)  # a real-ish calibration
    arm = Arm(SimArmDriver(world=world, time_scale=0.0), motion=MotionConfig(grip_settle_s=0.0))
    arm.connect()
    rng = np.random.default_rng(seed)
    outcomes: list[tuple[bool, str | None]] = []
    for item in DEMO_SCRIPT:
        frame = cam.read()
        decoded = cv2.imdecode(cv2.imencode(".jpg", frame.color[:, :, ::-1])[1], cv2.IMREAD_COLOR)
        assert decoded is not None
        sent = decoded[:, :, ::-1]
        pts = oracle.points(item["instruction"], sent)
        if not pts:
            outcomes.append((False, "no point"))
            continue
        u, v = np.asarray(pts[0]) + rng.normal(0.0, noise_px, size=2)
        d = deproject_pixel(frame, u, v)
        if not d.valid or d.point_m is None:
            outcomes.append((False, d.reason))
            continue
        try:
            (arm.pick if item["expected"]["action"] == "pick" else arm.place)(cal.camera_to_base(d.point_m))
        except RobotError as e:
            outcomes.append((False, str(e)))
            arm.reset()
            continue
        outcomes.append(world.judge(item["expected"]))
    world.close()
    return outcomes


@pytest.mark.slow
def test_oracle_runs_the_demo_script_by_physics():
    outcomes = _run_demo(0.0)
    assert sum(ok for ok, _ in outcomes) >= len(DEMO_SCRIPT) - 1, outcomes


@pytest.mark.slow
def test_a_noisy_pointer_fails_clearly_more_often():
    """Pixel noise of sigma 28 px (the sim-noisy agent): about 3 cm on the table, so most picks miss
    the 3-4.5 cm objects or knock them, and the places after a failed pick fail too."""
    from pointlab.sim_mock.model_server import SIM_NOISE_PX

    runs = [_run_demo(SIM_NOISE_PX, seed) for seed in (0, 1)]
    ok = [sum(ok for ok, _ in r) for r in runs]
    assert max(ok) <= len(DEMO_SCRIPT) // 2, ok
    # and it is the pointing that fails, not the pipeline: the same sim runs the same script, some
    # trials still succeed, and most failures are the physics judge's (an empty gripper, an object
    # too far from where it should be), not refusals before the arm moved
    assert min(ok) >= 1, ok
    judged = [
        reason
        for r in runs
        for good, reason in r
        if not good
        and (
            "not holding" in str(reason)
            or " cm " in str(reason)
            or "not on top" in str(reason)
            or "not in" in str(reason)
            or "next to" in str(reason)
        )
    ]
    failures = sum(len(r) - k for r, k in zip(runs, ok))
    assert len(judged) >= failures - 2, [reason for r in runs for good, reason in r if not good]
