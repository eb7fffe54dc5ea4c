"""The ``sim-board`` camera: the ChArUco board drawn where the mount puts it, worked out by hand from
the mount geometry (board centre 14 cm in front of and 9 cm below a tool-down TCP, face tilted 45 deg
up towards +x; wrist camera 7 cm along tool x and 12 cm above the TCP; table board centred at
(0.28, 0, 0)), and detected back by OpenCV through the world's camera pose."""

from __future__ import annotations

import numpy as np
import pytest

from pointlab.perception.camera import make_camera
from pointlab.perception.errors import CameraSourceError
from pointlab.perception.handeye import CharucoBoardSpec, detect_board
from pointlab.robot.arm import Arm, MotionConfig, TcpPose
from pointlab.sim_mock.arm import SimArmDriver
from pointlab.sim_mock.board_camera import BoardCamera
from pointlab.sim_mock.world import SimWorld

CENTRE_BOARD = np.array([0.1, 0.14, 0.0])  # centre of the default 5 x 7 board of 4 cm squares, board frame


def angle_deg(a, b) -> float:
    a, b = np.asarray(a) / np.linalg.norm(a), np.asarray(b) / np.linalg.norm(b)
    return float(np.degrees(np.arccos(np.clip(a @ b, -1.0, 1.0))))


@pytest.fixture(scope="module")
def rig():
    world = SimWorld()
    arm = Arm(SimArmDriver(world=world, time_scale=0.0), motion=MotionConfig(grip_settle_s=0.0))
    with arm:
        yield world, arm


def detected_in_base(cam: BoardCamera):
    """(board centre, printed-face normal) in the base frame from the detection and the true camera pose."""
    frame = cam.read()
    det = detect_board(frame.color, frame.intrinsics, cam.board)
    assert det is not None
    T = cam.T_base_camera() @ det.T_camera_board
    return T.apply(CENTRE_BOARD), -T.rotation[:, 2], frame


@pytest.mark.parametrize(
    "tcp, centre", [((0.28, 0.0, 0.26), (0.42, 0.0, 0.17)), ((0.30, 0.05, 0.24), (0.44, 0.05, 0.15))]
)
def test_hand_board_follows_the_tcp(rig, tcp, centre):
    world, arm = rig
    arm.move_to(TcpPose(tcp))
    with make_camera("sim-board:hand,clean", world=world, fps=0) as cam:
        c, normal, frame = detected_in_base(cam)
    np.testing.assert_allclose(c, centre, atol=0.0015)
    # 45 deg up, towards +x; a near face-on board leaves PnP a degree or so of rotation slack (the
    # rendered corners carry 0.2-0.3 px of aliasing error even without noise)
    assert angle_deg(normal, [np.sqrt(0.5), 0.0, np.sqrt(0.5)]) < 2.0
    # the plate's depth at its centre pixel is the centre's optical z
    p_cam = world.T_base_camera.inverse().apply(np.array(centre))
    u, v = np.rint(frame.intrinsics.project(p_cam)[0]).astype(int)
    assert frame.depth_m()[v, u] == pytest.approx(p_cam[2], abs=0.002)


def test_board_seen_from_behind_is_a_plain_plate(rig):
    world, arm = rig
    arm.move_to(TcpPose((0.28, 0.0, 0.26), (180.0, 0.0, 180.0)))  # half a turn: the print faces the base
    with BoardCamera(world=world, fps=0, noise=False) as cam:
        frame = cam.read()
    assert detect_board(frame.color, frame.intrinsics, cam.board) is None
    centre = np.array([0.28 - 0.14, 0.0, 0.17])
    p_cam = world.T_base_camera.inverse().apply(centre)
    u, v = np.rint(frame.intrinsics.project(p_cam)[0]).astype(int)
    assert frame.depth_m()[v, u] == pytest.approx(p_cam[2], abs=0.003)  # the servos hold to ~1 mm
    assert tuple(frame.color[v, u]) == (205, 205, 200)


def test_table_board_in_the_fixed_camera(rig):
    world, _ = rig
    with make_camera("sim-board:table,clean", world=world, fps=0) as cam:
        c, normal, _ = detected_in_base(cam)
    np.testing.assert_allclose(c, [0.28, 0.0, 0.0005], atol=0.0015)
    assert angle_deg(normal, [0, 0, 1]) < 2.0


def test_wrist_camera_rides_on_the_tcp(rig):
    world, arm = rig
    arm.move_to(TcpPose((0.23, 0.0, 0.31)))
    with make_camera("sim-board:wrist,clean", world=world, fps=0) as cam:
        T = cam.T_base_camera()
        # the measured TCP: the MuJoCo servos hold the commanded pose to well under a millimetre
        np.testing.assert_allclose(T.translation_m, [0.30, 0.0, 0.43], atol=1e-3)
        np.testing.assert_allclose(T.rotation[:, 2], [0, 0, -1], atol=2e-3)  # looking down the tool
        c, normal, frame = detected_in_base(cam)
    np.testing.assert_allclose(c, [0.28, 0.0, 0.0005], atol=0.0015)
    # looking straight down, the table is perpendicular to the optical axis: depth = the camera's height
    assert frame.depth_m()[5, 5] == pytest.approx(0.43, abs=0.001)
    assert frame.depth_m()[470, 630] == pytest.approx(0.43, abs=0.001)


def test_noise_moves_corners_by_tenths_of_a_pixel(rig):
    world, arm = rig
    arm.move_to(TcpPose((0.28, 0.0, 0.26)))
    with BoardCamera(world=world, fps=0, seed=5, noise_sigma=3.0, blur_sigma_px=0.7) as cam:
        a, b = cam.read(), cam.read()
    assert not np.array_equal(a.color, b.color)  # each frame draws new noise
    det = detect_board(a.color, a.intrinsics, cam.board)
    assert det is not None and 0.02 < det.reprojection_px < 1.0


def test_spec_options():
    w = SimWorld()
    cam = make_camera("sim-board:wrist,clean,board=6x8:0.03:0.022:DICT_4X4_50", world=w)
    assert isinstance(cam, BoardCamera) and cam.mount == "wrist" and not cam.noise
    assert cam.board == CharucoBoardSpec(6, 8, 0.03, 0.022, "DICT_4X4_50")
    assert make_camera("sim-board", world=w).mount == "hand"
    for bad, msg in [
        ("sim-board:hand,table", "one mount"),
        ("sim-board:tool", "unknown option"),
        ("sim-board:board=5x7:0.04", "expected"),
    ]:
        with pytest.raises(CameraSourceError, match=msg):
            make_camera(bad, world=w)
    with pytest.raises(CameraSourceError, match="unknown mount"):
        BoardCamera(world=w, mount="ceiling")
