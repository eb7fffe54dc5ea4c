"""The sim_mock package's commands (``pointlab sim model-server|xarm-controller``, ``perf sim``),
registered as the ``sim_mock`` entry point of the ``pointlab.cli`` group (see
``pointlab.benchmark.clikit``)."""

from __future__ import annotations

from pointlab.benchmark.clikit import SubApp

__all__ = ["sub", "app"]

sub = SubApp("sim_mock")


def app() -> SubApp:
    """This package's sub-app with every command registered (the command modules decorate ``sub``)."""
    from . import commands, perf_commands, xarm_commands  # noqa: F401

    return sub
