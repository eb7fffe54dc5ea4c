"""``Station.release`` over the whole node set in sim: the operator's "open the gripper" drops what
a pick left held, the next trial is a pick again, and an e-stopped arm refuses it."""

from __future__ import annotations

import asyncio
import time

import pytest

from pointlab.bridge.session import SessionConfig, start_session
from tests.bridge.ros.helpers import run_trial

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def test_release_after_a_pick_and_refused_when_stopped(ros_env):
    with start_session(SessionConfig(camera="sim", robot="sim", time_scale=0.02)) as s:
        assert run_trial(s, "sim-oracle", "pick up the red cube").robot_outcome == "done"
        assert s.station.holding() and s.world.sim.snapshot()["_arm"]["attached"] == "red cube"
        assert s.station.belief.source == "physics" and s.station.belief.object == "red cube"
        tcp = s.world.sim.snapshot()["_arm"]["tcp_m"]
        out = asyncio.run(s.station.release())
        assert out == {"outcome": "done", "error": None, "holding": False}
        assert s.station.belief.source == "operator"
        snap = s.world.sim.snapshot()
        assert snap["_arm"]["attached"] is None  # opened
        assert snap["_arm"]["tcp_m"] == pytest.approx(tcp, abs=5e-4)  # did not move (the servos hold)
        assert snap["red cube"]["position_m"][2] == pytest.approx(0.0, abs=0.002)  # fell onto the table
        # the belief is cleared, so the next trial picks again (the green cube, still on the table)
        again = run_trial(s, "sim-oracle", "pick up the green cube")
        assert again.action == "pick" and again.robot_outcome == "done"
        s.ports.arm_client.emergency_stop()  # the arm's own stop, not the station's: the state says so
        deadline = time.monotonic() + 5
        while not s.ports.arm.state().get("estopped"):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        stopped = asyncio.run(s.station.release())
        assert stopped["outcome"] == "stopped" and stopped["holding"] is True
        assert s.world.sim.snapshot()["_arm"]["attached"] == "green cube"
