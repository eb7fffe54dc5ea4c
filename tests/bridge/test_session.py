"""start_session's input errors (raised before any ROS or hardware work) and perf_loop's pieces."""

from __future__ import annotations

import pytest

from pointlab.bridge.perf_loop import measure_loop, percentiles_ms
from pointlab.bridge.session import SessionConfig, SessionError, start_session
from pointlab.perception.errors import CalibrationFileError, CameraSourceError


def test_unknown_camera_is_a_camera_error(ros_env):
    with pytest.raises(CameraSourceError):
        start_session(SessionConfig(camera="nosuch:thing", robot="sim", time_scale=0))


def test_real_camera_and_real_arm_need_a_calibration(ros_env):
    with pytest.raises(SessionError, match="calibration"):
        start_session(SessionConfig(camera="realsense", robot="xarm:127.0.0.1"))


def test_missing_calibration_file(ros_env, tmp_path):
    with pytest.raises(CalibrationFileError):
        start_session(SessionConfig(camera="sim", robot="sim", calibration=tmp_path / "none.json"))


def test_percentiles_by_hand():
    # 1, 2, 3, 4 ms: linear interpolation, p50 = 2.5, p90 = 3 + 0.7 * 1 = 3.7, p99 = 3 + 0.97 = 3.97
    assert percentiles_ms([0.001, 0.002, 0.003, 0.004]) == {"n": 4, "p50": 2.5, "p90": 3.7, "p99": 3.97, "mean": 2.5}
    assert percentiles_ms([])["n"] == 0


@pytest.mark.ros
def test_perf_loop_runs_and_reports(ros_env, tmp_path):
    out = measure_loop(4, time_scale=0.0, baseline_repeats=20, block=2, recordings_dir=tmp_path)
    assert out["trials"] == 4 and out["point_to_command_ms"]["n"] == 4 and out["baseline_targeting_ms"]["n"] == 20
    assert out["ratio_p50"] == pytest.approx(
        out["point_to_command_ms"]["p50"] / out["baseline_targeting_ms"]["p50"], rel=0.01
    )
    assert out["live_view_fps"] > 0 and out["done"] == 4
    # trials 0-1 without a recorder, 2-3 with one, in the same run
    rec = out["recording"]
    assert rec["point_to_command_ms_without"]["n"] == 2 and rec["point_to_command_ms_with"]["n"] == 2
    assert rec["ratio_p50"] == pytest.approx(
        rec["point_to_command_ms_with"]["p50"] / rec["point_to_command_ms_without"]["p50"], rel=0.01
    )
    assert rec["recordings"] == 2 and rec["incomplete"] == 0, rec["errors"]
    assert sorted(p.name for p in tmp_path.glob("*.mp4")) == ["perf-0002.mp4", "perf-0003.mp4"]
    assert rec["mcap_mb_per_s"] > 0 and rec["clip_mb_per_s"] > 0 and rec["end_ms"]["n"] == 2
