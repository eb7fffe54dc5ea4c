"""A second Point-Act session on the same ROS graph is refused before it connects an arm, and the
first session keeps working (two sessions in one domain would cross-talk: frames, and commands that
the other session's arm would execute)."""

from __future__ import annotations

import asyncio

import pytest

from pointlab.bridge.session import SessionConfig, SessionError, start_session

pytestmark = [pytest.mark.ros]


def test_second_session_on_the_same_graph_is_refused(ros_env):
    with start_session(SessionConfig(camera="sim", robot="sim", time_scale=0.02)) as first:
        with pytest.raises(SessionError, match=r"ROS_DOMAIN_ID=%d.*other publisher\(s\) on /camera/camera/color/image_raw"
                           % ros_env):
            start_session(SessionConfig(camera="sim", robot="sim", time_scale=0.02))
        arm_tcp_before = first.world.sim.arm.tcp_m.copy()
        res = asyncio.run(first.runner.run_trial("sim-oracle", "pick up the red cube"))
    assert res.robot_outcome == "done" and res.sim_success is True
    assert (first.world.sim.arm.tcp_m != arm_tcp_before).any()


def test_a_session_alone_starts(ros_env):
    with start_session(SessionConfig(camera="sim", robot="sim", time_scale=0.02)) as s:
        assert s.wait_ready(5.0)
