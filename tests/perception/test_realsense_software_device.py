"""The RealSense source through ``rs.software_device`` and the real ``rs.align``.

Scene (colour optical frame): plane at z = 0.8 m, a 10 cm square box top at z = 0.6 m centred on
the optical axis; the depth sensor is 15 mm to the colour sensor's right. Colour intrinsics:
f = 615 px, principal point (321.5, 243.2).
"""

import numpy as np
import pytest

rs = pytest.importorskip("pyrealsense2")

from pointlab.perception.deproject import deproject_pixel  # noqa: E402
from pointlab.perception.realsense import RealSenseCamera  # noqa: E402
from pointlab.sim_mock.realsense_sw import SyntheticRealSense  # noqa: E402


@pytest.fixture(params=[0.001, 0.0001], ids=["D4xx_1mm", "D405_0.1mm"])
def camera(request):
    sw = SyntheticRealSense(depth_units_m=request.param)
    cam = RealSenseCamera(device=sw.device, timeout_ms=3000)
    cam.connect()
    sw.start()
    yield cam, request.param
    sw.stop()
    cam.disconnect()


def test_aligned_depth_carries_colour_intrinsics_and_device_scale(camera):
    cam, units = camera
    f = cam.read()
    assert cam.depth_scale_m == pytest.approx(units)
    assert f.depth_scale_m == pytest.approx(units)
    i = f.intrinsics
    assert (i.width, i.height) == (640, 480)
    np.testing.assert_allclose(
        [i.fx, i.fy, i.ppx, i.ppy], [615.0, 615.0, 321.5, 243.2], atol=1e-4
    )  # float32 in librealsense
    assert f.color.shape == (480, 640, 3) and f.depth.shape == (480, 640)
    # colour is RGB: the box is red (200, 30, 30) at the principal point
    assert tuple(f.color[243, 321]) == (200, 30, 30)


def test_deprojection_through_aligned_depth(camera):
    cam, units = camera
    f = cam.read()
    # Box top point (0.03, -0.02, 0.6) m projects to u = 321.5 + 615*0.03/0.6 = 352.25,
    # v = 243.2 - 615*0.02/0.6 = 222.7.
    d = deproject_pixel(f, 352.25, 222.7)
    assert d.valid
    np.testing.assert_allclose(d.point_m, [0.03, -0.02, 0.6], atol=max(units, 0.0005) * 2)
    # Plane point (-0.2, 0.1, 0.8): u = 321.5 - 615*0.25 = 167.75, v = 243.2 + 615*0.125 = 320.075.
    d = deproject_pixel(f, 167.75, 320.075)
    assert d.valid
    np.testing.assert_allclose(d.point_m, [-0.2, 0.1, 0.8], atol=max(units, 0.0005) * 2)
