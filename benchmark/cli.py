"""The benchmark package's commands (``pointlab score ...``, ``bench ...``, ``video ...``,
``pinpoint ...``, ``perf score|video|pinpoint``, ``ratings``), registered as the ``benchmark``
entry point of the ``pointlab.cli`` group (see ``clikit``)."""

from __future__ import annotations

from .clikit import SubApp

__all__ = ["sub", "app"]

sub = SubApp("benchmark")


def app() -> SubApp:
    """This package's sub-app with every command registered (the command modules decorate ``sub``)."""
    from . import pinpoint_commands, pointbench_commands, run_commands, video_commands  # noqa: F401

    return sub
