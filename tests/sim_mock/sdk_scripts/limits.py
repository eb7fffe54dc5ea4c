"""What a Lite 6 answers to targets made for an xArm 6 (ours, for the tests: the calls of
UFACTORY's 1001 and xarm6/2001 that a Lite 6 cannot do). Prints one JSON line.

Usage: python limits.py [IP]
"""

from __future__ import annotations

import json
import time

from _connect import make_ready, xarm_api

arm = xarm_api()
make_ready(arm)
out = {"home": arm.move_gohome(wait=True)}
# J3 of a Lite 6 ranges -3.5 .. 300 deg (an xArm 6's -225 .. 11): the SDK itself refuses -60
out["joint_out_of_range"] = arm.set_servo_angle(angle=[0, 0, -60, 0, 0, 0], speed=50, wait=True)
out["reach_ok"] = arm.set_position(x=300, y=0, z=150, roll=-180, pitch=0, yaw=0, speed=200, wait=True)
# 539 mm from the base axis: beyond the Lite 6's 440 mm reach
out["reach_far"] = arm.set_position(x=500, y=200, z=150, roll=-180, pitch=0, yaw=0, speed=300, wait=True)
out["err_warn"] = arm.get_err_warn_code()[1]
out["state"] = arm.get_state()[1]
out["after_error"] = arm.set_position(x=300, y=0, z=250, roll=-180, pitch=0, yaw=0, speed=200, wait=True)
out["position"] = arm.get_position()[1]
arm.clean_error()
arm.motion_enable(enable=True)
arm.set_state(state=0)
time.sleep(0.5)
out["after_reset"] = arm.set_position(x=300, y=0, z=250, roll=-180, pitch=0, yaw=0, speed=200, wait=True)
out["final_position"] = arm.get_position()[1]
arm.disconnect()
print(json.dumps(out))
