"""``bag:PATH``: a recording made with librealsense's own recorder from the software device plays back
every frame, in order, with the colour intrinsics and the recorded depth scale; paced by its recorded
timestamps at ``rate``, and looping with frame numbers that keep increasing."""

import time

import pytest

rs = pytest.importorskip("pyrealsense2")

from pointlab.perception import CameraSourceError, EndOfRecording, make_camera  # noqa: E402
from pointlab.perception.realsense import RealSenseCamera  # noqa: E402
from pointlab.sim_mock.realsense_sw import SyntheticRealSense  # noqa: E402


def record(path, n_reads=5, units=0.0001) -> list[int]:
    """Record through librealsense's recorder; returns the colour frame numbers read while recording."""
    sw = SyntheticRealSense(depth_units_m=units, fps=30)
    rec = rs.recorder(str(path), sw.device)
    cam = RealSenseCamera(device=rec, timeout_ms=3000)
    cam.connect()
    sw.start()
    seen = [cam.read().index for _ in range(n_reads)]
    sw.stop()
    cam.disconnect()
    del rec  # the file is finalised when the recorder is released
    return seen


def test_playback_is_complete_and_ordered(tmp_path):
    path = tmp_path / "rec.db3"
    recorded = record(path)
    frames = []
    # the end is the SDK's "played out" status, seen at once; the timeout is only a fallback for it,
    # and a short one ended the playback early (no frame yet) when the machine was busy
    with make_camera(f"bag:{path}#rate=max,loop=0", timeout_ms=10_000) as cam:
        with pytest.raises(CameraSourceError, match="end of recording"):
            while True:
                frames.append(cam.read())
    numbers = [f.index for f in frames]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))  # none dropped in between
    # Every frame read while recording plays back, except possibly the first: the first synced set
    # of a playback may hold one stream only (seen with librealsense's syncer), and the source skips incomplete sets.
    assert set(recorded[1:]) <= set(numbers), (recorded, numbers)
    f = frames[0]
    assert f.depth_scale_m == pytest.approx(0.0001)
    assert f.intrinsics.fx == pytest.approx(615.0)
    # box top at 0.6 m = 6000 units of 0.1 mm at the principal point
    assert int(f.depth[243, 321]) == 6000


def test_missing_recording(tmp_path):
    with pytest.raises(CameraSourceError, match="not found"):
        make_camera(f"bag:{tmp_path / 'none.db3'}").connect()


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("rs") / "rec.db3"
    record(path, n_reads=8)
    return path


def test_a_looping_recording_numbers_frames_on_across_the_wrap(recording):
    with make_camera(f"bag:{recording}#rate=max", timeout_ms=10_000) as cam:
        numbers = [cam.read().index for _ in range(25)]  # about two and a half laps
    # consecutive: the syncer's repeat of the last colour frame at the wrap is not served as new
    assert numbers == list(range(numbers[0], numbers[0] + 25)), numbers


def _seconds_per_frame(recording) -> dict[str, float]:
    """Seconds of playback per recorded frame at rates 1, 0.5 and max (30 fps: 1/30 s at rate 1)."""
    per_frame = {}
    for rate in ("1", "0.5", "max"):
        with make_camera(f"bag:{recording}#rate={rate},loop=0", timeout_ms=10_000) as cam:
            served = []
            with pytest.raises(EndOfRecording, match="end of recording"):
                while True:
                    served.append((cam.read().index, time.monotonic()))
            with pytest.raises(EndOfRecording):  # and again, without waiting for frames
                cam.read()
        # by frame numbers: a playback may begin one frame later (its first synced set can lack a stream)
        (n0, t0), (n1, t1) = served[0], served[-1]
        per_frame[rate] = (t1 - t0) / (n1 - n0)
    return per_frame


def _paced(per_frame: dict[str, float]) -> bool:
    return (
        0.6 / 30 <= per_frame["1"] <= 1.6 / 30
        and 1.6 <= per_frame["0.5"] / per_frame["1"] <= 2.4
        and per_frame["max"] < per_frame["1"] / 2
    )


def test_a_recording_plays_at_its_recorded_rate_then_ends(recording):
    # Each frame is aligned and converted before it is served (tens of ms of CPU): on a machine busy
    # with other work that alone can exceed the 33 ms frame period, so a measurement is taken again
    # (up to three) before the same bounds fail the test; a pacing fault fails every one.
    for _ in range(3):
        per_frame = _seconds_per_frame(recording)
        if _paced(per_frame):
            break
    assert 0.6 / 30 <= per_frame["1"] <= 1.6 / 30, per_frame
    assert 1.6 <= per_frame["0.5"] / per_frame["1"] <= 2.4, per_frame
    assert per_frame["max"] < per_frame["1"] / 2, per_frame
