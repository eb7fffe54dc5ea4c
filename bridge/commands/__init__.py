"""The bridge package's commands (``pointlab act trials|node``, ``calibrate``, ``calibrate-check``,
``deproject``, ``score sus``), registered as the ``bridge`` entry point of the
``pointlab.cli`` group (see ``pointlab.benchmark.clikit``). ``pointlab act`` itself, which also
serves the web app, is the ``ui`` package's."""

from __future__ import annotations

from pointlab.benchmark.clikit import SubApp

__all__ = ["sub", "app"]

sub = SubApp("bridge")


def app() -> SubApp:
    """This package's sub-app with every command registered (the command modules decorate ``sub``)."""
    from pointlab.bridge.commands import (  # noqa: F401
        act,
        calibrate,
        compare,
        deproject,
        modes,
        plan,
        publish,
        stations,
        sus,
    )

    return sub
