"""A UFACTORY Lite 6 controller emulator that the unmodified ``xarm-python-sdk`` connects to,
including with its defaults (``XArmAPI(ip)``: command port 502, the rich report on 30002).

What it serves (frames in ``xarm_protocol`` and ``xarm_reports``, behaviour in ``xarm_model``):

- the command socket on ``host:port`` (502 on a real controller; ``port=0`` picks a free one,
  ``.port`` is the bound one);
- the three report streams on ``host``: normal (30001, 5 Hz), rich (30002, 5 Hz) and real-time
  (30003, 100 Hz). The SDK connects its report to the fixed port of its ``report_type`` on the
  controller's IP, so two emulators that run at once need two loopback addresses (``127.0.0.2``,
  ...); ``host`` must be loopback.

The controller model drives an ``ArmBackend`` (``arm_backend``): ``KinematicArmBackend`` by default,
a physics world when one is given. Every request goes to ``log`` (a list of dicts: ``register``,
``name``, ``params`` in protocol units, ``result``, ``duration_s`` of a motion once it starts, and
``fault`` when one was injected). Faults: ``inject("drop" | "error" | "error_no_data" | "stall",
on_register=...)``.
"""

from __future__ import annotations

import ipaddress
import random
import logging
import socket
import threading
import time
from dataclasses import dataclass

from .arm_backend import ArmBackend, KinematicArmBackend
from .xarm_model import LITE6_VERSION, Lite6ControllerModel
from .xarm_protocol import REG, FrameReader, Request, build_reply, decode_params
from .xarm_reports import REPORT_RATES_HZ, build_report

__all__ = ["XArmControllerEmulator", "Fault", "FAULT_KINDS", "LITE6_VERSION", "DEFAULT_FAULT_CODE"]

log = logging.getLogger(__name__)

DEFAULT_FAULT_CODE = 31  # C31 "Collision Caused Abnormal Current": a plausible spontaneous fault
CLOCK_PERIOD_S = 0.01  # how often the cached commands advance when nobody asks
FAULT_KINDS = ("drop", "error", "error_no_data", "stall")


@dataclass
class Fault:
    """An injected fault: ``kind`` in ``FAULT_KINDS``; fires on the next request to
    ``on_register`` (any register when ``None``) ``count`` times; ``code`` is the controller error
    code an ``error`` fault sets."""

    kind: str
    on_register: int | None = None
    code: int = DEFAULT_FAULT_CODE
    count: int = 1


class XArmControllerEmulator:
    """A TCP server speaking the xArm protocol for one simulated Lite 6.

    Args:
        host: a loopback address to bind (``127.0.0.1``; another ``127.x.y.z`` to run two at once).
        port: command port (502 is the SDK's); 0 picks a free one (see ``.port``).
        report_port: port of the normal report (30001); ``rich_report_port`` (30002) and
            ``real_report_port`` (30003) likewise; 0 picks a free one (only a client configured for it
            can use it), ``None`` does not serve that stream.
        time_scale: multiplies every motion and pause duration (1.0 realistic; tests use ~0.05).
        tool: the mounted tool, ``lite_gripper`` or ``lite_vacuum`` (how TO0/TO1 are read).
        version: the string answered to register 1.
        state_settle_s: the window after ``set_state(0)`` in which a motion may be dropped.
        settle_drop_probability: the chance (0-1) that a motion in that window is dropped; 0 (default): never.
        report_rates_hz: frames per second of each stream (``{"normal": 5, "rich": 5, "real": 100}``).
        kinematics: a ``Lite6Kinematics``-like object for the default backend.
        backend: the arm (``ArmBackend``); default a ``KinematicArmBackend`` with ``kinematics``.

    Raises:
        ValueError: ``host`` is not a loopback address, or an unknown tool.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        report_port: int | None = 30001,
        *,
        rich_report_port: int | None = 30002,
        real_report_port: int | None = 30003,
        time_scale: float = 1.0,
        tool: str = "lite_gripper",
        version: str = LITE6_VERSION,
        state_settle_s: float = 0.1,
        settle_drop_probability: float = 0.0,
        report_rates_hz: dict | None = None,
        kinematics=None,
        backend: ArmBackend | None = None,
    ) -> None:
        if not ipaddress.ip_address(host).is_loopback:
            raise ValueError(f"the emulator binds loopback addresses only, not {host!r}")
        if tool not in ("lite_gripper", "lite_vacuum"):
            raise ValueError(f"unknown tool {tool!r}")
        self.host, self._want_port = host, port
        self._want_report_ports = {
            k: p
            for k, p in (("normal", report_port), ("rich", rich_report_port), ("real", real_report_port))
            if p is not None
        }
        self.report_rates_hz = {**REPORT_RATES_HZ, **(report_rates_hz or {})}
        self.time_scale = float(time_scale)
        if backend is None:
            backend = KinematicArmBackend(kinematics, time_scale=time_scale, vacuum=tool == "lite_vacuum")
        self.backend = backend
        self.model = Lite6ControllerModel(
            backend,
            tool=tool,
            version=version,
            state_settle_s=state_settle_s,
            settle_drop_probability=settle_drop_probability,
            time_scale=time_scale,
        )
        self._lock = self.model.lock
        self.log: list[dict] = []
        self._faults: list[Fault] = []
        self._stop = threading.Event()
        self._servers: list[socket.socket] = []
        self._conns: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self.port = 0
        self.report_ports: dict[str, int] = {}

    # -- what tests and tools read ------------------------------------------------------------
    @property
    def report_port(self) -> int:
        """The bound port of the normal report (30001 by default)."""
        return self.report_ports.get("normal", 0)

    @property
    def tool(self) -> str:
        return self.model.tool

    @property
    def state(self) -> int:
        with self._lock:
            self.model.tick()
            return self.model.state

    @property
    def mode(self) -> int:
        return self.model.mode

    @property
    def error_code(self) -> int:
        return self.model.error_code

    @property
    def warn_code(self) -> int:
        return self.model.warn_code

    @property
    def enabled(self) -> bool:
        return self.model.enabled

    @property
    def cmd_num(self) -> int:
        with self._lock:
            self.model.tick()
            return self.model.cmd_num

    @property
    def counter(self) -> int:
        return self.model.counter

    @property
    def tool_outputs(self) -> list[int]:
        return list(self.model.tool_outputs)

    @property
    def tool_closed(self) -> bool:
        """Gripper closed / vacuum on, from the tool outputs."""
        return self.model.tool_closed

    @property
    def vacuum_contact(self) -> bool:
        """Whether the vacuum cup is sealed on a surface (kinematic backend: set by tests)."""
        return bool(getattr(self.backend, "vacuum_contact", False))

    @vacuum_contact.setter
    def vacuum_contact(self, value: bool) -> None:
        self.backend.vacuum_contact = bool(value)  # type: ignore[attr-defined]  # a kinematic backend's flag (tests set it)

    @property
    def moving(self) -> bool:
        """Whether the arm is moving now (a running motion, not a pause instruction)."""
        with self._lock:
            self.model.tick()
            return self.backend.moving()

    @property
    def pose_mm_rad(self) -> list[float]:
        """Current TCP pose ``[x, y, z]`` mm and ``[roll, pitch, yaw]`` rad (in the current TCP frame)."""
        with self._lock:
            return [float(v) for v in self.model.pose_mm_rad()]

    @property
    def joints_rad(self) -> list[float]:
        return [float(v) for v in self.backend.joints_rad()]

    # -- faults --------------------------------------------------------------------------------
    def inject(
        self, kind: str, on_register: int | str | None = None, *, code: int = DEFAULT_FAULT_CODE, count: int = 1
    ) -> None:
        """Arm a fault for the next request to ``on_register`` (number or name, e.g. ``"move_line"``;
        ``None`` = any register).

        - ``drop``: close every client connection (command and reports) without answering; the arm
          goes on with what it was doing, as a real controller does when its client vanishes;
        - ``error``: set controller error ``code`` (the arm stops) and answer with the error flag
          (the register's usual data; a motion is not executed);
        - ``error_no_data``: the same, but the reply carries no data (the SDK's getters then raise,
          e.g. ``IndexError`` in ``get_state``);
        - ``stall``: never answer (nor execute) that request.

        Raises:
            ValueError: unknown kind or register name.
        """
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}: {', '.join(FAULT_KINDS)}")
        if isinstance(on_register, str):
            if on_register not in REG:
                raise ValueError(f"unknown register name {on_register!r}")
            on_register = REG[on_register]
        with self._lock:
            self._faults.append(Fault(kind, on_register, code, count))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _take_fault(self, reg: int) -> Fault | None:
        for f in self._faults:
            if f.on_register is None or f.on_register == reg:
                f.count -= 1
                if f.count <= 0:
                    self._faults.remove(f)
                return f
        return None

    # -- log helpers ---------------------------------------------------------------------------
    def entries(self, name: str | None = None) -> list[dict]:
        """A copy of the log, optionally only the entries of register ``name`` (e.g. ``"move_line"``)."""
        with self._lock:
            return [dict(e) for e in self.log if name is None or e["name"] == name]

    def clear_log(self) -> None:
        with self._lock:
            self.log.clear()

    # -- serving -------------------------------------------------------------------------------
    @classmethod
    def start_on_free_loopback(cls, port: int = 0, *, tries: int = 20, **kw) -> "XArmControllerEmulator":
        """An emulator started on a random ``127.x.y.z`` (the SDK's report ports 30001-30003 are
        fixed, so two emulators on one machine need two addresses); ``kw`` as the constructor's.

        Raises:
            PermissionError: ``port`` needs privileges (502). RuntimeError: no free address in ``tries``.
        """
        rng = random.Random()
        for _ in range(tries):
            host = f"127.{rng.randint(1, 254)}.{rng.randint(1, 254)}.{rng.randint(2, 254)}"
            try:
                return cls(host, port, **kw).start()
            except PermissionError:
                raise
            except OSError:
                continue
        raise RuntimeError("no free loopback address for the controller emulator")

    def start(self) -> "XArmControllerEmulator":
        """Bind and serve in background threads.

        Raises:
            OSError: a port is taken (or 502 needs privileges).
        """
        sockets = []
        try:
            cmd = self._listen(self._want_port)
            sockets.append(cmd)
            reports = {}
            for kind, want in self._want_report_ports.items():
                reports[kind] = self._listen(want)
                sockets.append(reports[kind])
        except OSError:
            for s in sockets:
                s.close()
            raise
        self.port = cmd.getsockname()[1]
        self.report_ports = {k: s.getsockname()[1] for k, s in reports.items()}
        self._servers = sockets
        self._spawn(self._accept_loop, cmd, self._serve_commands)
        for kind, sock in reports.items():
            self._spawn(self._accept_loop, sock, lambda conn, k=kind: self._serve_reports(conn, k))
        self._spawn(self._clock)
        log.info("xArm controller emulator on %s:%d (reports %s)", self.host, self.port, self.report_ports)
        return self

    def _spawn(self, target, *args) -> None:
        t = threading.Thread(target=target, args=args, daemon=True, name=f"xarm-emulator-{self.host}")
        t.start()
        self._threads.append(t)

    def _listen(self, port: int) -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((self.host, port))
        s.listen(8)
        s.settimeout(0.2)
        return s

    def stop(self) -> None:
        """Close every socket and stop the threads."""
        self._stop.set()
        self.drop_connections()
        for s in self._servers:
            try:
                s.close()
            except OSError:
                pass
        for t in self._threads:
            t.join(timeout=2)
        self._threads.clear()
        close = getattr(self.backend, "close", None)  # a backend with its own threads
        if close is not None:
            close()

    def __enter__(self) -> "XArmControllerEmulator":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def drop_connections(self) -> None:
        """Close every client connection (the server keeps listening; the arm keeps moving)."""
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                c.close()
            except OSError:
                pass

    def _clock(self) -> None:
        while not self._stop.wait(CLOCK_PERIOD_S):
            with self._lock:
                self.model.tick()

    def _accept_loop(self, server: socket.socket, handler) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            # The SDK sets a process-wide default socket timeout of 1 s; poll with our own.
            conn.settimeout(0.2)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._conns.add(conn)
            self._spawn(handler, conn)

    def _alive(self, conn: socket.socket) -> bool:
        with self._lock:
            return conn in self._conns and not self._stop.is_set()

    def _serve_commands(self, conn: socket.socket) -> None:
        reader = FrameReader()
        while self._alive(conn):
            try:
                data = conn.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                break
            if not data:
                break
            for req in reader.feed(data):
                reply = self._process(req)
                if reply == b"drop":
                    self.drop_connections()
                    return
                if reply:
                    try:
                        conn.sendall(reply)
                    except OSError:
                        break
        self._forget(conn)

    def _forget(self, conn: socket.socket) -> None:
        """Drop a client connection that has ended (control or report)."""
        with self._lock:
            self._conns.discard(conn)
        try:
            conn.close()
        except OSError:
            pass

    def _process(self, req: Request) -> bytes:
        params = decode_params(req)
        with self._lock:
            entry = {
                "t": time.monotonic(),
                "register": req.register,
                "name": req.name,
                "params": params,
                "trans_id": req.trans_id,
                "protocol": req.protocol,
            }
            self.log.append(entry)
            fault = self._take_fault(req.register)
            if fault is not None:
                entry["fault"] = fault.kind
                if fault.kind == "drop":
                    entry["result"] = "dropped"
                    return b"drop"
                if fault.kind == "stall":
                    entry["result"] = "stalled"
                    return b""
                self.model.fault(fault.code)
                if fault.kind == "error_no_data":
                    entry["result"] = "error_no_data"
                    return build_reply(req, self.model.flags())
                _, extra_flags, data = self.model.handle(req, params, entry)  # the register's data shape
                entry["result"] = "error"
                return build_reply(req, self.model.flags() | extra_flags, data)
            result, extra_flags, data = self.model.handle(req, params, entry)
            entry["result"] = result
            return build_reply(req, self.model.flags() | extra_flags, data)

    def _serve_reports(self, conn: socket.socket, kind: str) -> None:
        period = 1.0 / max(self.report_rates_hz[kind], 1e-3)
        next_t = time.monotonic()
        while self._alive(conn):
            with self._lock:
                frame = build_report(kind, self.model.snapshot())
            try:
                conn.sendall(frame)
            except OSError:
                break
            next_t += period
            self._stop.wait(max(0.0, next_t - time.monotonic()))
        self._forget(conn)
