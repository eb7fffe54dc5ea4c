"""numpy <-> sensor_msgs conversions (no DDS needed: the message classes only)."""

from __future__ import annotations

import array

import numpy as np
import pytest

from pointlab.bridge.ros.msgs import (
    camera_info_to_intrinsics,
    depth_to_image,
    image_to_depth,
    image_to_rgb,
    intrinsics_to_camera_info,
    ns_to_stamp,
    rgb_to_image,
    stamp_to_ns,
    to_depth_mm,
)
from pointlab.perception.frame import Intrinsics


def test_stamps_round_trip():
    s = ns_to_stamp(1_700_000_000_123_456_789)
    assert (s.sec, s.nanosec) == (1_700_000_000, 123_456_789) and stamp_to_ns(s) == 1_700_000_000_123_456_789


def test_colour_round_trip_and_other_encodings():
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    m = rgb_to_image(rgb, 5, "cam")
    assert (m.encoding, m.height, m.width, m.step, m.header.frame_id) == ("rgb8", 2, 3, 9, "cam")
    assert np.array_equal(image_to_rgb(m), rgb)
    # bgr8 with 2 bytes of row padding (step 11): pixel (0, 0) is B=2, G=1, R=0 -> RGB (0, 1, 2)
    from sensor_msgs.msg import Image

    b = Image(height=2, width=3, encoding="bgr8", step=11)
    rows = [bytes([2, 1, 0, 5, 4, 3, 8, 7, 6, 99, 99]), bytes([11, 10, 9, 14, 13, 12, 17, 16, 15, 99, 99])]
    b.data = array.array("B", b"".join(rows))
    assert np.array_equal(image_to_rgb(b), rgb)
    with pytest.raises(ValueError):
        image_to_rgb(Image(height=2, width=3, encoding="mono8", step=3, data=array.array("B", bytes(6))))
    with pytest.raises(ValueError):
        image_to_rgb(Image(height=2, width=3, encoding="rgb8", step=9, data=array.array("B", bytes(10))))


def test_depth_in_mm_on_the_topic():
    # a D405 reports 0.1 mm units: 7744 units = 774.4 mm -> 774, 7756 -> 775.6 -> 776, 65535 -> 6553.5
    # -> 6554 (half to even), 0 stays 0
    d = np.array([[7744, 0], [7756, 65535]], dtype=np.uint16)
    mm = to_depth_mm(d, 0.0001)
    assert mm.tolist() == [[774, 0], [776, 6554]]
    # metres per unit above 1 mm: 70000 mm does not fit in 16 bits -> no data rather than wrap-around
    assert to_depth_mm(np.array([[35000]], np.uint16), 0.002).tolist() == [[0]]
    m = depth_to_image(mm, 7, "cam")
    assert (m.encoding, m.step) == ("16UC1", 4)
    back, scale = image_to_depth(m)
    assert back.tolist() == mm.tolist() and scale == 0.001


def test_float_metres_depth_is_accepted():
    from sensor_msgs.msg import Image

    f = np.array([[0.7744, np.nan], [-1.0, 0.0]], dtype="<f4")
    m = Image(height=2, width=2, encoding="32FC1", step=8, data=array.array("B", f.tobytes()))
    d, scale = image_to_depth(m)
    assert d.tolist() == [[774, 0], [0, 0]] and scale == 0.001  # 774.4 mm -> 774; NaN, <= 0 -> no data


def test_camera_info_round_trip():
    intr = Intrinsics(640, 480, 612.937, 613.173, 322.549, 248.158, (0.1, -0.2, 0.001, 0.002, 0.03))
    ci = intrinsics_to_camera_info(intr, 3, "cam")
    assert list(ci.k) == [612.937, 0.0, 322.549, 0.0, 613.173, 248.158, 0.0, 0.0, 1.0]
    assert list(ci.p)[:3] == [612.937, 0.0, 322.549] and ci.distortion_model == "plumb_bob"
    assert camera_info_to_intrinsics(ci) == intr


def test_payloads_round_trip_and_invalid_ones_are_dropped():
    from std_msgs.msg import String

    from pointlab.bridge.trials.outcomes import Refusal
    from pointlab.bridge.ros.payloads import ArmResult, PointRequest, from_msg, to_msg

    req = PointRequest(request_id="r1", agent="sim-oracle", instruction="pick up the red cube")
    assert from_msg(PointRequest, to_msg(req)) == req
    res = ArmResult(request_id="r1", outcome="refused", refusal=Refusal(code="workspace", detail="beyond_reach"))
    back = from_msg(ArmResult, to_msg(res))
    assert back.refusal.code == "workspace" and back.refusal.stage == "reach"
    for data in [
        "[1, 2]",
        "{oops",
        '{"agent": "a", "instruction": "x"}',
        '{"request_id": "", "agent": "a", "instruction": "x"}',
        '{"request_id": "r", "agent": "a", "instruction": 3}',
    ]:
        assert from_msg(PointRequest, String(data=data)) is None, data
    assert to_msg(ArmResult(request_id="r", outcome="done", motion={"duration_s": float("nan")})).data.count("null")


# /pointlab/arm/state and the points of /pointlab/point_answer as pointlab wrote them while they had their
# own payload types (payloads.ArmStateMsg from ArmState.to_dict(), bridge.trials.outcomes.PointEntry),
# written out by hand: the pose rounded to 1e-6 m and 1e-4 deg, the fields in this order.
ARM_STATE_JSON = (
    '{"connected":true,"tcp":{"position_m":[0.2,0.0,0.25],"rpy_deg":[180.0,0.0,12.3457]},'
    '"joints_rad":[0.0,0.1,0.2,0.0,0.0,0.0],"tool_closed":false,"holding":true,"error_code":0,'
    '"estopped":false,"fault":null,"motions_done":2,"busy":true}'
)
ANSWER_POINTS_JSON = (
    '"points":[{"u_px":326.4,"v_px":204.0,"valid":true,"reason":null},'
    '{"u_px":null,"v_px":null,"valid":false,"reason":"non-finite coordinate"}]'
)


def test_the_arm_state_payload_is_the_json_written_before_and_ignores_unknown_fields():
    from std_msgs.msg import String

    from pointlab.bridge.ros.payloads import from_msg, to_msg
    from pointlab.robot.arm import ArmState, TcpPose

    st = ArmState(
        connected=True,
        tcp=TcpPose((0.2000000001, 0.0, 0.25), (180.0, 1e-5, 12.3456789)),
        joints_rad=[0.0, 0.1, 0.2, 0.0, 0.0, 0.0],
        holding=True,
        motions_done=2,
        busy=True,
    )
    assert to_msg(st).data == ARM_STATE_JSON
    back = from_msg(ArmState, String(data=ARM_STATE_JSON[:-1] + ',"added_later":{"x":1}}'))  # a newer publisher
    assert (
        back is not None
        and to_msg(back).data == ARM_STATE_JSON
        and back.tcp == TcpPose((0.2, 0.0, 0.25), (180.0, 0.0, 12.3457))
    )
    assert from_msg(ArmState, String(data='{"tcp":{"position_m":[1,2]}}')) is None  # not a pose: dropped at the edge


def test_the_answer_points_are_the_json_written_before():
    from pointlab.benchmark.points import parse_points
    from pointlab.bridge.ros.payloads import PointAnswer, to_msg

    p = parse_points("[[326.4, 204.0], [NaN, NaN]]", "xy_pixels", 640, 480)
    data = to_msg(PointAnswer(request_id="r", points=list(p.entries), points_px=p.points_px.tolist())).data
    assert ANSWER_POINTS_JSON in data
