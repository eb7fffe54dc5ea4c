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
import sys
from importlib.metadata import entry_points

import typer

from pointlab.benchmark.clikit import GROUPS, SubApp, guard_options
from pointlab.bridge.errors import BridgeError

__all__ = ["ENTRY_POINT_GROUP", "LOG_LEVELS", "build_app", "main", "run"]

ENTRY_POINT_GROUP = "pointlab.cli"

# ``pointlab act`` with no subcommand starts the default session, so that group needs no subcommand.
_RUNS_WITHOUT_SUBCOMMAND = {"act"}


class CliAssemblyError(BridgeError, RuntimeError):
    """Two packages register the same command name, or a sub-app is not a ``SubApp``."""


def _command_name(cmd: typer.models.CommandInfo) -> str:
    if cmd.name:
        return cmd.name
    assert cmd.callback is not None  # @app.command() registers its function
    return cmd.callback.__name__


def _merge(target: typer.Typer, part: typer.Typer, where: str) -> None:
    taken = {_command_name(c) for c in target.registered_commands}
    for cmd in part.registered_commands:
        name = _command_name(cmd)
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
    app = typer.Typer(
        name="pointlab",
        no_args_is_help=True,
        add_completion=False,
        help="Evaluate how well multimodal models point: Point-Act, Point-Battle, Point-Bench, video tasks.",
    )
    groups = {
        name: typer.Typer(help=text, add_completion=False, no_args_is_help=name not in _RUNS_WITHOUT_SUBCOMMAND)
        for name, text in GROUPS.items()
    }
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
    guard_options(app)
    return app


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def main(argv: list[str] | None = None) -> None:
    """``pointlab [--debug] COMMAND ...``: every error is one line on stderr; exit code 2 for bad
    input (an option's value, a missing option, ``POINTLAB_LOG``), 1 for a failure at run time, 130
    on Ctrl-C. An unexpected exception is one line too, naming its type, unless ``--debug`` (or
    ``POINTLAB_DEBUG=1``) asks for the traceback."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get("POINTLAB_DEBUG", "") == "1"
    if args[:1] == ["--debug"]:
        debug, args = True, args[1:]
    level = os.environ.get("POINTLAB_LOG", "WARNING").upper()
    if level not in LOG_LEVELS:
        print(
            f"pointlab: error: POINTLAB_LOG={os.environ['POINTLAB_LOG']!r} is not a log level "
            f"({', '.join(LOG_LEVELS)})",
            file=sys.stderr,
        )
        sys.exit(2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    sys.exit(run(args, debug=debug))


def run(args: list[str], *, debug: bool = False) -> int:
    """Run ``pointlab`` with ``args``; returns the exit code (``main`` without ``sys.exit``)."""
    command = typer.main.get_command(build_app())
    try:
        rv = command.main(args, prog_name="pointlab", standalone_mode=False)
    except typer.Abort:
        print("pointlab: aborted", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        return 130
    except typer.TyperException as e:  # click's usage errors (typer vendors click): one line
        if type(e).__name__ == "NoArgsIsHelpError":  # a group without its subcommand: typer has
            if e.format_message():  # printed the help (older versions put it here)
                print(e.format_message(), file=sys.stderr)
            return 2
        ctx = getattr(e, "ctx", None)  # a UsageError's
        where = ctx.command_path if ctx is not None else "pointlab"
        message = " ".join(e.format_message().split())
        print(f"{where}: error: {message} (see {where} --help)", file=sys.stderr)
        return int(getattr(e, "exit_code", 2))
    except Exception as e:
        if debug:
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(
            f"pointlab: error: {type(e).__name__}: {first} (pointlab --debug ... shows the traceback)", file=sys.stderr
        )
        return 1
    # standalone_mode=False returns a command's typer.Exit code, or its return value (ours: None)
    return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0


_APP: typer.Typer | None = None


def __getattr__(name: str):
    # ``from pointlab.bridge.cli import app`` (tests, typer's CliRunner): built on first use, once
    global _APP
    if name == "app":
        if _APP is None:
            _APP = build_app()
        return _APP
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
