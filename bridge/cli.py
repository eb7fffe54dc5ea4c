"""The ``pointlab`` entry point: assembles the packages' sub-apps into one command.

Each package that has commands registers a function returning its ``clikit.SubApp`` under the
``pointlab.cli`` entry-point group (``pyproject.toml``); this module loads every one of them and
merges their commands group by group (``pointlab score`` holds benchmark's scorers and bridge's
``score sus``). It imports no package's commands itself, so the package graph stays a DAG
(docs/architecture.md) and a package added later registers itself the same way.
"""

from __future__ import annotations

import logging
import os
from importlib.metadata import entry_points

import typer

from pointlab.benchmark.clikit import GROUPS, SubApp

__all__ = ["ENTRY_POINT_GROUP", "build_app", "main"]

ENTRY_POINT_GROUP = "pointlab.cli"

# ``pointlab act`` with no subcommand starts the default session, so that group needs no subcommand.
_RUNS_WITHOUT_SUBCOMMAND = {"act"}


class CliAssemblyError(RuntimeError):
    """Two packages register the same command name, or a sub-app is not a ``SubApp``."""


def _merge(target: typer.Typer, part: typer.Typer, where: str) -> None:
    taken = {c.name or c.callback.__name__ for c in target.registered_commands}
    for cmd in part.registered_commands:
        name = cmd.name or cmd.callback.__name__
        if name in taken:
            raise CliAssemblyError(f"command {where} {name!r} is registered twice")
        target.registered_commands.append(cmd)
        taken.add(name)
    target.registered_groups.extend(part.registered_groups)
    if part.registered_callback is not None:
        if target.registered_callback is not None:
            raise CliAssemblyError(f"group {where!r} has two callbacks")
        target.registered_callback = part.registered_callback


def build_app() -> typer.Typer:
    """The ``pointlab`` typer app with every registered package's commands.

    Raises:
        CliAssemblyError: a command registered twice, or an entry point that gives no ``SubApp``.
    """
    app = typer.Typer(name="pointlab", no_args_is_help=True, add_completion=False,
                      help="Evaluate how well multimodal models point: Point-Act, Point-Battle, Point-Bench, "
                           "video tasks.")
    groups = {name: typer.Typer(help=text, add_completion=False, no_args_is_help=name not in _RUNS_WITHOUT_SUBCOMMAND)
              for name, text in GROUPS.items()}
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        sub = ep.load()()
        if not isinstance(sub, SubApp):
            raise CliAssemblyError(f"entry point {ep.name} = {ep.value} did not return a SubApp")
        _merge(app, sub.root, "pointlab")
        for name, part in sub.groups.items():
            _merge(groups[name], part, name)
    for name, group in groups.items():
        if group.registered_commands or group.registered_callback or group.registered_groups:
            app.add_typer(group, name=name)
    return app


def main() -> None:
    logging.basicConfig(level=os.environ.get("POINTLAB_LOG", "WARNING").upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    build_app()()


_APP: typer.Typer | None = None


def __getattr__(name: str):
    # ``from pointlab.bridge.cli import app`` (tests, typer's CliRunner): built on first use, once
    global _APP
    if name == "app":
        if _APP is None:
            _APP = build_app()
        return _APP
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
