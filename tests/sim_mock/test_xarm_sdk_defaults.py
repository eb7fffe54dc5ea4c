"""The unmodified SDK, with its defaults (``XArmAPI(ip)``: command port 502, the rich report on
30002), against the emulator: scripts of our own (``sdk_scripts/``) that make the calls of
UFACTORY's examples, each run as its own process the way a lab runs them, reading the IP from
``../robot.conf`` (set here to the emulator's loopback address: nothing else is ever contacted).

Expected values by hand:
- home is every joint at 0; there the flange (no TCP offset is set) is at (87, 0, 153.6) mm with
  roll 180 deg (the URDF joint table of xarm_ros2);
- a relative J1 turn of +10 deg carries the TCP at (250, 60) mm to (250 cos 10 - 60 sin 10,
  250 sin 10 + 60 cos 10) = (235.78, 102.50) mm and adds 10 deg of yaw; a tool-frame z of +20 mm with
  the tool pointing down lowers the TCP by 20 mm;
- trapezoid times: home from the power-on joints moves J3 furthest, 1.1 rad at the SDK's default
  20 deg/s (0.3491 rad/s) and 500 deg/s^2 (8.727 rad/s^2): 1.1 / 0.3491 + 0.3491 / 8.727 = 3.191 s;
  the joint move turns J3 60 deg at 60 deg/s: 1 + 1.0472 / 8.727 = 1.120 s; the relative line of
  hypot(60, 30) = 67.08 mm at the previous call's 150 mm/s and 2000 mm/s^2: 0.447 + 0.075 = 0.522 s.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pointlab.sim_mock.xarm_controller import XArmControllerEmulator

pytest.importorskip("xarm")

SCRIPTS = Path(__file__).parent / "sdk_scripts"
TIME_SCALE = 0.25  # large enough that no motion here is under the emulator's 0.1 s floor
SDK_TROUBLE = re.compile(r"\[SDK\]\[(ERROR|WARNING)\]|ReportDataException|report data error|Traceback")


def emulator_on_502(**kw) -> tuple[XArmControllerEmulator, dict]:
    """An emulator on a random 127.x.y.z, on the SDK's port 502 when it can be bound; else on a
    free port that the scripts are told about (the one deviation from the SDK's defaults)."""
    try:
        return XArmControllerEmulator.start_on_free_loopback(502, time_scale=TIME_SCALE, **kw), {}
    except PermissionError:  # not root: any free port, told to the scripts
        emu = XArmControllerEmulator.start_on_free_loopback(0, time_scale=TIME_SCALE, **kw)
        return emu, {"POINTLAB_TEST_XARM_PORT": str(emu.port)}


def run_script(
    tmp_path: Path, name: str, *args: str, timeout: float = 60.0
) -> tuple[dict, str, XArmControllerEmulator]:
    emu, env = emulator_on_502()
    try:
        workdir = tmp_path / "scripts"
        workdir.mkdir()
        (tmp_path / "robot.conf").write_text(f"[xArm]\nip = {emu.host}\n")
        for f in SCRIPTS.glob("*.py"):
            (workdir / f.name).write_text(f.read_text())
        argv = [a.format(ip=emu.host) for a in args]  # "{ip}": the emulator's address on the command line
        proc = subprocess.run(
            [sys.executable, name, *argv],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
        )
    finally:
        emu.stop()
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    return json.loads(proc.stdout.strip().splitlines()[-1]), output, emu


@pytest.mark.slow
@pytest.mark.parametrize("report_type", [None, "normal", "real"])
def test_home_joint_linear_relative_and_tool_moves_with_wait(tmp_path, report_type):
    # with no arguments the script reads the IP from ../robot.conf, as UFACTORY's examples do
    out, output, emu = run_script(tmp_path, "motions.py", *([] if report_type is None else ["{ip}", report_type]))
    assert not SDK_TROUBLE.search(output), output  # no parse errors, no API errors in the SDK's log
    assert out["connected"] and (out["axis"], out["device_type"]) == (6, 9)
    for call in ("home", "joint", "line", "relative", "relative_joint", "tool"):
        assert out[call] == 0, call
    assert out["home_angles"] == pytest.approx([0.0] * 6, abs=1e-3)
    assert out["home_position"][:3] == pytest.approx([87.0, 0.0, 153.6], abs=0.05)
    assert abs(out["home_position"][3]) == pytest.approx(180.0, abs=0.01)
    assert out["joint_angles"] == pytest.approx([30, 20, 60, 0, 40, 0], abs=1e-3)
    assert out["line_position"][:3] == pytest.approx([250.0, 0.0, 150.0], abs=0.01)
    assert out["relative_position"][:3] == pytest.approx([250.0, 60.0, 120.0], abs=0.01)
    assert out["relative_joint_angles"][0] - out["joint_angles"][0] != 0  # J1 turned from the line's pose
    assert out["tool_position"][:3] == pytest.approx([235.78, 102.50, 100.0], abs=0.05)
    assert out["tool_position"][5] == pytest.approx(10.0, abs=0.01)  # yaw
    assert out["reported_position"][:3] == pytest.approx(out["tool_position"][:3], abs=0.05)  # from the report
    assert out["reported_state"] == 2 and out["err_warn"] == [0, 0]
    if report_type is None:  # only the rich report carries the limits
        assert out["tcp_speed_limit"] == pytest.approx([0.1, 500.0])
    log = emu.entries()
    assert [e["name"] for e in log if e["name"].startswith("move")] == [
        "move_home",
        "move_joint",
        "move_line",
        "move_relative",
        "move_relative",
        "move_line",
    ]
    durations = [e["duration_s"] / TIME_SCALE for e in log if e["name"].startswith("move")]
    assert durations[0] == pytest.approx(3.191, abs=0.01)
    assert durations[1] == pytest.approx(1.120, abs=0.005)
    assert durations[3] == pytest.approx(0.522, abs=0.005)


@pytest.mark.slow
def test_targets_a_lite6_cannot_reach_end_as_on_a_real_one(tmp_path):
    out, output, emu = run_script(tmp_path, "limits.py")
    assert out["home"] == 0
    assert out["joint_out_of_range"] == -8  # refused by the SDK itself for a Lite 6 (type 9): nothing sent
    assert out["reach_ok"] == 0
    assert out["reach_far"] == 1 and out["err_warn"][0] == 21 and out["state"] == 4  # C21, stopped
    assert out["after_error"] == 1  # refused until the error is cleared
    assert out["position"][:3] == pytest.approx([300.0, 0.0, 150.0], abs=0.01)  # it stayed where it was
    assert out["after_reset"] == 0
    assert out["final_position"][:3] == pytest.approx([300.0, 0.0, 250.0], abs=0.01)
    assert [e["result"] for e in emu.entries("move_line")] == ["ok", "unreachable", "refused_error", "ok"]
    assert not emu.entries("move_joint")


@pytest.mark.slow
def test_cached_motions_pauses_and_the_counter(tmp_path):
    out, output, emu = run_script(tmp_path, "cached_motions.py")
    assert not SDK_TROUBLE.search(output), output
    assert out["codes"] == [0] * 10
    assert out["cached"] >= 2 and out["state_while_queued"] == 1
    assert out["wait"] == 0 and out["cached_after"] == 0
    assert out["counter"] == 2
    assert out["position"][:3] == pytest.approx([250.0, 0.0, 100.0], abs=0.01)
    log = [e for e in emu.entries() if e["name"] in ("move_line", "sleep_instt", "cnter_plus")]
    assert all(e["result"] == "ok" for e in log)
    assert len([e for e in log if "duration_s" in e]) == 8  # the first move, the six cached, the last
