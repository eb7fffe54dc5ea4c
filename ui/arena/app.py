"""The Point-Battle app factory (PointArena sec. 3.3) with the human baseline page.

``create_arena_app(agents, db_path=...)`` returns a FastAPI app serving:
``/`` the battle page, ``/leaderboard`` the ratings page, ``/human`` the human-baseline clicking page,
and the JSON API under ``/api`` (``battles``, ``leaderboard``, ``human`` routers). Nothing is read
from the environment; several apps can run side by side.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Mapping, Sequence

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from . import battles, human, leaderboard
from .context import ArenaContext, ArenaSettings
from .store import ArenaStore

__all__ = ["create_arena_app", "STATIC_DIR"]

STATIC_DIR = Path(__file__).resolve().parent / "static"


def create_arena_app(agents: Mapping[str, Any], *, db_path: str | Path = ":memory:",
                     curated_dir: str | Path | None = None, uploads_dir: str | Path | None = None,
                     settings: ArenaSettings | None = None, bench_items: Sequence = ()) -> FastAPI:
    """Build the arena app.

    Args:
        agents: ``{model name: agent}``; an agent has ``async point(image_rgb, instruction)`` returning
            an ``AgentAnswer`` (``pointlab.benchmark.agents``). At least two.
        db_path: SQLite file (or ``":memory:"``).
        curated_dir: folder of curated images offered on the page.
        uploads_dir: where accepted uploads are stored (default: next to the database, ``uploads/``).
        settings: ``ArenaSettings`` (sampler, limits, Elo parameters).
        bench_items: Point-Bench items for the human baseline page.

    Raises: ValueError for fewer than two agents.
    """
    if len(agents) < 2:
        raise ValueError("the arena needs at least two agents")
    settings = settings or ArenaSettings()
    if uploads_dir is None:
        uploads_dir = (Path(db_path).parent if str(db_path) != ":memory:" else Path.cwd()) / "uploads"
    app = FastAPI(title="Point-Battle")
    app.state.arena = ArenaContext(store=ArenaStore(db_path), agents=dict(agents), settings=settings,
                                   curated_dir=Path(curated_dir) if curated_dir else None,
                                   uploads_dir=Path(uploads_dir), bench_items=list(bench_items),
                                   rng=random.Random(settings.seed))
    app.include_router(battles.router)
    app.include_router(leaderboard.router)
    app.include_router(human.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="arena-static")

    for route, page in (("/", "arena.html"), ("/leaderboard", "leaderboard.html"), ("/human", "human.html")):
        def serve(page: str = page) -> FileResponse:
            return FileResponse(STATIC_DIR / page)
        app.add_api_route(route, serve, methods=["GET"], include_in_schema=False)
    return app
