"""``uvicorn pointlab.ui.arena.asgi:app_from_env --factory --workers N``: one arena app per worker,
built from the JSON ``ArenaConfig`` named by ``$POINTLAB_ARENA_CONFIG`` (written by
``pointlab bench arena --workers N``). The one place the arena reads the environment."""

from __future__ import annotations

import os
from pathlib import Path

from .launch import CONFIG_ENV, ArenaConfig, build_app, tune_gc_for_serving

__all__ = ["app_from_env"]


def app_from_env():
    """The arena app of the config file in ``$POINTLAB_ARENA_CONFIG``, the collector tuned for serving
    (``tune_gc_for_serving``). Raises: KeyError when unset."""
    app = build_app(ArenaConfig.from_json(Path(os.environ[CONFIG_ENV]).read_text(encoding="utf-8")))
    tune_gc_for_serving()
    return app
