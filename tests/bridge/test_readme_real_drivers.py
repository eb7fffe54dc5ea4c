"""The README's "real drivers without hardware" line, run as written (its ``act trials`` command, with
the database in a temporary folder): the real ``XArmDriver`` and xarm-python-sdk drive the controller
emulator, whose arm is the session's MuJoCo Lite 6, and sim-oracle's demo script succeeds by physics
in at least 11 of its 12 trials (issue "clean failures": it was 0 of 12 when the emulator ran its own
arm in another process)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.ros, pytest.mark.slow]

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_command() -> list[str]:
    block = re.search(r"### The real drivers without hardware\n```bash\n(.*?)```", README.read_text(), re.S)
    assert block, "README lost its 'real drivers without hardware' block"
    (line,) = [ln for ln in block.group(1).splitlines() if " act trials " in ln]
    return shlex.split(line.split("#")[0])


def test_the_readme_real_driver_example_succeeds_by_physics(ros_env, tmp_path):
    cmd = _readme_command()
    assert cmd[0] == ".venv/bin/pointlab" and "xarm-sim" in cmd
    db = cmd.index("--db") + 1
    cmd[db] = str(tmp_path / "t.sqlite")
    args = [sys.executable, "-c", "from pointlab.bridge.cli import main; main()", *cmd[1:]]
    p = subprocess.run(args, capture_output=True, text=True, timeout=900, env=dict(os.environ))
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout)
    assert out["judged"] == 12 and out["successes"] >= 11, (out["successes"], out["failure_stages"])
    assert out["aborted"] == 0 and out["stopped"] is None
