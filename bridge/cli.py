"""The ``pointlab`` entry point: imports every command module so it registers its commands."""

from __future__ import annotations

import importlib
import logging
import os

from .cligroups import app

# Each module decorates commands onto a group of pointlab.bridge.cligroups. Add yours here.
COMMAND_MODULES = (
    "pointlab.perception.commands",
    "pointlab.perception.calibrate_commands",
    "pointlab.benchmark.video_commands",
    "pointlab.benchmark.pinpoint_commands",
    "pointlab.sim_mock.commands",
    "pointlab.bridge.sus_commands",
    "pointlab.bridge.act_commands",
    "pointlab.bridge.perf_loop",
    "pointlab.sim_mock.xarm_commands",
    "pointlab.benchmark.pointbench_commands",
    "pointlab.sim_mock.perf_commands",
)


def _load() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(name)


def main() -> None:
    logging.basicConfig(level=os.environ.get("POINTLAB_LOG", "WARNING").upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _load()
    app()


_load()
