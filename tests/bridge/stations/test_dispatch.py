"""The dispatch rule (docs/stations.md "Dispatch"), worked by hand on small sequences."""

from __future__ import annotations

from pointlab.bridge.stations.dispatch import Dispatcher

TABLE = {"scene": "tabletop"}


def _two() -> Dispatcher:
    d = Dispatcher()
    d.station_up("s1", TABLE)
    d.station_up("s2", TABLE)
    return d


def test_one_participant_per_station_and_a_first_come_line():
    d = _two()
    assert d.request(10, "tabletop") == "s1"  # stations are given in name order
    assert d.request(11, "tabletop") == "s2"
    assert d.request(12, "tabletop") is None and d.position(12) == 0
    assert d.request(13, "tabletop") is None and d.position(13) == 1
    assert d.request(10, "tabletop") == "s1"  # a holder keeps its station
    d.release(10)  # 10's block is done: the first in line gets s1, not the later one
    assert d.station_of(12) == "s1" and d.station_of(13) is None and d.position(13) == 0


def test_a_station_is_only_given_for_its_scene():
    d = _two()
    d.station_up("k1", {"scene": "kitchen"})
    assert d.request(1, "kitchen") == "k1"
    assert d.request(2, "kitchen") is None
    assert d.request(3, "tabletop") == "s1"  # a later participant of another scene is not held up


def test_a_lost_station_puts_its_participant_at_the_front_of_the_line():
    d = _two()
    d.request(1, "tabletop"), d.request(2, "tabletop"), d.request(3, "tabletop")
    assert d.station_down("s1") == 1
    assert d.stations["s1"].status == "offline" and d.stations["s1"].lost == 1
    assert [p for p, _ in d.waiting] == [1, 3]
    assert d.request(1, "tabletop") is None  # s2 is still held by 2
    d.release(2)
    assert d.station_of(1) == "s2" and d.position(3) == 0


def test_an_offline_station_is_never_given_and_comes_back_idle():
    d = _two()
    d.station_down("s1")
    d.set_status("s1", "in_trial")  # a late status from a running call does not revive it
    assert d.stations["s1"].status == "offline"
    assert d.request(1, "tabletop") == "s2" and d.request(2, "tabletop") is None
    d.station_up("s1", TABLE)
    d.assign()
    assert d.station_of(2) == "s1"
    assert d.station_down("s1") == 2 and d.station_down("s1") is None  # once only
