"""``pointlab perf arena`` as a command: it refuses a store with battles before anything starts (an
earlier run's votes would read as "unacknowledged"), runs from a relative SQLite path (the arena runs in
a temp folder: the check once read another file and reported every vote lost with exit 0), and stops
the arena it started when it is sent SIGTERM (``timeout``, CI), leaving nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pointlab.ui.arena.store import ArenaStore

from .helpers import new_battle

CLI = [sys.executable, "-c", "from pointlab.bridge.cli import main; main()", "perf", "arena"]


def _processes_with(text: str) -> list[int]:
    """Pids whose command line contains ``text`` (Linux ``/proc``)."""
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if text in (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    out.append(int(p.name))
            except OSError:
                pass
    return out


def test_a_store_with_battles_is_refused_before_anything_starts(tmp_path):
    db = tmp_path / "used.db"
    store = ArenaStore(db)
    new_battle(store, store.ensure_session(None))
    new_battle(store, store.ensure_session(None))
    store.close()
    r = subprocess.run([*CLI, "--db", str(db)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        f"pointlab perf arena: error: --db {db}: the arena store already has 2 battles; perf arena needs an "
        "empty one (its integrity check counts every vote stored)"
    ]


@pytest.mark.slow
def test_a_relative_sqlite_path_is_the_store_the_arena_writes(tmp_path):
    r = subprocess.run(
        [*CLI, "--db", "rel.db", "--workers", "1", "--voters", "3", "--duration-s", "2", "--warmup-s", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    check = rep["integrity"]
    assert rep["db"] == str(tmp_path / "rel.db")
    assert check["acknowledged"] > 0 and check["stored"] == check["acknowledged"] and check["lost"] == 0


@pytest.mark.slow
def test_sigterm_stops_the_arena_it_started(tmp_path):
    db = tmp_path / "term.db"
    proc = subprocess.Popen(
        [*CLI, "--db", str(db), "--workers", "2", "--voters", "3", "--duration-s", "120", "--warmup-s", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 120
        while not _processes_with(f"bench arena --db {db}"):  # the arena has started
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()[-500:]
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 60
        while _processes_with(f"bench arena --db {db}") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _processes_with(f"bench arena --db {db}") == []
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in _processes_with(f"bench arena --db {db}"):
            os.kill(pid, signal.SIGKILL)
