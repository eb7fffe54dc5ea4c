"""The type checker guards the whole tree: ``mypy`` with the configuration in pyproject.toml
([tool.mypy]: the six product packages under their ``pointlab.*`` names and tests/) finds nothing.
Run by the README's test command, so a change that passes ``None`` where a value is needed, calls a
function with the wrong arguments or reads an attribute that is not there does not land
(``.venv/bin/mypy`` shows the same list; docs/architecture.md "Guards").

mypy finds ``pointlab.robot`` ... through the symlinks in .typecheck/pointlab/ (the editable
install's import hook is invisible to it), so this also checks that every root folder of
[tool.setuptools.package-dir] has its link."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / ".typecheck" / "pointlab"


def test_every_root_folder_has_its_link_for_mypy():
    package_dir = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for name, folder in package_dir.items():
        link = TREE / name.removeprefix("pointlab.")
        assert link.is_symlink(), f"add it: ln -s ../../{folder} {link.relative_to(ROOT)}"
        assert link.resolve() == (ROOT / folder).resolve(), f"{link.relative_to(ROOT)} -> {os.readlink(link)}"
        assert not os.path.isabs(os.readlink(link)), "a relative link, so that any checkout works"


def test_mypy_finds_nothing():
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent)) or shutil.which("mypy")
    if mypy is None:
        pytest.fail("mypy is not installed: pip install -e '.[test]'")
    r = subprocess.run([mypy], cwd=ROOT, capture_output=True, text=True, timeout=600)
    # the files' real paths (mypy names them by the link it found them through)
    out = (r.stdout + r.stderr).replace(".typecheck/pointlab/", "")
    assert r.returncode == 0, out
