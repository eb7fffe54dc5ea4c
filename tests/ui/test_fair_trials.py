"""Fair trials over the real session (ROS node set, sim arm and camera) and the served web app:
an e-stop mid-trial gives an aborted trial that is not asked, the slot offered again and an
unchanged success rate; the next agent's block starts homed, with the gripper open and the scene
restored exactly; the operator's abort works before the answer."""

from __future__ import annotations

import json
import time

import httpx
import numpy as np
import pytest
from websockets.sync.client import connect

from .act_live import live_act

pytestmark = [pytest.mark.ros, pytest.mark.slow]


class Participant:
    def __init__(self, base_url: str, token: str) -> None:
        self._cm = connect(base_url.replace("http://", "ws://") + f"/ws/participant?token={token}")
        self.ws = self._cm.__enter__()
        self.seen: list[dict] = []

    def send(self, obj: dict) -> None:
        self.ws.send(json.dumps(obj))

    def recv(self, *types: str, timeout_s: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            m = self.ws.recv(timeout=max(0.1, deadline - time.monotonic()))
            if isinstance(m, str):
                obj = json.loads(m)
                self.seen.append(obj)
                if obj["type"] in types:
                    return obj

    def state(self, pred, timeout_s: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            s = self.recv("state", timeout_s=max(0.1, deadline - time.monotonic()))
            if pred(s):
                return s

    def close(self) -> None:
        self._cm.__exit__(None, None, None)


def _scene(world) -> dict:
    snap = world.snapshot()
    return {k: np.round(v["position_m"], 6).tolist() for k, v in snap.items() if not k.startswith("_")}


def test_estop_mid_trial_aborts_repeats_and_leaves_the_rate_alone_and_blocks_start_restored(tmp_path, ros_env):
    with live_act(tmp_path / "fair.sqlite", ros_env, time_scale=0.5) as live:
        world = live.session.world.sim
        start_scene, home_tcp = _scene(world), world.snapshot()["_arm"]["tcp_m"]
        op = httpx.Client(
            base_url=live.base_url, headers={"Authorization": f"Bearer {live.operator_token}"}, timeout=30
        )
        sid = op.post(
            "/api/studies",
            json={"agents": ["sim-oracle", "sim-noisy"], "trials_per_agent": 1, "reveal_low_s": 0, "reveal_high_s": 0},
        ).json()["id"]
        inv = op.post(f"/api/studies/{sid}/participants", json={}).json()
        p = Participant(live.base_url, inv["token"])
        try:
            p.state(lambda s: s["step"]["kind"] == "setup")
            p.send({"type": "start_block"})
            p.recv("block_started")
            p.send({"type": "instruction", "text": "pick up the red cube"})
            p.recv("trial_started")
            deadline = time.monotonic() + 20
            while not world.arm.moving:  # the e-stop comes in the middle of the motion
                assert time.monotonic() < deadline, "the arm never moved"
                time.sleep(0.01)
            assert op.post("/api/arm/stop").status_code == 200
            res = p.recv("trial_result")
            assert res["outcome"] == "aborted" and "does not count" in res["message"]
            # not a question: the same slot is offered again, marked as a repeat
            assert op.post("/api/arm/reset").status_code == 200
            s = p.state(lambda s: not s["stopped"])
            assert s["not_ready"] is True  # the arm is where it stopped: the page says, please wait
            assert s["step"]["kind"] == "trial" and s["step"]["trial_number"] == 1 and s["step"]["repeat"]
            row = live.store.trials(study_id=sid)[0]
            assert (row["outcome"], row["abort"]["code"], row["failure_stage"]) == ("aborted", "estop", "aborted")
            # the reset did not move the arm: it is where it stopped, so no trial until it is homed
            p.send({"type": "instruction", "text": "pick up the red cube"})
            assert "Home arm" in p.recv("error")["error"]
            assert op.post("/api/arm/home").json() == {"homed": True}
            p.state(lambda s: not s["not_ready"])
            # the repeat: after the stop the arm may be anywhere and hold anything; it picks again
            p.send({"type": "instruction", "text": "pick up the red cube"})
            res = p.recv("trial_result", timeout_s=60)
            assert res["outcome"] == "done"
            # its recording ended with the trial, before anybody judged it: whole, not cut by a timer
            rec = live.store.trial(res["trial_id"])["recording"]
            assert rec["ended_by"] == "end" and rec["complete"] and rec["color_frames"] > 0, rec
            p.send({"type": "judge", "trial_id": res["trial_id"], "judgement": "succeeded"})
            p.recv("judged")
            results = op.get(f"/api/results?study_id={sid}").json()
            oracle = next(a for a in results["agents"] if a["agent"] == "sim-oracle")
            assert (oracle["n_trials"], oracle["n_aborted"], oracle["n_judged"], oracle["success_rate"]) == (
                2,
                1,
                1,
                1.0,
            )
            p.send({"type": "sus", "block": 0, "responses": [3] * 10})
            p.recv("sus_saved")
            # the next agent's block: the arm held the cube; the block start opens, homes and restores
            assert world.arm.attached == "red cube"
            p.state(lambda s: s["step"]["kind"] == "setup" and s["step"]["block"] == 1)
            p.send({"type": "start_block"})
            assert p.recv("block_started")["alias"] == "Agent 2"
            assert world.arm.attached is None and _scene(world) == start_scene
            np.testing.assert_allclose(world.snapshot()["_arm"]["tcp_m"], home_tcp, atol=1e-6)
            s = p.state(lambda s: s["step"]["kind"] == "trial")
            assert s["action"] == "pick"
            starts = live.store.block_starts(study_id=sid, with_frames=True)
            assert [(b["block"], b["method"]) for b in starts] == [(0, "sim_reset"), (1, "sim_reset")]
            assert all(b["frame_jpeg"][:2] == b"\xff\xd8" for b in starts)
        finally:
            p.close()
            op.close()


def test_operator_abort_before_the_answer(tmp_path, ros_env):
    with live_act(tmp_path / "abort.sqlite", ros_env) as live:
        op = httpx.Client(
            base_url=live.base_url, headers={"Authorization": f"Bearer {live.operator_token}"}, timeout=30
        )
        sid = op.post(
            "/api/studies", json={"agents": ["human"], "trials_per_agent": 1, "reveal_low_s": 0, "reveal_high_s": 0}
        ).json()["id"]
        inv = op.post(f"/api/studies/{sid}/participants", json={}).json()
        p = Participant(live.base_url, inv["token"])
        try:
            assert op.post("/api/trials/abort").status_code == 409  # nothing runs
            p.state(lambda s: s["step"]["kind"] == "setup")
            p.send({"type": "start_block"})
            p.recv("block_started")
            p.send({"type": "instruction", "text": "pick up the red cube"})
            deadline = time.monotonic() + 20
            while not op.get("/api/human-requests").json():  # the human reference has not clicked yet
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert op.post("/api/trials/abort").json() == {"aborted": True}
            res = p.recv("trial_result")
            assert res["outcome"] == "aborted" and "operator stopped the trial" in res["message"]
            row = live.store.trials(study_id=sid)[0]
            assert row["abort"]["code"] == "operator_abort"
            assert "pick" not in [c["action"] for c in live.session.arm_node.commands_received]  # nothing moved
            assert p.state(lambda s: s["step"]["kind"] == "trial")["step"]["repeat"]
        finally:
            p.close()
            op.close()
