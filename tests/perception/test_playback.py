"""The ``bag:`` playback options, the pacing clock and the laps of a looping playback
(``perception.playback``); the sources that use them are tested in test_rosbag_camera.py and
test_bag_playback.py."""

from __future__ import annotations

import threading
import time

import pytest

from pointlab.perception import CameraSourceError
from pointlab.perception.playback import DEFAULT_LAP_GAP_NS, Laps, PlaybackClock, PlaybackOptions, split_playback_spec


@pytest.mark.parametrize(
    "text, want",
    [
        ("", {}),
        ("rate=2", {"rate": 2.0}),
        ("rate=0.5,loop=0", {"rate": 0.5, "loop": False}),
        ("loop=yes,rate=max", {"loop": True, "rate": 0.0}),
        ("rate=0", {"rate": 0.0}),
        ("loop=OFF", {"loop": False}),
    ],
)
def test_options_parse(text, want):
    assert PlaybackOptions.parse(text) == want


@pytest.mark.parametrize(
    "text, names",
    [
        ("rate=fast", "bag option rate: .*'fast'"),
        ("rate=-1", "bag option rate: .*-1"),
        ("rate=nan", "bag option rate"),
        ("rate=inf", "bag option rate"),
        ("rate=", "bag option rate"),
        ("loop=maybe", "bag option loop: .*'maybe'"),
        ("speed=2", "unknown bag option 'speed'; known: rate, loop"),
        ("rate", "expected key=value"),
        ("rate=1,rate=2", "bag option rate is given twice"),
    ],
)
def test_bad_options_name_the_option(text, names):
    with pytest.raises(CameraSourceError, match=names):
        PlaybackOptions.parse(text)


def test_the_path_ends_at_the_hash_and_keywords_are_validated_too():
    assert split_playback_spec("rec/a1#rate=2") == ("rec/a1", {"rate": 2.0})
    assert split_playback_spec("rec/a1.mcap") == ("rec/a1.mcap", {})
    assert PlaybackOptions() == PlaybackOptions(rate=1.0, loop=True)
    for bad in (-0.5, float("nan"), "2"):
        with pytest.raises(CameraSourceError, match="rate"):
            PlaybackOptions(rate=bad)


def test_laps_keep_indices_and_times_moving_forward_across_the_wrap():
    laps = Laps()
    lap = [(0, 1_000), (1, 1_100), (2, 1_200), (3, 1_300)]  # 100 ns apart
    got = [laps.place(i, t) for i, t in lap]
    assert got == lap  # the first lap is the recording's own
    laps.next_lap()
    got = [laps.place(i, t) for i, t in lap]
    # one mean period after the last time served, then the recording's spacing
    assert got == [(4, 1_400), (5, 1_500), (6, 1_600), (7, 1_700)] and laps.lap == 1
    laps.next_lap()
    assert laps.place(*lap[0]) == (8, 1_800)


def test_a_lap_that_starts_elsewhere_or_has_one_frame_still_moves_forward():
    laps = Laps()
    assert [laps.place(n, t) for n, t in ((1, 500), (2, 600))] == [(1, 500), (2, 600)]
    laps.next_lap()  # the SDK's second lap begins at frame 0, earlier than the first lap did
    assert laps.place(0, 400) == (3, 700)
    one = Laps()
    one.place(7, 50)
    one.next_lap()
    assert one.place(7, 50) == (8, 50 + DEFAULT_LAP_GAP_NS)
    empty = Laps()
    empty.next_lap()  # nothing placed yet: no lap to end
    assert empty.place(0, 10) == (0, 10) and empty.lap == 0


def test_the_clock_serves_recorded_times_at_the_rate():
    clock = PlaybackClock(rate=2.0)
    t0 = time.monotonic()
    assert clock.wait(5_000_000_000)  # the first time starts the clock
    assert clock.wait(5_200_000_000)  # 0.2 s recorded at rate 2: 0.1 s later
    elapsed = time.monotonic() - t0
    assert 0.1 <= elapsed < 0.6, elapsed
    assert clock.due(5_000_000_000) == pytest.approx(clock.due(5_200_000_000) - 0.1)
    start = time.monotonic()
    assert clock.wait(5_100_000_000) and time.monotonic() - start < 0.05  # late (earlier time): at once


def test_an_unpaced_clock_never_waits_and_an_interrupt_ends_a_wait():
    fast = PlaybackClock(rate=0.0)
    t0 = time.monotonic()
    assert fast.wait(0) and fast.wait(3_600 * 10**9) and time.monotonic() - t0 < 0.05
    clock = PlaybackClock(rate=1.0)
    clock.wait(0)
    threading.Timer(0.1, clock.interrupt).start()
    t0 = time.monotonic()
    assert clock.wait(60 * 10**9) is False  # a minute away, interrupted after 0.1 s
    assert time.monotonic() - t0 < 5.0
