"""How every script here reaches the arm: the way UFACTORY's examples do (the IP from argv or from
``../robot.conf``), refusing anything but a loopback address, with the SDK's defaults.

``POINTLAB_TEST_XARM_PORT`` is set by the tests only where port 502 could not be bound (no
privileges): the SDK has no port argument, so its one constant is changed before connecting.
"""

from __future__ import annotations

import configparser
import ipaddress
import os
import sys
import time


def robot_ip() -> str:
    if len(sys.argv) >= 2:
        ip = sys.argv[1]
    else:
        parser = configparser.ConfigParser()
        parser.read("../robot.conf")
        ip = parser.get("xArm", "ip")
    if not ipaddress.ip_address(ip).is_loopback:
        sys.exit(f"refusing to connect to {ip}: these scripts talk to the emulator on 127.0.0.0/8 only")
    return ip


def xarm_api(**kwargs):
    port = os.environ.get("POINTLAB_TEST_XARM_PORT")
    if port:
        from xarm.core.config.x_config import XCONF

        XCONF.SocketConf.TCP_CONTROL_PORT = int(port)
    from xarm.wrapper import XArmAPI

    return XArmAPI(robot_ip(), **kwargs)


def make_ready(arm) -> None:
    """The bring-up of UFACTORY's examples, then 0.5 s as their 1008 waits: a motion sent right after
    a state change may be dropped."""
    arm.motion_enable(enable=True)
    arm.set_mode(0)
    arm.set_state(state=0)
    time.sleep(0.5)
