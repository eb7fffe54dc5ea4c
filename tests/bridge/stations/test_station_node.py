"""A study server and a station over real Zenoh sessions in this process (the station's world is the
scripted one of the web app's tests, so a trial takes a known time and its arm commands are counted).

- records: stored once by trial id, the repeat acknowledged; a record delivered under another
  station's key, or malformed, is refused and stores nothing;
- the server going away mid-motion: the station halts its arm by itself, keeps its record, and
  delivers it to the restarted server, which finds the station again from its token.
"""

from __future__ import annotations

import json
import time

import pytest

from pointlab.bridge.stations.journal import Journal
from pointlab.bridge.stations.server import StudyServer
from pointlab.bridge.stations.station_node import StationNode
from pointlab.bridge.stations.wire import Offer, StationsError, TrialRecord, zenoh_config
from pointlab.bridge.trials.record import TrialResult
from pointlab.sim_mock.scripted_station import ScriptedWorld
from tests.bridge.stations.support import Relay, ThreadLoop, free_port, wait_for

pytestmark = pytest.mark.slow


def _record(uid: str, station: str, slot: dict) -> TrialRecord:
    result = TrialResult(trial_id=uid, agent="sim-oracle", instruction="pick up the cube", action="pick")
    return TrialRecord(station=station, slot=slot, result=result.model_dump(mode="json"))


def test_records_are_stored_once_and_a_record_under_another_name_is_refused(study):
    import zenoh

    store, p = study
    port = free_port()
    loop = ThreadLoop()
    server = StudyServer(store, listen=[f"tcp/127.0.0.1:{port}"])
    server.start(loop.loop)
    client = zenoh.open(zenoh_config(mode="client", connect=[f"tcp/127.0.0.1:{port}"]))
    try:
        slot = {"study_id": p["study_id"], "participant_id": p["id"], "block": 0}

        def deliver(key: str, payload: bytes) -> dict:
            got = [json.loads(r.ok.payload.to_bytes()) for r in client.get(key, payload=payload, timeout=10) if r.ok]
            assert len(got) == 1
            return got[0]

        rec = _record("d" * 32, "s1", slot).model_dump_json().encode()
        first = deliver("pointlab/server/records/s1", rec)
        again = deliver("pointlab/server/records/s1", rec)
        assert first["ok"] and not first["duplicate"] and again["ok"] and again["duplicate"]
        assert first["trial_row"] == again["trial_row"] and len(store.trials()) == 1
        # s2 delivering a record that says s1: refused, nothing stored
        other = _record("e" * 32, "s1", slot).model_dump_json().encode()
        assert deliver("pointlab/server/records/s2", other) | {"error": ""} == {
            "ok": False,
            "refused": True,
            "error": "",
        }
        assert deliver("pointlab/server/records/s1", b'{"station": "s1"')["refused"] is True  # cut JSON
        bad_slot = _record("f" * 32, "s1", {**slot, "participant_id": 999}).model_dump_json().encode()
        assert deliver("pointlab/server/records/s1", bad_slot)["refused"] is True  # unknown participant
        assert [t["trial_uid"] for t in store.trials()] == ["d" * 32]
        assert server.stats == {"records": 1, "duplicates": 1, "refused": 3, "lost_trials": 0, "recording_files": 0}
    finally:
        client.close()
        server.close()
        loop.stop()


def test_the_station_halts_when_the_server_goes_and_delivers_to_the_restarted_server(study, tmp_path):
    store, p = study
    port = free_port()
    endpoint = f"tcp/127.0.0.1:{port}"
    world = ScriptedWorld(motion_s=3.0)  # the pick's motion lasts 3 s: the server goes during it
    station = world.station()
    offer = Offer(name="s1", scene="tabletop", arm="sim", camera="sim", sim=True, agents=world.agent_names)
    loop = ThreadLoop()
    server = StudyServer(store, listen=[endpoint], lease_s=1.0)
    server.start(loop.loop)
    node = StationNode(station, offer, Journal(tmp_path / "s1.sqlite", "s1"), connect=[endpoint], lease_s=1.0)
    try:
        assert node.wait_server(20)
        wait_for(
            lambda: server.dispatch.stations.get("s1") and server.dispatch.stations["s1"].status == "idle",
            20,
            "s1 idle",
        )
        loop.run(server.start_block(p))
        assert world.scene_restores == 1  # the block's reset ran on the station
        # the stored starting frame was taken after the restore (not the server's live copy from before)
        (start,) = store.block_starts(participant_id=p["id"], with_frames=True)
        assert start["frame_index"] >= world.restored_at_index + 2 and start["frame_jpeg"][:2] == b"\xff\xd8"
        trial = loop.submit(server.run_trial(p, "pick up the red disc"))
        wait_for(lambda: "pick" in world.commands, 20, "the pick to be commanded")
        loop.loop.call_soon_threadsafe(server.close)  # the server goes in the middle of the motion
        wait_for(lambda: node.halts_on_server_loss == 1, 20, "the station to halt on its own")
        assert world.halts == 1
        lost_row = trial.result(30)  # the server stored the trial it lost as station_lost
        assert store.trial(lost_row)["abort"]["code"] == "station_lost"
        (kept,) = wait_for(lambda: node.journal.undelivered(), 20, "the station's own record in its journal")
        assert kept.result["trial_id"] == store.trial(lost_row)["trial_uid"]
        assert kept.result["abort"]["code"] == "operator_abort"  # its own view: a controlled stop

        again = StudyServer(store, listen=[endpoint])  # the server is back on the same endpoint
        again.start(loop.loop)
        try:
            wait_for(
                lambda: again.dispatch.stations.get("s1") and again.dispatch.stations["s1"].status == "idle",
                30,
                "found",
            )
            wait_for(lambda: node.journal.counts()["undelivered"] == 0, 30, "the journal delivered")
            assert again.stats["duplicates"] == 1 and again.stats["records"] == 0  # the trial is stored once
            assert len(store.trials()) == 1
            # the console's e-stop reaches the station, which stops its arm itself
            assert loop.run(again.estop_all()) == {"s1": True}
            assert station.stopped and world.stops == 1
            # the console's Reset then Home on that station: trials are allowed again
            assert loop.run(again.command("s1", "reset"))["ok"] and not station.stopped
            assert station.needs_reset is not None  # a reset never moves the arm: it waits for Home
            assert loop.run(again.command("s1", "home"))["ok"] and station.needs_reset is None
        finally:
            again.close()
    finally:
        node.close()
        server.close()
        loop.stop()


def test_a_station_that_reaches_no_server_says_so_after_its_connect_timeout(tmp_path):
    from pointlab.bridge.stations.wire import StationsError

    world = ScriptedWorld()
    offer = Offer(name="s9", scene="tabletop", arm="sim", camera="sim", sim=True, agents=world.agent_names)
    t0 = time.monotonic()
    with pytest.raises(StationsError, match="no study server at .* accepted this station"):
        StationNode(
            world.station(),
            offer,
            Journal(tmp_path / "s9.sqlite", "s9"),
            connect=[f"tcp/127.0.0.1:{free_port()}"],  # nothing listens there
            connect_timeout_s=2.0,
        )
    assert time.monotonic() - t0 < 30  # it gave up instead of retrying forever


def test_a_network_cut_mid_trial_is_station_lost_at_the_server_and_a_halt_at_the_station(study, tmp_path):
    """A pulled cable, not a kill: no FIN, no reset; each side notices through Zenoh's lease only."""
    store, p = study
    port = free_port()
    loop = ThreadLoop()
    server = StudyServer(store, listen=[f"tcp/127.0.0.1:{port}"], lease_s=1.0)
    server.start(loop.loop)
    relay = Relay(port)
    world = ScriptedWorld(motion_s=6.0)
    station = world.station()
    offer = Offer(name="s1", scene="tabletop", arm="sim", camera="sim", sim=True, agents=world.agent_names)
    node = StationNode(station, offer, Journal(tmp_path / "s1.sqlite", "s1"), connect=[relay.endpoint], lease_s=1.0)
    try:
        wait_for(
            lambda: server.dispatch.stations.get("s1") and server.dispatch.stations["s1"].status == "idle", 20, "idle"
        )
        loop.run(server.start_block(p))
        trial = loop.submit(server.run_trial(p, "pick up the red disc"))
        wait_for(lambda: "pick" in world.commands, 20, "the pick to be commanded")
        relay.cut()
        lost_row = trial.result(30)  # the server's side: the lease ran out
        assert store.trial(lost_row)["abort"]["code"] == "station_lost"
        assert server.dispatch.stations["s1"].status == "offline"
        wait_for(lambda: node.halts_on_server_loss == 1, 20, "the station to halt on its own")
        assert world.halts == 1
        relay.heal()  # the cable is back: the station reconnects by itself and delivers its record
        wait_for(lambda: server.dispatch.stations["s1"].status == "idle", 30, "the station back")
        # its halted trial finishes (the controlled stop's recovery) and is delivered
        wait_for(
            lambda: (
                node.journal.counts() == {"finished": 1, "undelivered": 0, "refused": 0, "recordings_undelivered": 0}
            ),
            60,
            "delivered",
        )
        assert server.stats["duplicates"] == 1 and len(store.trials()) == 1  # one trial, the server's record
    finally:
        node.close()
        relay.close()
        server.close()
        loop.stop()


def test_a_second_station_with_the_same_name_is_refused(study, tmp_path):
    store, _p = study
    port = free_port()
    loop = ThreadLoop()
    server = StudyServer(store, listen=[f"tcp/127.0.0.1:{port}"])
    server.start(loop.loop)
    world = ScriptedWorld()
    offer = Offer(name="s1", scene="tabletop", arm="sim", camera="sim", sim=True, agents=world.agent_names)
    first = StationNode(world.station(), offer, Journal(tmp_path / "a.sqlite", "s1"), connect=[f"tcp/127.0.0.1:{port}"])
    try:
        wait_for(lambda: "s1" in server.dispatch.stations, 20, "the first s1")
        with pytest.raises(StationsError, match="a station named 's1' is already connected"):
            StationNode(
                ScriptedWorld().station(),
                offer,
                Journal(tmp_path / "b.sqlite", "s1"),
                connect=[f"tcp/127.0.0.1:{port}"],
            )
        # the first one still takes commands, alone
        assert loop.run(server.command("s1", "state"))["ok"]
    finally:
        first.close()
        server.close()
        loop.stop()


def test_a_station_lost_between_the_halves_of_an_episode_never_uses_a_repeat(tmp_path):
    """Pairwise: A runs on the station, then the station is gone when B's reset is asked (here: the
    reset's reply is the one a vanished station gives). B is stored as a station_lost abort linked to
    the episode, the episode is void, and even with no repeats at all its slot is offered again."""
    from pointlab.bridge.stations.server import ServerBusy
    from pointlab.bridge.study.design import invite_participant
    from pointlab.bridge.study.steps import step_of
    from pointlab.bridge.study.store import Store

    store = Store(tmp_path / "study.sqlite")
    sid = store.create_study(
        agents=["sim-oracle", "sim-noisy"], trials_per_agent=1, max_repeats=0, scene="tabletop", mode="pairwise",
        reveal_low_s=0.0, reveal_high_s=0.0,
    )  # fmt: skip
    p = store.participant(invite_participant(store, sid, label="P1")[0])
    port = free_port()
    loop = ThreadLoop()
    server = StudyServer(store, listen=[f"tcp/127.0.0.1:{port}"])
    server.start(loop.loop)
    world = ScriptedWorld(trial_delay_s=0.1, motion_s=0.1)
    offer = Offer(name="s1", scene="tabletop", arm="sim", camera="sim", sim=True, agents=world.agent_names)
    node = StationNode(world.station(), offer, Journal(tmp_path / "s1.sqlite", "s1"), connect=[f"tcp/127.0.0.1:{port}"])
    real_reset, calls = server._reset, []

    async def reset_then_vanish(name):
        calls.append(name)
        return await real_reset(name) if len(calls) == 1 else {"ok": False, "lost": True, "error": "gone"}

    server._reset = reset_then_vanish
    try:
        wait_for(
            lambda: server.dispatch.stations.get("s1") and server.dispatch.stations["s1"].status == "idle", 20, "idle"
        )
        with pytest.raises(ServerBusy, match="went offline"):
            loop.run(server.run_episode(p, "pick up the red disc"))
        (ep,) = store.episodes(study_id=sid)
        a, b = store.trial(ep["trial_a_id"]), store.trial(ep["trial_b_id"])
        assert a["station"] == "s1" and a["outcome"] != "aborted" and a["agent"] == ep["agent_a"]
        assert (b["outcome"], b["abort"]["code"], b["agent"]) == ("aborted", "station_lost", ep["agent_b"])
        assert ep["finished_unix_s"] is not None and server.dispatch.stations["s1"].status == "offline"
        step = step_of(store, p)
        assert (step.kind, step.trial_number, step.repeat) == ("trial", 1, True)  # no repeat used
    finally:
        node.close()
        server.close()
        loop.stop()
        store.close()
