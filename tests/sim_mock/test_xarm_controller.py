"""The xArm controller emulator on raw sockets: frames built by hand from the protocol description
(big-endian header, little-endian float parameters), independent of the SDK."""

from __future__ import annotations

import math
import socket
import struct
import time

import pytest

from pointlab.sim_mock.xarm_controller import XArmControllerEmulator
from pointlab.sim_mock.xarm_protocol import FrameReader
from pointlab.sim_mock.xarm_reports import ReportSnapshot, build_normal_report


def start(**kw) -> XArmControllerEmulator:
    return XArmControllerEmulator.start_on_free_loopback(**kw)


@pytest.fixture
def emu():
    e = start(time_scale=0.1)
    yield e
    e.stop()


class Client:
    """A minimal hand-written protocol client."""

    def __init__(self, emu: XArmControllerEmulator, protocol: int = 2) -> None:
        self.sock = socket.create_connection((emu.host, emu.port), timeout=2)
        self.tid, self.protocol = 0, protocol

    def send(self, register: int, payload: bytes = b"") -> None:
        self.tid += 1
        self.sock.sendall(struct.pack(">HHHB", self.tid, self.protocol, 1 + len(payload), register) + payload)

    def recv(self) -> tuple[int, int, int, int, bytes]:
        head = self._exact(6)
        tid, prot, length = struct.unpack(">HHH", head)
        body = self._exact(length)
        return tid, prot, body[0], body[1], body[2:]

    def call(self, register: int, payload: bytes = b"") -> tuple[int, bytes]:
        self.send(register, payload)
        tid, prot, reg, state, data = self.recv()
        assert (tid, prot, reg) == (self.tid, self.protocol, register)
        return state, data

    def _exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf

    def bring_up(self) -> None:
        self.call(11, bytes([8, 1]))  # motion_en axis 8 (all), enable
        self.call(19, bytes([0]))  # set_mode 0
        self.call(12, bytes([0]))  # set_state 0

    def move(self, x, y, z, roll=math.pi, pitch=0.0, yaw=0.0, speed=100.0, acc=1000.0) -> int:
        payload = struct.pack("<10f", x, y, z, roll, pitch, yaw, speed, acc, 0.0, -1.0) + bytes([0, 0, 0])
        state, data = self.call(21, payload)
        assert len(data) == 3
        return state

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def client(emu):
    c = Client(emu)
    yield c
    c.close()


def test_loopback_only():
    with pytest.raises(ValueError, match="loopback"):
        XArmControllerEmulator("192.168.1.10", 0)


def test_version_and_power_on_state(emu, client):
    state, data = client.call(1)
    assert data == b"6,9,LI1003,DL1000,v2.0.0".ljust(40, b"\0")
    assert state == 0x10  # motors not enabled: "not ready"
    state, data = client.call(13)
    assert data == bytes([4])  # stopped


def test_protocol_id_is_echoed(emu):
    c = Client(emu, protocol=3)
    try:
        c.send(13)
        assert c.recv()[1] == 3
    finally:
        c.close()


def test_split_and_coalesced_frames():
    r = FrameReader()
    f1 = struct.pack(">HHHB", 7, 2, 1, 13)
    f2 = struct.pack(">HHHB", 8, 2, 3, 11) + bytes([8, 1])
    assert r.feed(f1[:4]) == []
    got = r.feed(f1[4:] + f2[:5])
    assert [(q.trans_id, q.register) for q in got] == [(7, 13)]
    got = r.feed(f2[5:])
    assert [(q.trans_id, q.register, q.payload) for q in got] == [(8, 11, bytes([8, 1]))]


def test_bring_up_makes_the_arm_ready(emu, client):
    assert client.call(11, bytes([8, 1]))[0] == 0x10  # enabled, state 5 until set_state(0)
    assert client.call(13)[1] == bytes([5])
    client.call(19, bytes([0]))
    assert client.call(12, bytes([0]))[0] == 0x00
    assert client.call(13)[1] == bytes([2])
    client.call(35, struct.pack("<6f", 0, 0, 83.6, 0, 0, 0))  # a TCP offset leaves state 5 again
    assert client.call(13)[1] == bytes([5])
    assert [e["name"] for e in emu.entries()] == [
        "motion_en",
        "get_state",
        "set_mode",
        "set_state",
        "get_state",
        "set_tcp_offset",
        "get_state",
    ]
    assert emu.entries("set_tcp_offset")[0]["params"]["z_mm"] == pytest.approx(83.6, abs=1e-4)


def test_motion_before_bring_up_is_refused(emu, client):
    assert client.move(250, 0, 150) & 0x10
    assert emu.entries("move_line")[0]["result"] == "not_ready"
    assert not emu.moving


def test_linear_motion_pose_log_and_timing():
    emu = start(time_scale=0.1, state_settle_s=0.0)
    c = Client(emu)
    try:
        c.bring_up()
        c.move(250, 0, 150, speed=200.0, acc=2000.0)
        while emu.moving:
            time.sleep(0.01)
        start_mm = emu.pose_mm_rad[:3]
        assert start_mm == pytest.approx([250, 0, 150], abs=1e-3)
        # 100 mm at 100 mm/s, 1000 mm/s^2: 100/100 + 100/1000 = 1.1 s, times 0.1
        assert c.move(250, 0, 50, speed=100.0, acc=1000.0) == 0
        assert c.call(13)[1] == bytes([1])  # moving
        assert emu.entries("move_line")[-1]["duration_s"] == pytest.approx(0.11)
        while emu.moving:
            time.sleep(0.005)
        assert c.call(13)[1] == bytes([2])
        _, data = c.call(41)
        pose = struct.unpack("<6f", data)
        assert pose[:3] == pytest.approx((250, 0, 50), abs=1e-3)
        assert pose[3] == pytest.approx(math.pi, abs=1e-5) or pose[3] == pytest.approx(-math.pi, abs=1e-5)
        _, data = c.call(42)
        assert len(struct.unpack("<7f", data)) == 7
        p = emu.entries("move_line")[-1]["params"]
        assert (p["x_mm"], p["y_mm"], p["z_mm"], p["speed_mm_s"], p["acc_mm_s2"]) == (250, 0, 50, 100, 1000)
        assert p["roll_rad"] == pytest.approx(math.pi)
    finally:
        c.close()
        emu.stop()


def test_unreachable_target_sets_c21_and_refuses_until_cleared(client, emu):
    client.bring_up()
    time.sleep(0.12)
    state = client.move(700, 0, 150)
    assert state & 0x40
    assert client.call(15)[1] == bytes([21, 0])
    assert client.move(250, 0, 150) & 0x40
    assert emu.entries("move_line")[-1]["result"] == "refused_error"
    client.call(16)  # clean_err
    assert client.call(15)[1] == bytes([0, 0])
    assert client.call(13)[1] == bytes([4])  # still stopped: set_state(0) needed
    assert client.move(250, 0, 150) & 0x10
    client.call(12, bytes([0]))
    time.sleep(0.12)
    assert client.move(250, 0, 150) == 0


def test_emergency_stop_freezes_mid_motion():
    emu = start(time_scale=1.0, state_settle_s=0.0)
    c = Client(emu)
    try:
        c.bring_up()
        z0 = emu.pose_mm_rad[2]
        x0 = emu.pose_mm_rad[0]
        c.move(x0, 0, z0 - 100, speed=100.0, acc=1000.0)  # 1.1 s
        deadline = time.monotonic() + 5
        while emu.pose_mm_rad[2] > z0 - 10:  # poll until it is visibly on its way, not a fixed sleep
            assert time.monotonic() < deadline
            time.sleep(0.005)
        c.call(12, bytes([4]))
        assert c.call(13)[1] == bytes([4])
        z = emu.pose_mm_rad[2]
        assert z0 - 100 < z < z0 - 5
        time.sleep(0.2)  # a hold period: nothing may move during it (absence cannot be polled for)
        assert emu.pose_mm_rad[2] == z and not emu.moving
    finally:
        c.close()
        emu.stop()


def test_by_default_a_motion_right_after_set_state_runs():
    # a real controller drops such a motion only sometimes; UFACTORY's examples send one at once
    emu = start(time_scale=0.1, state_settle_s=0.3)
    c = Client(emu)
    try:
        c.bring_up()
        assert c.move(250, 0, 150) == 0
        assert emu.entries("move_line")[-1]["result"] == "ok"
    finally:
        c.close()
        emu.stop()


def test_the_settle_drop_is_a_probability():
    from pointlab.sim_mock.xarm_model import Lite6ControllerModel

    with pytest.raises(ValueError, match="0-1"):
        Lite6ControllerModel(object(), settle_drop_probability=1.5)


def test_motion_right_after_set_state_is_ignored():
    emu = start(time_scale=0.1, state_settle_s=0.3, settle_drop_probability=1.0)
    c = Client(emu)
    try:
        c.bring_up()
        assert c.move(250, 0, 150) == 0  # acknowledged...
        assert not emu.moving  # ...but not executed
        assert emu.entries("move_line")[-1]["result"] == "ignored"
    finally:
        c.close()
        emu.stop()


def test_tool_gpio_words(emu, client):
    def write(word: int):
        client.call(127, bytes([9]) + struct.pack(">H", 0x0A15) + struct.pack("<f", float(word)))

    def read(addr: int) -> int:
        return struct.unpack(">i", client.call(128, bytes([9]) + struct.pack(">H", addr))[1])[0]

    write(0x0100), write(0x0202)  # TO0 off, TO1 on: Lite gripper close
    assert emu.tool_outputs == [0, 1] and emu.tool_closed
    assert read(0x0A18) == 0b10
    write(0x0101), write(0x0200)  # open
    assert emu.tool_outputs == [1, 0] and not emu.tool_closed
    assert read(0x0A14) == 0  # the gripper has no sensor input
    p = emu.entries("tgpio_w16b")[0]["params"]
    assert (p["host_id"], p["addr"], p["value"]) == (9, 0x0A15, 256.0)


def test_vacuum_sensor():
    emu = start(tool="lite_vacuum")
    c = Client(emu)
    try:

        def read_in() -> int:
            return struct.unpack(">i", c.call(128, bytes([9]) + struct.pack(">H", 0x0A14))[1])[0]

        c.call(127, bytes([9]) + struct.pack(">H", 0x0A15) + struct.pack("<f", 257.0))
        c.call(127, bytes([9]) + struct.pack(">H", 0x0A15) + struct.pack("<f", 512.0))
        assert emu.tool_closed and read_in() == 1  # on, sealed
        emu.vacuum_contact = False
        assert read_in() == 0  # on, nothing held
    finally:
        c.close()
        emu.stop()


def test_unknown_register_is_logged_and_answered_with_warning_13(emu, client):
    state, data = client.call(200, b"\x01\x02")
    assert data == b"" and state & 0x20  # warning: "User command control code does not exist"
    assert client.call(15)[1] == bytes([0, 13])
    e = emu.entries()[-2]
    assert (e["register"], e["name"], e["result"], e["params"]) == (200, "unknown_200", "unknown", {"raw": "0102"})
    client.call(17)  # clean_war
    assert client.call(15)[1] == bytes([0, 0])


def test_a_register_known_but_not_modelled_is_invalid_not_a_silent_success(emu, client):
    client.bring_up()
    time.sleep(0.12)
    payload = struct.pack("<16f", 300, 0, 150, math.pi, 0, 0, 300, 100, 150, math.pi, 0, 0, 100, 1000, 0, 50)
    state, _ = client.call(27, payload)  # move_circle
    assert state & 0x08 and not emu.moving
    assert emu.entries("move_circle")[-1]["result"] == "unsupported"


def test_injected_error_and_stall(emu, client):
    emu.inject("error", "get_state", code=31)
    state, _ = client.call(13)
    assert state & 0x40 and emu.error_code == 31
    emu.inject("stall", 13)
    client.sock.settimeout(0.3)
    client.send(13)
    with pytest.raises(socket.timeout):
        client.recv()
    assert emu.entries()[-1]["fault"] == "stall"


def test_injected_drop_closes_command_and_report(emu, client):
    rep = socket.create_connection((emu.host, emu.report_port), timeout=2)
    try:
        assert len(rep.recv(145)) > 0
        emu.inject("drop")
        client.send(13)
        with pytest.raises((ConnectionError, OSError)):
            client.recv()
        rep.settimeout(1.0)
        deadline = time.monotonic() + 1.0
        closed = False
        while time.monotonic() < deadline and not closed:
            try:
                closed = rep.recv(4096) == b""
            except OSError:
                closed = True
        assert closed
        # the server still listens: a new connection works
        c2 = Client(emu)
        assert c2.call(13)[1] == bytes([4])
        c2.close()
    finally:
        rep.close()


def test_inject_validation(emu):
    with pytest.raises(ValueError):
        emu.inject("explode")
    with pytest.raises(ValueError):
        emu.inject("drop", "no_such_register")


def test_report_frame_layout(emu):
    rep = socket.create_connection((emu.host, emu.report_port), timeout=2)
    try:
        buf = b""
        while len(buf) < 145:
            buf += rep.recv(145 - len(buf))
    finally:
        rep.close()
    assert struct.unpack(">I", buf[:4])[0] == 145
    assert buf[4] == 4  # state 4, mode 0
    assert buf[87:91] == bytes([0, 0, 0, 0])  # brakes/enables off, no error, no warning
    pose = struct.unpack("<6f", buf[35:59])
    assert pose == pytest.approx(tuple(emu.pose_mm_rad), abs=1e-3)


def test_report_builder_fields():
    frame = build_normal_report(
        ReportSnapshot(
            state=2,
            mode=0,
            cmd_num=1,
            joints_rad=[0.1] * 6,
            pose_mm_rad=[250, 0, 150, 3.14, 0, 0],
            error_code=21,
            enabled_mask=0x3F,
            brake_mask=0x3F,
            tcp_offset_mm_rad=[0, 0, 83.6, 0, 0, 0],
        )
    )
    assert len(frame) == 145 and frame[4] == 2 and struct.unpack(">H", frame[5:7])[0] == 1
    assert frame[87:91] == bytes([0x3F, 0x3F, 21, 0])
    assert struct.unpack("<6f", frame[91:115])[2] == pytest.approx(83.6, abs=1e-4)
    assert frame[131:133] == bytes([3, 3])


@pytest.mark.parametrize("args", [["--host", "192.168.1.5"], ["--time-scale", "0"], ["--tool", "laser"]])
def test_cli_refuses_bad_options(args):
    from typer.testing import CliRunner

    from pointlab.bridge.cli import app

    res = CliRunner().invoke(app, ["sim", "xarm-controller", "--port", "0", *args])
    assert res.exit_code == 2


# -- get_ik (register 43) ---------------------------------------------------------------------
def ik_payload(x, y, z, roll=math.pi, pitch=0.0, yaw=0.0) -> bytes:
    return struct.pack("<6f", x, y, z, roll, pitch, yaw)


def test_get_ik_answers_joints_that_put_the_tcp_there(emu, client):
    from pointlab.sim_mock.kinematics import Lite6Kinematics

    client.call(35, struct.pack("<6f", 0, 0, 83.6, 0, 0, 0))  # Lite gripper TCP, 83.6 mm past the flange
    state, data = client.call(43, ik_payload(250.0, -40.0, 120.0))
    assert not state & 0x08 and len(data) == 28
    q = struct.unpack("<7f", data)
    assert q[6] == 0.0 and all(-math.pi < a <= math.pi + 1e-6 for a in q)
    T = Lite6Kinematics().fk(q[:6], tool="lite_gripper")
    assert T[:3, 3] == pytest.approx([0.25, -0.04, 0.12], abs=1.5e-3)
    assert T[:3, 2] == pytest.approx([0.0, 0.0, -1.0], abs=0.02)  # tool pointing down
    e = emu.entries("get_ik")[-1]
    assert (e["params"]["x_mm"], e["params"]["z_mm"], e["result"]) == (250.0, 120.0, "ok")
    assert not emu.moving and emu.state == 4  # a query: nothing moved, nothing changed


def test_get_ik_without_solution_is_invalid_not_an_error(emu, client):
    client.bring_up()
    state, data = client.call(43, ik_payload(700.0, 0.0, 150.0))  # 700 mm: beyond the Lite 6 reach
    assert state == 0x08  # invalid only: no error, no warning, ready
    assert data == bytes(28)
    assert emu.entries("get_ik")[-1]["result"] == "no_solution"
    assert client.call(15)[1] == bytes([0, 0]) and emu.error_code == 0
    assert client.call(13)[1] == bytes([2])
    state, _ = client.call(43, ik_payload(float("nan"), 0.0, 150.0))
    assert state == 0x08


def test_get_ik_optional_limited_byte_and_reference_angles(emu, client):
    ref = [0.0, 0.35, 1.1, 0.0, 0.75, 0.0, 0.0]
    state, _ = client.call(43, ik_payload(250.0, 0.0, 200.0) + bytes([0]) + struct.pack("<7f", *ref))
    assert not state & 0x08
    p = emu.entries("get_ik")[-1]["params"]
    assert p["limited"] == 0 and p["ref_rad"] == pytest.approx(ref)
    state, _ = client.call(43, ik_payload(250.0, 0.0, 200.0) + bytes([1]))
    p = emu.entries("get_ik")[-1]["params"]
    assert not state & 0x08 and p["limited"] == 1 and "ref_rad" not in p
