"""The ``pointlab`` command groups. Command modules import the group they extend from here and
decorate their functions; ``pointlab.bridge.cli`` imports those modules (listed in
``COMMAND_MODULES``) and assembles the entry point.

Commands are thin (see docs/architecture.md): parse arguments, call one library function, print
its JSON, map the library's error to an exit code and a one-line message. Heavy imports (rclpy,
pyrealsense2, the sim) happen inside the command function, never at module import.
"""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer

from .jsonable import finite_json

__all__ = ["app", "score_app", "perf_app", "sim_app", "act_app", "bench_app", "video_app", "pinpoint_app",
           "print_json", "fail"]

app = typer.Typer(name="pointlab", no_args_is_help=True, add_completion=False,
                  help="Evaluate how well multimodal models point: Point-Act, Point-Battle, Point-Bench, video tasks.")
act_app = typer.Typer(no_args_is_help=False, help="Point-Act: the robot trial session and headless trials.")
score_app = typer.Typer(no_args_is_help=True, help="Score saved predictions (no model calls). Prints JSON {items, summary}.")
perf_app = typer.Typer(no_args_is_help=True, help="Performance measurements with percentiles against an in-run baseline.")
sim_app = typer.Typer(no_args_is_help=True, help="Simulated parts: model server, xArm controller emulator.")
bench_app = typer.Typer(no_args_is_help=True, help="Run a model over a benchmark dataset.")
video_app = typer.Typer(no_args_is_help=True, help="Video spatial tasks: frame budgets, generation.")
pinpoint_app = typer.Typer(no_args_is_help=True, help="PinpointQA: question generation from 3D scenes.")

app.add_typer(act_app, name="act")
app.add_typer(score_app, name="score")
app.add_typer(perf_app, name="perf")
app.add_typer(sim_app, name="sim")
app.add_typer(bench_app, name="bench")
app.add_typer(video_app, name="video")
app.add_typer(pinpoint_app, name="pinpoint")


def print_json(obj: Any) -> None:
    """Write one JSON document to stdout (the machine-readable output of every command).

    Strict JSON: NaN and infinities are written as ``null`` (see ``finite_json``)."""
    sys.stdout.write(json.dumps(finite_json(obj), indent=2, allow_nan=False) + "\n")
    sys.stdout.flush()


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line error to stderr and exit with ``code`` (2: bad input, 1: runtime failure)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)
