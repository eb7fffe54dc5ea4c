"""The station: the trial machine driven through its ports (a scripted world: no ROS, no web), with
the real store where a test stores trials. One test per abort reason, the belief across trials, the
storage floor on the real disk."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from pointlab.bridge.study.store import Store
from pointlab.bridge.trials.machine import TrialRules
from pointlab.bridge.trials.outcomes import Refusal, RobotErrorInfo
from pointlab.bridge.trials.ports import ArmReply, Slot
from pointlab.bridge.trials.station import StationBusy, TrialSettings
from pointlab.bridge.trials.storage import DiskStorage
from pointlab.bridge.trials.timing import RevealRule
from pointlab.sim_mock.scripted_station import ScriptedWorld

NOW = TrialSettings(reveal=RevealRule(0.0, 0.0))


def run(station, agent="sim-oracle", text="pick up the ball", **kw):
    return asyncio.run(station.run_trial(agent, text, settings=kw.pop("settings", NOW), **kw))


def during_the_pick(world, st, act):
    """Run one trial and call ``act()`` once its pick has reached the arm; the trial's result."""

    async def go():
        task = asyncio.create_task(st.run_trial("sim-oracle", "pick up the ball", settings=NOW))
        while "pick" not in world.commands:
            await asyncio.sleep(0.01)
        act()
        return await task

    return asyncio.run(go()).result


def test_no_place_is_charged_after_a_failed_pick():
    world = ScriptedWorld(grasps=[False, True, True])
    st = world.station()
    first = run(st).result
    assert (first.action, first.robot_outcome) == ("pick", "done")
    assert st.belief.holding is False and st.belief.source == "physics"  # the fingers closed on nothing
    second = run(st).result
    assert second.action == "pick"  # a pick again, not a place charged to the agent
    third = run(st, text="put it in the bowl").result
    assert third.action == "place" and world.commands == ["pick", "home", "pick", "home", "place", "home"]


def test_operator_abort_mid_motion_halts_opens_homes_and_offers_the_same_slot():
    world = ScriptedWorld(motion_s=0.5)
    st = world.station()
    accepted = []
    res = during_the_pick(world, st, lambda: accepted.append(st.abort_current()))
    assert accepted == [True]
    assert (res.outcome, res.abort.code, res.robot_outcome) == ("aborted", "operator_abort", "halted")
    assert world.halts == 1 and world.stops == 0 and not st.stopped  # controlled: no e-stop
    assert world.commands == ["pick", "release", "home"]  # the pick slot: the gripper opened, then home
    assert st.next_action() == "pick" and st.start_problem() is None


def test_estop_mid_motion_is_an_estop_and_nothing_starts_until_reset():
    world = ScriptedWorld(motion_s=0.5)
    st = world.station()
    res = during_the_pick(world, st, st.emergency_stop)
    assert (res.outcome, res.abort.code) == ("aborted", "estop")
    with pytest.raises(StationBusy, match="stopped"):
        run(st)
    st.reset()
    # a reset never moves the arm (ISO 13850): it is where it stopped, so trials wait for Home arm
    assert world.commands == ["pick"]
    with pytest.raises(StationBusy, match="Home arm"):
        run(st)
    assert asyncio.run(st.home())["outcome"] == "done" and st.start_problem() is None
    assert run(st).result.robot_outcome == "done"
    assert world.commands == ["pick", "home", "pick", "home"]


def test_a_reset_with_nothing_stopped_allows_trials_at_once():
    world = ScriptedWorld()
    st = world.station()
    st.reset()
    assert st.needs_reset is None and st.start_problem() is None


def test_a_block_start_after_a_reset_homes_and_allows_trials():
    world = ScriptedWorld()
    st = world.station()
    st.emergency_stop()
    st.reset()
    assert "Home arm" in st.start_problem()
    assert st.start_problem(homes_first=True) is None  # a block start homes before anything else
    assert asyncio.run(st.reset_block())["outcome"] == "done"
    assert st.start_problem() is None


@pytest.mark.parametrize(
    "reason", ["robot_fault", "agent_error", "camera_error", "timeout", "no_storage", "system_error"]
)
def test_every_abort_reason_is_typed(reason, tmp_path):
    world = ScriptedWorld({"sim-oracle": (100.0, 80.0)}, human_agents=("human",))
    rules, agent, settings = TrialRules(), "sim-oracle", NOW
    if reason == "robot_fault":
        world.next_arm_reply = ArmReply(
            "robot_failure", error=RobotErrorInfo(type="ArmFaultError", detail="C31", code=31)
        )
    elif reason == "agent_error":
        agent = "ghost"  # the agent port knows no such model: an agent failure, not a crash
        world.agent_names.append("ghost")
    elif reason == "camera_error":
        world.camera_ok = False
    elif reason == "timeout":
        rules, agent = TrialRules(human_answer_s=0.2), "human"  # nobody clicks
    elif reason == "no_storage":
        settings = TrialSettings(reveal=RevealRule(0.3, 0.3), min_free_bytes=1000)
    elif reason == "system_error":
        world.next_arm_reply = ArmReply("refused", refusal=Refusal(code="bad_command", detail="not from this session"))
    st = world.station(rules=rules)
    if reason == "no_storage":

        async def go():  # the room goes while the trial waits for its reveal time
            task = asyncio.create_task(st.run_trial(agent, "pick up the ball", settings=settings))
            while not world.calls:
                await asyncio.sleep(0.01)
            world.free_bytes_value = 999
            return await task

        res = asyncio.run(go()).result
    else:
        res = run(st, agent, settings=settings).result
    assert res.outcome == "aborted" and res.abort.code == reason and res.failure_stage == "aborted"
    if reason in ("agent_error", "camera_error", "timeout", "no_storage"):
        assert "pick" not in world.commands  # nothing moved


def test_zero_motions_below_the_storage_floor_on_the_real_disk(tmp_path):
    world = ScriptedWorld()
    st = world.station()
    st.ports.storage = DiskStorage(tmp_path / "act.sqlite", tmp_path / "recordings")
    free = shutil.disk_usage(tmp_path).free
    above = TrialSettings(reveal=RevealRule(0.0, 0.0), min_free_bytes=free + 10**12)  # more than the disk has
    assert "not enough room" in st.start_problem(above)
    with pytest.raises(StationBusy, match="not enough room"):
        run(st, settings=above)
    assert world.commands == [] and world.calls == []
    ok = TrialSettings(reveal=RevealRule(0.0, 0.0), min_free_bytes=free // 2)
    assert run(st, settings=ok).result.robot_outcome == "done"


def test_a_trial_is_stored_in_its_slot_with_its_number_and_both_frames(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    sid = store.create_study(agents=["sim-oracle", "sim-noisy"], trials_per_agent=2)
    other = store.create_study(agents=["sim-oracle"], trials_per_agent=1)
    world = ScriptedWorld({"sim-oracle": (100.0, 80.0), "sim-noisy": None})
    st = world.station(store)
    a = run(st, slot=Slot(sid, None, 0))
    b = run(st, "sim-noisy", slot=Slot(sid, None, 1))  # an unreadable answer: refused, failed at once
    c = run(st, slot=Slot(other, None, 0))
    rows = {r["id"]: r for r in store.trials()}
    assert [rows[x.stored_id]["number"] for x in (a, b, c)] == [1, 2, 1]  # numbered per study
    assert (rows[b.stored_id]["outcome"], rows[b.stored_id]["failure_stage"]) == ("failed", "no_point")
    for ran in (a, b):  # a refusal has its after-image too
        for which in ("before", "after"):
            jpeg = store.trial_frame(ran.result.trial_id, which)
            assert jpeg[:2] == b"\xff\xd8" and jpeg == st.trial_jpeg(ran.result.trial_id, which)
    store.close()


def test_a_refusal_is_told_no_earlier_than_the_reveal_time():
    import time

    world = ScriptedWorld({"sim-noisy": None}, trial_delay_s=0.0)
    st = world.station()
    t0 = time.monotonic()
    res = run(st, "sim-noisy", settings=TrialSettings(reveal=RevealRule(0.6, 0.6))).result
    assert time.monotonic() - t0 >= 0.6 and res.robot_outcome == "refused"
    assert res.timings_s["reveal"] == 0.6 and res.timings_s["total"] >= 0.6


def test_a_cancelled_trial_halts_a_moving_arm():
    world = ScriptedWorld(motion_s=5.0)
    st = world.station()

    async def go():
        task = asyncio.create_task(st.run_trial("sim-oracle", "pick up the ball", settings=NOW))
        while "pick" not in world.commands:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert world.halts == 1 and not st.busy  # the motion was stopped and the station is free again


def test_abort_from_another_thread_is_answered_by_the_machine():
    """The console's route runs in a worker thread: it learns whether the machine took the abort."""
    import threading

    world = ScriptedWorld(motion_s=0.3)
    st = world.station()
    answers: list[bool] = []

    async def go():
        task = asyncio.create_task(st.run_trial("sim-oracle", "pick up the ball", settings=NOW))
        while "home" not in world.commands:  # the pick completed: too late to abort
            await asyncio.sleep(0.005)
        t = threading.Thread(target=lambda: answers.append(st.abort_current()))
        t.start()
        res = await task
        t.join()
        return res

    res = asyncio.run(go()).result
    assert answers == [False] and res.abort is None and res.robot_outcome == "done"
    assert st.abort_current() is False  # nothing runs


def test_headless_trials_stop_when_the_camera_gives_no_picture():
    """A recording that ended (or a camera unplugged): every attempt of a line is a camera_error abort,
    and the run stops there with what ran in its summary, rather than abort every line of the script."""
    from pointlab.bridge.trials.headless import run_scripted_trials

    world = ScriptedWorld()
    world.camera_ok = False
    script = [{"instruction": "pick up the ball"}] * 5
    out = run_scripted_trials(world.station(), "sim-oracle", script, max_repeats=2)
    assert len(out["trials"]) == 3 and out["aborted"] == 3 and out["judged"] == 0
    assert out["stopped"].startswith("the camera gave no picture in 3 trial(s) in a row")
    assert "stopped at line 1" in out["stopped"] and world.commands == []


def test_headless_skips_carry_their_round_and_aborts_are_no_stage_of_failure():
    """Two rounds of a pick-then-place script; the first round's pick holds nothing, so its place is
    skipped (listed with round 1, never charged); the second round's first pick has no picture
    (aborted, then repeated): the summary's stages count failures only, the abort is in ``aborted``."""
    from pointlab.bridge.trials.headless import run_scripted_trials

    world = ScriptedWorld(grasps=[False, True, True])
    st = world.station()
    script = [
        {"instruction": "pick up the ball", "expected": {"action": "pick"}},
        {"instruction": "put it in the bowl", "expected": {"action": "place"}},
    ]

    def progress(event):  # the camera gives no picture for the first attempt of round 2
        if event["event"] == "skipped":
            world.camera_ok = False
        elif event["event"] == "trial" and event["outcome"] == "aborted":
            world.camera_ok = True

    out = run_scripted_trials(st, "sim-oracle", script, settings=NOW, repeat=2, progress=progress)
    assert [(s["line"], s["round"]) for s in out["skipped"]] == [(2, 1)]
    # (the scripted world gives the automatic check no judgement: completed motions stay unjudged)
    assert [(t["action"], t["outcome"]) for t in out["trials"]] == [
        ("pick", None),
        ("pick", "aborted"),
        ("pick", None),
        ("place", None),
    ]
    assert out["trials"][1]["failure_stage"] == "aborted"  # the trial's own record keeps it
    assert out["aborted"] == 1 and out["unjudged"] == 3 and out["failure_stages"] == {}
