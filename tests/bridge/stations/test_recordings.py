"""The server's copy of the stations' recordings (bridge/stations/recordings.py): where a file may go,
that a file is written whole or not at all, and which files a trial's recording is."""

from __future__ import annotations

import hashlib
import json

import pytest

from pointlab.bridge.stations.recordings import ChecksumMismatch, RecordingSink, recording_files
from pointlab.bridge.stations.wire import StationsError

UID = "0123456789abcdef0123456789abcdef"


def _meta(path: str, data: bytes, uid: str = UID) -> dict:
    return {"trial_id": uid, "path": path, "sha256": hashlib.sha256(data).hexdigest()}


def test_a_file_is_kept_under_its_station_and_trial(tmp_path):
    sink = RecordingSink(tmp_path / "at-server")
    data = b"\x89MCAP0\r\n" + bytes(range(256)) * 40
    dest = sink.receive("lab-a-1", _meta(f"{UID}/{UID}.mcap", data), data)
    assert dest == tmp_path / "at-server" / "lab-a-1" / UID / f"{UID}.mcap"
    assert dest.read_bytes() == data and dest.stat().st_mode & 0o777 == 0o644
    clip = sink.receive("lab-a-1", _meta(f"{UID}.mp4", b"mp4"), b"mp4")
    assert clip.read_bytes() == b"mp4"
    # nothing else in the folder: the temporary name is gone
    assert sorted(p.name for p in (tmp_path / "at-server" / "lab-a-1").rglob("*")) == sorted(
        [UID, f"{UID}.mcap", f"{UID}.mp4"]
    )


@pytest.mark.parametrize(
    "station, path",
    [
        ("lab-a-1", f"../{UID}.mp4"),  # out of the station's folder
        ("lab-a-1", f"/{UID}.mp4"),  # absolute
        ("lab-a-1", f"{UID}/../../x"),
        ("lab-a-1", "ffffffffffffffffffffffffffffffff.mp4"),  # another trial's file
        ("lab-a-1", f"{UID}/a/b.mcap"),  # deeper than the layout
        ("lab-a-1", ""),
        ("../s2", f"{UID}.mp4"),  # a station name that is a path
        ("lab-a-1", f"{UID}/.hidden"),
    ],
)
def test_a_path_that_could_leave_the_folder_or_is_not_the_trials_is_refused(tmp_path, station, path):
    sink = RecordingSink(tmp_path / "at-server")
    with pytest.raises(StationsError):
        sink.receive(station, _meta(path, b"x"), b"x")
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_bytes_that_do_not_match_their_checksum_write_nothing(tmp_path):
    sink = RecordingSink(tmp_path / "at-server")
    meta = _meta(f"{UID}.mp4", b"the whole file")
    with pytest.raises(ChecksumMismatch):
        sink.receive("lab-a-1", meta, b"the whole")  # cut on the way
    with pytest.raises(StationsError):
        sink.receive("lab-a-1", {"trial_id": UID, "path": f"{UID}.mp4"}, b"x")  # no checksum
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_trials_files_are_its_bag_folder_its_clip_and_its_record(tmp_path):
    bag = tmp_path / UID
    bag.mkdir()
    (bag / f"{UID}.mcap").write_bytes(b"m")
    (bag / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n")
    (tmp_path / f"{UID}.mp4").write_bytes(b"v")
    (tmp_path / f"{UID}.json").write_text(json.dumps({"trial_id": UID}))
    (tmp_path / "ffffffffffffffffffffffffffffffff.mp4").write_bytes(b"other trial")
    got = [rel for rel, _ in recording_files(tmp_path, UID, {"bag": UID})]
    assert got == [f"{UID}/{UID}.mcap", f"{UID}/metadata.yaml", f"{UID}.mp4", f"{UID}.json"]
    assert recording_files(tmp_path, UID, None) == []  # not recorded
