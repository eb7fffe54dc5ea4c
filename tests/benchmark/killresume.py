"""Kill a `pointlab bench run` child mid-run (SIGKILL once its journal holds ``n`` answers) and return
the ids it had journaled: the shared step of the resume tests of every QA task."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def kill_mid_run(args: list[str], journal: Path, n: int = 3, deadline_s: float = 120.0) -> set[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", "from pointlab.bridge.cli import main; main()", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + deadline_s
        while not (journal.exists() and len(journal.read_text().splitlines()) >= n):
            assert time.monotonic() < deadline and child.poll() is None, "no answers journaled"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
    return {json.loads(x)["id"] for x in journal.read_text().splitlines() if x.strip()}


def kill_then_resume(args: list[str], journal: Path, *, total: int, stop, extra: tuple[str, ...] = ()) -> dict:
    """``kill_mid_run`` then the same command again in this process (with ``extra`` options), ``stop``
    the model server after it; checks that only what the killed run had not journaled was asked again
    and every item ends with one journal line. Returns the resumed run's JSON document."""
    from typer.testing import CliRunner

    from pointlab.bridge.cli import app

    try:
        kept = kill_mid_run(args, journal)
        assert 3 <= len(kept) < total
        r = CliRunner().invoke(app, [*args, *extra])
    finally:
        stop()
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["cached"] == len(kept) and doc["asked"] == total - len(kept) and doc["errors"] == 0
    assert len({json.loads(x)["id"] for x in journal.read_text().splitlines()}) == total
    return doc
