"""The linter guards the whole tree: ``ruff check`` with the rules in pyproject.toml ([tool.ruff])
finds nothing and ``ruff format --check`` would change nothing. Run by the README's test command, so
a change that adds an unused import, an undefined name, a syntax error or unformatted code does not
land (``ruff format .`` formats the tree)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.fail("ruff is not installed: pip install -e '.[test]'")
    r = subprocess.run(
        [ruff, "check", "--output-format", "concise", "--no-cache", str(ROOT)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
