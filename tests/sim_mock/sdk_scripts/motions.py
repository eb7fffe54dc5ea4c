"""Home, joint, linear, relative and tool-frame moves with ``wait=True``, as a lab's first script
(ours, for the tests): the calls of UFACTORY's examples 1001, 1003, 1006 and xarm6/2001 with the
SDK's defaults. Prints one JSON line of results.

Usage: python motions.py [IP] [report_type]   (IP from ../robot.conf when absent)
"""

from __future__ import annotations

import json
import sys
import time

from _connect import make_ready, xarm_api

kwargs = {"report_type": sys.argv[2]} if len(sys.argv) >= 3 else {}
arm = xarm_api(**kwargs)
out = {"connected": arm.connected, "axis": arm.axis, "device_type": arm.device_type}
make_ready(arm)

out["home"] = arm.move_gohome(wait=True)
out["home_angles"] = arm.get_servo_angle()[1][:6]
out["home_position"] = arm.get_position()[1]
out["joint"] = arm.set_servo_angle(angle=[30, 20, 60, 0, 40, 0], speed=60, wait=True)
out["joint_angles"] = arm.get_servo_angle()[1][:6]
out["line"] = arm.set_position(x=250, y=0, z=150, roll=180, pitch=0, yaw=0, speed=150, wait=True)
out["line_position"] = arm.get_position()[1]
out["relative"] = arm.set_position(y=60, z=-30, relative=True, wait=True)
out["relative_position"] = arm.get_position()[1]
out["relative_joint"] = arm.set_servo_angle(angle=[10, 0, 0, 0, 0, 0], relative=True, wait=True)
out["relative_joint_angles"] = arm.get_servo_angle()[1][:6]
out["tool"] = arm.set_tool_position(z=20, wait=True)
out["tool_position"] = arm.get_position()[1]
time.sleep(0.3)  # one more report
out["reported_position"] = arm.position
out["reported_state"] = arm.state
out["err_warn"] = arm.get_err_warn_code()[1]
out["tcp_speed_limit"] = arm.tcp_speed_limit
arm.disconnect()
print(json.dumps(out))
