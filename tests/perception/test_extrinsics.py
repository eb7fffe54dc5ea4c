"""The calibration file: format, validation, and the camera-to-base transform."""

import json

import numpy as np
import pytest

from pointlab.perception.errors import CalibrationFileError
from pointlab.perception.extrinsics import Calibration, RigidTransform, load_calibration, save_calibration

# A camera 0.6 m above the point (0.5, 0, 0) of the base frame, looking straight down, image x along
# base -y and image y along base -x: optical z -> base -z, x -> -y, y -> -x.
T_DOWN = [[0, -1, 0, 0.5], [-1, 0, 0, 0.0], [0, 0, -1, 0.6], [0, 0, 0, 1]]


def write(tmp_path, **over):
    d = {
        "format": "pointlab.calibration/1",
        "parent_frame": "link_base",
        "child_frame": "camera_color_optical_frame",
        "T_parent_child": T_DOWN,
    }
    d.update(over)
    p = tmp_path / "cal.json"
    p.write_text(json.dumps(d))
    return p


def test_camera_to_base_by_hand(tmp_path):
    cal = load_calibration(write(tmp_path))
    # Optical axis 0.6 m ahead hits the table point under the camera.
    np.testing.assert_allclose(cal.camera_to_base([0, 0, 0.6]), [0.5, 0.0, 0.0], atol=1e-12)
    # 0.1 m to the image right (optical +x) is base -y; 0.05 m image down (optical +y) is base -x.
    np.testing.assert_allclose(cal.camera_to_base([0.1, 0.05, 0.55]), [0.45, -0.1, 0.05], atol=1e-12)
    np.testing.assert_allclose(cal.T_base_camera.inverse().apply([0.45, -0.1, 0.05]), [0.1, 0.05, 0.55], atol=1e-12)


def test_round_trip(tmp_path):
    cal = Calibration(RigidTransform.from_xyz_rpy([0.1, 0.2, 0.3], [0.1, -0.2, 0.3]), method="PARK")
    save_calibration(cal, tmp_path / "c.json")
    back = load_calibration(tmp_path / "c.json")
    np.testing.assert_allclose(back.T_base_camera.matrix, cal.T_base_camera.matrix, atol=1e-9)
    assert back.method == "PARK"


@pytest.mark.parametrize(
    "over,match",
    [
        ({"format": "other"}, "format"),
        ({"T_parent_child": [[1, 0, 0, 500], [0, 1, 0, 0], [0, 0, 1, 600], [0, 0, 0, 1]]}, "metres"),
        ({"T_parent_child": [[2, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]}, "rigid"),
        ({"T_parent_child": [[1, 0, 0], [0, 1, 0]]}, "rigid"),
        ({"setup": "on_the_moon"}, "setup"),
        ({"parent_frame": 5}, "parent_frame must be a non-empty frame name"),
        ({"child_frame": None}, "child_frame must be a non-empty frame name"),
        ({"child_frame": " "}, "child_frame must be a non-empty frame name"),
    ],
)
def test_bad_files_are_refused(tmp_path, over, match):
    with pytest.raises(CalibrationFileError, match=match):
        load_calibration(write(tmp_path, **over))


def test_missing_and_corrupt(tmp_path):
    with pytest.raises(CalibrationFileError, match="not found"):
        load_calibration(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_bytes(b"\xff\xfe{")
    with pytest.raises(CalibrationFileError, match="not valid JSON"):
        load_calibration(tmp_path / "bad.json")


def test_targeting_refuses_an_eye_in_hand_file(tmp_path):
    from pointlab.perception.extrinsics import load_camera_to_base

    assert load_camera_to_base(write(tmp_path)).setup == "eye_to_hand"
    with pytest.raises(CalibrationFileError, match="eye_to_hand"):
        load_camera_to_base(write(tmp_path, setup="eye_in_hand", parent_frame="link_tcp"))


def test_file_with_a_bom_is_read(tmp_path):
    p = write(tmp_path)
    p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())
    np.testing.assert_allclose(load_calibration(p).camera_to_base([0, 0, 0.6]), [0.5, 0.0, 0.0], atol=1e-12)
