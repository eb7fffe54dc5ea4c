"""Cached motions, a pause instruction and the counter (ours, for the tests: the calls of
UFACTORY's 1004 and 1007 with wait=False). Prints one JSON line.

Usage: python cached_motions.py [IP]
"""

from __future__ import annotations

import json
import time

from _connect import make_ready, xarm_api

arm = xarm_api()
make_ready(arm)
arm.set_position(x=250, y=0, z=150, roll=-180, pitch=0, yaw=0, speed=200, wait=True)
arm.set_counter_reset()
codes = []
for _ in range(2):
    for y in (60, -60, 0):
        codes.append(arm.set_position(x=250, y=y, z=150, roll=-180, pitch=0, yaw=0, speed=200, radius=0, wait=False))
    codes.append(arm.set_pause_time(0.2))
    codes.append(arm.set_counter_increase())
out = {"codes": codes, "cached": arm.get_cmdnum()[1], "state_while_queued": arm.get_state()[1]}
# the last move waits for the whole cache: the controller runs its commands in order
out["wait"] = arm.set_position(x=250, y=0, z=100, roll=-180, pitch=0, yaw=0, speed=200, wait=True)
time.sleep(0.3)  # one more rich report
out["cached_after"] = arm.get_cmdnum()[1]
out["counter"] = arm.count
out["position"] = arm.get_position()[1]
arm.disconnect()
print(json.dumps(out))
