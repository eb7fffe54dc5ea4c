"""What every package's CLI sub-app is made of: its command groups, and the two output functions.

Each package that has commands owns one ``SubApp`` (``benchmark/cli.py``, ``bridge/commands.py``,
``ui/cli.py``, ``sim_mock/cli.py``) and registers a zero-argument function returning it under the
``pointlab.cli`` entry-point group in ``pyproject.toml``. ``pointlab.bridge.cli`` finds them there and
merges them into the one ``pointlab`` command, group by group (``score`` takes commands from
benchmark and bridge), so no package imports another's commands and the assembler imports none.

Commands are thin (docs/architecture.md): parse arguments, call one library function, ``print_json``
its result, map the library's error to ``fail(message, code)``. Heavy imports (rclpy, pyrealsense2,
the sim) happen inside the command function, never at module import.

This module sits in ``benchmark`` because benchmark is the lowest package every package with
commands depends on (perception and robot, below it, have no commands of their own).
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import typer

from .records import dumps_json

__all__ = ["SubApp", "GROUPS", "print_json", "fail"]

# The command groups of ``pointlab`` and their help lines; a sub-app may add commands to these only.
GROUPS: dict[str, str] = {
    "act": "Point-Act: the robot trial session, headless trials, single nodes, exports.",
    "score": "Score saved predictions (no model calls). Prints JSON {items, summary}.",
    "perf": "Performance measurements with percentiles against an in-run baseline.",
    "sim": "Simulated parts: model server, xArm controller emulator, sim snapshots.",
    "bench": "Run a model over a benchmark dataset; Point-Battle and its pages.",
    "video": "Video spatial tasks: frame budgets, generation.",
    "pinpoint": "PinpointQA: question generation from 3D scenes, the human localization study.",
}


class SubApp:
    """One package's commands: top-level ones on ``root``, the rest on ``group(name)``.

    Args:
        package: the owning package's short name (``benchmark``, ``bridge``, ...), for messages.
    """

    def __init__(self, package: str) -> None:
        self.package = package
        self.root = typer.Typer(add_completion=False)
        self.groups: dict[str, typer.Typer] = {}

    def group(self, name: str) -> typer.Typer:
        """The typer app of group ``name`` (one of ``GROUPS``) to decorate commands onto.

        Raises:
            ValueError: ``name`` is not a group of ``pointlab``.
        """
        if name not in GROUPS:
            raise ValueError(f"{self.package}: unknown command group {name!r}; groups: {', '.join(GROUPS)}")
        return self.groups.setdefault(name, typer.Typer(add_completion=False))


def print_json(obj: Any) -> None:
    """Write one JSON document to stdout (the machine-readable output of every command).

    Strict JSON: NaN and infinities are written as ``null`` (``records.dumps_json``)."""
    sys.stdout.write(dumps_json(obj, indent=2) + "\n")
    sys.stdout.flush()


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line error to stderr and exit with ``code`` (2: bad input, 1: runtime failure)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def require_items(items, source) -> None:
    """Exit 2 when a ground truth holds no item: an empty file or folder is a mistake (a wrong path, an
    unfinished export), not a benchmark whose score is "n = 0"."""
    if not len(items):
        fail(f"{source}: no ground-truth items")
