"""``pointlab calibrate`` in sim: the sim arm holds a rendered ChArUco board in front of the sim camera
(``sim_mock.board_camera``); the recovered camera pose must match the sim world's truth. Plus the
inputs (board text, poses files), the refusals (unsafe pose, too few detections, degenerate or
inconsistent data) and the verification arithmetic on exact synthetic poses."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from typer.testing import CliRunner

from pointlab.bridge.cli import app
from pointlab.bridge.calibration.procedure import (
    CalibrateOptions,
    CalibrationFailedError,
    CalibrationInputError,
    PoseCapture,
    camera_spec_for_calibration,
    check_poses,
    default_poses,
    hover_check,
    load_poses,
    parse_board_spec,
    run_calibration,
    solve_captures,
    tcp_transform,
    verify_calibration,
)
from pointlab.perception.extrinsics import RigidTransform, load_calibration
from pointlab.perception.handeye import CharucoBoardSpec
from pointlab.robot.arm import Arm, MotionConfig, TcpPose
from pointlab.robot.errors import UnsafeTargetError
from pointlab.robot.workspace import Workspace
from pointlab.sim_mock.arm import SimArmDriver
from pointlab.sim_mock.board_camera import BoardCamera
from pointlab.sim_mock.world import SimWorld, default_world

# slow tier: every test renders ChArUco views and solves hand-eye over a pose set
pytestmark = [pytest.mark.slow]

FAST = CalibrateOptions(settle_s=0.0, flush_frames=1)


def rot_err_deg(a: RigidTransform, b: RigidTransform) -> float:
    return float(np.degrees(Rotation.from_matrix(a.rotation.T @ b.rotation).magnitude()))


def trans_err_mm(a: RigidTransform, b: RigidTransform) -> float:
    return float(np.linalg.norm(a.translation_m - b.translation_m) * 1000)


def sim_rig(mount="hand", **cam_kw):
    world = SimWorld()
    arm = Arm(SimArmDriver(world=world, time_scale=0.01), motion=MotionConfig(grip_settle_s=0.0))
    cam = BoardCamera(world=world, mount=mount, fps=0, **cam_kw)
    return world, arm, cam


# -- the sim requirement -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def eye_to_hand_run(tmp_path_factory):
    # realistic pixel noise: intensity sigma 3 grey levels and a 0.7 px blur on the board
    world, arm, cam = sim_rig(noise_sigma=3.0, blur_sigma_px=0.7, seed=7)
    out = tmp_path_factory.mktemp("cal") / "cal.json"
    poses, verify_poses = default_poses("eye_to_hand")
    with arm, cam:
        run = run_calibration(arm, cam, poses, replace(FAST, verify=True), out, verify_poses)
    return world, run, out


def test_sim_eye_to_hand_recovers_the_world_camera_within_2mm_0_2deg(eye_to_hand_run):
    world, run, out = eye_to_hand_run
    truth = world.calibration().T_base_camera  # the sim world's exact camera pose
    cal = load_calibration(out)
    assert trans_err_mm(cal.T_base_camera, truth) < 2.0
    assert rot_err_deg(cal.T_base_camera, truth) < 0.2
    assert cal.setup == "eye_to_hand" and cal.method == "PARK" and cal.parent_frame == "link_base"
    assert not [c for c in run.captures if c.skipped]  # the default pose set is reachable and in view
    # noise shows in the residuals, but a good run stays around a millimetre
    assert 0.05 < cal.residuals["residual_mm"]["mean"] < 2.0
    assert len(cal.residuals["residual_mm"]["per_pose"]) == 14
    assert 0 < cal.residuals["reprojection_px"]["max"] < 1.0


def test_board_on_hand_estimate_matches_the_mount(eye_to_hand_run):
    # the solve's board-in-TCP estimate against the sim mount: the board centre sits 14 cm in front of
    # and 9 cm below the TCP when the tool points down (tool x = base x, tool z = -base z)
    _, run, _ = eye_to_hand_run
    w_m, h_m = CharucoBoardSpec().size_m
    centre_tcp = run.T_fixed_board.apply(np.array([w_m / 2, h_m / 2, 0.0]))
    np.testing.assert_allclose(centre_tcp, [0.14, 0.0, 0.09], atol=0.003)


def test_verification_at_new_poses_is_within_2mm(eye_to_hand_run):
    _, run, out = eye_to_hand_run
    v = run.verify
    assert v["poses"] == 4 and v["skipped"] == []
    assert 0 < v["error_mm"]["mean"] <= v["error_mm"]["max"] < 2.0
    assert load_calibration(out).residuals["verify_error_mm"] == {k: v["error_mm"][k] for k in ("mean", "max")}


def test_sim_eye_in_hand_recovers_the_wrist_camera():
    world, arm, cam = sim_rig(mount="wrist", seed=3)
    poses, _ = default_poses("eye_in_hand")
    with arm, cam:
        run = run_calibration(arm, cam, poses, CalibrateOptions(setup="eye_in_hand", settle_s=0.0, flush_frames=1))
    X = run.result.transform  # T_tcp_camera
    assert trans_err_mm(X, cam.T_tcp_camera) < 2.5
    assert rot_err_deg(X, cam.T_tcp_camera) < 0.2
    assert run.calibration.parent_frame == "link_tcp" and run.calibration.setup == "eye_in_hand"
    # the board on the table, estimated in the base frame: centred at (0.28, 0, 0) m, face up
    w_m, h_m = CharucoBoardSpec().size_m
    np.testing.assert_allclose(
        run.T_fixed_board.apply(np.array([w_m / 2, h_m / 2, 0.0])), [0.28, 0.0, 0.0005], atol=0.003
    )


# -- the CLI -------------------------------------------------------------------------------------
@pytest.fixture
def fresh_default_world():
    w = default_world()  # what `--robot sim --camera sim` share in this process
    w.reset()
    yield w
    w.reset()


def invoke(*args):
    return CliRunner().invoke(app, ["calibrate", *args])


def test_cli_calibrates_in_sim_and_writes_the_file(tmp_path, fresh_default_world):
    out = tmp_path / "cal.json"
    r = invoke(
        "--robot", "sim", "--camera", "sim", "--out", str(out), "--verify", "--settle-s", "0", "--time-scale", "0.01"
    )
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    cal = load_calibration(out)
    truth = fresh_default_world.calibration().T_base_camera
    assert trans_err_mm(cal.T_base_camera, truth) < 2.0 and rot_err_deg(cal.T_base_camera, truth) < 0.2
    assert d["method"] == "PARK" and d["setup"] == "eye_to_hand" and d["out"] == str(out)
    assert d["poses_used"] == 14 and d["skipped"] == []
    assert np.allclose(d["transform"]["T_parent_child"], cal.T_base_camera.matrix, atol=1e-8)
    assert [p["residual_mm"] for p in d["poses"]] == cal.residuals["residual_mm"]["per_pose"]
    assert d["verify"]["error_mm"]["max"] < 2.0
    # the arm is back home afterwards
    np.testing.assert_allclose(fresh_default_world.arm.tcp_m, MotionConfig().home.xyz, atol=1e-4)  # measured TCP


def _write_poses(path, poses):
    path.write_text(json.dumps([p.to_dict() for p in poses]))
    return path


def test_cli_too_few_detections_fails_and_writes_no_file(tmp_path, fresh_default_world):
    good = default_poses("eye_to_hand")[0][:4]
    # yawed half a turn the board shows its back to the camera: not detectable
    away = [TcpPose.at(p.xyz, (180.0, 0.0, 180.0 - 10 * i)) for i, p in enumerate(good)]
    poses = _write_poses(tmp_path / "poses.json", good + away)
    out = tmp_path / "cal.json"
    r = invoke(
        "--robot",
        "sim",
        "--camera",
        "sim",
        "--out",
        str(out),
        "--poses",
        str(poses),
        "--settle-s",
        "0",
        "--time-scale",
        "0.01",
    )
    assert r.exit_code == 1, r.output
    assert "board detected in 4 of 8 poses, need at least 6" in r.stderr
    assert not out.exists()


def test_cli_pose_outside_the_workspace_is_refused_before_motion(tmp_path, fresh_default_world):
    poses = default_poses("eye_to_hand")[0]
    poses[5] = TcpPose.at([0.60, 0.0, 0.25])  # x beyond the envelope's 0.45 m
    out = tmp_path / "cal.json"
    before = fresh_default_world.arm.tcp_m.copy()
    v0 = fresh_default_world.version
    r = invoke(
        "--robot",
        "sim",
        "--camera",
        "sim",
        "--out",
        str(out),
        "--poses",
        str(_write_poses(tmp_path / "p.json", poses)),
        "--settle-s",
        "0",
        "--time-scale",
        "0.01",
    )
    assert r.exit_code == 2, r.output
    assert "outside_box" in r.stderr and "calibration pose 5" in r.stderr
    assert not out.exists()
    np.testing.assert_array_equal(fresh_default_world.arm.tcp_m, before)
    assert fresh_default_world.version == v0  # not even the first pose was visited


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--board", "5x7:40:30:DICT_5X5_100", "millimetres"),
        ("--method", "FOO", "unknown method"),
        ("--setup", "eye_on_base", "unknown setup"),
        ("--camera", "nosuch", "unknown camera source"),
        ("--robot", "nosuch", "unknown robot"),
    ],
)
def test_cli_bad_input_exits_2(tmp_path, option, value, message):
    args = {"--robot": "sim", "--camera": "sim", "--out": str(tmp_path / "c.json"), option: value}
    r = invoke(*[x for kv in args.items() for x in kv])
    assert r.exit_code == 2, r.output
    assert message in r.stderr
    assert not (tmp_path / "c.json").exists()


# -- the pieces ------------------------------------------------------------------------------------
def test_unreachable_pose_is_skipped_and_reported():
    world, arm, cam = sim_rig(seed=1)
    poses, _ = default_poses("eye_to_hand")
    # inside the envelope but beyond the Lite 6's reach at that height (tool down)
    poses.insert(3, TcpPose.at([0.42, 0.0, 0.35]))
    with arm, cam:
        run = run_calibration(arm, cam, poses, FAST)
    skipped = [c for c in run.captures if c.skipped]
    assert [c.index for c in skipped] == [3] and skipped[0].skipped.startswith("unreachable")
    assert run.to_dict()["skipped"][0]["index"] == 3
    assert trans_err_mm(run.result.transform, world.T_base_camera) < 2.0


def test_wrong_setup_fails_on_residuals():
    # a board lying on the table cannot be an eye-to-hand board: what must be constant is not
    world, arm, cam = sim_rig(mount="table", seed=2)
    with arm, cam, pytest.raises(CalibrationFailedError, match="mean residual"):
        run_calibration(arm, cam, default_poses("eye_to_hand")[0][:8], FAST)


@pytest.mark.parametrize("setup", ["eye_to_hand", "eye_in_hand"])
def test_default_poses_are_in_the_workspace_reachable_and_span_three_axes(setup):
    poses, verify = default_poses(setup)
    assert len(poses) == 14 and len(verify) == 4
    check_poses(poses + verify, Workspace())
    kin = SimWorld().kinematics
    for p in poses + verify:
        assert kin.ik(p.xyz, p.rpy_deg, tool="lite_gripper") is not None, p
    # rotation vectors relative to the first pose span all three axes
    R0 = Rotation.from_euler("xyz", poses[0].rpy_deg, degrees=True)
    vecs = np.array([(R0.inv() * Rotation.from_euler("xyz", p.rpy_deg, degrees=True)).as_rotvec() for p in poses[1:]])
    assert np.linalg.matrix_rank(vecs, tol=0.05) == 3
    tilts = [abs(p.rpy_deg[0] - 180) for p in poses] + [abs(p.rpy_deg[1]) for p in poses]
    assert 20 <= max(tilts) <= 25 and max(abs(p.rpy_deg[2]) for p in poses) == 40


def test_check_poses_names_the_pose():
    poses = [TcpPose.at([0.3, 0, 0.2]), TcpPose.at([0.3, 0, -0.1])]
    with pytest.raises(UnsafeTargetError, match="calibration pose 1"):
        check_poses(poses, Workspace())


def test_parse_board_spec():
    assert parse_board_spec("5x7:0.04:0.03:DICT_5X5_100") == CharucoBoardSpec(5, 7, 0.04, 0.03, "DICT_5X5_100")
    assert parse_board_spec(" 8X11:0.015:0.011:DICT_4X4_100 ") == CharucoBoardSpec(8, 11, 0.015, 0.011, "DICT_4X4_100")
    for bad, msg in [
        ("5x7:0.04:0.03", "expected"),
        ("5x7:0.03:0.04:DICT_5X5_100", "marker < square"),
        ("5x7:40:30:DICT_5X5_100", "millimetres"),
        ("5x7:0.04:0.03:DICT_NOPE", "unknown ArUco"),
        ("12x12:0.04:0.03:DICT_4X4_50", "needs 72"),
        ("2x7:0.04:0.03:DICT_5X5_100", "3 x 3"),
        ("axb:0.04:0.03:DICT_5X5_100", "expected"),
    ]:
        with pytest.raises(CalibrationInputError, match=msg):
            parse_board_spec(bad)


def test_load_poses(tmp_path):
    p = tmp_path / "p.json"
    p.write_text(
        json.dumps([{"position_m": [0.3, 0.0, 0.2], "rpy_deg": [170, 10, -20]}, {"position_m": [0.25, 0.1, 0.2]}])
    )
    poses, verify = load_poses(p)
    assert poses == [TcpPose((0.3, 0.0, 0.2), (170.0, 10.0, -20.0)), TcpPose((0.25, 0.1, 0.2), (180.0, 0.0, 0.0))]
    assert verify is None
    p.write_text(
        json.dumps({"calibrate": [{"position_m": [0.3, 0, 0.2]}], "verify": [{"position_m": [0.3, 0.1, 0.2]}]})
    )
    assert load_poses(p)[1] == [TcpPose((0.3, 0.1, 0.2))]
    for bad, msg in [
        ("[", "not valid JSON"),
        ("[]", "no calibration poses"),
        ('[{"rpy_deg": [1, 2, 3]}]', "expected"),
        ('[{"position_m": [300, 0, 200]}]', "metres"),
        ('[{"position_m": [0.3, 0]}]', "3 finite"),
        ('{"verify": []}', "calibrate"),
        ('[{"position_m": [0.3, "a", 0.2]}]', "numbers"),
    ]:
        p.write_text(bad)
        with pytest.raises(CalibrationInputError, match=msg):
            load_poses(p)
    with pytest.raises(CalibrationInputError, match="not found"):
        load_poses(tmp_path / "missing.json")


def test_camera_spec_for_calibration():
    b = CharucoBoardSpec()
    assert camera_spec_for_calibration("sim", "eye_to_hand", b) == "sim-board:hand,board=5x7:0.04:0.03:DICT_5X5_100"
    assert camera_spec_for_calibration("sim:clean", "eye_in_hand", b).startswith("sim-board:wrist,board=")
    assert camera_spec_for_calibration("sim:clean", "eye_in_hand", b).endswith(",clean")
    assert camera_spec_for_calibration("realsense:123", "eye_to_hand", b) == "realsense:123"


# exact synthetic poses (no images): a camera 0.75 m in front of the base, a board 12 cm past the TCP
T_BASE_CAM = RigidTransform.from_rt(
    Rotation.from_euler("xyz", [-130, 0, 90], degrees=True).as_matrix(), [0.75, 0.02, 0.55]
)
T_TCP_BOARD = RigidTransform.from_rt(np.eye(3), [-0.10, -0.14, 0.12])


def _exact_captures(rpys):
    caps = []
    for i, rpy in enumerate(rpys):
        tcp = TcpPose.at([0.25 + 0.01 * i, 0.02 * (i % 3) - 0.02, 0.22], rpy)
        T_cb = T_BASE_CAM.inverse() @ tcp_transform(tcp) @ T_TCP_BOARD
        caps.append(PoseCapture(i, tcp, tcp, T_cb, corners=24, reprojection_px=0.1))
    return caps


RPYS = [(180, 0, 0), (200, 0, 0), (160, 5, 10), (180, 20, -30), (175, -20, 40), (190, 10, 25), (170, -10, -40)]


def test_verification_error_equals_a_known_calibration_offset():
    caps = _exact_captures(RPYS)
    result, T_tcp_board = solve_captures(caps, CalibrateOptions())
    np.testing.assert_allclose(result.transform.matrix, T_BASE_CAM.matrix, atol=1e-6)
    np.testing.assert_allclose(T_tcp_board.matrix, T_TCP_BOARD.matrix, atol=1e-6)
    verify_caps = _exact_captures([(185, 8, 15), (178, -12, -20)])
    assert verify_calibration(verify_caps, result, T_tcp_board, CharucoBoardSpec())["error_mm"]["max"] < 1e-3
    # a calibration wrong by 3 mm along x and 4 mm along z puts every corner 5 mm off
    result.transform = RigidTransform.from_rt(T_BASE_CAM.rotation, T_BASE_CAM.translation_m + [0.003, 0.0, 0.004])
    err = verify_calibration(verify_caps, result, T_tcp_board, CharucoBoardSpec())["error_mm"]
    assert err["mean"] == pytest.approx(5.0, abs=1e-3) and err["max"] == pytest.approx(5.0, abs=1e-3)


def test_rotations_about_one_axis_are_refused():
    caps = _exact_captures([(180, 0, yaw) for yaw in (-40, -20, 0, 15, 30, 40, 10)])
    with pytest.raises(CalibrationFailedError, match="one axis"):
        solve_captures(caps, CalibrateOptions())


def test_skipped_captures_do_not_count():
    caps = _exact_captures(RPYS)
    for c in caps[:2]:
        c.T_camera_board, c.skipped = None, "board not detected"
    with pytest.raises(CalibrationFailedError, match="board detected in 5 of 7 poses, need at least 6"):
        solve_captures(caps, CalibrateOptions())
    assert len(solve_captures(caps, CalibrateOptions(min_poses=5))[0].residual_mm) == 5


def test_calibration_through_the_real_xarm_sdk_against_the_emulator():
    """The same workflow over ``XArmDriver`` (xarm-python-sdk, mm and degrees on the wire) and the
    controller emulator; the board follows the emulator's TCP."""
    pytest.importorskip("xarm")
    from pointlab.robot.xarm import XArmDriver
    from tests.robot.test_xarm_driver import start_emulator

    emu = start_emulator(time_scale=0.02)
    try:

        def emulator_tcp() -> RigidTransform:
            p = emu.pose_mm_rad
            return RigidTransform.from_xyz_rpy(np.array(p[:3]) / 1000.0, p[3:])

        world = SimWorld()
        cam = BoardCamera(world=world, fps=0, seed=11, noise_sigma=3.0, blur_sigma_px=0.7, tcp_source=emulator_tcp)
        arm = Arm(
            XArmDriver.from_spec(f"{emu.host}:{emu.port}", cmd_timeout_s=2.0), motion=MotionConfig(grip_settle_s=0.0)
        )
        poses, _ = default_poses("eye_to_hand")
        with arm, cam:
            run = run_calibration(arm, cam, poses, FAST)
        assert not [c for c in run.captures if c.skipped]
        assert trans_err_mm(run.result.transform, world.T_base_camera) < 2.0
        assert rot_err_deg(run.result.transform, world.T_base_camera) < 0.2
        assert len(emu.entries("move_line")) == 14  # one linear move per pose, nothing else moved
    finally:
        emu.stop()


def test_cli_verification_pose_outside_the_workspace_is_refused_before_motion(tmp_path, fresh_default_world):
    poses = tmp_path / "p.json"
    cal = [p.to_dict() for p in default_poses("eye_to_hand")[0]]
    poses.write_text(json.dumps({"calibrate": cal, "verify": [{"position_m": [0.3, 0.0, 0.5]}]}))  # z > 0.40 m
    v0 = fresh_default_world.version
    r = invoke(
        "--robot",
        "sim",
        "--camera",
        "sim",
        "--out",
        str(tmp_path / "c.json"),
        "--poses",
        str(poses),
        "--verify",
        "--settle-s",
        "0",
        "--time-scale",
        "0.01",
    )
    assert r.exit_code == 2, r.output
    assert "verification pose 0" in r.stderr and "outside_box" in r.stderr
    assert fresh_default_world.version == v0 and not (tmp_path / "c.json").exists()


# -- hover check -------------------------------------------------------------------------------------
# The sim table board (centre (0.28, 0, 0.0005), face up, 7-square side along base y): its outermost
# inner corners, ids 0, 3, 20, 23 of the 4 x 6 inner corners, lie at x = 0.28 -+ 0.06, y = +-0.10.
TABLE_CORNERS_M = np.array([[0.22, 0.10, 0.0005], [0.34, 0.10, 0.0005], [0.22, -0.10, 0.0005], [0.34, -0.10, 0.0005]])


def _hover(calibration, **cam_kw):
    world, arm, cam = sim_rig(mount="table", seed=4, **cam_kw)
    with arm, cam:
        return world, hover_check(arm, cam, calibration, settle_s=0.0)


def test_hover_check_with_the_true_calibration_hovers_10mm_above_the_corners():
    world = SimWorld()
    _, res = _hover(world.calibration())
    assert [c["id"] for c in res["corners"]] == [0, 3, 20, 23] and res["hover_mm"] == 10.0
    tcp = np.array([c["tcp_m"] for c in res["corners"]])
    np.testing.assert_allclose(tcp, TABLE_CORNERS_M + [0, 0, 0.010], atol=0.0015)
    assert res["board_tilt_deg"] < 0.5


def test_hover_check_shows_a_calibration_offset():
    world = SimWorld()
    wrong = world.calibration(translation_noise_m=0.005, seed=3)  # 5 mm off, no rotation error
    offset = wrong.T_base_camera.translation_m - world.T_base_camera.translation_m
    _, res = _hover(wrong)
    tcp = np.array([c["tcp_m"] for c in res["corners"]])
    # a pure translation error moves every mapped point by that translation
    np.testing.assert_allclose(tcp - (TABLE_CORNERS_M + [0, 0, 0.010]), np.tile(offset, (4, 1)), atol=0.0015)
    assert np.all(np.abs(np.linalg.norm(tcp - TABLE_CORNERS_M - [0, 0, 0.010], axis=1) - 0.005) < 0.0015)


def test_hover_check_refuses_before_motion():
    from pointlab.sim_mock.board_camera import board_mounted_at

    world = SimWorld()
    # a board 12 cm in front of the base: its near corners are inside the keep-out radius round the base
    near = board_mounted_at(CharucoBoardSpec(), [0.12, 0.0, 0.0005], np.diag([1.0, -1.0, -1.0]))
    w2, arm, cam = sim_rig(mount="table", T_base_board=near)
    before = w2.arm.tcp_m.copy()
    with arm, cam, pytest.raises(UnsafeTargetError, match="hover waypoint"):
        hover_check(arm, cam, w2.calibration(), settle_s=0.0)
    np.testing.assert_allclose(w2.arm.tcp_m, before, atol=1e-9)  # no motion (the table was cleared meanwhile)
    eye_in_hand = replace(world.calibration(), setup="eye_in_hand")
    with pytest.raises(CalibrationInputError, match="eye_to_hand"):
        hover_check(arm, cam, eye_in_hand)


def test_cli_calibrate_check_in_sim(tmp_path, fresh_default_world):
    from pointlab.perception.extrinsics import save_calibration

    path = tmp_path / "cal.json"
    save_calibration(fresh_default_world.calibration(), path)
    r = CliRunner().invoke(
        app,
        [
            "calibrate-check",
            "--robot",
            "sim",
            "--camera",
            "sim",
            "--calibration",
            str(path),
            "--settle-s",
            "0",
            "--time-scale",
            "0.01",
        ],
    )
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    np.testing.assert_allclose([c["tcp_m"] for c in d["corners"]], TABLE_CORNERS_M + [0, 0, 0.010], atol=0.0015)
    r = CliRunner().invoke(
        app, ["calibrate-check", "--robot", "sim", "--camera", "sim", "--calibration", str(tmp_path / "missing.json")]
    )
    assert r.exit_code == 2 and "not found" in r.stderr
