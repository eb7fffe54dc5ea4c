"""``uvicorn pointlab.ui.arena.asgi:app_from_env --factory --workers N``: one arena app per worker,
built from the JSON ``ArenaConfig`` named by ``$POINTLAB_ARENA_CONFIG`` (written by
``pointlab bench arena --workers N``). The one place the arena reads the environment."""

from __future__ import annotations

import os
from pathlib import Path

from .launch import CONFIG_ENV, ArenaConfig, build_app

__all__ = ["app_from_env"]


def app_from_env():
    """The arena app of the config file in ``$POINTLAB_ARENA_CONFIG``. Raises: KeyError when unset."""
    return build_app(ArenaConfig.from_json(Path(os.environ[CONFIG_ENV]).read_text(encoding="utf-8")))
