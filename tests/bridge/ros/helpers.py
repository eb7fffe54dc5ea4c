"""Helpers of the ROS tests."""

from __future__ import annotations

import json


def string_msg(obj) -> object:
    """A ``std_msgs/String`` with ``obj`` as plain JSON: what a foreign or careless publisher sends
    (the nodes' own publishers use ``payloads.to_msg``)."""
    from std_msgs.msg import String

    return String(data=json.dumps(obj))


def run_trial(session, agent: str, instruction: str, **kw):
    """One headless trial on a started session's station (no reveal wait, judged by the automatic
    check): its ``TrialResult``."""
    import asyncio

    from pointlab.bridge.trials.headless import HEADLESS_SETTINGS

    kw.setdefault("auto_judge", True)
    return asyncio.run(session.station.run_trial(agent, instruction, settings=HEADLESS_SETTINGS, **kw)).result


async def run_trial_async(session, agent: str, instruction: str, **kw):
    """``run_trial`` inside a running event loop."""
    from pointlab.bridge.trials.headless import HEADLESS_SETTINGS

    kw.setdefault("auto_judge", True)
    return (await session.station.run_trial(agent, instruction, settings=HEADLESS_SETTINGS, **kw)).result
