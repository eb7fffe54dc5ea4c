"""Helpers of the ROS tests."""

from __future__ import annotations

import json


def string_msg(obj) -> object:
    """A ``std_msgs/String`` with ``obj`` as plain JSON: what a foreign or careless publisher sends
    (the nodes' own publishers use ``payloads.to_msg``)."""
    from std_msgs.msg import String

    return String(data=json.dumps(obj))
