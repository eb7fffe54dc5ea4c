"""Issue 14 #9: the arena serves again after a kill -9, quickly, and loses nothing. The arena runs
as users run it (``pointlab bench arena`` on a SQLite file, demo set already rendered); it is killed
with SIGKILL after voters wrote, restarted, and the time from spawn to the first ``200`` of ``GET
/api/images`` is measured three times and printed (docs/arena.md: median 2.1 s at load 5-10 on 2
cores, the target is 5 s). The assertion is on what must hold on any machine: serving again within
the deadline, and every vote acknowledged before a kill still there; a wall-clock bound would only
measure the machine's load (the guide: performance is measured, not asserted in tests)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

pytestmark = pytest.mark.slow


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(tmp_path, port):
    cmd = [
        sys.executable,
        "-c",
        "from pointlab.bridge.cli import main; main()",
        "bench",
        "arena",
        "--db",
        str(tmp_path / "arena.db"),
        "--port",
        str(port),
        "--demo-dir",
        str(tmp_path / "demo"),
    ]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)


def _serving(base: str, proc, deadline_s: float = 60.0) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < deadline_s:
        assert proc.poll() is None, "the arena exited"
        try:
            if httpx.get(base + "/api/images", timeout=0.5).status_code == 200:
                return time.monotonic() - t0
        except httpx.HTTPError:
            pass
        time.sleep(0.02)
    raise AssertionError("not serving")


def _vote(c: httpx.Client) -> str:
    bid = c.post("/api/battles", data={"instruction": "Point to the red cube", "image_name": "tabletop_0.png"}).json()[
        "battle_id"
    ]
    deadline = time.monotonic() + 30
    while not c.get(f"/api/battles/{bid}").json()["ready"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert c.post(f"/api/battles/{bid}/vote", json={"choice": "both_bad"}).status_code == 200
    return bid


@pytest.mark.xdist_group("arena_load")  # not beside the other arena load tests: tests/ui/arena/conftest.py
def test_restart_after_kill_9_serves_again_and_loses_nothing(tmp_path):
    port = _port()
    base = f"http://127.0.0.1:{port}"
    proc = _spawn(tmp_path, port)  # first start renders the demo set
    _serving(base, proc, 120.0)
    acked = []
    times = []
    try:
        for _ in range(3):
            with httpx.Client(base_url=base, timeout=30) as c:
                acked += [_vote(c) for _ in range(3)]
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            proc = _spawn(tmp_path, port)
            times.append(_serving(base, proc))
        with httpx.Client(base_url=base, timeout=30) as c:
            lines = c.get("/api/votes.jsonl").text.splitlines()
    finally:
        proc.kill()
        proc.wait()
    times.sort()
    print(f"restart to serving after kill -9: {', '.join(f'{t:.2f}' for t in times)} s (median {times[1]:.2f} s)")
    assert len(lines) == len(acked) == 9
